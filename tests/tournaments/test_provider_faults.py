"""How battles and models react when a provider misbehaves (the fake server injects the faults)."""

import pytest
from django.utils import timezone

from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_apply_pending
from tests.conftest import admitted_rater
from tests.fake_llm import Malformed, QuotaError, Reply
from tests.helpers import chat, chat_turns, verdict
from tournaments.models import Battle, LLMModel
from tournaments.services import COOLDOWN_AFTER_FAILURES, battle_start, vote_submit

pytestmark = pytest.mark.django_db


def test_it_takes_a_model_with_a_spent_quota_out_of_matchmaking_without_retrying(rater, fake_llm):
    battle = battle_start(rater=rater)
    fake_llm.script(battle.model_a.api_model, QuotaError())
    chat(battle)
    battle.refresh_from_db()
    assert battle.state == Battle.State.VOID
    model = LLMModel.objects.get(pk=battle.model_a_id)
    assert "insufficient_quota" in model.disabled_reason
    assert [r["json"]["model"] for r in fake_llm.requests].count(model.api_model) == 1
    assert model not in LLMModel.objects.available()
    for _ in range(5):  # new raters: one rater is never offered the same pair twice
        fresh = battle_start(rater=admitted_rater(rater.study))
        assert model.pk not in (fresh.model_a_id, fresh.model_b_id)


def fresh_battle(rater, model_a, model_b) -> Battle:
    Battle.objects.filter(rater=rater, state=Battle.State.ACTIVE).update(state=Battle.State.VOID)
    return Battle.objects.create(
        tournament=rater.study.tournament,
        rater=rater,
        model_a=model_a,
        model_b=model_b,
        pair_probability=1 / 6,
    )


def test_it_cools_down_a_model_that_keeps_failing_and_lets_it_back(rater, fake_llm, tournament):
    healthy, failing = tournament.llm_models.order_by("pk")[:2]
    for _ in range(COOLDOWN_AFTER_FAILURES):
        fake_llm.script(failing.api_model, Malformed())
        chat(fresh_battle(rater, healthy, failing), "Hello again")
    failing.refresh_from_db()
    assert failing.consecutive_failures == COOLDOWN_AFTER_FAILURES
    assert failing.cooldown_until > timezone.now()
    assert failing not in LLMModel.objects.available()
    assert not failing.disabled_reason  # paused, not taken out

    LLMModel.objects.filter(pk=failing.pk).update(cooldown_until=timezone.now())
    assert failing in LLMModel.objects.available()  # back by itself once the pause is over
    chat(fresh_battle(rater, healthy, failing), "And now?")
    failing.refresh_from_db()
    assert (failing.consecutive_failures, failing.cooldown_until) == (0, None)


def test_it_flags_a_battle_whose_model_names_itself_and_leaves_the_vote_out(rater, fake_llm):
    battle = battle_start(rater=rater)
    fake_llm.script(
        battle.model_a.api_model, Reply("As an AI language model developed by OpenAI, I think so.")
    )
    chat_turns(battle, 3)
    battle.refresh_from_db()
    assert "identified itself" in battle.flagged_reason
    vote = vote_submit(battle=battle, choices=verdict(battle, "a"))  # the rater is not penalised
    assert ratings_apply_pending() == 1
    assert AppliedVote.objects.get(vote=vote).counted is False
    assert Rating.objects.count() == 0
