import hashlib
import logging
import math
import secrets
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone

from config.errors import Conflict, InvalidInput, RateLimited
from raters import qc
from raters.census import PRESETS, independent_cells, largest_remainder
from raters.defaults import AXES, COUNTRIES, default_options, group_slug
from raters.models import (
    ApiClient,
    Axis,
    Country,
    ErasureRecord,
    Group,
    QualityRuleSetting,
    Quota,
    QuotaSlot,
    Rater,
    RuleOutcome,
    StaffAction,
    Strike,
    Study,
)
from raters.panel import PANEL_FORMATS, InvalidPanelLink, keyed_hash, parse_panel_ids
from raters.selectors import rater_for_participant
from tournaments.models import Battle, LLMModel, Reply, Tournament, Turn, Vote, VoteChoice

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingEntry:
    """A participant who opened a study link but has not consented yet. Nothing is stored until they do."""

    study_id: int
    participant_hash: str | None = None
    panel_session_hash: str = ""

    def as_session(self) -> dict:
        return {
            "study_id": self.study_id,
            "participant_hash": self.participant_hash,
            "panel_session_hash": self.panel_session_hash,
        }


def panel_entry_read(*, study: Study, params: Mapping[str, str]) -> PendingEntry:
    """Validate a panel link's ids (raising `InvalidPanelLink`) and key them for storage."""
    rater_audience_check(study=study, api_client=None)
    ids = parse_panel_ids(params, panel=study.panel)
    if study.external_study_id and ids.study != study.external_study_id:
        raise InvalidPanelLink(
            "This link belongs to a different study. Please go back to the panel and open this study's link "
            "from there."
        )
    return PendingEntry(
        study_id=study.pk,
        participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, ids.participant),
        panel_session_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, ids.session) if ids.session else "",
    )


def rater_create(
    *,
    entry: PendingEntry,
    api_client: ApiClient | None = None,
    network_fingerprint: str = "",
    honeypot: str = "",
) -> Rater:
    """Record a consenting rater, from the website or from `api_client`. A participant who already has a
    rater in this study gets that one back. Website entries without a panel id pass the study's sybil
    friction first (`rater_entry_check`)."""
    existing = rater_for_participant(study_id=entry.study_id, participant_hash=entry.participant_hash)
    if existing:
        return existing
    study = Study.objects.select_related("tournament").get(pk=entry.study_id)
    rater_audience_check(study=study, api_client=api_client)
    fields = {"study_id": entry.study_id, "participant_hash": entry.participant_hash}
    open_entry = entry.participant_hash is None and api_client is None
    try:
        with transaction.atomic():
            if open_entry:
                rater_entry_check(study=study, network_fingerprint=network_fingerprint, honeypot=honeypot)
            return Rater.objects.create(
                **fields,
                source=Rater.Source.OPEN if entry.participant_hash is None else Rater.Source.PANEL,
                panel_session_hash=entry.panel_session_hash,
                network_fingerprint=network_fingerprint,
                consented_at=timezone.now(),
                api_client=api_client,
            )
    except IntegrityError:
        # The same participant consented in two tabs at once; the database kept one rater.
        return Rater.objects.get(**fields)


NETWORK_WINDOW = timedelta(hours=1)


def rater_entry_check(*, study: Study, network_fingerprint: str, honeypot: str = "") -> None:
    """Refuse an entry without a panel id that filled the consent form's hidden field, or that would be
    more than the study's `new_raters_per_network_hour` new raters from one network in the last hour.

    Runs inside the creating transaction with the study row locked, so concurrent entries from one
    network are counted one after another and the cap is exact.
    """
    if study.honeypot and honeypot.strip():
        raise InvalidInput(
            "This form was filled in automatically, so it was not accepted. If you are a person, please "
            "reload the page and try again."
        )
    cap = study.new_raters_per_network_hour
    if cap is None or not network_fingerprint:
        # No fingerprint: made by the site itself (demo seed, tests), never by a request.
        return
    Study.objects.select_for_update().filter(pk=study.pk).exists()
    since = timezone.now() - NETWORK_WINDOW
    recent = Rater.objects.filter(
        study=study, network_fingerprint=network_fingerprint, created_at__gte=since
    ).order_by("created_at")
    arrivals = list(recent.values_list("created_at", flat=True)[: cap + 1])
    if len(arrivals) >= cap:
        wait = arrivals[len(arrivals) - cap] + NETWORK_WINDOW - timezone.now()
        raise RateLimited(
            f"Too many new raters have started from your network in the last hour (at most {cap}). "
            "Please try again later; if you share a network with many others, try again from another.",
            retry_after=max(1, math.ceil(wait.total_seconds())),
        )


def rater_audience_check(*, study: Study, api_client: ApiClient | None) -> None:
    """Raise unless raters arriving this way may rate in the study's tournament. Human tournaments take the
    website and human-panel API clients; automated ones only automated API clients, so votes of scripted
    or LLM-judge raters never reach a human board (boards are per tournament)."""
    arrival = api_client.audience if api_client else Tournament.Audience.HUMAN
    if study.tournament.audience == arrival:
        return
    if api_client is None:
        raise Conflict("This study is run by automated raters only; it cannot be joined from the website.")
    raise Conflict(
        f"This API client is for {arrival} raters, but the study's tournament is for "
        f"{study.tournament.audience} raters: its raters cannot rate there."
    )


def rater_screen(*, rater: Rater, country_code: str, answers: Mapping[str, str]) -> Rater:
    """Store the screener's answers: one group per axis of the rater's country, or none where the axis
    allows declining and the rater preferred not to say. Answering again changes nothing."""
    if rater.is_screened:
        return rater
    country = Country.objects.filter(code=country_code).first()
    if country is None:
        raise InvalidInput("Please choose the country you live in.")
    chosen = []
    for axis in country.axes.all():
        slug = answers.get(axis.slug, "")
        if not slug:
            if not axis.allows_decline:
                raise InvalidInput(f"Please answer the question about your {axis.label.lower()}.")
            continue
        group = axis.groups.filter(slug=slug).first()
        if group is None:
            raise InvalidInput(f"That answer about your {axis.label.lower()} is not one of the options.")
        chosen.append(group)
    with transaction.atomic():
        updated = Rater.objects.filter(pk=rater.pk, screened_at__isnull=True).update(
            country=country, screened_at=timezone.now()
        )
        if updated:
            rater.groups.set(chosen)
    rater.refresh_from_db()
    return rater


def sampling_frame_ensure_defaults() -> int:
    """Create whatever is missing of the default frame: the countries, their axes and the 22 groups.
    Returns how many groups were created."""
    created = 0
    for country_position, (code, name) in enumerate(COUNTRIES):
        country, _ = Country.objects.get_or_create(
            code=code, defaults={"name": name, "position": country_position}
        )
        options = default_options(code)
        for axis_position, (slug, label, question, allows_decline) in enumerate(AXES):
            axis, _ = Axis.objects.get_or_create(
                country=country,
                slug=slug,
                defaults={
                    "label": label,
                    "question": question,
                    "allows_decline": allows_decline,
                    "position": axis_position,
                },
            )
            for position, option in enumerate(options[slug]):
                _, was_created = Group.objects.get_or_create(
                    slug=group_slug(code, slug, option),
                    defaults={"axis": axis, "label": option, "position": position},
                )
                created += was_created
    return created


class _QuotaFull(Exception):
    pass


def rater_admit(*, rater: Rater) -> Rater:
    """Decide whether a screened rater may rate: screened out when the study does not sample their
    country; admitted when every quota they need has room, taking one slot in each; quota full otherwise.

    All in one transaction: each slot is taken by a conditional UPDATE (admitted < target), quotas in
    primary-key order so concurrent admissions cannot deadlock, and a full quota undoes the slots already
    taken. Deciding again for a rater who is already decided changes nothing.
    """
    with transaction.atomic():
        # Lock only the rater row (not the joined study), so admissions to one study run side by side.
        rater = Rater.objects.select_for_update(of=("self",)).select_related("study").get(pk=rater.pk)
        if not rater.is_screened or rater.status not in (Rater.Status.CONSENTED, Rater.Status.RELEASED):
            return rater
        study = rater.study
        if study.countries.exists() and not study.countries.filter(pk=rater.country_id).exists():
            return _rater_decided(rater, Rater.Status.SCREENED_OUT)
        keys = _needed_cell_keys(study, rater)
        quotas = list(Quota.objects.filter(study=study, cell_key__in=keys).order_by("pk"))
        # A kind of quota the study sets, with no row for this rater's cell, means a target of zero.
        if len(quotas) < len(keys) or not _take_slots(rater, quotas):
            return _rater_decided(rater, Rater.Status.QUOTA_FULL)
        return _rater_decided(rater, Rater.Status.ADMITTED)


def _rater_decided(rater: Rater, status: str) -> Rater:
    rater.status = status
    rater.admitted_at = timezone.now() if status == Rater.Status.ADMITTED else None
    rater.save(update_fields=["status", "admitted_at"])
    return rater


def cell_key(group_ids) -> str:
    return "-".join(str(group_id) for group_id in sorted(group_ids))


def _needed_cell_keys(study: Study, rater: Rater) -> set[str]:
    """The rater's cell for each kind of quota the study sets in their country.

    A kind is a set of axes: one axis for marginal quotas, several for interlocking ones. It applies to
    raters who answered all of its axes; "prefer not to say" on an axis exempts the rater from it.
    """
    group_by_axis = {group.axis_id: group.pk for group in rater.groups.all()}
    axes_by_quota: dict[int, set[int]] = defaultdict(set)
    memberships = Quota.groups.through.objects.filter(
        quota__study=study, group__axis__country_id=rater.country_id
    )
    for quota_id, axis_id in memberships.values_list("quota_id", "group__axis_id"):
        axes_by_quota[quota_id].add(axis_id)
    kinds = {frozenset(axes) for axes in axes_by_quota.values()}
    return {cell_key(group_by_axis[axis] for axis in kind) for kind in kinds if kind <= group_by_axis.keys()}


def _take_slots(rater: Rater, quotas: list[Quota]) -> bool:
    try:
        with transaction.atomic():
            for quota in quotas:
                taken = Quota.objects.filter(pk=quota.pk, admitted__lt=F("target")).update(
                    admitted=F("admitted") + 1
                )
                if taken != 1:
                    raise _QuotaFull
            QuotaSlot.objects.bulk_create(QuotaSlot(quota=quota, rater=rater) for quota in quotas)
    except _QuotaFull:
        return False
    return True


def rater_complete_if_done(*, rater: Rater) -> Rater:
    """Mark an admitted rater's session complete once they have voted on the study's number of battles."""
    limit = rater.study.battles_per_session
    if rater.status != Rater.Status.ADMITTED or limit is None:
        return rater
    if Vote.objects.filter(battle__rater=rater).count() >= limit:
        rater_mark_completed(rater=rater)
        rater.refresh_from_db()
    return rater


def rater_mark_completed(*, rater: Rater) -> None:
    """Complete the session of a rater who is still admitted (a rater whose session ended otherwise in the
    meantime keeps that outcome)."""
    Rater.objects.filter(pk=rater.pk, status=Rater.Status.ADMITTED).update(
        status=Rater.Status.COMPLETED, completed_at=timezone.now()
    )


def rater_finish(*, rater: Rater) -> Rater:
    """End an admitted rater's session at their client's request. A rater who has voted completes it when
    the study sets no number of battles; one who has not voted gives their quota slots back. Their battle
    in progress is set aside without penalty. Raters whose session is already decided are returned as
    they are."""
    rater = rater_complete_if_done(rater=rater)
    if rater.status != Rater.Status.ADMITTED:
        return rater
    voted = Vote.objects.filter(battle__rater=rater).count()
    limit = rater.study.battles_per_session
    if voted and limit is not None:
        raise Conflict(
            f"This session is complete after {limit} battles and {voted} are done. Votes so far are kept; "
            "carry on to finish it."
        )
    Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).update(
        state=Battle.State.VOID, void_reason="The rater's session ended.", ended_at=timezone.now()
    )
    if voted:
        rater_mark_completed(rater=rater)
    else:
        rater_release(rater=rater)
    rater.refresh_from_db()
    return rater


def rater_release(*, rater: Rater) -> bool:
    """Give back the quota slots of an admitted rater who has not voted yet. Returns whether it did."""
    with transaction.atomic():
        # Checked in the UPDATE itself, so a vote cast a moment ago keeps the rater in.
        released = (
            Rater.objects.filter(pk=rater.pk, status=Rater.Status.ADMITTED)
            .exclude(Exists(Vote.objects.filter(battle__rater=OuterRef("pk"))))
            .update(status=Rater.Status.RELEASED)
        )
        if not released:
            return False
        _give_back_slots(rater)
    return True


def _give_back_slots(rater: Rater) -> None:
    for quota_id in rater.quota_slots.order_by("quota_id").values_list("quota_id", flat=True):
        Quota.objects.filter(pk=quota_id).update(admitted=F("admitted") - 1)
    rater.quota_slots.all().delete()


def raters_release_abandoned() -> int:
    """Release the slots of admitted raters who have not voted within their study's abandon time."""
    now = timezone.now()
    released = 0
    for study in Study.objects.filter(raters__status=Rater.Status.ADMITTED).distinct():
        idle_since = now - timedelta(minutes=study.abandon_after_minutes)
        abandoned = study.raters.filter(status=Rater.Status.ADMITTED, admitted_at__lt=idle_since)
        released += sum(rater_release(rater=rater) for rater in abandoned)
    return released


def quota_set(*, study: Study, groups: list[Group], target: int) -> Quota:
    """Create or retarget the quota for one group (marginal) or one cell of groups (interlocking)."""
    if target < 0:
        raise InvalidInput("A quota target cannot be negative.")
    if not groups:
        raise InvalidInput("A quota needs at least one group.")
    if len({group.axis.country_id for group in groups}) != 1:
        raise InvalidInput("All groups of a quota must be in the same country.")
    if len({group.axis_id for group in groups}) != len(groups):
        raise InvalidInput("A quota cell takes at most one group per axis.")
    ordered = sorted(groups, key=lambda group: group.axis.position)
    label = f"{ordered[0].axis.country.code}: " + " × ".join(f"{g.axis.label} {g.label}" for g in ordered)  # noqa: RUF001
    with transaction.atomic():
        quota, created = Quota.objects.get_or_create(
            study=study, cell_key=cell_key(g.pk for g in groups), defaults={"target": target, "label": label}
        )
        if created:
            quota.groups.set(groups)
        elif quota.target != target:
            quota.target = target
            quota.save(update_fields=["target"])
    return quota


def quota_target_update(*, quota: Quota, target: int) -> Quota:
    """Change a target. Lowering it below the raters already admitted closes the quota; nobody is removed."""
    if target < 0:
        raise InvalidInput("A quota target cannot be negative.")
    Quota.objects.filter(pk=quota.pk).update(target=target)
    quota.refresh_from_db()
    return quota


def quotas_apply_census_preset(
    *, study: Study, country_code: str, total: int, marginal: bool, interlocking: bool
) -> list[Quota]:
    """Fill targets for one country from its census preset for a total sample size: one quota per group
    (marginal), one per cell of all axes (interlocking, from the margins assuming independence), or both."""
    if total < 1:
        raise InvalidInput("The total sample size must be at least 1.")
    if not (marginal or interlocking):
        raise InvalidInput("Choose marginal quotas, interlocking quotas or both.")
    preset = PRESETS.get(country_code)
    if preset is None:
        raise InvalidInput(
            f"There is no census preset for {country_code}; presets exist for {', '.join(PRESETS)}."
        )
    groups = _groups_by_axis_and_label(country_code, preset)
    quotas = []
    with transaction.atomic():
        if marginal:
            for axis_slug, axis_shares in preset.items():
                for label, target in largest_remainder(axis_shares.shares, total).items():
                    quotas.append(quota_set(study=study, groups=[groups[axis_slug][label]], target=target))
        if interlocking:
            margins = {axis_slug: axis_shares.shares for axis_slug, axis_shares in preset.items()}
            for cell, target in independent_cells(margins, total).items():
                cell_groups = [
                    groups[axis_slug][label] for axis_slug, label in zip(margins, cell, strict=True)
                ]
                quotas.append(quota_set(study=study, groups=cell_groups, target=target))
    return quotas


def _groups_by_axis_and_label(country_code: str, preset: Mapping) -> dict[str, dict[str, Group]]:
    groups: dict[str, dict[str, Group]] = defaultdict(dict)
    for group in Group.objects.filter(axis__country__code=country_code).select_related("axis__country"):
        groups[group.axis.slug][group.label] = group
    for axis_slug, axis_shares in preset.items():
        missing = [label for label in axis_shares.shares if label not in groups.get(axis_slug, {})]
        if missing:
            raise InvalidInput(
                f"The {country_code} census preset needs groups that this site does not have on axis "
                f"'{axis_slug}': {', '.join(missing)}. Add them or set the targets by hand."
            )
    return groups


def rater_erase(*, rater: Rater, erased_by: str) -> ErasureRecord:
    """Delete a rater's personal data, battles and votes, keep an audit record of the erasure, and have
    the live ratings of the affected tournaments rebuilt from the remaining votes."""
    from leaderboard.tasks import replay_ratings

    with transaction.atomic():
        rater = Rater.objects.select_for_update().get(pk=rater.pk)
        if rater.status != Rater.Status.COMPLETED:
            # A completed rater's slot stays filled: the study did collect that session.
            _give_back_slots(rater)
        battles = Battle.objects.filter(rater=rater)
        votes = Vote.objects.filter(battle__in=battles)
        tournament_ids = set(votes.values_list("battle__tournament_id", flat=True))
        record = ErasureRecord.objects.create(
            rater_public_id=rater.public_id,
            study=rater.study,
            erased_by=erased_by,
            votes_removed=votes.count(),
            battles_removed=battles.count(),
        )
        votes.delete()
        battles.delete()
        rater.delete()
        for tournament_id in tournament_ids:
            replay_ratings.delay_on_commit(tournament_id)
    return record


# --- Rater API clients ----------------------------------------------------------------------------------

API_TOKEN_PREFIX = "pop_"  # noqa: S105 - a marker that helps secret scanners, not a secret


def api_token_hash(token: str) -> str:
    """SHA-256 is enough for tokens: they are 256 random bits, so no slow hash is needed against guessing."""
    return hashlib.sha256(token.encode()).hexdigest()


def api_token_new() -> tuple[str, str]:
    """A fresh token (32 random bytes) and the hash to store for it."""
    token = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, api_token_hash(token)


def api_client_create(*, name: str, kind: str, study: Study) -> tuple[ApiClient, str]:
    """Make a client and its token. The token is returned once, here; only its hash is stored."""
    token, token_hash = api_token_new()
    client = ApiClient(name=name, kind=kind, study=study, token_hash=token_hash)
    try:
        client.full_clean()
    except ValidationError as exc:
        raise InvalidInput(" ".join(exc.messages)) from None
    client.save()
    return client, token


def api_client_authenticate(*, token: str) -> ApiClient | None:
    """The active client holding this token, or None. Notes when it was last used, at most once a minute,
    so authentication does not write on every request."""
    client = (
        ApiClient.objects.select_related("study__tournament").filter(token_hash=api_token_hash(token)).first()
    )
    if client is None or not client.is_active:
        return None
    now = timezone.now()
    ApiClient.objects.filter(pk=client.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - timedelta(minutes=1))
    ).update(last_used_at=now)
    return client


def api_client_revoke(*, client: ApiClient) -> None:
    ApiClient.objects.filter(pk=client.pk).update(is_active=False)


def api_rater_enter(
    *,
    client: ApiClient,
    participant_id: str,
    session_id: str = "",
    consented: bool,
    country_code: str,
    answers: Mapping[str, str],
) -> tuple[Rater, bool]:
    """The web flow's entry, screener and admission in one step for an API client: validate and key the
    participant's ids, record the rater, store the screener answers and decide admission against the quota.
    Returns the rater and whether it is new; a participant the client already entered gets their rater back
    as it stands. Bad input saves nothing."""
    study = client.study
    participant_hash, session_hash = _api_participant_hashes(client, participant_id, session_id)
    existing = rater_for_participant(study_id=study.pk, participant_hash=participant_hash)
    if existing is not None:
        return _own_rater(existing, client), False
    if client.kind == ApiClient.Kind.HUMAN_PANEL and not consented:
        raise InvalidInput(
            "The participant has to consent first: send consent as true once they have agreed."
        )
    if not study.is_open:
        raise Conflict("This study is closed to new raters.")
    entry = PendingEntry(
        study_id=study.pk, participant_hash=participant_hash, panel_session_hash=session_hash
    )
    with transaction.atomic():
        rater = _own_rater(rater_create(entry=entry, api_client=client), client)
        created = not rater.is_screened
        rater = rater_screen(rater=rater, country_code=country_code, answers=answers)
    return rater_admit(rater=rater), created


def _api_participant_hashes(client: ApiClient, participant_id: str, session_id: str) -> tuple[str, str]:
    """Human-panel clients pass on their panel's ids, checked as the study's links are; automated clients
    name their raters (personas) with the generic format. Kept only as keyed hashes, as on the website."""
    panel_format = PANEL_FORMATS[
        client.study.panel if client.kind == ApiClient.Kind.HUMAN_PANEL else "generic"
    ]
    for field, value, optional in (
        ("participant_id", participant_id, False),
        ("session_id", session_id, True),
    ):
        if (value or not optional) and not panel_format.id_pattern.fullmatch(value or ""):
            raise InvalidInput(f"The {field} is not valid: it should be {panel_format.id_shape}.")
    key = settings.PANEL_ID_HMAC_KEY
    return keyed_hash(key, participant_id), keyed_hash(key, session_id) if session_id else ""


def _own_rater(rater: Rater, client: ApiClient) -> Rater:
    """A participant takes part once per study: one who came another way (the website or another client)
    is not handed to this client."""
    if rater.api_client_id != client.pk:
        raise Conflict("This participant already takes part in this study another way.")
    return rater


# --- Quality control ------------------------------------------------------------------------------------

STRIKES_TO_EXCLUDE = 3
LLM_JUDGE_RULE = "llm_topic_judge"
CONSENSUS_RULE = "consensus"
MESSAGE_RULES = ("too_short", "copy", "gibberish", "topic_wandering")


@dataclass(frozen=True)
class RuleSetting:
    mode: str
    params: dict
    judge_model_id: int | None = None


def quality_settings() -> dict[str, RuleSetting]:
    """Each rule's mode and thresholds: the admin's row where there is one, else the defaults (every
    rule strikes, except the LLM judge, which is off until a judge model is chosen)."""
    rows = {row.rule: row for row in QualityRuleSetting.objects.all()}
    settings_by_rule = {}
    for rule in (*qc.RULES, LLM_JUDGE_RULE):
        row = rows.get(rule)
        default_mode = (
            QualityRuleSetting.Mode.OFF if rule == LLM_JUDGE_RULE else QualityRuleSetting.Mode.STRIKE
        )
        settings_by_rule[rule] = RuleSetting(
            mode=row.mode if row else default_mode,
            params={**qc.DEFAULT_PARAMS.get(rule, {}), **(row.params if row else {})},
            judge_model_id=row.judge_model_id if row else None,
        )
    return settings_by_rule


def message_quality_check(*, rater: Rater, battle: Battle, message: str) -> Strike | None:
    """Judge a message before it is sent to the models. Returns the strike it earned, if any."""
    settings_by_rule = quality_settings()
    earlier = list(Turn.objects.filter(battle__rater=rater).values_list("message", flat=True))
    context = _battle_context(battle)
    checks = {
        "too_short": lambda params: qc.check_too_short(message, params),
        "copy": lambda params: qc.check_copy(message, earlier, params),
        "gibberish": lambda params: qc.check_gibberish(message, params),
        "topic_wandering": lambda params: qc.check_topic_wandering(message, context, params),
    }
    results = [
        (settings_by_rule[rule], checks[rule](settings_by_rule[rule].params))
        for rule in MESSAGE_RULES
        if settings_by_rule[rule].mode != QualityRuleSetting.Mode.OFF
    ]
    return _record_outcomes(rater=rater, battle=battle, results=results, message=message)


def _battle_context(battle: Battle) -> list[str]:
    """What a new message may relate to: the battle's earlier messages and both models' replies."""
    context = list(battle.turns.order_by("index").values_list("message", flat=True))
    context += Reply.objects.filter(turn__battle=battle, state=Reply.State.DONE).values_list(
        "content", flat=True
    )
    return context


def vote_quality_check(*, vote: Vote) -> Strike | None:
    """Judge a vote just stored: time taken to read, the attention check, straight-lining."""
    battle = vote.battle
    rater = battle.rater
    settings_by_rule = quality_settings()
    last_turn = battle.turns.order_by("-index").first()
    reply_chars = sum(len(text) for text in last_turn.replies.values_list("content", flat=True))
    recent = list(
        Vote.objects.filter(battle__rater=rater).order_by("-pk")[: _straight_lining_window(settings_by_rule)]
    )
    recent_choices = [dict(v.choices.values_list("dimension__slug", "outcome")) for v in reversed(recent)]
    checks = {}
    if vote.seconds_to_vote is not None:
        checks["too_fast"] = lambda p: qc.check_too_fast(
            seconds_to_vote=vote.seconds_to_vote, reply_chars=reply_chars, params=p
        )
    if battle.attention_expected:
        checks["attention"] = lambda p: qc.check_attention(
            expected=battle.attention_expected, answer=vote.attention_answer
        )
    checks["straight_lining"] = lambda p: qc.check_straight_lining(recent_choices, p)
    results = [
        (settings_by_rule[rule], check(settings_by_rule[rule].params))
        for rule, check in checks.items()
        if settings_by_rule[rule].mode != QualityRuleSetting.Mode.OFF
    ]
    return _record_outcomes(rater=rater, battle=battle, results=results, vote=vote)


def _straight_lining_window(settings_by_rule: dict[str, RuleSetting]) -> int:
    return int(settings_by_rule["straight_lining"].params.get("run_length", 5))


def _record_outcomes(*, rater, battle, results, message: str = "", vote=None) -> Strike | None:
    """Record every rule's outcome; the first failure of a rule in strike mode strikes (one strike per
    message or vote at most), failures of rules in flag mode are flagged for staff."""
    strike = None
    with transaction.atomic():
        for setting, result in results:
            action = RuleOutcome.Action.NONE
            if result.failed and setting.mode == QualityRuleSetting.Mode.FLAG:
                action = RuleOutcome.Action.FLAGGED
            elif result.failed and strike is None:
                strike = rater_strike(
                    rater=rater,
                    rule=result.rule,
                    reason=result.reason,
                    message=message,
                    battle=battle,
                    vote=vote,
                )
                action = RuleOutcome.Action.STRUCK if strike else RuleOutcome.Action.NONE
            RuleOutcome.objects.create(
                rater=rater,
                rule=result.rule,
                failed=result.failed,
                score=result.score,
                action=action,
                reason=result.reason[:300],
                battle=battle,
            )
    return strike


def rater_strike(
    *, rater: Rater, rule: str, reason: str, message: str = "", battle=None, vote=None
) -> Strike | None:
    """Give a strike; the third ends the session and takes every vote of the rater out of the ratings.

    The rater row is locked, so two strikes racing at two make exactly three, and nothing after the
    third counts (None is returned). `number` on the strike says which warning it is.
    """
    with transaction.atomic():
        locked = Rater.objects.select_for_update(of=("self",)).get(pk=rater.pk)
        if locked.status == Rater.Status.EXCLUDED:
            return None
        try:
            with transaction.atomic():
                strike = Strike.objects.create(
                    rater=locked, rule=rule, reason=reason[:300], message=message, battle=battle, vote=vote
                )
        except IntegrityError:
            return None  # this vote was already judged on this rule
        strike.number = locked.strikes.filter(lifted_at__isnull=True).count()
        if strike.number >= STRIKES_TO_EXCLUDE:
            _rater_exclude(locked)
    return strike


def _rater_exclude(rater: Rater) -> None:
    from leaderboard.tasks import replay_ratings

    Rater.objects.filter(pk=rater.pk).update(status=Rater.Status.EXCLUDED)
    Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).update(
        state=Battle.State.VOID, void_reason="The rater's session ended.", ended_at=timezone.now()
    )
    for tournament_id in _voted_tournament_ids(rater):
        replay_ratings.delay_on_commit(tournament_id)


def _voted_tournament_ids(rater: Rater) -> set[int]:
    return set(Vote.objects.filter(battle__rater=rater).values_list("battle__tournament_id", flat=True))


def strike_lift(*, strike: Strike, staff: str, reason: str) -> Strike:
    """Lift a strike with a reason. A rater excluded by it is reinstated and their votes count again."""
    from leaderboard.tasks import replay_ratings

    if not reason.strip():
        raise InvalidInput("Please give a reason for lifting the strike.")
    with transaction.atomic():
        rater = Rater.objects.select_for_update(of=("self",)).get(pk=strike.rater_id)
        if Strike.objects.filter(pk=strike.pk, lifted_at__isnull=True).update(
            lifted_at=timezone.now(), lifted_by=staff, lift_reason=reason[:300]
        ):
            StaffAction.objects.create(
                kind=StaffAction.Kind.LIFT_STRIKE,
                staff=staff,
                rater_public_id=rater.public_id,
                strike=strike,
                reason=reason[:300],
            )
            active = rater.strikes.filter(lifted_at__isnull=True).count()
            if rater.status == Rater.Status.EXCLUDED and active < STRIKES_TO_EXCLUDE:
                Rater.objects.filter(pk=rater.pk).update(status=Rater.Status.ADMITTED)
                for tournament_id in _voted_tournament_ids(rater):
                    replay_ratings.delay_on_commit(tournament_id)
    strike.refresh_from_db()
    return strike


def rater_exclude_by_staff(*, rater: Rater, staff: str, reason: str) -> None:
    if not reason.strip():
        raise InvalidInput("Please give a reason for excluding the rater.")
    with transaction.atomic():
        locked = Rater.objects.select_for_update(of=("self",)).get(pk=rater.pk)
        if locked.status == Rater.Status.EXCLUDED:
            return
        StaffAction.objects.create(
            kind=StaffAction.Kind.EXCLUDE, staff=staff, rater_public_id=locked.public_id, reason=reason[:300]
        )
        _rater_exclude(locked)


def quality_consensus_scan() -> int:
    """Flag raters whose overall verdicts disagree with other raters on the same pairs far more than
    chance allows, for staff review. Never strikes. Returns how many raters were newly flagged."""
    already = set(RuleOutcome.objects.filter(rule=CONSENSUS_RULE).values_list("rater_id", flat=True))
    choices = VoteChoice.objects.filter(dimension__slug="overall").exclude(
        vote__battle__rater__status=Rater.Status.EXCLUDED
    )
    votes = []
    for rater_id, model_a, model_b, outcome in choices.values_list(
        "vote__battle__rater_id", "vote__battle__model_a_id", "vote__battle__model_b_id", "outcome"
    ):
        # Name each pair in a fixed order so A-vs-B and B-vs-A battles are compared.
        x, y = sorted((model_a, model_b))
        won = {"a": model_a, "b": model_b}.get(outcome)
        votes.append((str(rater_id), str(x), str(y), "tie" if won is None else ("x" if won == x else "y")))
    params = {**qc.DEFAULT_PARAMS.get(CONSENSUS_RULE, {}), **_consensus_params()}
    flagged = 0
    for rater_id, p_value, compared in qc.consensus_outliers(votes, params):
        if int(rater_id) in already:
            continue
        RuleOutcome.objects.create(
            rater_id=int(rater_id),
            rule=CONSENSUS_RULE,
            failed=True,
            score=p_value,
            action=RuleOutcome.Action.FLAGGED,
            reason=f"Overall verdicts disagree with other raters in {compared} comparisons "
            f"(p = {p_value:.2g}).",
        )
        flagged += 1
    return flagged


def _consensus_params() -> dict:
    row = QualityRuleSetting.objects.filter(rule=CONSENSUS_RULE).first()
    return row.params if row else {}


def turn_topic_judge(*, turn_id: int) -> Strike | None:
    """The optional LLM judge of topic wandering: asks the configured judge model whether a message
    (already sent) pursues the battle's task. Off unless an admin turns it on and picks a judge model."""
    from tournaments.providers import ChatMessage, ProviderError, complete
    from tournaments.services import provider_config_for

    setting = quality_settings()[LLM_JUDGE_RULE]
    if setting.mode == QualityRuleSetting.Mode.OFF or setting.judge_model_id is None:
        return None
    turn = Turn.objects.select_related("battle__rater").get(pk=turn_id)
    earlier = list(
        turn.battle.turns.filter(index__lt=turn.index).order_by("index").values_list("message", flat=True)
    )
    if not earlier:
        return None
    judge = LLMModel.objects.get(pk=setting.judge_model_id)
    prompt = qc.JUDGE_PROMPT.format(context="\n".join(earlier), message=turn.message)
    try:
        same_task = qc.parse_judge_answer(complete(provider_config_for(judge), [ChatMessage("user", prompt)]))
    except ProviderError as error:
        logger.warning("Topic judge %s gave no verdict on turn %s: %s", judge.slug, turn_id, error)
        return None
    result = qc.RuleResult(
        rule=LLM_JUDGE_RULE,
        failed=same_task is False,
        score=0.0 if same_task is False else 1.0,
        reason="please keep to one task in a battle; start a new battle for a new topic."
        if same_task is False
        else "",
    )
    return _record_outcomes(
        rater=turn.battle.rater, battle=turn.battle, results=[(setting, result)], message=turn.message
    )


def rater_restore(*, rater: Rater, staff: str) -> bool:
    """Put a rater the rigging check held out back on published boards, in one step: the boards are
    refitted after commit, and the automatic check never holds this rater out again. Returns whether
    anything changed."""
    from leaderboard.tasks import publish_fits_for

    restored = Rater.objects.filter(pk=rater.pk, held_out_at__isnull=False).update(
        held_out_at=None, restored_by=staff[:150]
    )
    if restored:
        logger.info("rater %s restored to published boards by %s", rater.public_id, staff)
        publish_fits_for.delay_on_commit(rater.study.tournament_id)
    return bool(restored)
