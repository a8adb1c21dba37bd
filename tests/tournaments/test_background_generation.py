"""The embedded default never blocks a request on a model: generation runs in the web process's
background pool after commit, and the battle page converges to the battle's true state."""

import time

import pytest

from config.celery_app import app as celery_app
from tests.fake_llm import Delay, Malformed
from tests.helpers import next_message
from tests.workers import wait_for
from tournaments.models import Battle, Reply
from tournaments.services import battle_start


@pytest.fixture
def embedded_pool(settings):
    """Tasks as the embedded default runs them: handed to the in-process pool after commit."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.POPULUS_BACKGROUND_THREADS = 2


def send(client, battle, message=None):
    return client.post(
        f"/battle/{battle.public_id}/turn/",
        {"message": message or next_message(battle)},
        HTTP_HX_REQUEST="true",
    )


def fragment(client, battle) -> str:
    return client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true").content.decode()


def test_it_answers_send_at_once_while_both_models_write_in_the_background(
    transactional_db, embedded_pool, rater, rater_client, fake_llm
):
    battle = battle_start(rater=rater)
    for model in (battle.model_a, battle.model_b):
        fake_llm.script(model.api_model, Delay(4.0))
    started = time.monotonic()
    response = send(rater_client, battle)
    assert time.monotonic() - started < 3.0  # eager generation would take 4 s or more
    assert response.status_code == 200
    assert 'hx-trigger="every 1s"' in response.content.decode()
    assert "Model A is writing" in response.content.decode()
    wait_for(
        lambda: Reply.objects.filter(turn__battle=battle, state=Reply.State.DONE).count() == 2,
        timeout=15,
        message="both replies from the background pool",
    )
    done = fragment(rater_client, battle)
    assert "every 1s" not in done
    assert "Send to both" in done


def test_it_shows_a_void_battle_and_a_new_battle_button_without_a_reload(
    transactional_db, embedded_pool, rater, rater_client, fake_llm
):
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_b.api_model, Delay(0.5, Malformed()))
    response = send(rater_client, battle).content.decode()
    assert "every 1s" in response
    wait_for(
        lambda: Battle.objects.filter(pk=battle.pk, state=Battle.State.VOID).exists(),
        timeout=15,
        message="the battle voided by the failing side",
    )
    polled = fragment(rater_client, battle)
    assert "set aside" in polled and "Start a new battle" in polled
    assert "Send to both" not in polled and "every 1s" not in polled


def test_it_renders_the_void_when_the_battle_ended_during_the_request(
    transactional_db, settings, monkeypatch, rater, rater_client, fake_llm
):
    # Eager tasks (POPULUS_BACKGROUND_THREADS=0) void the battle inside the request, after the view loaded
    # it: the fragment must show the battle as it is, not as it was. (Celery reads its settings once, so
    # eagerness is set on the app itself.)
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)
    settings.POPULUS_BACKGROUND_THREADS = 0
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_b.api_model, Malformed())
    response = send(rater_client, battle).content.decode()
    assert Battle.objects.get(pk=battle.pk).state == Battle.State.VOID
    assert "set aside" in response and "Start a new battle" in response
    assert "Send to both" not in response


def test_it_runs_the_ratings_queue_one_task_at_a_time():
    from config.background import background_pool, task_queue

    routes = {"tournaments.tasks.*": {"queue": "llm"}, "leaderboard.tasks.*": {"queue": "ratings"}}
    assert task_queue(name="leaderboard.tasks.apply_votes", routes=routes, default="llm") == "ratings"
    assert task_queue(name="raters.tasks.judge_topic", routes=routes, default="llm") == "llm"
    assert background_pool(queue="ratings", threads=4)._max_workers == 1
    assert background_pool(queue="llm", threads=4)._max_workers == 4
