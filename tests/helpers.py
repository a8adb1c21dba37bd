"""Helpers shared by tests: driving a battle through its services without a worker."""

from pathlib import Path

from tournaments.models import Battle, Reply, Vote
from tournaments.services import battle_start, reply_generate, turn_submit, vote_submit

REPO = Path(__file__).resolve().parent.parent
DIMENSIONS = ["core-task", "communication", "adaptiveness", "trust-safety", "overall"]


def chat(battle: Battle, message: str = "How do I keep basil alive on a windowsill?") -> None:
    """One turn, with both replies generated in this process from the fake LLM server.

    The generation tasks that turn_submit enqueues on commit never run here: tests run inside a
    transaction that never commits, so the replies are produced by calling the service directly.
    """
    turn = turn_submit(battle=battle, message=message)
    for reply in Reply.objects.filter(turn=turn):
        reply_generate(reply_id=reply.pk)


def chat_turns(battle: Battle, count: int) -> None:
    for index in range(count):
        chat(battle, f"Question {index + 1}: how do I keep basil alive on a windowsill?")


def verdict(outcome: str = "a", **overrides: str) -> dict[str, str]:
    return {slug: overrides.get(slug.replace("-", "_"), outcome) for slug in DIMENSIONS}


def voted_battle(rater, outcome: str = "a", **overrides: str) -> tuple[Battle, Vote]:
    """A new battle for the rater, chatted for three turns and voted on (not yet applied to ratings)."""
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    return battle, vote_submit(battle=battle, choices=verdict(outcome, **overrides))
