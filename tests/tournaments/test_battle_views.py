import re

import pytest

from tests.conftest import CAST, admitted_rater, client_for
from tests.helpers import chat, chat_turns, verdict
from tournaments.models import Battle, Vote
from tournaments.services import battle_start

pytestmark = pytest.mark.django_db


def identity_strings(battle: Battle) -> list[str]:
    return [s for m in (battle.model_a, battle.model_b) for s in (m.name, m.slug, m.maker)]


def test_it_shows_the_battle_as_model_a_and_model_b_only(rater, rater_client):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    page = rater_client.get(f"/battle/{battle.public_id}/")
    fragment = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true")
    assert b"Model A" in page.content and b"Your verdict" in page.content
    for response in (page, fragment):
        text = response.content.decode() + str(response.headers)
        for secret in identity_strings(battle) + [c["name"] for c in CAST]:
            assert secret not in text


def test_it_returns_just_the_battle_fragment_to_htmx(rater, rater_client):
    battle = battle_start(rater=rater)
    response = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true")
    assert response.content.decode().lstrip().startswith('<div id="battle-body"')
    assert b"<html" not in response.content


def test_it_polls_while_models_are_writing_and_stops_when_both_are_done(rater, rater_client):
    battle = battle_start(rater=rater)
    response = rater_client.post(
        f"/battle/{battle.public_id}/turn/", {"message": "Plan a week of dinners"}, HTTP_HX_REQUEST="true"
    )
    assert b'hx-trigger="every 1s"' in response.content
    assert b"Model A is writing" in response.content
    from tournaments.models import Reply
    from tournaments.services import reply_generate

    for reply in Reply.objects.all():
        reply_generate(reply_id=reply.pk)
    done = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true")
    assert b"every 1s" not in done.content
    assert b"Plan a week of dinners" in done.content


def test_it_shows_a_reply_only_when_both_sides_are_done(rater, rater_client):
    from tournaments.models import Reply
    from tournaments.services import reply_generate, turn_submit

    battle = battle_start(rater=rater)
    turn = turn_submit(battle=battle, message="Which is faster?")
    reply_generate(reply_id=Reply.objects.get(turn=turn, side="a").pk)
    page = rater_client.get(f"/battle/{battle.public_id}/").content.decode()
    assert "Model A is writing" in page and "Model B is writing" in page
    assert Reply.objects.get(side="a").content not in page


def test_it_escapes_what_the_rater_types(rater, rater_client):
    battle = battle_start(rater=rater)
    chat(battle, '<script>alert("x")</script> How should a web page show text like this safely?')
    page = rater_client.get(f"/battle/{battle.public_id}/").content.decode()
    assert '<script>alert("x")</script>' not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_it_shows_a_too_long_message_error_in_the_error_slot_for_htmx(rater, rater_client, tournament):
    battle = battle_start(rater=rater)
    response = rater_client.post(
        f"/battle/{battle.public_id}/turn/", {"message": "x" * 5000}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 400
    assert response.headers["HX-Retarget"] == "#errors"
    assert b"Message too long" in response.content


def test_it_hides_other_raters_battles(rater, study):
    battle = battle_start(rater=rater)
    intruder = client_for(admitted_rater(study))
    assert intruder.get(f"/battle/{battle.public_id}/").status_code == 404
    assert intruder.post(f"/battle/{battle.public_id}/turn/", {"message": "hi"}).status_code == 404
    assert intruder.post(f"/battle/{battle.public_id}/vote/", verdict(battle)).status_code == 404
    assert battle.turns.count() == 0


def test_it_reveals_names_after_the_vote_and_offers_another_battle(rater, rater_client):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    response = rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle, "b"), follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/battle/{battle.public_id}/reveal/"
    assert re.search(rf'data-testid="model-a-name">{battle.model_a.name}<', page)
    assert re.search(rf'data-testid="model-b-name">{battle.model_b.name}<', page)
    assert "Start another battle" in page
    following = rater_client.post("/battle/next/")
    assert following.status_code == 302
    assert Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).count() == 1


def test_it_answers_a_changed_vote_with_409(rater, rater_client):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle, "a"))
    again = rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle, "a"))
    changed = rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle, "tie"))
    assert again.status_code == 302
    assert changed.status_code == 409
    assert b"already voted" in changed.content
    assert Vote.objects.count() == 1


def test_it_redirects_htmx_votes_to_the_reveal(rater, rater_client):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    response = rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle), HTTP_HX_REQUEST="true")
    assert response.headers["HX-Redirect"] == f"/battle/{battle.public_id}/reveal/"


def test_it_rejects_a_vote_without_a_csrf_token(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    client = client_for(rater)
    client.handler.enforce_csrf_checks = True
    response = client.post(f"/battle/{battle.public_id}/vote/", verdict(battle))
    assert response.status_code == 403
    assert Vote.objects.count() == 0


def test_it_stops_polling_and_explains_when_a_side_fails(rater, rater_client, fake_llm):
    from tests.fake_llm import Malformed

    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_b.api_model, Malformed("upstream says: model-x overloaded"))
    chat(battle, "How do tides work on the Atlantic coast?")
    fragment = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true").content.decode()
    assert "every 1s" not in fragment
    assert "is writing" not in fragment
    assert "set aside" in fragment and "Start a new battle" in fragment
    assert "overloaded" not in fragment and "upstream" not in fragment
