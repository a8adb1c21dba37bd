from collections import Counter

import pytest

from config.errors import Conflict, InvalidInput
from tests.conftest import admitted_rater
from tests.helpers import chat, chat_turns, verdict, voted_battle
from tournaments.models import Battle, Reply, Turn, Vote
from tournaments.services import battle_start, reply_generate, turn_submit, vote_submit

pytestmark = pytest.mark.django_db


def test_it_starts_a_battle_between_two_different_tournament_models(rater, tournament):
    battle = battle_start(rater=rater)
    assert battle.model_a != battle.model_b
    assert {battle.model_a, battle.model_b} <= set(tournament.llm_models.all())
    # With no votes yet no pair is favoured much: three pairs, two orders each.
    assert 1 / 12 < battle.pair_probability < 1 / 3


def test_it_returns_the_battle_in_progress_instead_of_opening_a_second(rater):
    assert battle_start(rater=rater) == battle_start(rater=rater)
    assert Battle.objects.count() == 1


def test_it_randomises_positions_and_avoids_repeating_a_pair_for_a_rater(study, groups):
    sides = Counter()
    for _ in range(60):
        rater = admitted_rater(study)
        seen = set()
        for _ in range(3):  # three models make three pairs: a rater meets each once
            battle = battle_start(rater=rater)
            pair = frozenset((battle.model_a_id, battle.model_b_id))
            assert pair not in seen
            seen.add(pair)
            sides[battle.model_a.slug] += 1
            Battle.objects.filter(pk=battle.pk).update(state=Battle.State.VOID)
    # Each model is Model A in about a third of 180 battles; a fixed order would put one at 0 or 120.
    assert all(30 <= count <= 90 for count in sides.values()), sides


def test_it_refuses_to_start_without_two_active_models(rater, tournament):
    tournament.llm_models.update(is_active=False)
    with pytest.raises(Conflict, match="fewer than two models"):
        battle_start(rater=rater)


def test_it_enqueues_generation_only_after_commit(rater, django_capture_on_commit_callbacks):
    battle = battle_start(rater=rater)
    with django_capture_on_commit_callbacks() as callbacks:
        turn_submit(battle=battle, message="How do I keep basil alive on a windowsill?")
    assert len(callbacks) == 2
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(InvalidInput):
        turn_submit(battle=battle, message="   ")
    assert callbacks == []


def test_it_sends_each_side_its_own_history(rater, fake_llm):
    battle = battle_start(rater=rater)
    chat(battle, "How do I keep basil alive on a windowsill?")
    chat(battle, "How often should basil be watered?")
    last_a = [r for r in fake_llm.requests if r["json"]["model"] == battle.model_a.api_model][-1]["json"]
    first_reply_a = Reply.objects.get(turn__index=0, side="a").content
    assert [m["content"] for m in last_a["messages"]] == [
        "How do I keep basil alive on a windowsill?",
        first_reply_a,
        "How often should basil be watered?",
    ]
    assert [m["role"] for m in last_a["messages"]] == ["user", "assistant", "user"]


def test_it_refuses_a_second_message_while_replies_are_pending(rater):
    battle = battle_start(rater=rater)
    turn_submit(battle=battle, message="How do I keep basil alive on a windowsill?")
    with pytest.raises(Conflict, match="wait until both models have answered"):
        turn_submit(battle=battle, message="And how much light does basil need?")
    assert Turn.objects.count() == 1


def test_it_refuses_messages_over_the_length_limit_without_calling_a_model(rater, fake_llm, tournament):
    battle = battle_start(rater=rater)
    with pytest.raises(InvalidInput, match="Message too long"):
        turn_submit(battle=battle, message="x" * (tournament.max_message_chars + 1))
    assert Turn.objects.count() == 0
    assert fake_llm.requests == []


def test_it_stops_at_the_turn_limit(rater, tournament):
    tournament.max_turns = 3
    tournament.save()
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    with pytest.raises(InvalidInput, match="limit of 3 turns"):
        turn_submit(battle=battle, message="One more question about basil seeds?")


def test_it_generates_a_reply_once_however_often_the_task_runs(rater, fake_llm):
    battle = battle_start(rater=rater)
    chat(battle)
    reply = Reply.objects.first()
    reply_generate(reply_id=reply.pk)
    assert len(fake_llm.requests) == 2
    assert Reply.objects.get(pk=reply.pk).attempts == 1


def test_it_voids_the_battle_when_a_side_fails_and_never_switches_model(rater, fake_llm):
    from tests.fake_llm import Status

    battle = battle_start(rater=rater)
    fake_llm.script(
        battle.model_b.api_model, Status(500), Status(500), Status(500)
    )  # retried twice, then lost
    chat(battle)
    battle.refresh_from_db()
    assert battle.state == Battle.State.VOID
    failed = Reply.objects.get(side="b")
    assert failed.state == Reply.State.FAILED and failed.error.startswith("http_500")
    assert {r["json"]["model"] for r in fake_llm.requests} == {
        battle.model_a.api_model,
        battle.model_b.api_model,
    }
    with pytest.raises(Conflict, match="set aside"):
        vote_submit(battle=battle, choices=verdict(battle))


def test_it_unlocks_the_vote_only_after_the_minimum_turns(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 2)
    with pytest.raises(Conflict, match="at least 3 turns"):
        vote_submit(battle=battle, choices=verdict(battle))
    chat(battle)
    vote = vote_submit(battle=battle, choices=verdict(battle))
    battle.refresh_from_db()
    assert battle.state == Battle.State.VOTED
    assert vote.choices.count() == 5
    assert vote.seconds_to_vote >= 0


def test_it_refuses_to_vote_while_a_reply_is_pending(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    Reply.objects.filter(side="a").update(state=Reply.State.PENDING)
    with pytest.raises(Conflict, match="wait until both models"):
        vote_submit(battle=battle, choices=verdict(battle))
    assert Vote.objects.count() == 0


def test_it_asks_for_every_dimension(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    choices = verdict(battle)
    del choices["trust-safety"]
    choices["overall"] = "maybe"
    with pytest.raises(InvalidInput, match="Trust, ethics & safety; Overall winner"):
        vote_submit(battle=battle, choices=choices)


def test_it_keeps_one_vote_per_battle_and_treats_a_repeat_as_the_same_vote(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    first = vote_submit(battle=battle, choices=verdict(battle, "a"))
    assert vote_submit(battle=battle, choices=verdict(battle, "a")) == first
    with pytest.raises(Conflict, match="already voted"):
        vote_submit(battle=battle, choices=verdict(battle, "b"))
    assert Vote.objects.count() == 1


def test_it_does_not_pay_for_a_reply_once_the_battle_is_set_aside(rater, fake_llm):
    from tests.fake_llm import Malformed

    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_a.api_model, Malformed())
    turn = turn_submit(battle=battle, message="How do I keep basil alive on a windowsill?")
    reply_generate(reply_id=Reply.objects.get(turn=turn, side="a").pk)
    reply_generate(reply_id=Reply.objects.get(turn=turn, side="b").pk)
    assert [r["json"]["model"] for r in fake_llm.requests] == [battle.model_a.api_model]
    assert Reply.objects.get(side="b").error == "battle_ended"


def test_an_open_link_raters_first_battle_is_practice_and_the_next_is_not(rater):
    first, _ = voted_battle(rater)
    rater.refresh_from_db()
    assert first.practice
    assert not battle_start(rater=rater).practice


def test_panel_raters_and_studies_without_practice_have_no_practice_battle(study, groups):
    assert not battle_start(rater=admitted_rater(study, participant_hash="3" * 64)).practice
    study.practice_battles = 0
    study.save()
    assert not battle_start(rater=admitted_rater(study)).practice


def test_the_battle_page_tells_the_rater_a_practice_battle_is_not_counted(rater, rater_client):
    practice = battle_start(rater=rater)
    page = rater_client.get(f"/battle/{practice.public_id}/").content.decode()
    assert 'data-testid="practice-battle"' in page and "not counted on the" in page
    Battle.objects.filter(pk=practice.pk).update(practice=False)
    page = rater_client.get(f"/battle/{practice.public_id}/").content.decode()
    assert 'data-testid="practice-battle"' not in page
