"""`bench ratings` style-control figures (bench.fit style simulation), at quick sizes. No database."""

import json

import numpy as np
from django.core.management import call_command

from bench.fit import style_simulation, style_world
from bench.ratings import STYLE_TARGETS


def test_the_quick_benchmark_prints_the_style_figures_as_json(capsys):
    call_command("bench", "ratings", "--json", "--quick")
    figures = json.loads(capsys.readouterr().out)
    for key in (*STYLE_TARGETS, "style_tau_raw", "style_tau_controlled", "style_fit_seconds", "style_passed"):
        assert key in figures
    assert set(figures["style_passed"]) == set(STYLE_TARGETS)
    # A planted style effect misleads the raw board; the controlled board sees through it.
    assert figures["style_tau_gain"] > 0.1
    assert figures["style_tau_controlled"] > 0.8
    assert 0 <= figures["style_coefficient_coverage"] <= 1
    assert figures["style_fit_converged"]


def test_the_null_control_plants_no_style_effect_and_the_boards_agree():
    null = style_simulation(n_sims=3, n_models=10, n_battles=6_000, planted=False)
    assert abs(null["tau_diff"]) < 0.1
    assert max(abs(v) for v in null["global_mean"].values()) < 0.1
    world = style_world(10, np.random.default_rng(0), planted=False)
    assert not world.style.any() and not world.style_offsets.any()
