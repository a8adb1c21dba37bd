"""The simulated studies of `bench matchmaking` for every board (small sizes). No database."""

import numpy as np
import pytest

from bench.matchmaking_boards import (
    MODELS,
    Study,
    _announce_figures,
    announcements,
    groups,
    run,
    simulate,
    worst_of_noise,
)


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


def _result(trajectory, truth):
    return {"trajectory": trajectory, "truth": truth}


def test_a_board_announces_at_its_first_confident_checkpoint_once_it_has_enough_battles():
    result = _result(
        [
            (100, {"pooled": (0.97, 2, 100), 0: (0.5, 1, 10)}),
            (200, {"pooled": (0.99, 0, 200), 0: (0.96, 1, 30)}),
            (300, {"pooled": (0.99, 0, 300), 0: (0.97, 1, 60)}),
        ],
        {"pooled": 0, 0: 1},
    )
    assert announcements(result) == {"pooled": (100, False), 0: (200, True)}
    assert announcements(result, min_battles=50) == {"pooled": (100, False), 0: (300, True)}


def test_boards_that_never_announce_are_reported_as_censored_not_hidden():
    boards = ["pooled", *range(22)]

    def seed(announce_at):
        readings = {b: (0.99 if b in announce_at else 0.4, 0, 500) for b in boards}
        return _result([(500, readings)], dict.fromkeys(boards, 0))

    everyone = seed(boards)
    pooled_only = seed(["pooled"])
    per_seed = [{"new": everyone, "uniform": pooled_only}, {"new": pooled_only, "uniform": pooled_only}]
    figures = _announce_figures(per_seed, horizon=1000, budgets=(500,), min_battles=0)
    assert figures["all_boards_censored"] == {"new": 0.5, "uniform": 1.0}
    assert figures["all_boards_announce_ratio"] == pytest.approx(0.75)  # median of 500/1000 and 1000/1000
    assert figures["boards_announced_share"]["500"] == {"new": pytest.approx(24 / 46), "uniform": 1 / 23}
    assert figures["pooled_censored"] == {"new": 0.0, "uniform": 0.0}
    assert figures["restricted_mean_announce_ratio"] == pytest.approx((23 * 500 + 500 + 22000) / (2 * 22500))


def test_the_closest_leaders_are_the_smallest_gap_between_a_boards_best_two():
    study = Study(seed=0)
    gaps = [np.diff(np.sort(truth[0])[-2:])[0] * 400 / np.log(10) for truth in study.truth.values()]
    assert study.closest_leaders_elo() == pytest.approx(min(gaps))
    assert study.closest_leaders_elo() < 60  # the pooled board's own gap (TOP_GAP_ELO) bounds it


def test_a_study_of_more_models_is_run_over_all_their_pairs():
    study = Study(seed=0, models=12)
    assert len(study.pairs) == 66 and study.base.shape == (3, 12)
    result = simulate(
        study, policy="new", sizes={"horizon": 200, "checkpoint": 100, "budgets": (200,)}, seed=0
    )
    assert result["taus"][200][(None, 0)] > 0
    assert len(result["z"]) == 66


def test_the_worst_of_many_noisy_differences_is_far_below_zero_even_with_no_effect():
    assert worst_of_noise([]) == 0.0
    assert worst_of_noise([0.0] * 50) == 0.0
    # The smallest of 200 standard normals has a median near -2.7.
    assert worst_of_noise([0.1] * 200) == pytest.approx(-0.27, abs=0.03)
    assert worst_of_noise([0.1] * 200) < worst_of_noise([0.1] * 20) < 0


def test_the_quick_mode_reports_every_figure_of_the_issue_in_well_under_a_minute():
    figures = run(quick=True)
    for name in (
        "all_boards_announce_ratio",
        "pooled_announce_ratio",
        "wrong_announcement_rate",
        "tau_delta_min",
        "tau_delta_min_if_no_effect",
        "closest_leaders_elo",
        "z_sd",
        "max_pair_share",
        "top1_stays_ratio",
    ):
        assert name in figures
    assert set(figures["all_boards_censored"]) == {"new", "uniform"}
    assert figures["seconds"] < 60
