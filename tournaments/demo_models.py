"""Offline demo models: deterministic, readable replies in a few distinct styles.

They exist so that the embedded default and the demo tournament work with no network and no API key.
They are not language models: they restate the rater's topic and offer generic, sensible steps, each style
with its own manner, so a demo leaderboard has real preferences to show. Every reply says it is a demo.
"""

import random
import re

DEMO_NOTICE = "(Offline demo reply, not a real language model.)"

_STOPWORD_TEXT = """
    about after again also and any are because been before being between both but can could did
    does doing down during each few for from further had has have having her here hers him his how
    into its just like more most much need needs not now off once only other our out over own same
    she should some such than that the their them then there these they this those through too
    under until very want was were what when where which while who whom why will with would you
    your yours please tell help know think make best good give show explain write
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())

_STEPS = [
    "write down what a good result would look like before you start",
    "break it into two or three smaller steps and do the easiest first",
    "compare a couple of options side by side before committing",
    "check one reliable source rather than skimming many",
    "try a small, cheap experiment first and see what you learn",
    "ask someone who has done it recently what they would change",
    "set a time limit so the task does not sprawl",
    "keep short notes of what worked so the next attempt is quicker",
    "look for the constraint that matters most and plan around it",
    "decide in advance how you will know you are finished",
]


def reply(style: str, messages: list[tuple[str, str]]) -> str:
    """The demo model's reply to a conversation given as (role, content) pairs, last one the user's."""
    user_messages = [content for role, content in messages if role == "user"]
    if not user_messages:
        return f"Hello! Ask me anything to get started.\n\n{DEMO_NOTICE}"
    message = user_messages[-1]
    topic = _topic(message)
    earlier_topic = _topic(user_messages[0]) if len(user_messages) > 1 else ""
    steps = _pick_steps(f"{style}\n{message}\n{len(user_messages)}", count=3)
    compose = _STYLES.get(style, _friendly)
    return f"{compose(topic, earlier_topic, steps)}\n\n{DEMO_NOTICE}"


def _topic(text: str) -> str:
    words = re.findall(r"[^\W\d_][\w'-]*", text.lower())
    keywords = [w for w in words if len(w) > 3 and w not in _STOPWORDS]
    picked = list(dict.fromkeys(keywords))[:3]
    return " ".join(picked) if picked else "your question"


def _pick_steps(seed: str, count: int) -> list[str]:
    # Seeded from the conversation so the same question always gets the same reply (not for security).
    return random.Random(seed).sample(_STEPS, count)  # noqa: S311


def _terse(topic: str, earlier: str, steps: list[str]) -> str:
    return f"On {topic}: {steps[0]}."


def _verbose(topic: str, earlier: str, steps: list[str]) -> str:
    opening = (
        f"Continuing from {earlier}, let us look closely at {topic}."
        if earlier
        else f"That is a rich question about {topic}, so let me take it from the beginning."
    )
    return (
        f"{opening} There are several angles worth considering, and it helps to take them one at a time "
        f"rather than all at once.\n\n"
        f"First, {steps[0]}. This gives you a fixed point to measure everything else against.\n\n"
        f"Second, {steps[1]}. People often skip this, and it is usually where time is lost.\n\n"
        f"Third, {steps[2]}. It sounds small, but it compounds over time.\n\n"
        f"In summary: on {topic}, these three habits together cover most of what matters."
    )


def _formal(topic: str, earlier: str, steps: list[str]) -> str:
    context = f" in connection with {earlier}" if earlier else ""
    return (
        f"Thank you for your enquiry regarding {topic}{context}. I would recommend the following:\n\n"
        f"1. {steps[0].capitalize()}.\n2. {steps[1].capitalize()}.\n3. {steps[2].capitalize()}.\n\n"
        "I trust this is of assistance."
    )


def _friendly(topic: str, earlier: str, steps: list[str]) -> str:
    link = f" and it fits nicely with what you said about {earlier}" if earlier else ""
    return (
        f"Good one! {topic.capitalize()} is worth getting right{link}. Here's what I'd do:\n\n"
        f"- {steps[0].capitalize()}\n- {steps[1].capitalize()}\n\n"
        f"Want me to go deeper on any of these?"
    )


_STYLES = {"terse": _terse, "verbose": _verbose, "formal": _formal, "friendly": _friendly}
