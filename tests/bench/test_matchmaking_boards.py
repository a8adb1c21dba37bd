"""The simulated studies of `bench matchmaking` for every board (small sizes). No database."""

import numpy as np
import pytest

from bench.matchmaking_boards import MODELS, Study, groups, simulate


def test_the_study_has_22_census_groups_over_two_countries_and_three_axes():
    every = groups()
    assert len(every) == 22
    assert {country for country, *_ in every} == {"US", "UK"}
    for country in ("US", "UK"):
        axes = {axis for c, axis, _, _ in every if c == country}
        assert len(axes) == 3
        for axis in axes:
            assert sum(share for c, a, _, share in every if (c, a) == (country, axis)) == pytest.approx(
                1, abs=0.01
            )


def test_group_offsets_average_out_and_some_groups_reorder_the_top_three():
    study = Study(seed=3)
    for key in {(c, a) for c, a, _, _ in study.groups}:
        members = [g for g, (c, a, _, _) in enumerate(study.groups) if (c, a) == key]
        shares = np.array([study.groups[g][3] for g in members])
        average = np.tensordot(shares / shares.sum(), study.offsets[members], axes=1)
        assert np.abs(average).max() < 1e-9  # so the pooled board's truth is the base skills
    base_top3 = list(np.argsort(-study.base[0])[:3])
    reordered = [g for g in range(22) if list(np.argsort(-study.truth[g][0])[:3]) != base_top3]
    assert 3 <= len(reordered) < 22


def test_raters_follow_the_census_shares():
    study, rng = Study(seed=1), np.random.default_rng(0)
    draws = [study.rater(rng) for _ in range(3000)]
    careless = np.mean([c for _, c in draws])
    assert careless == pytest.approx(0.15, abs=0.03)
    uk_black = next(g for g, (c, _, label, _) in enumerate(study.groups) if (c, label) == ("UK", "Black"))
    assert np.mean([uk_black in chosen for chosen, _ in draws]) == pytest.approx(0.4 * 0.04, abs=0.008)


def test_both_policies_see_the_same_study_and_announce_only_above_the_threshold():
    study = Study(seed=0)
    sizes = {"horizon": 200, "checkpoint": 50, "budgets": (200,)}
    new, uniform = (simulate(study, policy=p, sizes=sizes, seed=0) for p in ("new", "uniform"))
    for result in (new, uniform):
        assert set(result["taus"][200]) == {(b, k) for b in (None, *range(22)) for k in range(3)}
        assert len(result["z"]) == MODELS * (MODELS - 1) // 2
    assert new["max_pair_share"] != uniform["max_pair_share"] or new["taus"] != uniform["taus"]


def test_the_need_weights_of_the_new_policy_can_be_set():
    study = Study(seed=2)
    sizes = {"horizon": 100, "checkpoint": 50, "budgets": (100,)}
    default = simulate(study, policy="new", sizes=sizes, seed=2)
    flat = simulate(
        study, policy="new", sizes={**sizes, "weights": {"leader": 0, "intervals": 0, "raters": 0}}, seed=2
    )
    assert default["taus"] != flat["taus"] or default["max_pair_share"] != flat["max_pair_share"]
