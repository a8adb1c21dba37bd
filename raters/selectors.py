from dataclasses import dataclass
from urllib.parse import quote

from django.db.models import Count, Q
from django.http import HttpRequest

from raters.models import Country, Quota, Rater, Study

SESSION_RATER_KEY = "rater_id"
SESSION_PENDING_KEY = "pending_entry"


def rater_from_session(request: HttpRequest) -> Rater | None:
    public_id = request.session.get(SESSION_RATER_KEY)
    if not public_id:
        return None
    return Rater.objects.select_related("study__tournament").filter(public_id=public_id).first()


def rater_for_participant(*, study_id: int, participant_hash: str | None) -> Rater | None:
    """The rater a panel participant already has in this study (open-link raters have no participant)."""
    if participant_hash is None:
        return None
    return Rater.objects.filter(study_id=study_id, participant_hash=participant_hash).first()


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


def rater_outcome(*, rater: Rater) -> Outcome | None:
    """The end-of-session page for a rater who may not rate (any more), or None for one who may."""
    study = rater.study
    if rater.status == Rater.Status.COMPLETED:
        return _outcome(
            study,
            "Thank you — you have finished",
            "You have completed every battle of this session. Your completion code is below.",
            study.completion_code,
        )
    if rater.status == Rater.Status.QUOTA_FULL:
        return _outcome(
            study,
            "This study is full for now",
            "Thank you for your time. We already have enough people with answers like yours, so we cannot "
            "include you in this study. Please return to the panel with the code below.",
            study.quota_full_code,
        )
    if rater.status == Rater.Status.EXCLUDED:
        return _outcome(
            study,
            "Your session has ended",
            "After three warnings about the quality of messages or votes, this session has ended and its "
            "votes will not be used. Thank you for your time. Please return to the panel with the code "
            "below.",
            study.screen_out_code,
        )
    if rater.status == Rater.Status.SCREENED_OUT:
        return _outcome(
            study,
            "Thank you",
            "This study is not looking for more participants like you, so this is the end of it for you. "
            "Please return to the panel with the code below.",
            study.screen_out_code,
        )
    return None


def _outcome(study: Study, title: str, message: str, code: str) -> Outcome:
    url = study.return_url.replace("{code}", quote(code, safe="")) if study.return_url else ""
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
