"""The battles benchmark's measures, on made-up turns: the AUC must see a display that gives the faster
side away, see nothing in one that does not, and see the raw speed difference either way."""

import pytest

from bench.battles import TurnWatch, _auc, _figures, _rater, _still_share


def turn(fast_side: str, *, display_leaks: bool) -> TurnWatch:
    """A turn in which the fast model finishes at 4 s and the slow one at 12 s. The display shows text on
    both sides from 2 s; a blind display stops both at 3 s and shows both whole at 13 s, a leaky one
    shows the fast side whole at 5 s while the slow side goes on growing."""
    slow_side = "b" if fast_side == "a" else "a"
    watch = TurnWatch(fast_side=fast_side, first_text=2.0, turn=13.0)
    watch.first_stored = {fast_side: 0.5, slow_side: 1.0}
    watch.last_stored = watch.finished = {fast_side: 4.0, slow_side: 12.0}
    watch.lengths = {fast_side: 150, slow_side: 800}
    watch.grew = {fast_side: [2.0, 3.0], slow_side: [2.0, 3.0]}
    watch.whole_at = {fast_side: 13.0, slow_side: 13.0}
    if display_leaks:
        watch.grew = {fast_side: [2.0, 3.0, 5.0], slow_side: [float(t) for t in range(2, 14)]}
        watch.whole_at[fast_side] = 5.0
    return watch


@pytest.mark.parametrize("display_leaks", [False, True])
def test_it_tells_a_leaky_display_from_a_blind_one_and_sees_the_raw_speed_in_both(display_leaks):
    turns = [turn(side, display_leaks=display_leaks) for side in "abbaab"]
    figures = _figures(turns)
    assert figures["raw_timing_auc"] == 1.0
    if display_leaks:
        assert figures["speed_leak_auc"] == 1.0
        assert figures["speed_leak_auc_by_predictor"]["whole"] == 1.0
    else:
        assert figures["speed_leak_auc"] == 0.5
    assert figures["first_text_p50_s"] == 2.0 and figures["turn_p50_s"] == 13.0
    assert figures["first_text_within_3s_of_slower_first_token"] == 1.0
    assert figures["reply_length_auc"] == 1.0  # the fast model writes less: visible by design


def test_it_measures_how_long_the_display_stood_still():
    watch = turn("a", display_leaks=False)
    # Growth at 2 and 3 s, whole turn at 13 s: still for 10 of the 11 s after the first text.
    assert _still_share(watch) == pytest.approx(10 / 11)


def test_it_scores_a_perfect_prediction_a_tie_and_a_reversed_one():
    labels = [True, False, True, False]
    assert _auc([2.0, -1.0, 3.0, -2.0], labels) == 1.0
    assert _auc([0.0, 0.0, 0.0, 0.0], labels) == 0.5
    assert _auc([-2.0, 1.0, -3.0, 2.0], labels) == 0.0


@pytest.mark.django_db
def test_each_turn_gets_a_fresh_admitted_rater_of_the_study(study):
    first, second = _rater(study), _rater(study)
    assert first.pk != second.pk
    assert first.study == study and first.status == first.Status.ADMITTED
