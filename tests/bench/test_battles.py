"""The battles benchmark's measures, on made-up timelines: what a polling client sees under the paced
display, and the AUC that says whether it can tell the faster side."""

from bench.battles import SideRun, _auc, _leak, _observe


def side(first: float, done: float, chars: int) -> SideRun:
    """A side whose text grows evenly from its first token to its end, stored every 0.3 s."""
    run = SideRun(first_token=first, last_token=done, done_at=done, chars=chars)
    steps = max(1, int((done - first) / 0.3))
    run.writes = [(first + k * (done - first) / steps, chars * k // steps or 1) for k in range(steps + 1)]
    return run


def test_it_shows_both_sides_at_the_same_poll_however_early_the_fast_one_starts():
    fast, slow = side(1.0, 4.0, 300), side(6.0, 12.0, 300)
    seen = _observe([fast, slow])
    assert seen["first_grew"] == [6.0, 6.0] and seen["both_at"] == 6.0
    assert seen["whole_at"] == 12.0
    # The raw timings tell the sides apart; what the client saw does not.
    assert seen["last_grew"][0] == seen["last_grew"][1]


def test_it_scores_a_perfect_a_tie_and_no_leak():
    labels = [True, False, True, False]
    assert _auc([2.0, -1.0, 3.0, -2.0], labels) == 1.0
    assert _auc([0.0, 0.0, 0.0, 0.0], labels) == 0.5
    assert _leak([[0.0] * 4, [-2.0, 1.0, -3.0, 2.0]], labels) == 0.0
