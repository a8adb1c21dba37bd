"""The offline demo models in `tournaments.demo_models`."""

import subprocess
import sys
from pathlib import Path

import pytest

from tournaments.demo_models import DEMO_NOTICE, reply
from tournaments.providers import ChatMessage, ProviderConfig, complete

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STYLES = ["terse", "verbose", "formal", "friendly"]
QUESTION = "How should I plan a vegetable garden?"
FOLLOW_UP = [
    ("user", QUESTION),
    ("assistant", "Start small and pick a sunny spot."),
    ("user", "What about watering the tomatoes?"),
]


def test_it_gives_the_same_reply_to_the_same_conversation() -> None:
    for style in STYLES:
        assert reply(style, [("user", QUESTION)]) == reply(style, [("user", QUESTION)])
        assert reply(style, FOLLOW_UP) == reply(style, list(FOLLOW_UP))


@pytest.mark.parametrize("style", [*STYLES, "", "no-such-style"])
def test_it_marks_every_reply_as_a_demo(style: str) -> None:
    assert DEMO_NOTICE in reply(style, [("user", QUESTION)])
    assert DEMO_NOTICE in reply(style, FOLLOW_UP)
    assert DEMO_NOTICE in reply(style, [])


def test_it_gives_four_different_replies_in_the_four_styles() -> None:
    replies = {style: reply(style, [("user", QUESTION)]) for style in STYLES}

    assert len(set(replies.values())) == 4


@pytest.mark.parametrize("style", STYLES)
def test_it_mentions_a_keyword_from_the_users_message(style: str) -> None:
    assert "garden" in reply(style, [("user", QUESTION)]).lower()


@pytest.mark.parametrize("style", STYLES)
def test_it_answers_the_latest_user_message(style: str) -> None:
    assert "watering" in reply(style, FOLLOW_UP).lower()


@pytest.mark.parametrize("style", ["verbose", "formal", "friendly"])
def test_it_mentions_the_earlier_topic_in_a_follow_up(style: str) -> None:
    first_turn = reply(style, [("user", "What about watering the tomatoes?")])
    follow_up = reply(style, FOLLOW_UP)

    assert "garden" not in first_turn.lower()
    assert "garden" in follow_up.lower()


def test_it_greets_an_empty_conversation() -> None:
    for style in STYLES:
        greeting = reply(style, [])
        assert greeting.startswith("Hello!")
        assert DEMO_NOTICE in greeting


def test_it_greets_a_conversation_with_no_user_message() -> None:
    assert reply("formal", [("system", "Be formal.")]).startswith("Hello!")


def test_it_still_replies_to_a_message_without_keywords() -> None:
    answer = reply("formal", [("user", "Why?")])

    assert "your question" in answer
    assert DEMO_NOTICE in answer


@pytest.mark.parametrize("style", STYLES)
def test_it_is_reached_through_the_demo_provider(style: str) -> None:
    messages = [ChatMessage(role, content) for role, content in FOLLOW_UP]

    answer = complete(ProviderConfig(provider="demo", demo_style=style), messages)

    assert answer == reply(style, FOLLOW_UP)


def test_it_replies_promptly_to_any_message() -> None:
    # Run in a child process, so that a reply that never returns fails this test instead of hanging the run.
    questions = [
        "What about watering schedules?",
        "How do I learn to play the guitar?",
        "Which programming language should a beginner learn first?",
        "How can I sleep better at night?",
        "What should I pack for a week of hiking?",
        "How do I prepare for a job interview?",
        "Can you suggest a weekly budget plan for a student?",
        "How do I start running without getting injured?",
        "What is a good way to memorise vocabulary?",
        "How should I organise a small team project?",
    ]
    script = (
        "from tournaments.demo_models import reply\n"
        f"for question in {questions!r}:\n"
        f"    for style in {STYLES!r}:\n"
        "        reply(style, [('user', question)])\n"
        "        reply(style, [('user', 'Hello there'), ('assistant', 'Hi.'), ('user', question)])\n"
    )
    try:
        subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, check=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("demo_models.reply did not return within 20 seconds for some message")
