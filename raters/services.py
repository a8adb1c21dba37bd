from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from config.errors import InvalidInput
from raters.defaults import OPTIONAL_AXES, default_groups
from raters.models import Axis, Country, Group, Rater, Study
from raters.panel import keyed_hash, parse_panel_ids
from raters.selectors import rater_for_participant


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
    ids = parse_panel_ids(params)
    return PendingEntry(
        study_id=study.pk,
        participant_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, ids.participant),
        panel_session_hash=keyed_hash(settings.PANEL_ID_HMAC_KEY, ids.session) if ids.session else "",
    )


def rater_create(*, entry: PendingEntry) -> Rater:
    """Record a consenting rater. A participant who already has a rater in this study gets that one back."""
    existing = rater_for_participant(study_id=entry.study_id, participant_hash=entry.participant_hash)
    if existing:
        return existing
    fields = {"study_id": entry.study_id, "participant_hash": entry.participant_hash}
    try:
        with transaction.atomic():
            return Rater.objects.create(
                **fields,
                source=Rater.Source.OPEN if entry.participant_hash is None else Rater.Source.PANEL,
                panel_session_hash=entry.panel_session_hash,
                consented_at=timezone.now(),
            )
    except IntegrityError:
        # The same participant consented in two tabs at once; the database kept one rater.
        return Rater.objects.get(**fields)


def rater_screen(*, rater: Rater, country: str, answers: Mapping[str, str]) -> Rater:
    """Store the screener's answers: one group per axis, or none where the rater preferred not to say."""
    if country not in Country.values:
        raise InvalidInput("Please choose the country you live in.")
    chosen = []
    for axis in Axis.values:
        slug = answers.get(axis, "")
        if not slug:
            if axis not in OPTIONAL_AXES:
                raise InvalidInput(f"Please answer the question about your {Axis(axis).label.lower()}.")
            continue
        group = Group.objects.filter(slug=slug, country=country, axis=axis).first()
        if group is None:
            raise InvalidInput(
                f"That answer about your {Axis(axis).label.lower()} is not one of the options."
            )
        chosen.append(group)
    with transaction.atomic():
        rater.country = country
        rater.screened_at = timezone.now()
        rater.save(update_fields=["country", "screened_at"])
        rater.groups.set(chosen)
    return rater


def groups_ensure_defaults() -> int:
    """Create any of the 22 default groups that are missing. Returns how many were created."""
    created = 0
    for fields in default_groups():
        _, was_created = Group.objects.get_or_create(slug=fields["slug"], defaults=fields)
        created += was_created
    return created
