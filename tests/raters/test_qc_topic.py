"""The embedded topic judge and the conversation-aware too_short rule (no database needed)."""

import pytest

from raters import qc
from stats.intervals import wilson_interval

PANDAS = [
    "How do I speed up a pandas groupby over 50 million rows?",
    "Use categorical dtypes for the group keys, avoid apply, and aggregate with built-in functions like sum "
    "or mean. Consider splitting the data into chunks.",
    "You can also try Polars or process the data in parquet format with pyarrow to reduce memory.",
]
DIET = [
    "What's a healthy diet for me?",
    "A healthy diet includes vegetables, fruit, whole grains, lean protein and healthy fats. "
    "Could you tell me more about your goals?",
]


@pytest.mark.parametrize(
    ("message", "context"),
    [
        ("Could DuckDB handle the query directly on parquet files?", PANDAS),
        ("¿Puede DuckDB leer directamente los archivos parquet?", PANDAS),
        ("I am a vegetarian, and I want to reduce my cholesterol levels.", DIET),
        ("Continue writing please", PANDAS),
    ],
)
def test_it_passes_real_follow_ups(message, context):
    assert qc.topic_verdict(message, context) == "pass"


@pytest.mark.parametrize(
    "message",
    [
        "What is the capital city of Australia and its population?",
        "Écris-moi un poème romantique sur la mer et le coucher du soleil",
    ],
)
def test_it_does_not_let_an_unrelated_new_task_pass(message):
    assert qc.topic_verdict(message, PANDAS) in ("nudge", "strike")


def test_it_only_nudges_when_the_words_still_overlap():
    # Far in meaning, yet it shares words with the conversation: two signals must agree for a strike.
    params = {"strike_below": 0.99, "nudge_below": 0.995}
    assessment = qc.topic_assess("Which pandas version added the groupby observed flag?", PANDAS, params)
    assert assessment.overlap >= qc.DEFAULT_PARAMS["topic_wandering"]["min_overlap"]
    assert assessment.verdict == "nudge"


def test_it_strikes_when_meaning_and_words_both_say_unrelated():
    message = "Write a short poem about autumn leaves falling in a quiet forest"
    assessment = qc.topic_assess(message, PANDAS, {"strike_below": 0.5})
    assert assessment.verdict == "strike"
    assert assessment.similarity < 0.5


def test_it_never_judges_a_message_too_short_to_carry_a_topic():
    assert qc.topic_assess("Ibuprofen.", DIET).verdict == "pass"
    assert qc.topic_verdict("Some new question entirely here", []) == "pass"


def test_it_accepts_a_one_word_answer_to_the_models_question():
    context = ["I need information about a specific medication.", "Of course. Which medication do you mean?"]
    answer = qc.check_too_short("Ibuprofen.", context=context, nudged_before=1)
    assert not answer.failed and not answer.doubtful
    assert qc.check_too_short(".", context=context).doubtful  # an empty answer is no turn
    assert qc.check_too_short("hi", context=context).doubtful  # a greeting answers nothing
    assert qc.check_too_short("hi", context=context, nudged_before=1).failed


def test_it_accepts_a_number_that_picks_one_of_the_options_the_models_listed():
    context = ["Start a text adventure", "You wake up.\n\n1. Go downstairs\n2. Check the computer\n3. Sleep"]
    for choice in ("1", "3.", " 2 "):
        result = qc.check_too_short(choice, context=context, nudged_before=1)
        assert not result.failed and not result.doubtful
    assert qc.check_too_short("4", context=context, nudged_before=1).failed  # no such option
    assert qc.check_too_short("1", context=["Start", "```\n1. not a list\n```"], nudged_before=1).failed


def test_it_ignores_question_marks_inside_code_in_replies():
    context = ["Fix my regex", "Here it is:\n```\n^a+?b$\n```\nThat matches the lines you want."]
    assert qc.check_too_short("Yes", context=context).doubtful
    assert not qc.check_too_short("Yes", context=[*context, "Shall I explain it?"]).doubtful


def test_it_accepts_continue_after_a_reply():
    assert not qc.check_too_short("continue", context=PANDAS).failed
    assert qc.check_too_short("continue").doubtful  # nothing to continue yet


def test_it_gives_the_wilson_interval():
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4)
    assert high == pytest.approx(0.7634, abs=1e-4)
    assert wilson_interval(0, 2000)[0] == 0.0
    assert wilson_interval(0, 2000)[1] == pytest.approx(0.00192, abs=1e-5)


def test_it_judges_the_same_when_the_embedding_cache_is_full(monkeypatch):
    expected = qc.topic_assess("Could DuckDB handle the query directly on parquet files?", PANDAS)
    qc.embedding_cache_clear()
    # A cache smaller than one check must be emptied mid-check; the judgement may not change.
    monkeypatch.setattr(qc, "_EMBEDDING_CACHE_SIZE", 2)
    qc.topic_assess("Could DuckDB handle the query directly on parquet files?", PANDAS[:2])
    again = qc.topic_assess("Could DuckDB handle the query directly on parquet files?", PANDAS)
    assert again.verdict == expected.verdict
    assert again.similarity == pytest.approx(expected.similarity, abs=1e-5)  # batches round differently
