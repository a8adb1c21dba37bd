"""The rater API against real Celery workers: replies written by the generation worker from the tasks
the API's turns enqueue, the vote applied by the ratings worker. Nothing is generated in the test."""

import time

import pytest

from leaderboard.models import AppliedVote
from tests.helpers import TASKS
from tests.tournaments.rater_api_helpers import client_with_token
from tests.workers import wait_for
from tournaments.models import Vote

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def poll_until_answered(api, battle_id: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        battle = api.get(f"battles/{battle_id}/").json()
        if not battle["waiting"]:
            return battle
        time.sleep(0.2)
    raise AssertionError(f"the replies to battle {battle_id} were not written within {timeout} s")


def test_a_client_runs_a_battle_through_the_real_workers(celery_workers, study, groups, fake_llm):
    _, api = client_with_token(study)
    rater_id = api.admitted_rater()
    battle_id = api.start(rater_id)["id"]
    for message in TASKS[0][:3]:
        assert api.post(f"battles/{battle_id}/turns/", {"message": message}).status_code == 202
        battle = poll_until_answered(api, battle_id)
        assert battle["turns"][-1]["state"] == "done" and battle["turns"][-1]["reply_b"]
    assert len(fake_llm.requests) == 6
    voted = api.vote(battle_id)
    assert voted.status_code == 200, voted.json()
    vote = Vote.objects.get(battle__public_id=battle_id)
    wait_for(
        lambda: AppliedVote.objects.filter(vote=vote).exists(), message="the ratings worker to apply the vote"
    )
