"""Replay benchmark: the closed-form TrueSkill kernel against the trueskill package (pure Python).

Both replay the same random vote sequence over the same rating table with the same parameters, so
the timings are comparable and the final tables should agree (see stats.trueskill).
"""

import math
import random
import statistics
import time

import trueskill

from bench.fit import coverage_simulation, fit_benchmark
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


FULL = {"replay_votes": 100_000, "fit_models": 130, "fit_battles": 1_700_000, "coverage_sims": 100}
QUICK = {"replay_votes": 5_000, "fit_models": 20, "fit_battles": 50_000, "coverage_sims": 10}


def run(*, quick: bool) -> dict:
    """`bench ratings`: replay speed, the batch fit at Arena scale and interval coverage."""
    sizes = QUICK if quick else FULL
    return {
        "sizes": sizes,
        **replay_benchmark(votes=sizes["replay_votes"], repeats=1 if quick else 5),
        **fit_benchmark(n_models=sizes["fit_models"], n_battles=sizes["fit_battles"]),
        **coverage_simulation(n_sims=sizes["coverage_sims"]),
    }
