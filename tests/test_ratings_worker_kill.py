"""The ratings worker killed between reading and committing: the vote is applied exactly once."""

import psycopg
import pytest
from django.db import connection

from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_replay
from leaderboard.tasks import reconcile_ratings
from tests.workers import Workers, voted_battle_through_workers, wait_for

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def workers(django_db_blocker, tmp_path):
    with django_db_blocker.unblock():
        started = Workers(tmp_path / "celery-logs").start()
    yield started
    started.stop()


def database_dsn() -> str:
    db = connection.settings_dict
    return f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} user={db['USER']} dbname={db['NAME']}"


def waiting_on_a_lock(dsn: str) -> bool:
    with psycopg.connect(dsn) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row[0] > 0


def ratings_table():
    fields = ["dimension_id", "group_id", "model_id", "mu", "sigma", "wins", "losses", "ties"]
    return sorted(Rating.objects.values_list(*fields), key=lambda row: (row[0], row[1] or 0, row[2]))


def test_a_vote_whose_worker_died_mid_update_is_applied_exactly_once(workers, rater, fake_llm):
    _, first = voted_battle_through_workers(rater, "a")
    wait_for(lambda: AppliedVote.objects.filter(vote=first).exists(), message="the first vote")

    # Hold a rating row the next vote needs, so the worker stops inside its transaction, after reading.
    dsn = database_dsn()
    blocker = psycopg.connect(dsn)
    blocker.execute("SELECT 1 FROM leaderboard_rating FOR UPDATE")
    _, second = voted_battle_through_workers(rater, "b")
    wait_for(lambda: waiting_on_a_lock(dsn), message="the ratings worker to block mid-update")

    workers.kill("worker-ratings")
    blocker.rollback()
    blocker.close()
    assert not AppliedVote.objects.filter(vote=second).exists()  # its transaction died with it

    workers.restart("worker-ratings")
    reconcile_ratings.delay()  # what beat does every minute
    wait_for(lambda: AppliedVote.objects.filter(vote=second).exists(), message="the reconciler")
    assert AppliedVote.objects.count() == 2
    applied = ratings_table()
    ratings_replay(tournament_id=rater.study.tournament_id)
    assert ratings_table() == applied  # exactly once: the same as rebuilding from the log
