"""Spotting a model that names itself or its maker ("As an AI developed by OpenAI…", "I'm Claude").

Plain Python. A battle whose reply does this is flagged: the rater now knows (or can guess) who is who,
so the vote is kept for audit but left out of ratings. Only first-person statements count, so a reply
that merely discusses a product ("the Pixel is made by Google") is not flagged.
"""

import re

# Makers and model families a reply might claim to be; the battle's own model names are added to these.
KNOWN_NAMES = [
    "OpenAI", "ChatGPT", r"GPT-?\d[\w.-]*", "Anthropic", "Claude", "Google", "Gemini", "Bard", "DeepMind",
    "Meta AI", "Llama", "Mistral", "Mixtral", "Qwen", "Alibaba", "DeepSeek", "xAI", "Grok", "Cohere",
    "Command R", "Microsoft", "Copilot",
]  # fmt: skip

_AI_ROLE = r"(?:AI|artificial\s+intelligence|(?:large\s+)?language\s+model|LLM|assistant|chatbot)"
_MADE_BY = r"(?:created|developed|trained|built|made|designed)\s+(?:by|on)"


def _patterns(names: str) -> list[str]:
    """Places where a name counts: only where the reply speaks of itself."""
    return [
        rf"\b(?:I\s+am|I['\u2019]m|my\s+name\s+is|this\s+is)\s+(?:called\s+)?(?:{names})\b",
        rf"\b(?:I|I['\u2019]m|me)\b[^.!?\n]{{0,60}}?\b{_MADE_BY}\s+(?:{names})\b",
        rf"\bas\s+an?\s+(?:\w+\s+){{0,2}}{_AI_ROLE}\b[^.!?\n]{{0,40}}?\b(?:{names})\b",
    ]


def self_identification(text: str, own_names: list[str]) -> str | None:
    """The phrase in which the reply identifies itself, or None."""
    names = "|".join([re.escape(name) for name in own_names if name.strip()] + KNOWN_NAMES)
    for pattern in _patterns(names):
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return match.group(0)
    return None
