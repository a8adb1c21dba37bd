"""Helpers shared by tests: driving a battle through its services without a worker, the way a careful
rater would (real questions that stay on one task, time taken to read), so quality control stays quiet
unless a test means to trigger it."""

import re
import time
from datetime import timedelta
from pathlib import Path

from django.utils import timezone

from raters.proof import leading_zero_bits, proof_digest
from tournaments.models import Battle, Reply, Vote
from tournaments.services import battle_start, reply_generate, turn_submit, vote_submit

REPO = Path(__file__).resolve().parent.parent
DIMENSIONS = ["core-task", "communication", "adaptiveness", "trust-safety", "overall"]

# One task per battle, each message a follow-up on it. A rater's n-th battle takes the n-th task, so no
# message repeats an earlier one of the same rater (the copy rule would strike it).
TASKS = [
    [
        "How do I keep basil alive on a windowsill?",
        "How often should the basil be watered in a hot summer?",
        "Is a north-facing window enough light for basil, or do I need a lamp?",
        "Which pests attack basil indoors and how do I spot them early?",
    ],
    [
        "Can you help me plan a three-day trip to Lisbon in October?",
        "What would a sensible daily budget for food in Lisbon be?",
        "Which Lisbon neighbourhood is best to stay in without a car?",
        "Is a day trip from Lisbon to Sintra worth it, and how do I get there?",
    ],
    [
        "Explain how compound interest works with a simple savings example.",
        "How does the compounding frequency change the interest I earn?",
        "Would monthly deposits into the savings account change your example much?",
        "What is the rule of 72 for interest, and how accurate is it?",
    ],
    [
        "Write a short cover letter opening for a junior data analyst job.",
        "Make the cover letter opening sound more confident but not arrogant.",
        "How should the letter mention my SQL and spreadsheet experience?",
        "Suggest a closing sentence for the cover letter that asks for an interview.",
    ],
    [
        "What is a good beginner routine for running three times a week?",
        "How fast should a beginner runner go on the easy runs?",
        "My knees ache after running; what should I change in the routine?",
        "Which running shoes features matter most for a beginner?",
    ],
    [
        "How do I explain photosynthesis to a ten-year-old?",
        "Can you turn the photosynthesis explanation into a short experiment with a plant?",
        "What questions might the child ask about photosynthesis, and how do I answer them?",
        "Is there a simple drawing that shows photosynthesis for children?",
    ],
]


def chat(battle: Battle, message: str | None = None) -> None:
    """One turn, with both replies generated in this process from the fake LLM server.

    The generation tasks that turn_submit enqueues on commit never run here: tests run inside a
    transaction that never commits, so the replies are produced by calling the service directly. The
    replies are dated a minute back, as if the rater had taken the time to read them.
    """
    turn = turn_submit(battle=battle, message=message or next_message(battle))
    for reply in Reply.objects.filter(turn=turn):
        reply_generate(reply_id=reply.pk)
    Reply.objects.filter(turn=turn).update(finished_at=timezone.now() - timedelta(minutes=1))


def next_message(battle: Battle) -> str:
    task = TASKS[(Battle.objects.filter(rater=battle.rater, pk__lt=battle.pk).count()) % len(TASKS)]
    return task[battle.turns.count() % len(task)]


def chat_turns(battle: Battle, count: int) -> None:
    for _ in range(count):
        chat(battle)


def verdict(battle: Battle, outcome: str = "a", **overrides: str) -> dict[str, str]:
    """A vote on every dimension (`trust_safety="tie"` overrides one), answering the battle's attention
    check as asked."""
    choices = {slug: overrides.get(slug.replace("-", "_"), outcome) for slug in DIMENSIONS}
    if battle.attention_expected:
        choices["attention"] = battle.attention_expected
    return choices


def voted_battle(rater, outcome: str = "a", **overrides: str) -> tuple[Battle, Vote]:
    """A new battle for the rater, chatted for three turns and voted on (not yet applied to ratings)."""
    battle = battle_start(rater=rater)
    chat_turns(battle, 3)
    return battle, vote_submit(battle=battle, choices=verdict(battle, outcome, **overrides))


def slow_quota_statements(execute, sql, params, many, context):
    """Widen the gap between statements on quota rows, so that a check-then-write admission would
    interleave with others and overfill; a correct one holds whatever the timing."""
    if '"raters_quota"' in sql:
        time.sleep(0.01)
    return execute(sql, params, many, context)


def study_manager(username: str = "staff"):
    """A staff member in the ready "study manager" group: every staff page and action of a study."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group as AuthGroup

    user = get_user_model().objects.create_user(username, password="x", is_staff=True)
    user.groups.add(AuthGroup.objects.get(name="study manager"))
    return user


def proof_solve(challenge: str, bits: int) -> str:
    """The counter static/js/proof.js looks for, found the same way: the first from 0 whose SHA-256 with the
    challenge starts with `bits` zero bits."""
    counter = 0
    while leading_zero_bits(proof_digest(challenge, str(counter))) < bits:
        counter += 1
    return str(counter)


def proof_fields(page: str) -> dict[str, str]:
    """The consent form's proof of effort, solved as a browser would, from the page's HTML ({} when the
    page asks for none)."""
    bits = re.search(r'data-proof-bits="(\d+)"', page)
    if bits is None:
        return {}
    challenge = re.search(r'name="proof_challenge" value="([^"]+)"', page).group(1)
    return {"proof_challenge": challenge, "proof_counter": proof_solve(challenge, int(bits.group(1)))}


def consent_post(client, fields: dict | None = None):
    """Consent as a browser with JavaScript does: open the consent page, solve its proof, tick the box."""
    page = client.get("/rate/consent/").content.decode()
    return client.post("/rate/consent/", {"agree": "yes", **proof_fields(page), **(fields or {})})
