"""The quality-control rules in `raters.qc`: plain functions, no database."""

import random
import subprocess
import sys
from pathlib import Path

import pytest

from raters import qc

PROJECT_ROOT = Path(__file__).resolve().parents[2]

TRIP = [
    "Plan a 5-day trip to Lisbon for two adults in May. We like food, history and walking.",
    "Day 1: Alfama and the castle. Day 2: Belém and pastéis de nata. Day 3: Sintra by train. "
    "Budget: about 120 euros a night for a hotel and 30-40 euros per person per day for food.",
    "Stay in Baixa or Chiado so you can walk everywhere. For food, try grilled sardines and bacalhau.",
]
BAKING = [
    "How do I bake a sourdough loaf at home?",
    "Feed your starter, mix flour, water and salt, fold, shape the loaf, proof it overnight and bake it "
    "in a hot Dutch oven for about 40 minutes.",
]


@pytest.mark.parametrize("message", [".", "??", "?!", "👍"])
def test_it_strikes_an_opening_message_with_nothing_in_it(message):
    result = qc.check_too_short(message, qc.DEFAULT_PARAMS["too_short"])
    assert result.failed and result.rule == "too_short"
    assert result.reason.startswith("please") and result.reason.endswith(".")


@pytest.mark.parametrize("message", ["hi", "ok", "thanks", "Thank you so much!", "Merci", "谢谢", "k", "ok?"])
def test_it_sends_small_talk_with_a_nudge_and_strikes_it_after_one(message):
    first = qc.check_too_short(message, qc.DEFAULT_PARAMS["too_short"])
    assert first.doubtful and not first.failed and message in first.reason  # the staff flag quotes it
    again = qc.check_too_short(message, qc.DEFAULT_PARAMS["too_short"], nudged_before=1)
    assert again.failed and not again.doubtful and again.reason.startswith("please")
    assert qc.check_too_short(message, {"nudges_before_strike": 2}, nudged_before=1).doubtful


@pytest.mark.parametrize("message", ["Summarise", "shorter", "Jinja2", "anaphora", "Explain"])
def test_it_takes_a_one_word_request_as_a_real_turn(message):
    result = qc.check_too_short(message, qc.DEFAULT_PARAMS["too_short"], nudged_before=3)
    assert not result.failed and not result.doubtful


@pytest.mark.parametrize(
    "message",
    [
        "Why?",
        "What is DNS?",
        "Best pizza in Rome?",
        "Explain recursion simply",
        "¿Por qué?",
        "为什么？",  # noqa: RUF001 - the fullwidth question mark Chinese is typed with
        "谁？",  # noqa: RUF001 - "who?", one character
        "解释一下递归",  # "explain recursion", no spaces
        "Γιατί;",  # Greek asks with a semicolon
        "لماذا؟",
        "2+2?",
    ],
)
def test_it_never_strikes_a_short_but_real_question(message):
    result = qc.check_too_short(message, qc.DEFAULT_PARAMS["too_short"])
    assert not result.failed and result.reason == ""


def test_it_takes_partial_params_and_keeps_the_other_defaults():
    assert qc.check_too_short("ok thanks a lot", {"small_talk_words": 4}).doubtful
    assert not qc.check_too_short("ok thanks a lot", {"small_talk_words": 3}).doubtful
    assert qc.check_too_short("ok thanks a lot", {"small_talk_words": 3}, nudged_before=1).score == 4
    assert qc.check_too_short("hi", {"small_talk_words": 3}, nudged_before=1).failed  # default: 1 nudge


def test_it_strikes_a_copied_message_whatever_its_case_and_punctuation():
    earlier = ["Tell me a joke", "What are the best things to do in Lisbon, with kids, for three days?!"]
    result = qc.check_copy(
        "what are the best things to do in lisbon with kids for three days",
        earlier,
        qc.DEFAULT_PARAMS["copy"],
    )
    assert result.failed and result.score == 1.0 and "earlier" in result.reason


def test_it_strikes_a_copy_with_only_a_typo_fixed():
    earlier = ["How can I improve my credit score before appplying for a morgage next year?"]
    message = "How can I improve my credit score before applying for a mortgage next year?"
    result = qc.check_copy(message, earlier, {})
    assert result.failed and 0.9 <= result.score < 1.0


@pytest.mark.parametrize(
    ("message", "earlier"),
    [
        ("can you explain more?", "can you explain more?"),  # short
        ("Could you give me a shorter version of that answer please?",) * 2,  # generic
        (
            "What are the best things to do in Porto in May?",
            "What are the best things to do in Lisbon in May?",
        ),
        (
            "Who won the Tour de France in 2003 and by how much?",
            "Who won the Tour de France in 1998 and by how much?",
        ),
        (
            "¿Qué hacer en Lisboa con niños durante tres días?",
            "What to do in Lisbon with kids for three days?",
        ),
    ],
)
def test_it_does_not_strike_repeated_generic_follow_ups_or_new_questions_on_a_template(message, earlier):
    assert not qc.check_copy(message, [earlier], {}).failed


@pytest.mark.parametrize(
    ("message", "earlier"),
    [
        ("Write Chapter 2 in depth and in great detail, in an intriguing style",
         "Write Chapter 1 in depth and in great detail, in an intriguing style"),
        ("Create me a blog post based on point number 6 of the list",
         "Create me a blog post based on point number 5 of the list"),
    ],
)  # fmt: skip
def test_it_takes_a_new_number_as_a_new_task(message, earlier):
    assert not qc.check_copy(message, [earlier], {}).failed
    assert qc.check_copy(message, [message.replace(",", "")], {}).failed


def test_it_finds_no_copy_without_earlier_messages():
    assert not qc.check_copy("Plan a week of vegetarian dinners for a family of four", [], {}).failed


@pytest.mark.parametrize(
    "message",
    [
        "asdf",
        "asdfghjkl",
        "jkljkljkl",
        "sdkfjsdlkfj",
        "aaaaaaaaa",
        "qwertyuiop",
        "asdkfj aslkdfj",
        "ok sdfsdf",
    ],
)
def test_it_strikes_keyboard_mash(message):
    result = qc.check_gibberish(message, qc.DEFAULT_PARAMS["gibberish"])
    assert result.failed and result.score >= 0.5 and "random letters" in result.reason


@pytest.mark.parametrize(
    "message",
    [
        "strengths",
        "rhythm",
        "crypt",
        "szczęście",
        "čtvrtek",
        "cwm",
        "Angstschweiß",
        "Selbstständig arbeiten?",
        "Strč prst skrz krk",
        "What are the strengths of rhythm games?",
        "Co oznacza słowo szczęście?",
        "Ble mae'r cwm gorau yng Nghymru?",
        "html vs xml?",
        "Is NTFS or FAT32 better for a USB stick?",
        "Summarise https://xkcd.com/927 for me",
        "Pleaseeee help, whyyyy is this so hard",
        "Tại sao bầu trời màu xanh?",
        "Привет, как дела?",
        "为什么天空是蓝色的？",  # noqa: RUF001 - fullwidth question mark
    ],
)
def test_it_never_strikes_real_words_in_any_language_as_gibberish(message):
    assert not qc.check_gibberish(message, qc.DEFAULT_PARAMS["gibberish"]).failed


def test_it_strikes_a_message_that_leaves_the_task():
    message = "Who won the football world cup in 1998 and who scored in the final?"
    result = qc.check_topic_wandering(message, BAKING, qc.DEFAULT_PARAMS["topic_wandering"])
    assert result.failed and result.score == 0.0 and "unrelated" in result.reason


@pytest.mark.parametrize(
    "message",
    [
        "What about the budget for food?",
        "Can you make it shorter?",
        "Is it safe to drink the tap water there?",
        "How long does the train take from the airport to the city centre?",
        "Recommend some good vegetarian restaurants near the hotel area",
        "Peux-tu me donner les horaires des musées le lundi ?",  # another language
    ],
)
def test_it_never_strikes_a_follow_up_within_the_same_task(message):
    assert not qc.check_topic_wandering(message, TRIP, qc.DEFAULT_PARAMS["topic_wandering"]).failed


def test_it_judges_no_topic_without_context():
    message = "Who won the football world cup in 1998 and who scored in the final?"
    assert not qc.check_topic_wandering(message, [], {}).failed


def test_it_compares_chinese_by_character_pairs():
    guitar = ["我想自学吉他，应该从哪里开始？", "先学会调音，然后练习几个基本和弦，每天练习二十分钟。"]  # noqa: RUF001
    assert not qc.check_topic_wandering("每天应该练习多长时间比较合适？", guitar, {}).failed  # noqa: RUF001
    assert qc.check_topic_wandering("1998年世界杯决赛是谁赢了？", guitar, {}).failed  # noqa: RUF001


def test_it_strikes_a_vote_cast_before_the_replies_could_be_read():
    result = qc.check_too_fast(seconds_to_vote=5, reply_chars=1000, params=qc.DEFAULT_PARAMS["too_fast"])
    assert result.failed and result.score == pytest.approx(5 / 20)
    assert "5 seconds" in result.reason and "20 seconds" in result.reason


@pytest.mark.parametrize(
    ("seconds", "chars", "failed"),
    [(2.9, 0, True), (3, 0, False), (29, 50_000, True), (30, 50_000, False), (12, 500, False)],
)
def test_it_keeps_the_reading_floor_between_its_bounds(seconds, chars, failed):
    assert qc.check_too_fast(seconds_to_vote=seconds, reply_chars=chars, params={}).failed is failed


def vote(overall, others="tie"):
    dims = ("core-task", "communication", "adaptiveness", "trust-safety")
    return {**dict.fromkeys(dims, others), "overall": overall}


def test_it_strikes_the_same_side_overall_run_after_run():
    votes = [vote("b"), *[vote("a", "a") for _ in range(10)]]
    result = qc.check_straight_lining(votes, qc.DEFAULT_PARAMS["straight_lining"])
    assert result.failed and result.score == 10 and "Model A" in result.reason


def test_it_strikes_all_ties_on_every_dimension():
    result = qc.check_straight_lining([vote("tie") for _ in range(5)], {"run_length": 5})
    assert result.failed and "ties" in result.reason


@pytest.mark.parametrize(
    "votes",
    [
        [vote("a") for _ in range(4)],  # shorter than the run
        [*[vote("a") for _ in range(4)], vote("b")],  # run broken by the newest vote
        [vote("tie", "a") for _ in range(5)],  # overall ties, other dimensions vary
        [vote(side, "b") for side in "ababa"],
        [],
    ],
)
def test_it_does_not_strike_varied_or_short_voting(votes):
    assert not qc.check_straight_lining(votes, {"run_length": 5}).failed


def test_it_needs_a_longer_run_by_default_than_an_honest_rater_makes_by_chance():
    # With random positions, five in a row happens once in 16 votes for an honest rater.
    assert not qc.check_straight_lining([vote("a") for _ in range(5)], {}).failed


def test_it_strikes_a_wrong_answer_to_the_attention_item():
    result = qc.check_attention(expected="tie", answer="a")
    assert result.failed and '"Tie"' in result.reason
    assert not qc.check_attention(expected="b", answer="b").failed


def consensus_votes(contrarian_flips: int) -> list[tuple[str, str, str, str]]:
    """Five honest raters who prefer the better model of each pair 85% of the time; "odd" always
    contradicts them, and "honest" sides with them except `contrarian_flips` times in 24."""
    rng = random.Random(7)
    models = ["m1", "m2", "m3", "m4"]  # best first
    pairs = [(x, y) for i, x in enumerate(models) for y in models[i + 1 :]]
    votes = []
    for rater in ("r1", "r2", "r3", "r4", "r5"):
        for x, y in pairs * 4:
            votes.append((rater, y, x, "y" if rng.random() < 0.85 else "x"))
    for index, (x, y) in enumerate(pairs * 4):
        votes.append(("odd", x, y, "y"))  # always the worse model
        votes.append(("honest", x, y, "y" if index < contrarian_flips else "x"))
    return votes


def test_it_flags_a_rater_who_always_contradicts_a_clear_majority():
    flagged = qc.consensus_outliers(consensus_votes(contrarian_flips=4), qc.DEFAULT_PARAMS["consensus"])
    assert [rater for rater, _, _ in flagged] == ["odd"]
    _, p_value, compared = flagged[0]
    assert compared == 24 and p_value == pytest.approx(0.5**24)


def test_it_does_not_flag_an_honest_rater_with_a_few_disagreements():
    flagged = qc.consensus_outliers(consensus_votes(contrarian_flips=8), {})
    assert "honest" not in [rater for rater, _, _ in flagged]


def test_it_needs_enough_votes_before_flagging_anyone():
    votes = [v for v in consensus_votes(contrarian_flips=0) if v[0] != "odd"]
    votes += [("odd", "m1", "m2", "y")] * 10
    assert qc.consensus_outliers(votes, {"min_votes": 20}) == []


def test_it_lets_no_prolific_rater_decide_the_majority_alone():
    votes = [(rater, "m1", "m2", "x") for rater in ("r1", "r2", "r3") for _ in range(25)]
    votes += [("bot", "m1", "m2", "y")] * 200
    flagged = qc.consensus_outliers(votes, {})
    assert [rater for rater, _, _ in flagged] == ["bot"]


@pytest.mark.parametrize(
    ("answer", "same_task"),
    [
        ("YES", True),
        ("yes.", True),
        ("**Yes**", True),
        ("NO", False),
        ("Answer: no", False),
        ("Maybe", None),
        ("", None),
        ("Yes and no", None),
    ],
)
def test_it_reads_the_judge_answer(answer, same_task):
    assert qc.parse_judge_answer(answer) is same_task


def test_it_fills_the_judge_prompt():
    prompt = qc.JUDGE_PROMPT.format(context="How do I bake bread? {not a slot}", message="Who won in 1998?")
    assert "bake bread" in prompt and "Who won in 1998?" in prompt and "YES or NO" in prompt


def test_it_has_defaults_for_every_rule():
    assert set(qc.RULES) <= set(qc.DEFAULT_PARAMS)


def test_it_ships_a_corpus_with_enough_examples_of_each_kind():
    corpus = qc.load_corpus()
    for rule in ("too_short", "copy", "gibberish", "topic_wandering"):
        must_pass = [item for item in corpus[rule] if not item["should_fail"]]
        assert len(corpus[rule]) >= 15 and len(must_pass) >= 7, rule
    assert len(corpus["too_fast"]) >= 6 and len(corpus["straight_lining"]) >= 6


def test_it_makes_no_false_strikes_and_misses_nothing_on_the_shipped_corpus():
    rows = qc.corpus_report(qc.load_corpus())
    assert [row["rule"] for row in rows] == list(qc.RULES)
    for row in rows:
        assert row["false_strikes"] == 0 and row["missed"] == 0, row
        assert row["items"] == row["caught"] + row["passed"]


def test_it_counts_false_strikes_and_misses_in_the_report():
    corpus = {
        "too_short": [
            {"message": "Why?", "should_fail": True, "why": "mislabelled on purpose"},
            {"message": "?!", "should_fail": False, "why": "mislabelled on purpose"},
        ]
    }
    assert qc.corpus_report(corpus) == [
        {
            "rule": "too_short",
            "items": 2,
            "caught": 0,
            "false_strikes": 1,
            "missed": 1,
            "passed": 0,
        }
    ]


def test_it_runs_without_django():
    code = "import sys, raters.qc; sys.exit('django' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=False).returncode == 0
