import math

import numpy as np
import pytest

from stats.arena_scale import ARENA_ANCHOR, ARENA_SCALE, arena_ratings


def test_it_puts_the_field_mean_at_the_anchor_and_ten_to_one_odds_at_400_points():
    skill = np.array([math.log(10), 0.0, -1.0])
    ratings = arena_ratings(skill, np.tile(skill, (50, 1)))
    assert ratings.point.mean() == pytest.approx(ARENA_ANCHOR)
    assert ratings.point[0] - ratings.point[1] == pytest.approx(400.0)
    assert round(ARENA_SCALE, 4) == 173.7178
    np.testing.assert_allclose(ratings.low, ratings.point)  # no spread in the draws, no width


def test_it_centres_every_draw_so_a_common_shift_moves_nothing():
    rng = np.random.default_rng(1)
    draws = rng.normal(0, 0.1, (4000, 3)) + np.array([0.5, 0.0, -0.5])
    shifted = draws + rng.normal(0, 5.0, (4000, 1))  # the same skills, each draw moved as a whole
    plain, moved = arena_ratings(draws.mean(axis=0), draws), arena_ratings(draws.mean(axis=0), shifted)
    np.testing.assert_allclose(plain.low, moved.low)
    np.testing.assert_allclose(plain.high, moved.high)
    assert (plain.low < plain.point).all() and (plain.point < plain.high).all()
    # Each side is about 1.96 sd of the centred rating wide.
    centred_sd = np.std(ARENA_SCALE * (draws - draws.mean(axis=1, keepdims=True)), axis=0)
    np.testing.assert_allclose(plain.high - plain.low, 2 * 1.96 * centred_sd, rtol=0.08)
