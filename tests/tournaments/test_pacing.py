"""Both sides grow together, at the slower side's pace: how fast each side's text appears tells the rater
nothing about which model is faster, and text once shown is never taken back."""

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
from tournaments.pacing import SideProgress, revealed_chars
from tournaments.selectors import battle_view
from tournaments.services import battle_start, reply_generate

# --- The rule -------------------------------------------------------------------------------------------


def test_it_holds_the_faster_side_to_the_slower_sides_progress():
    assert revealed_chars([SideProgress(120, False), SideProgress(30, False)]) == [30, 30]
    # Done first but longer: shown only as far as the side still writing has come.
    assert revealed_chars([SideProgress(500, True), SideProgress(30, False)]) == [30, 30]
    # Done and shorter: shown whole while the other side goes on.
    assert revealed_chars([SideProgress(20, True), SideProgress(30, False)]) == [20, 30]
    assert revealed_chars([SideProgress(20, True), SideProgress(300, True)]) == [20, 300]
    assert revealed_chars([SideProgress(0, False), SideProgress(300, False)]) == [0, 0]


# Each side's timeline: how many characters it has at each tick, and when (if ever) it is done.
timelines = st.lists(st.integers(0, 40), min_size=1, max_size=12).map(
    lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))]
)


@given(a=timelines, b=timelines)
def test_it_never_takes_back_shown_text_and_shows_everything_at_the_end(a, b):
    ticks = max(len(a), len(b))
    shown_before = [0, 0]
    for tick in range(ticks):
        sides = [
            SideProgress(chars=timeline[min(tick, len(timeline) - 1)], finished=tick >= len(timeline) - 1)
            for timeline in (a, b)
        ]
        shown = revealed_chars(sides)
        assert all(now >= before for now, before in zip(shown, shown_before, strict=True))
        assert all(now <= side.chars for now, side in zip(shown, sides, strict=True))
        # While both sides are unfinished, they show exactly as much as each other.
        if not sides[0].finished and not sides[1].finished:
            assert shown[0] == shown[1]
        shown_before = shown
    assert shown_before == [a[-1], b[-1]]


# --- Through the site -----------------------------------------------------------------------------------


@pytest.fixture
def embedded_pool(settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.POPULUS_BACKGROUND_THREADS = 2
    settings.REPLY_PARTIAL_WRITE_SECONDS = 0.05


FAST = " ".join(f"quick{i}" for i in range(40))
SLOW = " ".join(f"slow{i}" for i in range(12))


def test_it_shows_both_sides_growing_together_while_the_models_write(
    transactional_db, embedded_pool, rater, rater_client, fake_llm
):
    battle = battle_start(rater=rater)
    # One side is four times faster (and longer); the other drips slowly.
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
        time.sleep(0.05)
    assert turn.complete
    stored = {r.side: r.content for r in Reply.objects.filter(turn__battle=battle)}
    assert seen[-1] == (stored["a"], stored["b"]) == (FAST, SLOW)
    partial = [(a, b) for a, b in seen if (a, b) != seen[-1]]
    assert any(a and b for a, b in partial), "text appears on both sides before the turn is done"
    for (a, b), (next_a, next_b) in itertools.pairwise(seen):
        assert next_a.startswith(a) and next_b.startswith(b), "shown text is never taken back"
    for a, b in partial:
        # The fast side never runs ahead of the slow one, except once the slow side is shown whole.
        assert len(a) == len(b) or b == SLOW
    html = partial_page.content.decode()
    assert 'hx-trigger="every 1s"' in html and "slow0" in html and "quick0" in html
    assert "Send to both" not in html and "Your verdict" not in html


def test_it_gives_api_clients_the_same_paced_partial_text(study, groups, fake_llm):
    _, panel = client_with_token(study)
    rater_id = panel.admitted_rater()
    battle_id = panel.start(rater_id)["id"]
    battle = Battle.objects.get(public_id=battle_id)
    turn = Turn.objects.create(battle=battle, index=0, message="How do tides work?")
    Reply.objects.create(turn=turn, side=Side.A, state="done", content="Tides follow the moon's pull.")
    Reply.objects.create(turn=turn, side=Side.B, state="running", content="The mo", started_at=timezone.now())
    body = panel.get(f"battles/{battle_id}/").json()
    assert body["turns"][0]["state"] == "waiting"
    assert (body["turns"][0]["reply_a"], body["turns"][0]["reply_b"]) == ("Tides ", "The mo")


def test_it_fails_a_turn_rather_than_replace_text_already_shown(rater, fake_llm, settings):
    battle = battle_start(rater=rater)
    turn = Turn.objects.create(battle=battle, index=0, message="How do tides work?")
    stale = timezone.now() - timedelta(seconds=settings.REPLY_STALE_AFTER_SECONDS + 5)
    lost = Reply.objects.create(
        turn=turn, side=Side.A, state="running", content="Tides are", started_at=stale, attempts=1
    )
    Reply.objects.create(turn=turn, side=Side.B, state="done", content="The moon pulls.")
    reply_generate(reply_id=lost.pk)
    lost.refresh_from_db()
    assert lost.state == "failed" and lost.content == "Tides are"
    assert Battle.objects.get(pk=battle.pk).state == Battle.State.VOID
    assert fake_llm.requests == []
    view = battle_view(battle=battle)
    assert view.turns[0].reply_a == "Tides are" and view.turns[0].reply_b == "The moon "
    assert not view.can_vote and not view.can_send
