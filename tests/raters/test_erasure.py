import pytest
from django.core.management import CommandError, call_command

from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_apply_pending, ratings_replay
from raters.models import ErasureRecord, Group, Quota, QuotaSlot, Rater
from raters.services import quota_set, rater_erase
from tests.conftest import admitted_rater
from tests.helpers import voted_battle
from tournaments.models import Battle, Vote

pytestmark = pytest.mark.django_db


def ratings_table():
    fields = ["dimension_id", "group_id", "model_id", "mu", "sigma", "wins", "losses", "ties"]
    return sorted(Rating.objects.values_list(*fields), key=lambda row: (row[0], row[1] or 0, row[2]))


def test_replay_rebuilds_the_same_ratings_as_the_live_updates(study, groups):
    for outcome in ("a", "b", "tie", "a"):
        voted_battle(admitted_rater(study), outcome)
    ratings_apply_pending()
    live = ratings_table()
    assert ratings_replay(tournament_id=study.tournament_id) == 4
    assert ratings_table() == live


def test_it_erases_a_rater_and_rebuilds_ratings_without_their_votes(
    study, groups, django_capture_on_commit_callbacks
):
    keep, erase = admitted_rater(study), admitted_rater(study)
    voted_battle(keep, "a")
    voted_battle(erase, "b")
    voted_battle(erase, "tie")
    ratings_apply_pending()

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        record = rater_erase(rater=erase, erased_by="staff")
    assert len(callbacks) == 1  # the replay task, enqueued once the erasure commits
    assert (record.votes_removed, record.battles_removed, record.erased_by) == (2, 2, "staff")
    assert not Rater.objects.filter(pk=erase.pk).exists()
    assert Vote.objects.count() == 1 and Battle.objects.filter(rater_id=erase.pk).count() == 0

    ratings_replay(tournament_id=study.tournament_id)  # what the task runs
    after_erasure = ratings_table()
    Rating.objects.all().delete()
    AppliedVote.objects.all().delete()
    ratings_apply_pending()
    assert after_erasure == ratings_table()


def test_it_gives_back_the_slot_of_a_rater_erased_mid_study(study, groups):
    quota = quota_set(study=study, groups=[Group.objects.get(slug="us-age-18-34")], target=1)
    rater = admitted_rater(study)
    rater_erase(rater=rater, erased_by="staff")
    quota.refresh_from_db()
    assert quota.admitted == 0
    assert QuotaSlot.objects.count() == 0
    assert admitted_rater(study).status == Rater.Status.ADMITTED
    assert Quota.objects.get().admitted == 1


def test_it_erases_from_the_command_line(study, groups, capsys):
    rater = admitted_rater(study)
    call_command("erase_rater", str(rater.public_id))
    assert f"Erased rater {rater.public_id}" in capsys.readouterr().out
    assert ErasureRecord.objects.get().erased_by == "command"
    with pytest.raises(CommandError, match="No rater has the id"):
        call_command("erase_rater", "not-a-uuid")
