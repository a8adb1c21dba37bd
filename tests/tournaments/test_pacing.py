"""Both sides grow together, by the same number of characters at the same moments, stand still together
from the first side's finish, and are shown whole in the same poll: when and how each side's text appears
tells the rater nothing about which model is faster, and text once shown is never taken back."""

import itertools
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import given
from hypothesis import strategies as st

from tests.fake_llm import SlowDrip
from tests.helpers import next_message
from tests.tournaments.rater_api_helpers import client_with_token
from tournaments.models import Battle, Reply, Side, Turn
from tournaments.pacing import HOLD_CHARS, SideProgress, frozen_chars, revealed_chars
from tournaments.selectors import battle_view
from tournaments.services import battle_start, reply_generate

# --- The rule -------------------------------------------------------------------------------------------


def test_it_shows_both_sides_as_much_as_the_slower_side_has_written_less_a_few_characters():
    assert revealed_chars([SideProgress(120, False), SideProgress(30, False)]) == [18, 18]
    assert revealed_chars([SideProgress(0, False), SideProgress(300, False)]) == [0, 0]
    assert revealed_chars([SideProgress(HOLD_CHARS, False), SideProgress(300, False)]) == [0, 0]


def test_it_stands_still_on_both_sides_from_the_first_finish_until_the_last():
    frozen = frozen_chars(finishing_side_stored=480, other_sides_stored=[60])
    assert frozen == 60 - HOLD_CHARS
    # The side still writing goes on (60, then 200, then 400 characters): the display does not.
    for writing in (60, 200, 400):
        assert revealed_chars([SideProgress(500, True), SideProgress(writing, False)], frozen=frozen) == [
            48,
            48,
        ]
    assert revealed_chars([SideProgress(500, True), SideProgress(420, True)], frozen=frozen) == [500, 420]


def test_it_holds_back_the_last_words_of_a_side_that_finishes_ahead_of_a_longer_one():
    # The short side finishes while the long one has already written more: the short side is still not
    # shown whole, so the final reveal gives both sides new text.
    frozen = frozen_chars(finishing_side_stored=70, other_sides_stored=[200])
    assert revealed_chars([SideProgress(80, True), SideProgress(260, False)], frozen=frozen) == [58, 58]


# Each side's stored length at each poll, as the service writes it: growing while the model writes, the
# last entry being the whole reply, stored at the poll at which the side finishes.
timelines = st.lists(st.integers(0, 40), min_size=1, max_size=12).map(
    lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))]
)


def watch(sides: list[list[int]]) -> list[list[int]]:
    """What a rater sees at each poll of a turn whose sides store text as `sides` say, with the display
    frozen as `tournaments.services` freezes it when the first side finishes."""
    frozen = None
    seen = []
    for poll in range(max(len(s) for s in sides)):
        progress = [SideProgress(s[min(poll, len(s) - 1)], finished=poll >= len(s) - 1) for s in sides]
        finishing = [i for i, s in enumerate(sides) if poll == len(s) - 1]
        if frozen is None and finishing and not all(p.finished for p in progress):
            i = finishing[0]
            frozen = frozen_chars(
                finishing_side_stored=sides[i][poll - 1] if poll else 0,
                other_sides_stored=[p.chars for j, p in enumerate(progress) if j != i],
            )
        seen.append(revealed_chars(progress, frozen=frozen))
    return seen


@given(a=timelines, b=timelines)
def test_it_never_takes_back_shown_text_and_shows_everything_at_the_end(a, b):
    seen = watch([a, b])
    for before, now in itertools.pairwise(seen):
        assert all(n >= o for n, o in zip(now, before, strict=True))
    for poll, shown in enumerate(seen):
        stored = [s[min(poll, len(s) - 1)] for s in (a, b)]
        assert all(n <= s for n, s in zip(shown, stored, strict=True))
    assert seen[-1] == [a[-1], b[-1]]


@given(a=timelines, b=timelines)
def test_it_shows_nothing_that_tells_which_side_finished_first(a, b):
    seen = watch([a, b])
    whole = [a[-1], b[-1]]
    for shown in seen[:-1]:
        # Until the last poll both sides show the same count, so they grow at the same polls, by the same
        # amount, and stop at the same polls ...
        assert shown[0] == shown[1]
        # ... and no side is shown whole before the other: the final reveal is one poll for both.
        assert all(n < w or w == 0 for n, w in zip(shown, whole, strict=True))
    # From the first side's finish until the last poll nothing moves: a display still growing then would
    # show that one side had stopped while the other went on.
    first_finish = min(len(a), len(b)) - 1
    assert all(shown == seen[first_finish] for shown in seen[first_finish:-1])
    # Which side is which changes nothing but the order: the display is symmetric in the two sides.
    assert watch([b, a]) == [shown[::-1] for shown in seen]


# --- Through the site -----------------------------------------------------------------------------------


@pytest.fixture
def embedded_pool(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.POPULUS_BACKGROUND_THREADS = 2
    settings.REPLY_PARTIAL_WRITE_SECONDS = 0.05


FAST = " ".join(f"quick{i}" for i in range(80))
SLOW = " ".join(f"slow{i}" for i in range(12))


def test_it_shows_both_sides_growing_together_while_the_models_write(
    transactional_db, embedded_pool, rater, rater_client, fake_llm
):
    battle = battle_start(rater=rater)
    # One side is about twelve times faster and finishes first (at about 1.6 s); the other drips slowly.
    fake_llm.script(battle.model_a.api_model, SlowDrip(FAST, 0.02))
    fake_llm.script(battle.model_b.api_model, SlowDrip(SLOW, 0.25))
    response = rater_client.post(
        f"/battle/{battle.public_id}/turn/", {"message": next_message(battle)}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    seen: list[tuple[str, str]] = []
    partial_page = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        turn = battle_view(battle=battle).turns[0]
        seen.append((turn.reply_a or "", turn.reply_b or ""))
        if turn.complete:
            break
        if turn.reply_a and turn.reply_b and partial_page is None:
            partial_page = rater_client.get(f"/battle/{battle.public_id}/", HTTP_HX_REQUEST="true")
            shown_before_page = seen[-1]
        time.sleep(0.05)
    assert turn.complete
    stored = {r.side: r.content for r in Reply.objects.filter(turn__battle=battle)}
    assert seen[-1] == (stored["a"], stored["b"]) == (FAST, SLOW)
    partial = [(a, b) for a, b in seen if (a, b) != seen[-1]]
    assert any(a and b for a, b in partial), "text appears on both sides before the turn is done"
    for (a, b), (next_a, next_b) in itertools.pairwise(seen):
        assert next_a.startswith(a) and next_b.startswith(b), "shown text is never taken back"
    for a, b in partial:
        # The fast side never runs ahead of the slow one, and neither is shown whole before the other.
        assert len(a) == len(b) and a != FAST and b != SLOW
    html = partial_page.content.decode()
    assert 'hx-trigger="every 1s"' in html
    assert all(text.strip() in html for text in shown_before_page)
    assert "Send to both" not in html and "Your verdict" not in html


def test_it_freezes_both_sides_when_the_first_reply_finishes(rater, fake_llm, settings):
    settings.REPLY_PARTIAL_WRITE_SECONDS = 0  # every streamed word is stored, as a poll could see it
    battle = battle_start(rater=rater)
    turn = Turn.objects.create(battle=battle, index=0, message="How do tides work?")
    first = Reply.objects.create(turn=turn, side=Side.A)
    # The other side's worker has stored 40 characters so far and goes on writing.
    other = Reply.objects.create(
        turn=turn, side=Side.B, state="running", content="x" * 40, started_at=timezone.now(), attempts=1
    )
    answer = "Tides rise and fall twice a day, as the moon and the sun pull the oceans."
    fake_llm.script(battle.model_a.api_model, SlowDrip(answer, 0.001))
    reply_generate(reply_id=first.pk)
    turn.refresh_from_db()
    assert turn.frozen_chars == 40 - HOLD_CHARS
    Reply.objects.filter(pk=other.pk).update(content="x" * 300)
    view = battle_view(battle=battle).turns[0]
    assert (view.reply_a, view.reply_b) == (answer[:28], "x" * 28)
    Reply.objects.filter(pk=other.pk).update(state="done")
    view = battle_view(battle=battle).turns[0]
    assert (view.reply_a, view.reply_b) == (answer, "x" * 300) and view.complete


def test_it_keeps_the_count_the_first_finish_froze_when_the_last_side_finishes(rater, fake_llm, settings):
    settings.REPLY_PARTIAL_WRITE_SECONDS = 0
    battle = battle_start(rater=rater)
    turn = Turn.objects.create(battle=battle, index=0, message="How do tides work?", frozen_chars=5)
    last = Reply.objects.create(turn=turn, side=Side.A)
    Reply.objects.create(turn=turn, side=Side.B, state="done", content="The moon pulls the sea.")
    fake_llm.script(battle.model_a.api_model, SlowDrip("Tides follow the moon around the earth.", 0.001))
    reply_generate(reply_id=last.pk)
    turn.refresh_from_db()
    assert turn.frozen_chars == 5
    assert battle_view(battle=battle).turns[0].complete


def test_it_gives_api_clients_the_same_paced_partial_text(study, groups, fake_llm):
    _, panel = client_with_token(study)
    rater_id = panel.admitted_rater()
    battle_id = panel.start(rater_id)["id"]
    battle = Battle.objects.get(public_id=battle_id)
    # A finished when B had stored 18 characters; B has written more since.
    turn = Turn.objects.create(
        battle=battle,
        index=0,
        message="How do tides work?",
        frozen_chars=frozen_chars(finishing_side_stored=25, other_sides_stored=[18]),
    )
    Reply.objects.create(turn=turn, side=Side.A, state="done", content="Tides follow the moon's pull.")
    Reply.objects.create(
        turn=turn,
        side=Side.B,
        state="running",
        content="The moon pulls the oceans",
        started_at=timezone.now(),
    )
    body = panel.get(f"battles/{battle_id}/").json()
    assert body["turns"][0]["state"] == "waiting"
    assert (body["turns"][0]["reply_a"], body["turns"][0]["reply_b"]) == ("Tides ", "The mo")


def test_it_fails_a_turn_rather_than_replace_text_already_shown(rater, fake_llm, settings):
    battle = battle_start(rater=rater)
    # B finished when A had stored all it ever will; A's worker was then lost.
    turn = Turn.objects.create(
        battle=battle,
        index=0,
        message="How do tides work?",
        frozen_chars=frozen_chars(finishing_side_stored=30, other_sides_stored=[27]),
    )
    stale = timezone.now() - timedelta(seconds=settings.REPLY_STALE_AFTER_SECONDS + 5)
    lost = Reply.objects.create(
        turn=turn,
        side=Side.A,
        state="running",
        content="Tides are the rise and fall",
        started_at=stale,
        attempts=1,
    )
    Reply.objects.create(turn=turn, side=Side.B, state="done", content="The moon pulls the sea up and down.")
    reply_generate(reply_id=lost.pk)
    lost.refresh_from_db()
    assert lost.state == "failed" and lost.content == "Tides are the rise and fall"
    assert Battle.objects.get(pk=battle.pk).state == Battle.State.VOID
    assert fake_llm.requests == []
    view = battle_view(battle=battle)
    assert view.turns[0].reply_a == "Tides are the r" and view.turns[0].reply_b == "The moon pulls "
    assert not view.can_vote and not view.can_send
