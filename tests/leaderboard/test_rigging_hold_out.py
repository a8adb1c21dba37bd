"""The rigging check acts: at each fit, raters whose verdicts move one model's standing far more than
chance are left out of published boards with a reason staff see, and staff restore them in one step."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from leaderboard.demo_votes import voted_battles_write
from leaderboard.models import FitSnapshot
from leaderboard.services import fits_publish, rigging_reason
from raters.models import Rater
from stats.rigging import Finding
from tests.helpers import study_manager
from tests.leaderboard.board_data import raters_in, votes_cast
from tournaments.models import Battle

pytestmark = pytest.mark.django_db

AGE = "us-age-18-34"


@pytest.fixture
def honest(tournament, study, groups):
    """Forty raters of ten votes each, arrived over forty hours, each on a network of their own."""
    raters = raters_in(study, AGE, count=40)
    votes_cast(tournament, raters, per_rater=10, seed=7)
    for n, rater in enumerate(raters):
        Rater.objects.filter(pk=rater.pk).update(
            created_at=timezone.now() - timedelta(hours=n + 2), network_fingerprint=f"{n:064x}"
        )
    return raters


def rigged_votes(tournament, raters, per_rater: int):
    """Each rater votes for the weakest model against the favourite, every time."""
    favourite, *_, weakest = tournament.llm_models.order_by("pk")
    overall = tournament.dimensions.get(slug="overall")
    plans = [(rater, weakest, favourite, {overall.pk: "a"}) for rater in raters for _ in range(per_rater)]
    voted_battles_write(tournament, plans, pair_probability=0.25, seconds_to_vote=60)
    return weakest


def overall_votes(tournament) -> int:
    return FitSnapshot.objects.filter(tournament=tournament, dimension__slug="overall").latest("pk").votes


def test_it_holds_a_rigging_rater_out_of_published_boards_with_the_reason(tournament, study, honest):
    (rigger,) = raters_in(study, AGE, count=1)
    weakest = rigged_votes(tournament, [rigger], per_rater=40)
    favourite = tournament.llm_models.order_by("pk").first()
    fits_publish(tournament_id=tournament.pk)
    rigger.refresh_from_db()
    assert rigger.held_out_at is not None
    # Three models: lifting the weakest over the favourite moves both; the reason names the one moved most.
    assert re.match(
        rf"Overall verdicts moved ({weakest.name} up|{favourite.name} down)( against the models ranked above "
        r"it)? far more than chance \(z = -?\d+\.\d, judged alone\)\.$",
        rigger.held_out_reason,
    )
    assert overall_votes(tournament) == 400  # the honest votes only
    assert not Rater.objects.filter(pk__in=[r.pk for r in honest], held_out_at__isnull=False).exists()


def test_it_judges_a_crowd_of_small_raters_together_with_their_network(tournament, study, honest):
    crowd = raters_in(study, AGE, count=30)
    Rater.objects.filter(pk__in=[r.pk for r in crowd]).update(network_fingerprint="f" * 64)
    rigged_votes(tournament, crowd, per_rater=2)
    fits_publish(tournament_id=tournament.pk)
    held = Rater.objects.filter(held_out_at__isnull=False)
    assert set(held.values_list("pk", flat=True)) == {r.pk for r in crowd}
    assert all("same network" in reason for reason in held.values_list("held_out_reason", flat=True))
    assert overall_votes(tournament) == 400


def test_it_shows_staff_the_reason_and_restores_and_restore_the_rater_in_one_step(
    client, tournament, study, honest, django_capture_on_commit_callbacks
):
    (rigger,) = raters_in(study, AGE, count=1)
    rigged_votes(tournament, [rigger], per_rater=40)
    fits_publish(tournament_id=tournament.pk)
    client.force_login(study_manager("curator"))
    page = client.get(f"/staff/studies/{study.slug}/quality/").content.decode()
    rigger.refresh_from_db()
    assert rigger.held_out_reason in page.replace("&#x27;", "'")
    restore = f"/staff/studies/{study.slug}/raters/{rigger.public_id}/restore/"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert client.post(restore).status_code == 302
    assert len(callbacks) == 1  # the refit, enqueued once the restore commits
    rigger.refresh_from_db()
    assert rigger.held_out_at is None and rigger.restored_by == "curator"
    fits_publish(tournament_id=tournament.pk)  # what that task runs
    assert overall_votes(tournament) == 440  # the rigger's votes count again
    rigger.refresh_from_db()
    assert rigger.held_out_at is None  # and the check leaves staff's decision alone
    assert "restored by curator" in client.get(f"/staff/studies/{study.slug}/quality/").content.decode()


def test_published_boards_leave_practice_battles_out(tournament, study, honest):
    first_battles = [Battle.objects.filter(rater=rater).order_by("pk").first().pk for rater in honest]
    Battle.objects.filter(pk__in=first_battles).update(practice=True)
    fits_publish(tournament_id=tournament.pk)
    assert overall_votes(tournament) == 400 - 40


def test_the_reason_staff_read_says_which_models_the_rater_moved_against():
    neighbours = Finding(3, 5, -6.2, "burst", over_neighbours=True)
    assert rigging_reason(neighbours, "Llama") == (
        "Overall verdicts moved Llama down against the two models ranked just above it far more than "
        "chance (z = -6.2, judged with the other raters who arrived in the same hour with others from "
        "their network)."
    )
    assert "ranked above it" in rigging_reason(Finding(3, 5, 6.0, "rater", over_above=True), "Llama")
    network = rigging_reason(Finding(3, 5, 6.0, "network"), "Llama")
    assert network.startswith("Overall verdicts moved Llama up far")
    # Its z is over the network's own spread over the models, which staff should know to read it.
    assert network.endswith(
        "(z = 6.0, judged with the other raters from the same network, against that network's own spread)."
    )
    assert rigging_reason(Finding(3, 5, 7.1, "networks"), "Llama").endswith(
        "(z = 7.1, judged with every rater behind a shared network, their network among those that "
        "pushed hardest)."
    )
    pushing = rigging_reason(Finding(3, 5, -8.4, "pushing", over_neighbours=True), "Llama")
    assert pushing.startswith("Overall verdicts moved Llama down against the two models ranked just above")
    assert pushing.endswith(
        "(z = -8.4, judged with every rater behind a shared network, their network one of unusually many "
        "that each pushed it the same way; the z is of how many did)."
    )
