"""One pair choice for all the boards a battle feeds: needs, weights and the mixture's guarantees."""

import numpy as np
import pytest

from stats.board_mix import (
    Goal,
    Weights,
    board_need,
    board_rarity,
    capped_mixture,
    mixture,
    mixture_weights,
    pair_cap,
)
from stats.matchmaker import Matchmaker

MODELS = list(range(8))


def need(**overrides) -> float:
    values = {"p_best": 0.3, "models": 8, "widest_interval": 2.0, "raters": 3, "tie_parameter": 0.2}
    return board_need(**(values | overrides))


def test_it_needs_nothing_once_every_part_of_the_goal_is_met():
    assert need(p_best=0.96, widest_interval=0.9, raters=40) == 0.0
    assert need(p_best=0.96, widest_interval=0.9, raters=40, goal=Goal(threshold=0.99)) > 0


def test_it_needs_more_the_further_a_board_is_from_its_goal():
    assert need(p_best=0.2) > need(p_best=0.6) > need(p_best=0.94)
    assert need(raters=0) > need(raters=5) > need(raters=10)
    assert need(widest_interval=4.0) > need(widest_interval=1.5)


def test_it_weighs_each_part_of_the_goal_by_its_setting():
    only_raters = Weights(leader=0.0, intervals=0.0, raters=1.0)
    assert need(p_best=0.1, raters=40, weights=only_raters) == 0.0
    assert need(p_best=0.1, raters=0, weights=only_raters) == pytest.approx(2 / 2.2)


def test_it_keeps_an_all_ties_dimension_from_soaking_up_the_budget():
    overall = need(tie_parameter=0.25)  # about 10% ties between equals
    trust = need(tie_parameter=4.0)  # about 65% ties
    all_ties = need(tie_parameter=1e4)
    weights = mixture_weights([overall, trust, all_ties])
    assert weights[0] > weights[1] > 0.1 and weights[2] < 0.001


def test_it_counts_every_board_equally_when_none_needs_anything():
    assert mixture_weights([0.0, 0.0]) == [0.5, 0.5]
    with pytest.raises(ValueError):
        mixture_weights([0.5, -0.1])


def fitted(seed: int, skills) -> Matchmaker:
    rng = np.random.default_rng(seed)
    matchmaker = Matchmaker(MODELS, seed=seed)
    for _ in range(300):
        a, b = rng.choice(len(MODELS), 2, replace=False)
        p = 1 / (1 + np.exp(skills[b] - skills[a]))
        matchmaker.observe(int(a), int(b), "a" if rng.random() < p else "b")
    return matchmaker


def test_it_keeps_the_floor_the_cap_and_the_exclusions_of_its_parts():
    exclude = [(0, 1), (2, 3)]
    in_flight = [(4, 5)] * 3
    parts = [
        fitted(seed, skills).pair_distribution(exclude_pairs=exclude, in_flight=in_flight)
        for seed, skills in ((1, np.linspace(2, 0, 8)), (2, np.linspace(0, 2, 8)), (3, np.zeros(8)))
    ]
    combined = mixture(parts, [0.7, 0.2, 0.1])
    eligible = 28 - len(exclude)
    assert sum(combined.values()) == pytest.approx(1.0)
    assert set(combined) == set(parts[0]) and not set(exclude) & set(combined)
    assert min(combined.values()) >= 0.1 / eligible - 1e-12  # the matchmaker's floor_share
    assert max(combined.values()) <= max(0.04, 4 / eligible) + 1e-12  # its pair cap
    assert combined[(4, 5)] <= max(p[(4, 5)] for p in parts) + 1e-12  # in flight: each part cut it


def test_the_mixture_gives_no_pair_more_than_the_cap_and_the_excess_to_the_others():
    # Two boards that agree on their leaders' pair (0, 1), as the pooled and most group boards do.
    parts = [fitted(seed, np.linspace(2, 0, 8)).pair_distribution() for seed in (1, 2)]
    uncapped = mixture(parts, [1.0, 1.0])
    assert max(uncapped.values()) > 0.06
    capped = capped_mixture(parts, [1.0, 1.0], pair_cap(0.05, pairs=28, allowed=28))
    assert sum(capped.values()) == pytest.approx(1.0)
    assert max(capped.values()) <= 0.05 + 1e-12
    # The pairs left under the cap keep their proportions: the excess is shared as the mixture asked.
    below = [pair for pair, p in capped.items() if p < 0.05 - 1e-9]
    ratios = [capped[pair] / uncapped[pair] for pair in below]
    assert min(ratios) == pytest.approx(max(ratios)) and min(ratios) > 1


def test_the_cap_is_never_below_an_even_share_and_keeps_room_in_small_tournaments():
    assert pair_cap(0.05, pairs=45, allowed=45) == 0.05
    assert pair_cap(0.05, pairs=28, allowed=28) == pytest.approx(0.05)  # eight models: 1.4 / 28
    assert pair_cap(0.05, pairs=6, allowed=6) == pytest.approx(1.4 / 6)  # four models: 23%, even 17%
    assert pair_cap(0.05, pairs=45, allowed=10) == pytest.approx(0.1)  # a rater with ten pairs left
    assert pair_cap(0.5, pairs=3, allowed=1) == 1.0
    with pytest.raises(ValueError, match="pair cap"):
        pair_cap(0.0, pairs=28, allowed=28)
    with pytest.raises(ValueError, match="allowed pairs"):
        pair_cap(0.05, pairs=28, allowed=0)


def test_a_small_groups_board_counts_more_when_one_of_its_few_raters_arrives():
    assert board_rarity(1000, 1000) == 1.0  # the pooled board: every rater feeds it
    assert board_rarity(1000, 16) == pytest.approx(62.5)
    assert board_rarity(1000, 250, exponent=0.5) == pytest.approx(2.0)
    assert board_rarity(1000, 16, exponent=0.0) == 1.0
    assert board_rarity(0, 0) == 1.0  # no rater yet: nothing to tell the boards apart
    with pytest.raises(ValueError, match="rarity exponent"):
        board_rarity(10, 5, exponent=-1.0)


def test_a_step_shortfall_asks_as_much_of_a_nearly_announced_board_as_of_an_open_one():
    step = Goal(leader_shortfall="step")
    assert need(p_best=0.9, raters=40, widest_interval=0.5, goal=step) == need(
        p_best=0.2, raters=40, widest_interval=0.5, goal=step
    )
    assert need(p_best=0.9, raters=40, widest_interval=0.5) < need(p_best=0.2, raters=40, widest_interval=0.5)
    assert need(p_best=0.96, raters=40, widest_interval=0.5, goal=step) == 0.0
    with pytest.raises(ValueError, match="leader_shortfall"):
        Goal(leader_shortfall="square")
