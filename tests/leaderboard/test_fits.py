"""Publishing the batch fit: snapshots of every board, from the counted votes only."""

import itertools
import random

import pytest

from leaderboard.models import FitScore, FitSnapshot
from leaderboard.services import fits_publish
from raters.models import Rater
from stats.summaries import shared_ranks
from tests.conftest import admitted_rater
from tournaments.models import Battle, Vote
from tournaments.quality import rater_exclude_by_staff

pytestmark = pytest.mark.django_db

AGES = ["us-age-18-34", "us-age-35-54", "us-age-55-plus"]
ETHNICITIES = ["us-ethnicity-asian", "us-ethnicity-black", "us-ethnicity-white", "us-ethnicity-other"]
POLITICS = ["us-politics-democrat", "us-politics-republican", "us-politics-independent"]


def cast(rater, model_a, model_b, outcomes: dict[str, str]) -> Vote:
    """A voted battle written straight to the log (the chat itself does not matter to the fit)."""
    battle = Battle.objects.create(
        tournament=rater.study.tournament,
        rater=rater,
        model_a=model_a,
        model_b=model_b,
        pair_probability=1 / 6,
        state=Battle.State.VOTED,
    )
    vote = Vote.objects.create(battle=battle, seconds_to_vote=60)
    for dimension in rater.study.tournament.dimensions.all():
        vote.choices.create(dimension=dimension, outcome=outcomes.get(dimension.slug, "tie"))
    return vote


@pytest.fixture
def voting_sample(study, groups, tournament):
    """A US rater in every cell of the census axes; the first model usually wins Overall."""
    rng = random.Random(7)
    models = list(tournament.llm_models.order_by("pk"))
    raters = []
    for age, ethnicity, politics in itertools.product(AGES, ETHNICITIES, POLITICS):
        rater = admitted_rater(study, answers={"age": age, "ethnicity": ethnicity, "politics": politics})
        raters.append(rater)
        for _ in range(4):
            a, b = rng.sample(models, 2)
            favourite_wins = rng.random() < 0.8
            winner = "a" if (a == models[0]) == favourite_wins else "b"
            cast(rater, a, b, {"overall": winner if rng.random() > 0.1 else "tie"})
    return raters


def test_it_publishes_a_snapshot_per_dimension_with_pooled_and_group_boards(voting_sample, tournament):
    snapshots = fits_publish(tournament_id=tournament.pk)
    assert {s.dimension.slug for s in snapshots} == set(tournament.dimensions.values_list("slug", flat=True))
    overall = FitSnapshot.objects.get(dimension__slug="overall")
    assert overall.votes == 36 * 4
    assert "raked to census margins" in overall.settings["pooled"]
    pooled = list(FitScore.objects.filter(snapshot=overall, group=None).order_by("-score"))
    assert pooled[0].model == tournament.llm_models.order_by("pk").first()
    for score in pooled:
        assert score.score_low <= score.score <= score.score_high
        assert 1 <= score.rank_low <= score.rank_high <= 3
    assert sum(s.p_best for s in pooled) == pytest.approx(1.0)
    group_boards = FitScore.objects.filter(snapshot=overall, group__isnull=False)
    assert group_boards.values("group").distinct().count() == 3 + 4 + 3
    assert overall.tie_parameter > 0


def test_it_leaves_out_votes_of_excluded_raters_and_flagged_battles(voting_sample, tournament):
    rater_exclude_by_staff(rater=voting_sample[0], staff="ana", reason="Random answers.")
    Battle.objects.filter(rater=voting_sample[1]).update(flagged_reason="Model A named itself.")
    fits_publish(tournament_id=tournament.pk)
    assert FitSnapshot.objects.get(dimension__slug="overall").votes == 34 * 4


def test_it_keeps_history_and_says_when_the_census_cannot_be_matched(study, groups, tournament):
    rater = admitted_rater(study)  # one cell only: most census categories have nobody in the sample
    models = list(tournament.llm_models.order_by("pk"))
    for _ in range(5):
        cast(rater, models[0], models[1], {"overall": "a"})
    fits_publish(tournament_id=tournament.pk)
    fits_publish(tournament_id=tournament.pk)
    assert FitSnapshot.objects.filter(dimension__slug="overall").count() == 2
    assert "sample weights (census not matchable" in FitSnapshot.objects.first().settings["pooled"]
    assert Rater.objects.count() == 1


def test_the_benchmark_command_prints_every_figure_as_json(capsys):
    import json

    from django.core.management import call_command

    call_command("bench", "ratings", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    for key in (
        "replay_speedup",
        "replay_max_abs_diff",
        "fit_seconds",
        "fit_speedup",
        "fit_max_abs_diff",
        "coverage",
    ):
        assert key in figures
    assert figures["replay_max_abs_diff"] < 1e-6
    assert 0 <= figures["coverage"] <= 1


def test_it_publishes_a_tournaments_boards_from_the_admin(client, voting_sample, tournament, monkeypatch):
    """The staff action on "Tournaments' boards" fits and publishes every dimension of the tournament."""
    from django.contrib.auth import get_user_model

    from config.celery_app import app as celery_app

    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)  # run the task here, not in a worker
    admin = get_user_model().objects.create_superuser("boss", password="x")
    client.force_login(admin)
    response = client.post(
        "/staff/admin/leaderboard/tournamentboards/",
        {"action": "publish_fits", "_selected_action": [tournament.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "Publishing started for 1 tournament(s)." in response.content.decode()
    assert FitSnapshot.objects.filter(tournament=tournament).count() == tournament.dimensions.count()


def _overall(snapshots):
    return next(snapshot for snapshot in snapshots if snapshot.dimension.slug == "overall")


def _ranks(snapshot, **board) -> dict:
    return dict(FitScore.objects.filter(snapshot=snapshot, **board).values_list("model_id", "rank"))


def test_a_published_rank_rises_from_the_previous_snapshots_only_past_the_margin(
    voting_sample, tournament, settings
):
    overall = _overall(fits_publish(tournament_id=tournament.pk))
    plain = _ranks(overall, group=None)
    assert sorted(plain.values())[0] == 1
    assert overall.settings["rank_margin"] == settings.POPULUS_RANK_MARGIN_PERCENT / 100
    # Say the pooled board had shown every model last (of 3) and one group's board did not exist.
    FitScore.objects.filter(snapshot=overall, group=None).update(rank=3)
    group_id = FitScore.objects.filter(snapshot=overall, group__isnull=False).values("group")[:1]
    FitScore.objects.filter(snapshot=overall, group__in=group_id).delete()
    # With a margin wider than any gap, no model rises from where it was...
    settings.POPULUS_RANK_MARGIN_PERCENT = 10_000
    second = _overall(fits_publish(tournament_id=tournament.pk))
    assert set(_ranks(second, group=None).values()) == {3}
    # ...and a board with no ranks before gets the plain interval rule.
    group_ranks = _ranks(second, group__in=group_id)
    scores = FitScore.objects.filter(snapshot=second, group__in=group_id).order_by("model_id")
    expected = shared_ranks([s.score_low for s in scores], [s.score_high for s in scores])
    assert [group_ranks[s.model_id] for s in scores] == expected.tolist()
    # With no margin, every board follows the plain rule again.
    settings.POPULUS_RANK_MARGIN_PERCENT = 0
    third = _overall(fits_publish(tournament_id=tournament.pk))
    scores = FitScore.objects.filter(snapshot=third, group=None).order_by("model_id")
    expected = shared_ranks([s.score_low for s in scores], [s.score_high for s in scores])
    assert [s.rank for s in scores] == expected.tolist()
