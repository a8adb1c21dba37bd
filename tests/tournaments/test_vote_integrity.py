import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection

from leaderboard.models import AppliedVote
from leaderboard.services import ratings_apply_pending
from tests.conftest import CAST, client_for
from tests.helpers import chat_turns, verdict
from tournaments.models import Vote
from tournaments.services import battle_start


@pytest.mark.django_db(transaction=True)
def test_it_stores_one_vote_for_fifty_concurrent_identical_submissions(rater, settings):
    # The per-rater vote throttle is a separate concern (tested below); here every request must reach
    # the database so that only its constraints and locks decide.
    settings.RATE_LIMIT_VOTES_PER_MINUTE = 1000
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    start = threading.Event()

    def submit(_):
        try:
            client = client_for(rater)
            start.wait()
            response = client.post(f"/battle/{battle.public_id}/vote/", verdict(battle, "b"))
            return response.status_code, response.headers.get("Location")
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=50) as pool:
        futures = [pool.submit(submit, n) for n in range(50)]
        start.set()
        results = {future.result() for future in futures}

    assert results == {(302, f"/battle/{battle.public_id}/reveal/")}
    assert Vote.objects.count() == 1
    assert ratings_apply_pending() == 1
    assert ratings_apply_pending() == 0
    assert AppliedVote.objects.count() == 1


@pytest.mark.django_db
def test_it_throttles_messages_per_rater_whatever_the_forwarded_address(rater, rater_client, settings):
    settings.RATE_LIMIT_MESSAGES_PER_MINUTE = 2
    battle = battle_start(rater=rater)
    url = f"/battle/{battle.public_id}/turn/"
    first = rater_client.post(
        url, {"message": "How do I keep basil alive on a windowsill?"}, HTTP_X_FORWARDED_FOR="10.0.0.1"
    )
    second = rater_client.post(
        url, {"message": "How often should basil be watered?"}, HTTP_X_FORWARDED_FOR="10.0.0.2"
    )
    assert (first.status_code, second.status_code) == (302, 409)  # the second waits for replies, and counts
    response = rater_client.post(
        url, {"message": "Does basil need fertiliser in pots?"}, HTTP_X_FORWARDED_FOR="10.9.9.9"
    )
    assert response.status_code == 429
    assert 1 <= int(response.headers["Retry-After"]) <= 61
    assert b"Too many messages" in response.content
    assert battle.turns.count() == 1


@pytest.mark.django_db
def test_it_keeps_model_names_out_of_error_pages_before_the_vote(rater, rater_client):
    battle = battle_start(rater=rater)
    responses = [
        rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle)),  # too early
        rater_client.post(f"/battle/{battle.public_id}/turn/", {"message": "x" * 10_000}),
        rater_client.post(
            f"/battle/{battle.public_id}/turn/",
            {"message": "How do I keep basil alive on a windowsill?"},
            HTTP_HX_REQUEST="true",
        ),
        rater_client.post(
            f"/battle/{battle.public_id}/turn/",
            {"message": "How often should basil be watered?"},
            HTTP_HX_REQUEST="true",
        ),
    ]
    assert [r.status_code for r in responses] == [409, 400, 200, 409]
    for response in responses:
        text = response.content.decode() + str(response.headers)
        for model in CAST:
            for value in model.values():
                assert value not in text


@pytest.mark.django_db
def test_a_choice_is_indexed_by_its_vote_once_through_the_one_per_dimension_constraint():
    # Imports write millions of choices: each index entry costs. The constraint's (vote, dimension) index
    # serves every lookup by vote, so there is no index on the vote alone.
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'tournaments_votechoice'")
        definitions = [row[0] for row in cursor.fetchall()]
    assert any("(vote_id, dimension_id)" in d and "UNIQUE" in d for d in definitions)
    assert not any(d.endswith("(vote_id)") for d in definitions)
