"""A generation worker killed with SIGKILL in the middle of a reply loses nothing and duplicates nothing."""

import pytest

from tests.fake_llm import Delay
from tests.workers import Workers, wait_for
from tournaments.models import Reply
from tournaments.services import battle_start, replies_reconcile, turn_submit

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

STALE_AFTER_SECONDS = 2


@pytest.fixture
def workers(django_db_blocker, tmp_path):
    # Replies count as abandoned after 2 s here (5 minutes in production) so the test need not wait.
    with django_db_blocker.unblock():
        started = Workers(
            tmp_path / "celery-logs", {"REPLY_STALE_AFTER_SECONDS": str(STALE_AFTER_SECONDS)}
        ).start()
    yield started
    started.stop()


def test_it_finishes_a_reply_whose_worker_was_killed_mid_request(workers, rater, fake_llm, settings):
    settings.REPLY_STALE_AFTER_SECONDS = STALE_AFTER_SECONDS
    battle = battle_start(rater=rater)
    slow_model = battle.model_a.api_model
    fake_llm.script(slow_model, Delay(30))  # the first attempt hangs until the worker dies
    turn = turn_submit(battle=battle, message="Tell me about tides.")

    wait_for(
        lambda: any(r["json"]["model"] == slow_model for r in fake_llm.requests), message="the slow request"
    )
    # The kill must catch only the slow side: a fast reply still on the wire would rightly be asked again.
    wait_for(
        lambda: Reply.objects.filter(turn=turn, side="b", state=Reply.State.DONE).exists(),
        message="the fast reply",
    )
    workers.kill("worker-llm")
    workers.restart("worker-llm")

    # The beat reconciler's job, run here once the killed claim has gone stale.
    def reconciled():
        replies_reconcile()
        return Reply.objects.filter(turn=turn, state=Reply.State.DONE).count() == 2

    wait_for(reconciled, timeout=60, interval=1, message="the reconciler to get the reply finished")
    assert Reply.objects.filter(turn=turn).count() == 2  # one row per side, never a duplicate
    calls = [r["json"]["model"] for r in fake_llm.requests]
    assert calls.count(slow_model) == 2  # the killed attempt and the one that finished
    assert calls.count(battle.model_b.api_model) == 1
    assert Reply.objects.get(turn=turn, side="a").attempts == 2
