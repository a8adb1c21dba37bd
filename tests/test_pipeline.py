"""The vote → rating path through real Celery workers consuming from real Redis (no eager mode)."""

import pytest

from leaderboard.models import AppliedVote, Rating
from leaderboard.tasks import apply_votes
from tests.helpers import verdict
from tests.workers import chat_through_workers, wait_for
from tournaments.models import Battle, Reply
from tournaments.services import battle_start, turn_submit, vote_submit

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_it_generates_replies_and_applies_the_vote_in_real_workers(celery_workers, rater, fake_llm):
    battle = battle_start(rater=rater)
    for _ in range(3):
        chat_through_workers(battle)
    assert len(fake_llm.requests) == 6
    assert Reply.objects.filter(content__startswith="Reply from").count() == 6

    vote = vote_submit(battle=battle, choices=verdict(battle, "a"))
    wait_for(
        lambda: AppliedVote.objects.filter(vote=vote).exists(), message="the ratings worker to apply the vote"
    )
    populations = 1 + rater.groups.count()
    assert Rating.objects.count() == 5 * populations * 2
    overall = Rating.objects.get(dimension__slug="overall", group=None, model=battle.model_a)
    assert overall.wins == 1

    # A redelivered task must change nothing. The ratings queue has one consumer taking one task at a
    # time, so once a later vote is applied the duplicate has been handled too.
    apply_votes.delay(vote.pk)
    later = battle_start(rater=rater)
    for _ in range(3):
        chat_through_workers(later)
    later_vote = vote_submit(battle=later, choices=verdict(later, "tie"))
    wait_for(lambda: AppliedVote.objects.filter(vote=later_vote).exists(), message="the later vote")
    pooled_overall = Rating.objects.filter(dimension__slug="overall", group=None)
    assert sum(r.battles for r in pooled_overall) == 4  # two votes, two models each: nothing applied twice
    assert AppliedVote.objects.count() == 2


def test_it_marks_a_failed_side_and_sets_the_battle_aside(celery_workers, rater, fake_llm):
    from tests.fake_llm import Malformed

    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_a.api_model, Malformed())
    turn_submit(battle=battle, message="How do tides work on the Atlantic coast?")
    wait_for(
        lambda: Battle.objects.get(pk=battle.pk).state == Battle.State.VOID, message="the battle to be voided"
    )
    assert Reply.objects.get(side="a").state == Reply.State.FAILED


def test_it_reports_healthy_when_database_redis_and_both_workers_are_up(celery_workers, client):
    response = client.get("/healthz")
    assert response.status_code == 200, response.json()
    assert {name: check["ok"] for name, check in response.json()["checks"].items()} == {
        "database": True,
        "redis": True,
        "worker": True,
    }
