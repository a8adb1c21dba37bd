import hashlib
import logging
import math
import secrets
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from config.celery_app import enqueue_on_commit
from config.errors import Conflict, InvalidInput, RateLimited
from raters.defaults import AXES, COUNTRIES, default_options, group_slug
from raters.models import (
    ApiClient,
    Axis,
    Country,
    ErasureRecord,
    Group,
    Quota,
    QuotaSlot,
    Rater,
    Study,
)
from raters.panel import (
    PANEL_FORMATS,
    InvalidPanelExport,
    InvalidPanelLink,
    ParticipantKeys,
    keyed_hash,
    panel_export_read,
    parse_panel_ids,
    participant_keys,
)
from raters.proof import Proof, proof_verify
from raters.selectors import rater_for_participant
from raters.signals import rater_erasing
from stats.census import PRESETS, independent_cells, largest_remainder

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PendingEntry:
    """A participant who opened a study link but has not consented yet. Nothing is stored until they do."""

    study_id: int
    participant_hash: str | None = None
    panel_session_hash: str = ""
    # The hash of the id as the link spelled it, where that differs from the normalised id's: it finds a
    # rater recorded before ids were normalised (raters.panel.ParticipantKeys).
    legacy_participant_hash: str | None = None

    def as_session(self) -> dict:
        return {
            "study_id": self.study_id,
            "participant_hash": self.participant_hash,
            "panel_session_hash": self.panel_session_hash,
            "legacy_participant_hash": self.legacy_participant_hash,
        }


def panel_entry_read(*, study: Study, params: Mapping[str, str]) -> PendingEntry:
    """Validate a panel link's ids (raising `InvalidPanelLink`) and key them for storage."""
    rater_audience_check(study=study, api_client=None)
    ids = parse_panel_ids(params, panel=study.panel)
    panel_format = PANEL_FORMATS[study.panel]
    if study.external_study_id and ids.study != panel_format.normalised(study.external_study_id):
        raise InvalidPanelLink(
            "This link belongs to a different study. Please go back to the panel and open this study's link "
            "from there."
        )
    keys = participant_keys(
        settings.PANEL_ID_HMAC_KEY, normalised=ids.participant, as_typed=ids.participant_as_typed
    )
    return PendingEntry(
        study_id=study.pk,
        participant_hash=keys.current,
        panel_session_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, ids.session) if ids.session else "",
        legacy_participant_hash=keys.legacy,
    )


def rater_create(
    *,
    entry: PendingEntry,
    api_client: ApiClient | None = None,
    network_fingerprint: str = "",
    honeypot: str = "",
    proof: Proof | None = None,
) -> Rater:
    """Record a consenting rater, from the website or from `api_client`. A participant who already has a
    rater in this study gets that one back. Website entries without a panel id pass the study's sybil
    friction first (`rater_entry_check`)."""
    existing = rater_for_participant(
        study_id=entry.study_id,
        participant_hash=entry.participant_hash,
        legacy_hash=entry.legacy_participant_hash,
    )
    if existing:
        if api_client is None and existing.api_client_id is not None:
            # Entered by an API client meanwhile: only that client acts for them (README, rater API).
            raise Conflict("You take part in this study through another app or site. Please continue there.")
        return existing
    study = Study.objects.select_related("tournament").get(pk=entry.study_id)
    rater_audience_check(study=study, api_client=api_client)
    fields = {"study_id": entry.study_id, "participant_hash": entry.participant_hash}
    open_entry = entry.participant_hash is None and api_client is None
    try:
        with transaction.atomic():
            if open_entry:
                rater_entry_check(
                    study=study, network_fingerprint=network_fingerprint, honeypot=honeypot, proof=proof
                )
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


def rater_entry_check(
    *, study: Study, network_fingerprint: str, honeypot: str = "", proof: Proof | None = None
) -> None:
    """Refuse an entry without a panel id that filled the consent form's hidden field, that does not carry
    the study's proof of effort (raters.proof; `proof` None: made by the site itself, not a request), or
    that would be more than the study's `new_raters_per_network_hour` new raters from one network in the
    last hour.

    Runs inside the creating transaction with the study row locked, so concurrent entries from one
    network are counted one after another and the cap is exact.
    """
    if study.honeypot and honeypot.strip():
        raise InvalidInput(
            "This form was filled in automatically, so it was not accepted. If you are a person, please "
            "reload the page and try again."
        )
    if proof is not None:
        proof_verify(proof=proof, study_id=study.pk, bits=study.proof_of_effort_bits)
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
    arrival = api_client.audience if api_client else "human"  # tournaments.Tournament.Audience.HUMAN
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


def rater_battle_voted(*, rater_id: int) -> None:
    """Count one more voted battle in the rater's session. The battle flow calls this in the transaction
    that stores the vote."""
    Rater.objects.filter(pk=rater_id).update(battles_voted=F("battles_voted") + 1)


def rater_complete_if_done(*, rater: Rater) -> Rater:
    """Mark an admitted rater's session complete once they have voted on the study's number of battles."""
    limit = rater.study.battles_per_session
    if rater.status != Rater.Status.ADMITTED or limit is None:
        return rater
    completed = Rater.objects.filter(
        pk=rater.pk, status=Rater.Status.ADMITTED, battles_voted__gte=limit
    ).update(status=Rater.Status.COMPLETED, completed_at=timezone.now())
    if completed:
        rater.refresh_from_db()
    return rater


def rater_mark_completed(*, rater: Rater) -> None:
    """Complete the session of a rater who is still admitted (a rater whose session ended otherwise in the
    meantime keeps that outcome)."""
    Rater.objects.filter(pk=rater.pk, status=Rater.Status.ADMITTED).update(
        status=Rater.Status.COMPLETED, completed_at=timezone.now()
    )


def rater_slots_give_back(*, rater: Rater) -> None:
    """Return the rater's quota slots (their quotas have room again). The caller holds the transaction."""
    for quota_id in rater.quota_slots.order_by("quota_id").values_list("quota_id", flat=True):
        Quota.objects.filter(pk=quota_id).update(admitted=F("admitted") - 1)
    rater.quota_slots.all().delete()


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
    """Delete a rater's personal data, battles and votes, and keep an audit record of the erasure.

    The battles and votes belong to the apps above this one: they delete them on `rater_erasing`, and
    the ratings rebuild the affected tournaments from the remaining votes once this commits.
    """
    with transaction.atomic():
        rater = Rater.objects.select_for_update().get(pk=rater.pk)
        if rater.status != Rater.Status.COMPLETED:
            # A completed rater's slot stays filled: the study did collect that session.
            rater_slots_give_back(rater=rater)
        removed = Counter()
        for _receiver, counts in rater_erasing.send(sender=Rater, rater=rater):
            removed.update(counts or {})
        record = ErasureRecord.objects.create(
            rater_public_id=rater.public_id,
            study=rater.study,
            erased_by=erased_by,
            votes_removed=removed["votes"],
            battles_removed=removed["battles"],
        )
        rater.delete()
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
    keys, session_hash = _api_participant_hashes(client, participant_id, session_id)
    participant_hash = keys.current
    existing = rater_for_participant(
        study_id=study.pk, participant_hash=participant_hash, legacy_hash=keys.legacy
    )
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


def _api_participant_hashes(
    client: ApiClient, participant_id: str, session_id: str
) -> tuple[ParticipantKeys, str]:
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
    keys = participant_keys(key, normalised=panel_format.normalised(participant_id), as_typed=participant_id)
    session_hash = keyed_hash(key, panel_format.normalised(session_id)) if session_id else ""
    return keys, session_hash


def _own_rater(rater: Rater, client: ApiClient) -> Rater:
    """A participant takes part once per study: one who came another way (the website or another client)
    is not handed to this client."""
    if rater.api_client_id != client.pk:
        raise Conflict("This participant already takes part in this study another way.")
    return rater


def rater_restore(*, rater: Rater, staff: str) -> bool:
    """Put a rater the rigging check held out back on published boards, in one step: the boards are
    refitted after commit, and the automatic check never holds this rater out again. Returns whether
    anything changed."""
    restored = Rater.objects.filter(pk=rater.pk, held_out_at__isnull=False).update(
        held_out_at=None, restored_by=staff[:150]
    )
    if restored:
        logger.info("rater %s restored to published boards by %s", rater.public_id, staff)
        enqueue_on_commit("leaderboard.tasks.publish_fits_for", rater.study.tournament_id)
    return bool(restored)


@dataclass(frozen=True)
class ReconcileSummary:
    """What one upload of a panel export did: counts only, never an id (it goes to the audit trail)."""

    reconciled: int
    unmatched: int
    already: int
    not_approved: int
    bad_line_count: int
    bad_lines: tuple[int, ...] = ()

    def as_audit(self) -> dict[str, int]:
        return {
            "reconciled": self.reconciled,
            "unmatched": self.unmatched,
            "already_reconciled": self.already,
            "not_approved": self.not_approved,
            "bad_lines": self.bad_line_count,
        }


# Participants looked up per query: keeps the IN list of hashes short on an export of many thousands.
RECONCILE_BATCH = 1000


def panel_export_reconcile(*, study: Study, lines: Iterable[str]) -> ReconcileSummary:
    """Stamp `reconciled_at` on the study's raters whom the panel's export (read line by line) lists as
    approved. Participants are matched by the keyed hash their links are stored under, so no raw id is kept.
    Uploading the same export again changes nothing. Where the study counts only reconciled raters, the
    boards are refitted after commit."""
    try:
        export = panel_export_read(lines, panel=study.panel)
    except InvalidPanelExport as exc:
        raise InvalidInput(str(exc)) from None
    key, panel_format = settings.PANEL_ID_HMAC_KEY, PANEL_FORMATS[study.panel]
    reconciled = unmatched = already = 0
    now = timezone.now()
    with transaction.atomic():
        for start in range(0, len(export.approved), RECONCILE_BATCH):
            keys = [
                participant_keys(key, normalised=panel_format.normalised(value), as_typed=value)
                for value in export.approved[start : start + RECONCILE_BATCH]
            ]
            stamped = dict(
                Rater.objects.filter(
                    study=study, participant_hash__in=[h for k in keys for h in k.all]
                ).values_list("participant_hash", "reconciled_at")
            )
            to_stamp = []
            for participant in keys:
                found = [h for h in participant.all if h in stamped]
                if not found:
                    unmatched += 1
                elif any(stamped[h] is not None for h in found):
                    already += 1
                else:
                    to_stamp.extend(found)
            done = Rater.objects.filter(
                study=study, participant_hash__in=to_stamp, reconciled_at__isnull=True
            ).update(reconciled_at=now)
            # A concurrent upload may have stamped some of them first.
            reconciled += done
            already += len(to_stamp) - done
        if reconciled and study.count_only_reconciled:
            enqueue_on_commit("leaderboard.tasks.publish_fits_for", study.tournament_id)
    return ReconcileSummary(
        reconciled=reconciled,
        unmatched=unmatched,
        already=already,
        not_approved=export.not_approved,
        bad_line_count=export.bad_line_count,
        bad_lines=tuple(export.bad_lines),
    )
