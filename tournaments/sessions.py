"""A rater's session as the battles see it: ending it early (the battle in progress is set aside), and
giving back the quota slots of raters who never voted. The people's side (`raters`) owns the statuses
and slots; whether a rater has a vote is known here."""

from datetime import timedelta

from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from config.errors import Conflict
from raters.models import Rater, Study
from raters.services import rater_complete_if_done, rater_mark_completed, rater_slots_give_back
from tournaments.models import Battle, Vote


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
        rater_slots_give_back(rater=rater)
    return True


def raters_release_abandoned() -> int:
    """Release the slots of admitted raters who have not voted within their study's abandon time."""
    now = timezone.now()
    released = 0
    for study in Study.objects.filter(raters__status=Rater.Status.ADMITTED).distinct():
        idle_since = now - timedelta(minutes=study.abandon_after_minutes)
        abandoned = study.raters.filter(status=Rater.Status.ADMITTED, admitted_at__lt=idle_since)
        released += sum(rater_release(rater=rater) for rater in abandoned)
    return released
