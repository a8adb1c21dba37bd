"""Quality control in the product: strikes, warnings, exclusion and staff review."""

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group as AuthGroup
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from config.errors import Conflict, InvalidInput, SessionEnded, StrikeWarning
from leaderboard.models import AppliedVote, Rating
from leaderboard.services import ratings_apply_pending, ratings_replay
from raters import qc
from raters.models import Rater
from tests.conftest import admitted_rater
from tests.fake_llm import Reply
from tests.helpers import chat, chat_turns, verdict, voted_battle
from tournaments.models import (
    Battle,
    LLMModel,
    QualityRuleSetting,
    RuleOutcome,
    StaffAction,
    Strike,
    Turn,
    Vote,
)
from tournaments.quality import (
    SMALL_TALK_NUDGE,
    TOPIC_NUDGE,
    quality_consensus_scan,
    rater_exclude_by_staff,
    rater_strike,
    strike_lift,
    turn_topic_judge,
)
from tournaments.services import battle_start, turn_submit, vote_submit

pytestmark = pytest.mark.django_db


def ratings_table():
    fields = ["dimension_id", "group_id", "model_id", "mu", "sigma", "wins", "losses", "ties"]
    return sorted(Rating.objects.values_list(*fields), key=lambda row: (row[0], row[1] or 0, row[2]))


def test_it_warns_about_a_low_effort_message_and_does_not_send_it(rater, fake_llm):
    battle = battle_start(rater=rater)
    with pytest.raises(StrikeWarning) as warning:
        turn_submit(battle=battle, message="?!")
    assert warning.value.title == "Warning 1 of 3"
    assert Turn.objects.count() == 0 and fake_llm.requests == []
    strike = Strike.objects.get()
    assert (strike.rule, strike.message, strike.battle) == ("too_short", "?!", battle)
    assert set(RuleOutcome.objects.values_list("rule", flat=True)) == {
        "too_short",
        "copy",
        "gibberish",
        "topic_wandering",
    }


def test_it_shows_the_warning_in_the_page_at_once(rater, rater_client):
    battle = battle_start(rater=rater)
    response = rater_client.post(
        f"/battle/{battle.public_id}/turn/", {"message": "?!"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#errors"
    assert "Warning 1 of 3" in response.content.decode()
    page = rater_client.get(f"/battle/{battle.public_id}/").content.decode()
    assert 'data-testid="strike-warning">Warning 1 of 3: ' in page


def test_it_only_records_a_rule_in_flag_mode(rater):
    QualityRuleSetting.objects.create(rule="too_short", mode=QualityRuleSetting.Mode.FLAG)
    battle = battle_start(rater=rater)
    turn_submit(battle=battle, message="hi")
    assert Turn.objects.count() == 1 and not Strike.objects.exists()
    assert RuleOutcome.objects.get(rule="too_short").action == RuleOutcome.Action.FLAGGED


def test_it_skips_a_rule_that_is_off(rater):
    QualityRuleSetting.objects.create(rule="too_short", mode=QualityRuleSetting.Mode.OFF)
    turn_submit(battle=battle_start(rater=rater), message="hi")
    assert not RuleOutcome.objects.filter(rule="too_short").exists()


def test_it_ends_the_session_at_the_third_strike_and_takes_the_votes_out(study, groups, rater):
    honest = admitted_rater(study)
    voted_battle(honest, "b")
    voted_battle(rater, "a")
    ratings_apply_pending()
    battle = battle_start(rater=rater)
    chat(battle)
    for message in ("lkjhgf asdfgh zxcvb", "asdfgh jkl qwerty"):
        with pytest.raises(StrikeWarning):
            turn_submit(battle=battle, message=message)
    with pytest.raises(SessionEnded):
        turn_submit(battle=battle, message="zxcvbn qwerty lkjhgf")
    rater.refresh_from_db()
    assert rater.status == Rater.Status.EXCLUDED
    assert Battle.objects.get(pk=battle.pk).state == Battle.State.VOID

    ratings_replay(tournament_id=study.tournament_id)  # the task enqueued by the exclusion
    assert AppliedVote.objects.get(vote__battle__rater=rater).counted is False
    excluded_view = ratings_table()
    Rating.objects.all().delete()
    AppliedVote.objects.all().delete()
    Vote.objects.filter(battle__rater=rater).delete()
    ratings_apply_pending()
    assert excluded_view == ratings_table()  # as if the rater's votes had never been cast

    assert rater_strike(rater=rater, rule="too_short", reason="x") is None  # nothing counts after the third
    assert Strike.objects.filter(rater=rater).count() == 3


def test_it_sends_the_rater_to_the_screen_out_page_on_the_third_strike(rater, rater_client, study):
    study.screen_out_code = "SCREEN-3"
    study.save()
    battle = battle_start(rater=rater)
    for _ in range(2):
        rater_strike(rater=rater, rule="too_short", reason="please ask a real question about your task.")
    response = rater_client.post(
        f"/battle/{battle.public_id}/turn/", {"message": "..."}, HTTP_HX_REQUEST="true"
    )
    assert response.headers["HX-Redirect"] == "/rate/next/"
    page = rater_client.get("/rate/next/").content.decode()
    assert "Your session has ended" in page and "SCREEN-3" in page
    assert rater_client.post(f"/battle/{battle.public_id}/vote/", verdict(battle)).url == "/rate/next/"


@pytest.mark.django_db(transaction=True)
def test_two_strikes_racing_at_two_make_exactly_three(rater):
    for _ in range(2):
        rater_strike(rater=rater, rule="too_short", reason="please ask a real question.")
    start = threading.Event()

    def strike(_):
        try:
            start.wait()
            return rater_strike(rater=rater, rule="gibberish", reason="please type real words.")
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = [pool.submit(strike, n) for n in range(2)]
        start.set()
        given = [future.result() for future in futures]
    assert sum(s is not None for s in given) == 1
    assert Strike.objects.filter(rater=rater).count() == 3
    assert Rater.objects.get(pk=rater.pk).status == Rater.Status.EXCLUDED


def test_staff_can_lift_a_strike_with_a_reason_and_ratings_follow(study, groups, rater):
    voted_battle(rater, "a")
    for _ in range(3):
        strike = rater_strike(rater=rater, rule="too_short", reason="please ask a real question.")
    ratings_replay(tournament_id=study.tournament_id)
    assert Rating.objects.count() == 0
    with pytest.raises(InvalidInput, match="reason"):
        strike_lift(strike=strike, staff="ana", reason=" ")
    strike_lift(strike=strike, staff="ana", reason="The rater was answering a model's question.")
    assert Rater.objects.get(pk=rater.pk).status == Rater.Status.ADMITTED
    assert StaffAction.objects.get().kind == StaffAction.Kind.LIFT_STRIKE
    ratings_replay(tournament_id=study.tournament_id)
    assert Rating.objects.count() > 0  # the rater's vote counts again


def test_staff_can_exclude_a_rater_by_hand(rater):
    rater_exclude_by_staff(rater=rater, staff="ana", reason="Flagged by the consensus check; answers random.")
    assert Rater.objects.get(pk=rater.pk).status == Rater.Status.EXCLUDED
    assert StaffAction.objects.get().kind == StaffAction.Kind.EXCLUDE


def test_it_strikes_a_vote_cast_faster_than_the_replies_can_be_read(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    battle.turns.last().replies.update(finished_at=timezone.now())
    vote = vote_submit(battle=battle, choices=verdict(battle))
    strike = Strike.objects.get()
    assert (strike.rule, strike.vote) == ("too_fast", vote)
    assert Vote.objects.count() == 1  # kept, and counted unless the rater is excluded


def test_it_puts_an_explicit_attention_check_in_the_first_two_battles(rater, rater_client):
    first = battle_start(rater=rater)
    chat_turns(first, 3)
    assert first.attention_expected in ("a", "b", "tie")
    page = rater_client.get(f"/battle/{first.public_id}/").content.decode()
    assert 'data-testid="attention-check"' in page and "Please choose" in page
    wrong = {"a": "b", "b": "tie", "tie": "a"}[first.attention_expected]
    vote_submit(battle=first, choices={**verdict(first), "attention": wrong})
    assert Strike.objects.get().rule == "attention"
    second = battle_start(rater=rater)
    assert second.attention_expected


def test_it_asks_for_the_attention_answer(rater):
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    choices = verdict(battle)
    del choices["attention"]
    with pytest.raises(InvalidInput, match="check question"):
        vote_submit(battle=battle, choices=choices)


def test_it_strikes_straight_lining(rater, tournament):
    QualityRuleSetting.objects.create(rule="straight_lining", params={"run_length": 3})
    tournament.max_turns = 3
    tournament.save()
    for _ in range(3):
        voted_battle(rater, "a")
    assert list(Strike.objects.values_list("rule", flat=True)) == ["straight_lining"]


def test_it_flags_raters_who_contradict_the_consensus_for_review(study, groups, fake_llm, tournament):
    models = list(tournament.llm_models.order_by("pk"))
    honest = [admitted_rater(study) for _ in range(3)]
    contrarian = admitted_rater(study)
    for rater in [*honest, contrarian]:
        winner = models[1] if rater is contrarian else models[0]
        for _ in range(25):
            battle = Battle.objects.create(
                tournament=tournament,
                rater=rater,
                model_a=models[0],
                model_b=models[1],
                pair_probability=1 / 6,
            )
            vote = Vote.objects.create(battle=battle, seconds_to_vote=60)
            vote.choices.create(
                dimension=tournament.dimensions.get(slug="overall"),
                outcome="a" if winner == models[0] else "b",
            )
            Battle.objects.filter(pk=battle.pk).update(state=Battle.State.VOTED)
    assert quality_consensus_scan() == 1
    flag = RuleOutcome.objects.get(rule="consensus")
    assert flag.rater == contrarian and flag.action == RuleOutcome.Action.FLAGGED
    assert not Strike.objects.exists()
    assert quality_consensus_scan() == 0  # flagged once


def test_the_optional_llm_judge_strikes_an_off_task_message(rater, tournament, fake_llm):
    judge = LLMModel.objects.create(
        slug="judge", name="Judge", provider="openai", base_url=fake_llm.base_url, api_model="judge-1"
    )
    QualityRuleSetting.objects.create(
        rule="llm_topic_judge", mode=QualityRuleSetting.Mode.STRIKE, judge_model=judge
    )
    # An admin using the judge in place of the lexical rule.
    QualityRuleSetting.objects.create(rule="topic_wandering", mode=QualityRuleSetting.Mode.OFF)
    fake_llm.script("judge-1", Reply("NO"))
    battle = battle_start(rater=rater)
    chat(battle)
    turn = turn_submit(battle=battle, message="By the way, how do I change a bicycle tyre quickly?")
    strike = turn_topic_judge(turn_id=turn.pk)
    assert strike.rule == "llm_topic_judge" and strike.message == turn.message
    judged = fake_llm.requests[-1]["json"]["messages"][0]["content"]
    assert "bicycle tyre" in judged and "basil" in judged


def test_the_quality_page_lets_staff_review_and_lift(rater, client, study):
    staff = get_user_model().objects.create_user("ana", password="x", is_staff=True)
    staff.groups.add(AuthGroup.objects.get(name="study manager"))
    client.force_login(staff)
    strike = rater_strike(rater=rater, rule="too_short", reason="please ask a real question.")
    page = client.get(f"/staff/studies/{study.slug}/quality/").content.decode()
    assert "please ask a real question." in page and 'data-testid="rule-stats"' in page
    client.post(
        f"/staff/studies/{study.slug}/strikes/{strike.pk}/lift/", {"reason": "Real question in Welsh."}
    )
    assert Strike.objects.get().lift_reason == "Real question in Welsh."
    response = client.post(f"/staff/studies/{study.slug}/strikes/{strike.pk}/lift/", {"reason": ""})
    assert response.status_code == 400 and b"give a reason" in response.content
    assert StaffAction.objects.count() == 1


def test_the_first_warning_names_the_count_even_after_a_lift(rater):
    first = rater_strike(rater=rater, rule="too_short", reason="one.")
    strike_lift(strike=first, staff="ana", reason="Mistake.")
    battle = battle_start(rater=rater)
    with pytest.raises(StrikeWarning) as warning:
        turn_submit(battle=battle, message="?!")
    assert warning.value.title == "Warning 1 of 3"


def test_it_does_not_strike_a_careful_rater(rater):
    for _ in range(2):
        voted_battle(rater)
    Vote.objects.update(seconds_to_vote=timedelta(minutes=1).total_seconds())
    assert not Strike.objects.exists()


def test_the_corpus_report_prints_each_rules_record(capsys):
    from django.core.management import call_command

    call_command("qc_corpus_report")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["rule", "items", "caught", "false_strikes", "missed", "passed"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert set(rows) == {
        "too_short",
        "copy",
        "gibberish",
        "topic_wandering",
        "too_fast",
        "straight_lining",
        "attention",
    }
    assert all(row[2] == "0" for row in rows.values())  # no false strikes at the shipped thresholds


def test_it_does_not_judge_a_message_that_could_not_be_sent_anyway(rater):
    battle = battle_start(rater=rater)
    turn_submit(battle=battle, message="How do I keep basil alive on a windowsill?")  # replies pending
    outcomes_before = RuleOutcome.objects.count()
    with pytest.raises(Conflict, match="wait until both models"):
        turn_submit(battle=battle, message="hi")
    assert not Strike.objects.exists()
    assert RuleOutcome.objects.count() == outcomes_before


def test_it_sends_a_doubtful_message_with_a_nudge_and_flags_it_for_staff(rater, rater_client, fake_llm):
    battle = battle_start(rater=rater)
    chat(battle, "How do I speed up a pandas groupby over 50 million rows?")
    chat(battle, "What is the capital city of Australia and its population?")
    turn = Turn.objects.get(battle=battle, index=1)
    assert turn.nudge == TOPIC_NUDGE
    assert not Strike.objects.exists()
    flag = RuleOutcome.objects.get(rule="topic_wandering", action=RuleOutcome.Action.FLAGGED)
    assert flag.score < qc.DEFAULT_PARAMS["topic_wandering"]["nudge_below"]
    assert "capital city of Australia" in flag.reason and flag.battle == battle
    page = rater_client.get(f"/battle/{battle.public_id}/").content.decode()
    assert 'data-testid="nudge">This looks like a new topic' in page
    assert Turn.objects.get(battle=battle, index=0).nudge == ""


def test_it_nudges_small_talk_once_per_battle_and_strikes_it_after(rater, fake_llm):
    battle = battle_start(rater=rater)
    chat(battle, "hi")
    assert Turn.objects.get(battle=battle, index=0).nudge == SMALL_TALK_NUDGE
    assert RuleOutcome.objects.get(rule="too_short").action == RuleOutcome.Action.FLAGGED
    chat(battle, "How do I keep basil alive on a windowsill?")
    with pytest.raises(StrikeWarning):
        turn_submit(battle=battle, message="thanks!")
    assert Strike.objects.get().rule == "too_short"
    chat(battle, "How often should the basil be watered in a hot summer?")
    vote_submit(battle=battle, choices=verdict(battle))
    chat(battle_start(rater=rater), "hello")  # a new battle starts with a clean slate
    assert Strike.objects.count() == 1


def test_it_judges_a_copy_against_the_tasks_of_the_raters_other_battles_only(rater, fake_llm):
    earlier, _ = voted_battle(rater)
    task, follow_up = earlier.turns.order_by("index").values_list("message", flat=True)[:2]
    battle = battle_start(rater=rater)
    chat(battle, "Which herbs grow well next to basil on a sunny windowsill, and which do not?")
    again = "Please continue the list of herbs where you stopped, with their watering needs"
    chat(battle, again)
    chat(battle, again)  # asking again within a battle is a real turn
    chat(battle, follow_up)  # another battle's follow-up is no task of its own
    assert not Strike.objects.exists()
    with pytest.raises(StrikeWarning):
        turn_submit(battle=battle, message=task.lower())
    assert Strike.objects.get().rule == "copy"


def test_it_strikes_a_new_topic_only_when_meaning_and_words_agree(rater, fake_llm):
    QualityRuleSetting.objects.create(rule="topic_wandering", params={"strike_below": 0.5})
    battle = battle_start(rater=rater)
    chat(battle, "How do I speed up a pandas groupby over 50 million rows?")
    with pytest.raises(StrikeWarning):
        turn_submit(battle=battle, message="Write a short poem about autumn leaves falling in a quiet forest")
    assert Strike.objects.get().rule == "topic_wandering"


def test_it_takes_a_one_word_answer_to_the_models_question(rater, fake_llm):
    battle = battle_start(rater=rater)
    for model in (battle.model_a, battle.model_b):
        fake_llm.script(model.api_model, Reply("Happy to help. Which medication do you mean?"))
    chat(battle, "I need information about a specific medication.")
    chat(battle, "Ibuprofen.")
    assert not Strike.objects.exists()


def test_staff_lift_a_strike_from_the_admin_in_one_step(study, rater, client):
    voted_battle(rater, "a")
    ratings_apply_pending()
    for reason in ("one.", "two.", "three."):
        rater_strike(rater=rater, rule="too_short", reason=reason)
    rater.refresh_from_db()
    assert rater.status == Rater.Status.EXCLUDED
    ratings_replay(tournament_id=study.tournament_id)
    assert AppliedVote.objects.get(vote__battle__rater=rater).counted is False
    admin = get_user_model().objects.create_superuser("ana", password="x")
    client.force_login(admin)
    last = Strike.objects.order_by("-pk").first()
    response = client.post(
        reverse("admin:tournaments_strike_changelist"),
        {"action": "lift", "_selected_action": [last.pk]},
        follow=True,
    )
    assert "Lifted 1 strike(s)." in response.content.decode()
    rater.refresh_from_db()
    assert rater.status == Rater.Status.ADMITTED
    assert StaffAction.objects.get().strike == last
    ratings_replay(tournament_id=study.tournament_id)  # the task the lift enqueues
    assert AppliedVote.objects.get(vote__battle__rater=rater).counted is True
