"""`bench matchmaking`: the matchmaker against uniform pairing in simulation (small sizes). No database."""

import json

import numpy as np
import pytest
from django.core.management import call_command

from bench.matchmaking import _battles_until_stays_true, population_for, run


def test_the_quick_benchmark_prints_every_figure_as_json(capsys):
    call_command("bench", "matchmaking", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    headline = ("top1_ratio", "top5_ratio", "tau_delta_min", "z_sd", "max_pair_share", "top1_two_runs_sd_max")
    for key in (*headline, "passed", "settings"):
        assert key in figures
    assert {"tau_delta_min", "z_sd", "max_pair_share"} < set(figures["passed"])
    assert "top1_ratio" not in figures["passed"]  # kept without a target
    boards = figures["boards"]
    for key in ("all_boards_announce_ratio", "pooled_announce_ratio", "wrong_announcement_rate"):
        assert figures[key] == boards[key]
    assert set(boards["wrong_announcement_rate"]) == {"new", "uniform"}
    for key in (
        "tau_delta_min",
        "z_sd",
        "max_pair_share",
        "top1_stays_ratio",
        "two_halves",
        "all_boards_censored",
    ):
        assert key in boards
    assert 0 < boards["max_pair_share"] <= 1 and 0.3 < boards["z_sd"] < 3
    (setting,) = figures["settings"].values()
    assert set(setting["tau"]) == {"200", "400"}
    assert figures["top1_ratio"] > 0
    assert 0 < figures["max_pair_share"] <= 1
    assert 0.3 < figures["z_sd"] < 3


@pytest.mark.parametrize("tie_rate", [0.1, 0.3, 0.65])
def test_the_simulated_arena_has_the_tie_rate_and_close_contenders(tie_rate):
    population = population_for(20, tie_rate, seed=1)
    first, second = np.triu_indices(20, 1)
    _, _, p_tie = population.probabilities(population.skills[first] - population.skills[second])
    assert p_tie.mean() == pytest.approx(tie_rate, abs=1e-6)
    top = np.sort(population.skills)[::-1] * 400 / np.log(10)
    widen = np.sqrt(0.9 / (1 - tie_rate))  # more ties, wider gaps at the top
    assert 30 * widen <= top[0] - top[1] <= 40 * widen  # Elo
    assert 200 < top[0] - top[-1] < 320


def test_the_pseudo_true_skills_are_the_model_closest_to_the_truth():
    # Random raters and easy-prompt ties shrink what Bradley-Terry-Davidson can see of each gap.
    population = population_for(12, 0.3, seed=2)
    target = population.pseudo_true()
    truth = population.skills - population.skills.mean()
    assert np.argsort(target).tolist() == np.argsort(truth).tolist()
    assert 0.6 < np.ptp(target) / np.ptp(truth) < 1.0


def test_identified_means_right_at_every_later_checkpoint():
    assert _battles_until_stays_true([False, True, False, True, True], every=20, horizon=100) == 80
    assert _battles_until_stays_true([True, True], every=20, horizon=40) == 20
    assert _battles_until_stays_true([True, False], every=20, horizon=40) == 40


def test_overrides_reach_the_simulation_and_unknown_ones_are_refused():
    with pytest.raises(ValueError, match="floor_share"):
        run(quick=True, seeds=2, matchmaker_settings={"floor_share": 2.0})
    with pytest.raises(ValueError, match="unknown benchmark sizes"):
        run(quick=True, seed_count=1)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        run(quick=True, seeds=1)
    figures = run(quick=True, seeds=2, matchmaker_settings={"top_two_share": 0.0})
    assert figures["sizes"]["seeds"] == 2
    assert figures["sizes"]["matchmaker_settings"] == {"top_two_share": 0.0}
