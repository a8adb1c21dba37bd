"""Replay benchmark: the closed-form TrueSkill kernel against the trueskill package (pure Python).

Both replay the same random vote sequence over the same rating table with the same parameters, so
the timings are comparable and the final tables should agree (see stats.trueskill).
"""

import math
import random
import statistics
import time

import trueskill

from bench.fit import (
    PLANTED_GROUP_STYLE,
    PLANTED_STYLE,
    STYLE_FEATURES,
    coverage_simulation,
    fit_benchmark,
    style_fit_time,
    style_simulation,
)
from stats.trueskill import TrueSkillParams, rate_1vs1

# (first, second, drawn): `first` beat `second` unless drawn.
Vote = tuple[int, int, bool]
Table = list[tuple[float, float]]

DRAW_SHARE = 0.2


def random_votes(votes: int, models: int, seed: int) -> list[Vote]:
    """A seeded vote sequence: random pairs, ~20% draws, winners drawn from hidden model strengths."""
    if models < 2:
        raise ValueError("need at least two models")
    rng = random.Random(seed)  # noqa: S311 - reproducible benchmark data, not security
    strength = [rng.gauss(0.0, 1.0) for _ in range(models)]
    sequence: list[Vote] = []
    for _ in range(votes):
        i, j = rng.sample(range(models), 2)
        if rng.random() < DRAW_SHARE:
            sequence.append((i, j, True))
        elif rng.random() < 1.0 / (1.0 + math.exp(strength[j] - strength[i])):
            sequence.append((i, j, False))
        else:
            sequence.append((j, i, False))
    return sequence


def replay_kernel(sequence: list[Vote], models: int, params: TrueSkillParams) -> Table:
    table = [(params.mu, params.sigma)] * models
    for first, second, drawn in sequence:
        table[first], table[second] = rate_1vs1(table[first], table[second], drawn=drawn, params=params)
    return table


def replay_package(sequence: list[Vote], models: int, env: trueskill.TrueSkill) -> Table:
    ratings = [env.create_rating() for _ in range(models)]
    for first, second, drawn in sequence:
        ratings[first], ratings[second] = trueskill.rate_1vs1(
            ratings[first], ratings[second], drawn=drawn, env=env
        )
    return [(r.mu, r.sigma) for r in ratings]


def replay_benchmark(votes: int = 100_000, models: int = 20, seed: int = 0, repeats: int = 5) -> dict:
    """Time `repeats` replays of one vote sequence with each implementation, alternating them.

    Returns the vote count, each implementation's median wall time, the speedup (package median /
    kernel median) and the largest |mu| or |sigma| difference between the two final tables.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")
    params = TrueSkillParams()
    env = trueskill.TrueSkill(
        mu=params.mu,
        sigma=params.sigma,
        beta=params.beta,
        tau=params.tau,
        draw_probability=params.draw_probability,
    )
    sequence = random_votes(votes, models, seed)
    kernel_times: list[float] = []
    package_times: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter()
        kernel_table = replay_kernel(sequence, models, params)
        kernel_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        package_table = replay_package(sequence, models, env)
        package_times.append(time.perf_counter() - start)
    kernel_median = statistics.median(kernel_times)
    package_median = statistics.median(package_times)
    return {
        "votes": votes,
        "kernel_seconds_median": kernel_median,
        "package_seconds_median": package_median,
        "replay_speedup": package_median / kernel_median,
        "replay_max_abs_diff": max(
            max(abs(k_mu - p_mu), abs(k_sigma - p_sigma))
            for (k_mu, k_sigma), (p_mu, p_sigma) in zip(kernel_table, package_table, strict=True)
        ),
    }


FULL = {
    "replay_votes": 100_000,
    "fit_models": 130,
    "fit_battles": 1_700_000,
    "coverage_sims": 100,
    "style_sims": 40,
    "style_models": 16,
    "style_battles": 20_000,
    "style_fit_repeats": 3,
}
QUICK = {
    "replay_votes": 5_000,
    "fit_models": 20,
    "fit_battles": 50_000,
    "coverage_sims": 10,
    "style_sims": 3,
    "style_models": 10,
    "style_battles": 6_000,
    "style_fit_repeats": 1,
}
# Targets of the style-control figures (issue 17).
STYLE_TARGETS = {
    "style_tau_gain": (0.2, None),
    "style_tau_null_diff": (-0.02, 0.02),
    "style_coefficient_coverage": (0.90, 0.98),
    "style_skill_coverage": (0.90, 0.98),
    "style_fit_ratio": (None, 1.5),
}


def style_benchmark(
    *, sims: int, models: int, battles: int, fit_models: int, fit_battles: int, fit_repeats: int
) -> dict:
    """Style control: the raw and style-controlled boards against known skills with a planted style
    effect and in a null control without one, the planted coefficients' interval coverage, and the
    fit time with the covariates against the fit without them (bench.fit)."""
    planted = style_simulation(n_sims=sims, n_models=models, n_battles=battles, planted=True)
    null = style_simulation(n_sims=sims, n_models=models, n_battles=battles, planted=False, seed=1)
    figures = {
        "style_tau_raw": planted["raw_tau"],
        "style_tau_controlled": planted["controlled_tau"],
        "style_tau_gain": planted["tau_diff"],
        "style_tau_null_raw": null["raw_tau"],
        "style_tau_null_controlled": null["controlled_tau"],
        "style_tau_null_diff": null["tau_diff"],
        "style_coefficient_coverage": planted["coefficient_coverage"],
        "style_null_coefficient_coverage": null["coefficient_coverage"],
        "style_global_coverage": planted["global_coverage"],
        "style_group_coverage": planted["group_coverage"],
        "style_skill_coverage": planted["skill_coverage"],
        "style_planted_global": dict(zip(STYLE_FEATURES, PLANTED_STYLE.tolist(), strict=True)),
        "style_planted_group": dict(
            zip(STYLE_FEATURES, (PLANTED_STYLE + PLANTED_GROUP_STYLE).tolist(), strict=True)
        ),
        "style_global_mean": planted["global_mean"],
        "style_group_mean": planted["group_mean"],
        **style_fit_time(n_models=fit_models, n_battles=fit_battles, repeats=fit_repeats),
    }
    figures["style_passed"] = {
        key: (low is None or figures[key] >= low) and (high is None or figures[key] <= high)
        for key, (low, high) in STYLE_TARGETS.items()
    }
    return figures


def run(*, quick: bool) -> dict:
    """`bench ratings`: replay speed, the batch fit at Arena scale, interval coverage, style control."""
    sizes = QUICK if quick else FULL
    return {
        "sizes": sizes,
        **replay_benchmark(votes=sizes["replay_votes"], repeats=1 if quick else 5),
        **fit_benchmark(n_models=sizes["fit_models"], n_battles=sizes["fit_battles"]),
        **coverage_simulation(n_sims=sizes["coverage_sims"]),
        **style_benchmark(
            sims=sizes["style_sims"],
            models=sizes["style_models"],
            battles=sizes["style_battles"],
            fit_models=sizes["fit_models"],
            fit_battles=sizes["fit_battles"],
            fit_repeats=sizes["style_fit_repeats"],
        ),
    }
