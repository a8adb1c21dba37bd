"""A reply that stops at the token limit is shown, marked as cut off, and stays votable by default (voiding
it would keep only the battles in which a long-winded model happened to be brief); a tournament can keep
the old "void" rule. Void and cut-off rates per model are public."""

import re

import pytest

from tests.fake_llm import Malformed, Reply, Truncated
from tests.helpers import chat, chat_turns, verdict
from tests.test_providers import MODEL, config_for
from tournaments.models import Battle, Tournament
from tournaments.models import Reply as StoredReply
from tournaments.providers import ChatMessage, Completion, generate
from tournaments.services import battle_start, vote_submit

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("stream", [True, False])
def test_it_returns_a_reply_cut_at_the_token_limit_marked_as_cut_off(fake_llm, stream):
    fake_llm.script(MODEL, Truncated("A long answer that stops in the"), Reply("A whole answer."))
    config = config_for(fake_llm, stream=stream)
    ask = [ChatMessage("user", "Hello")]
    assert generate(config, ask) == Completion("A long answer that stops in the", cut_off=True)
    assert generate(config, ask) == Completion("A whole answer.", cut_off=False)


def test_it_shows_a_cut_off_reply_with_a_marker_and_keeps_the_battle_votable(rater, rater_client, fake_llm):
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_a.api_model, Truncated("Basil wants sun, water and"))
    chat(battle)
    reply = StoredReply.objects.get(turn__battle=battle, side="a")
    assert (reply.state, reply.cut_off, reply.content) == ("done", True, "Basil wants sun, water and")
    assert not StoredReply.objects.get(turn__battle=battle, side="b").cut_off
    page = rater_client.get(f"/battle/{battle.public_id}/").content.decode()
    assert page.count("Cut off at the length limit") == 1
    a_side = re.search(r'data-side="a".*?</div>\s*</div>', page, re.S).group(0)
    assert "Cut off at the length limit" in a_side
    chat_turns(battle, 2)
    vote_submit(battle=battle, choices=verdict(battle))
    assert Battle.objects.get(pk=battle.pk).state == Battle.State.VOTED


def test_it_voids_the_battle_on_a_cut_off_reply_when_the_tournament_says_so(rater, tournament, fake_llm):
    Tournament.objects.filter(pk=tournament.pk).update(cut_off_replies=Tournament.CutOffReplies.VOID)
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_b.api_model, Truncated())
    chat(battle)
    battle.refresh_from_db()
    assert battle.state == Battle.State.VOID
    failed = StoredReply.objects.get(turn__battle=battle, side="b")
    assert failed.state == "failed" and failed.error.startswith("truncated")


def test_it_publishes_void_and_cut_off_rates_per_model(rater, client, tournament, fake_llm):
    first = battle_start(rater=rater)
    fake_llm.script(first.model_a.api_model, Truncated("Cut short"))
    chat_turns(first, 3)
    vote_submit(battle=first, choices=verdict(first))
    second = battle_start(rater=rater)
    fake_llm.script(second.model_b.api_model, Malformed())
    chat(second)
    assert Battle.objects.get(pk=second.pk).state == Battle.State.VOID

    long_winded = first.model_a
    detail = client.get(f"/api/v1/models/{long_winded.slug}/?tournament={tournament.slug}").json()
    reliability = detail["reliability"]
    # In the void battle, side A answered before side B failed.
    assert reliability["cut_off"] == 1
    assert reliability["replies"] == 3 + (long_winded.pk == second.model_a_id)
    assert reliability["cut_off_rate"] == pytest.approx(1 / reliability["replies"])
    voided = 1 if long_winded.pk in (second.model_a_id, second.model_b_id) else 0
    assert (reliability["battles"], reliability["void"]) == (1 + voided, voided)

    page = client.get(
        f"/leaderboard/models/{long_winded.slug}/?tournament={tournament.slug}"
    ).content.decode()
    line = re.sub(r"<[^>]+>|\s+", " ", re.search(r'data-testid="model-reliability".*?</p>', page, re.S)[0])
    assert f"Replies cut off at the length limit: {1 / reliability['replies']:.0%}" in re.sub(
        r" +", " ", line
    )

    methodology = client.get(f"/leaderboard/methodology/?tournament={tournament.slug}").content.decode()
    table = re.search(r'data-testid="reliability".*?</table>', methodology, re.S)[0]
    for model in (second.model_a, second.model_b):
        row = re.search(rf"<th scope=\"row\">{model.name}</th>(.*?)</tr>", table, re.S)[1]
        cells = re.findall(r"<td>(.*?)</td>", row)
        assert cells[1] == ("50%" if model.pk in (first.model_a_id, first.model_b_id) else "100%")
