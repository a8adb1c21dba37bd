"""Announcing a leader at a P(best) threshold, and the estimate of the battles still needed."""

import pytest
from scipy.stats import norm

from stats.announce import battles_to_announce, leader_index

EVEN = (0.5, 0.4, 0.6)


def test_it_announces_only_a_model_at_or_above_the_threshold():
    assert leader_index([0.2, 0.95, None], threshold=0.95) == 1
    assert leader_index([0.06, 0.94], threshold=0.95) is None
    assert leader_index([0.4, 0.6], threshold=0.55) == 1
    assert leader_index([None, None]) is None


def test_it_refuses_a_threshold_at_which_two_models_could_lead():
    with pytest.raises(ValueError):
        leader_index([0.5, 0.5], threshold=0.5)


def test_it_says_nothing_is_needed_once_p_best_reaches_the_threshold():
    assert battles_to_announce(p_best=0.96, leader=(0.6, 0.5, 0.7), runner_up=EVEN, battles=100) == 0


def test_it_scales_the_battles_with_the_square_of_the_missing_precision():
    # P(best) at half the threshold's z-score: four times the battles in all, so three times more.
    p_best = float(norm.cdf(0.5 * norm.ppf(0.95)))
    needed = battles_to_announce(p_best=p_best, leader=(0.6, 0.5, 0.7), runner_up=EVEN, battles=200)
    assert needed == pytest.approx(3 * 200, abs=2)


def test_it_reads_the_top_two_gap_while_p_best_is_spread_over_several_contenders():
    # Intervals +-0.1 each: sd of the difference 0.1 sqrt(2) / 1.96; the gap at half of z*.
    gap = 0.5 * norm.ppf(0.95) * 0.1 * 2**0.5 / norm.ppf(0.975)
    leader = (0.5 + gap, 0.4 + gap, 0.6 + gap)
    assert battles_to_announce(p_best=0.4, leader=leader, runner_up=EVEN, battles=200) == pytest.approx(
        600, abs=2
    )


def test_it_never_says_zero_before_the_announcement():
    clear = (0.9, 0.89, 0.91)  # the top two are far apart, but P(best) is still short of the threshold
    assert battles_to_announce(p_best=0.45, leader=clear, runner_up=EVEN, battles=100) == 1


def test_it_cannot_tell_when_the_top_two_look_equal_or_nothing_was_rated():
    assert battles_to_announce(p_best=0.4, leader=EVEN, runner_up=EVEN, battles=100) is None
    assert battles_to_announce(p_best=0.7, leader=(0.6, 0.4, 0.8), runner_up=EVEN, battles=0) is None


def test_a_board_with_too_few_battles_announces_nothing_yet_and_says_how_many_are_missing():
    assert leader_index([0.02, 0.98], threshold=0.95, battles=120, min_battles=300) is None
    assert leader_index([0.02, 0.98], threshold=0.95, battles=300, min_battles=300) == 1
    assert leader_index([0.02, 0.98], threshold=0.95, min_battles=300) is None  # battles unknown
    with pytest.raises(ValueError, match="min_battles"):
        leader_index([0.02, 0.98], min_battles=-1)
    sure = {"leader": (0.6, 0.5, 0.7), "runner_up": EVEN}
    assert battles_to_announce(p_best=0.98, battles=120, min_battles=300, **sure) == 180
    assert battles_to_announce(p_best=0.98, battles=400, min_battles=300, **sure) == 0
    p_best = float(norm.cdf(0.5 * norm.ppf(0.95)))
    assert battles_to_announce(p_best=p_best, battles=20, min_battles=300, **sure) == 280
