import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from django.db.models import Count, Q
from django.http import HttpRequest

from raters import qc
from raters.models import Country, Quota, Rater, Study

SESSION_RATER_KEY = "rater_id"
SESSION_PENDING_KEY = "pending_entry"
# Set on a session resumed from a study link without proof that it is the participant's own (see
# raters.views.study_entry): when it began and the rater's status then. Absent on a proven session.
SESSION_LIMITED_KEY = "rater_limited"
# A rater in one of these may still rate: a link for someone else must not silently end their session.
ACTIVE_STATUSES = frozenset({"consented", "admitted", "released"})


def rater_from_session(request: HttpRequest) -> Rater | None:
    public_id = request.session.get(SESSION_RATER_KEY)
    if not public_id:
        return None
    return Rater.objects.select_related("study__tournament").filter(public_id=public_id).first()


def session_may_see_reveal(request: HttpRequest, *, voted_at) -> bool:
    """A limited session sees the reveal of battles voted in it, not of battles voted before it began:
    knowing a participant's id must not show what they rated."""
    limited = request.session.get(SESSION_LIMITED_KEY)
    return limited is None or voted_at.isoformat() >= limited["since"]


def session_may_see_code(request: HttpRequest, *, rater: Rater) -> bool:
    """A limited session sees an end-of-session code only if the session ended while it was open (the
    status changed since), so a panel id alone never yields someone else's completion code."""
    limited = request.session.get(SESSION_LIMITED_KEY)
    return limited is None or rater.status != limited["status"]


def rater_for_participant(
    *, study_id: int, participant_hash: str | None, legacy_hash: str | None = None
) -> Rater | None:
    """The rater a panel participant already has in this study (open-link raters have no participant):
    the one under the hash of their normalised id, else one recorded before normalisation under the hash
    of the id as their link spells it (`legacy_hash`; see raters.panel.ParticipantKeys)."""
    if participant_hash is None:
        return None
    for key in (participant_hash, legacy_hash):
        if key is not None:
            rater = Rater.objects.filter(study_id=study_id, participant_hash=key).first()
            if rater is not None:
                return rater
    return None


def study_open_for_anyone() -> Study | None:
    return Study.objects.filter(is_open=True, allows_open_entry=True).order_by("pk").first()


def screener_countries() -> list[Country]:
    """Countries offered by the screener. All configured ones, even outside the study's sample, so that
    nobody can learn which answer gets them in."""
    return list(Country.objects.filter(axes__isnull=False).distinct())


@dataclass(frozen=True)
class Outcome:
    """What a rater is told when their session ends, with the panel's code and where to go back to."""

    title: str
    message: str
    code: str
    return_url: str

    def withheld(self) -> "Outcome":
        """The same end without the code (the return address carries it too), for a session that cannot
        show it is the participant's own."""
        return Outcome(
            title=self.title,
            message="This session has already ended. For your privacy its code is shown only in the browser "
            "where you took part, or when you open the study from your panel with the link it gave you.",
            code="",
            return_url="",
        )


def rater_outcome(*, rater: Rater) -> Outcome | None:
    """The end-of-session page for a rater who may not rate (any more), or None for one who may."""
    study = rater.study
    if rater.status == Rater.Status.COMPLETED:
        return _outcome(
            study,
            "Thank you — you have finished",
            "You have completed every battle of this session.",
            study.completion_code,
            code_note="Your completion code is below.",
        )
    if rater.status == Rater.Status.QUOTA_FULL:
        return _outcome(
            study,
            "This study is full for now",
            "Thank you for your time. We already have enough people with answers like yours, so we cannot "
            "include you in this study.",
            study.quota_full_code,
        )
    if rater.status == Rater.Status.EXCLUDED:
        return _outcome(
            study,
            "Your session has ended",
            "After three warnings about the quality of messages or votes, this session has ended and its "
            "votes will not be used. Thank you for your time.",
            study.screen_out_code,
        )
    if rater.status == Rater.Status.SCREENED_OUT:
        return _outcome(
            study,
            "Thank you",
            "This study is not looking for more participants like you, so this is the end of it for you.",
            study.screen_out_code,
        )
    return None


def _outcome(
    study: Study,
    title: str,
    message: str,
    code: str,
    *,
    code_note: str = "Please return to the panel with the code below.",
) -> Outcome:
    """The page speaks of a code only when there is one to show (an open study has none), and of the
    panel only when there is one to go back to."""
    url = study.return_url.replace("{code}", quote(code, safe="")) if study.return_url else ""
    if code:
        message = f"{message} {code_note}"
    elif url:
        message = f"{message} Please return to the panel."
    return Outcome(title=title, message=message, code=code, return_url=url)


@dataclass(frozen=True)
class QuotaRow:
    quota: Quota
    admitted: int
    completed: int
    struck: int

    @property
    def is_full(self) -> bool:
        return self.admitted >= self.quota.target


def study_quota_rows(*, study: Study) -> list[QuotaRow]:
    """Every quota of a study with its live fill, marginal quotas before interlocking cells."""
    quotas = study.quotas.annotate(
        size=Count("groups", distinct=True),
        completed=Count("slots", filter=Q(slots__rater__status=Rater.Status.COMPLETED), distinct=True),
        struck=Count("slots", filter=Q(slots__rater__status=Rater.Status.EXCLUDED), distinct=True),
    ).order_by("size", "label")
    return [QuotaRow(quota=q, admitted=q.admitted, completed=q.completed, struck=q.struck) for q in quotas]


def study_rater_counts(*, study: Study) -> dict[str, int]:
    counts = dict(study.raters.values_list("status").annotate(n=Count("pk")))
    return {label: counts.get(value, 0) for value, label in Rater.Status.choices}


QC_RULE_LABELS = {
    "too_short": "Too short",
    "gibberish": "Random letters",
    "copy": "Copy of an earlier message",
    "topic_wandering": "New topic (embedded judge)",
}
LLM_JUDGE_LABEL = "New topic (LLM judge: {model})"


@dataclass(frozen=True)
class QcErrorRate:
    rule: str
    label: str
    legit_n: int
    struck_pct: float
    struck_upper_pct: float  # Wilson 95% upper bound
    nudged_pct: float | None  # only rules that nudge
    caught_n: int
    caught_pct: float
    caught_lower_pct: float  # Wilson 95% lower bound
    caught_source: str


def qc_error_rates(*, path: Path = qc.FIGURES_PATH) -> list[QcErrorRate]:
    """Each message rule's measured false strikes and catches, as last published by `manage.py bench qc`
    (a committed JSON file), so raters and data users can see what a strike means. [] if never run."""
    try:
        figures = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    measured_by_rule = {rule: (label, figures["rules"].get(rule)) for rule, label in QC_RULE_LABELS.items()}
    # The optional LLM judge, when the bench had a model server to ask (off on the site by default).
    judge = (figures["rules"].get("topic_wandering") or {}).get("llm_judge")
    if judge:
        source = figures["rules"]["topic_wandering"]["bad_source"]
        measured_by_rule["llm_topic_judge"] = (
            LLM_JUDGE_LABEL.format(model=judge["model"]),
            {**judge, "bad_source": source},
        )
    return [
        _qc_error_rate(rule, label, measured)
        for rule, (label, measured) in measured_by_rule.items()
        if measured is not None
    ]


def _qc_error_rate(rule: str, label: str, measured: dict) -> QcErrorRate:
    struck, caught = measured["legit_struck"], measured["bad_caught"]
    nudged = measured.get("legit_nudged")
    return QcErrorRate(
        rule=rule,
        label=label,
        legit_n=struck["n"],
        struck_pct=100 * struck["share"],
        struck_upper_pct=100 * struck["wilson95"][1],
        nudged_pct=100 * nudged["share"] if nudged else None,
        caught_n=caught["n"],
        caught_pct=100 * caught["share"],
        caught_lower_pct=100 * caught["wilson95"][0],
        caught_source=measured["bad_source"],
    )


def published_rater_q(prefix: str = "") -> Q:
    """Raters whose votes count on published boards, as a condition on the rater at `prefix` (e.g.
    "vote__battle__rater__"): not held out by the rigging check, and, where their study counts only
    reconciled raters, listed as approved in the panel's export (raters.services.panel_export_reconcile)."""
    return Q(**{f"{prefix}held_out_at__isnull": True}) & (
        Q(**{f"{prefix}study__count_only_reconciled": False}) | Q(**{f"{prefix}reconciled_at__isnull": False})
    )
