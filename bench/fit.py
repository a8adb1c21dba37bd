"""Benchmarks for the published-ratings fit (stats.btd, stats.posterior): speed at Chatbot Arena scale,
and the coverage of the post-stratified pooled board's intervals. Pure numpy/scipy, no Django.

Synthetic data come straight from the true model as sufficient statistics: battle counts per
(cell, pair) are one multinomial draw, and each row's outcomes another, so generating 1.7 million
battles costs about as much as fitting them.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau

from stats.btd import Counts, fit_bt_logistic, fit_btd
from stats.posterior import skills_for
from stats.poststrat import population_weights
from stats.style import normalised_differences, scaled_columns
from stats.summaries import field_scores

# The default sampling frame (raters.defaults): US and UK, axes age / ethnicity / politics, 22 groups.
HUMAINE_AXES = ((3, 4, 3), (3, 4, 5))
DECLINE_SHARE = 0.08  # raters who decline ethnicity or politics (age cannot be declined)


@dataclass
class World:
    """A true model and the sample's cells: what the synthetic battles are drawn from."""

    theta: np.ndarray  # (n_models,)
    offsets: np.ndarray  # (n_models, n_groups)
    log_nu: float
    cells: list[tuple[int, ...]]
    cell_share: np.ndarray  # (n_cells,), the sample's mix of cells


def _axes_for(n_groups: int) -> tuple[tuple[int, ...], ...]:
    """Countries' axis sizes: the HUMAINE frame for 22 groups, else one country with three axes."""
    if n_groups == sum(map(sum, HUMAINE_AXES)):
        return HUMAINE_AXES
    if n_groups < 3:
        return ((n_groups,),) if n_groups else ((),)
    return (tuple(n_groups // 3 + (k < n_groups % 3) for k in range(3)),)


def _frame_cells(n_groups: int, rng: np.random.Generator) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """Every cell of the frame with a random sample share; axes after the first may be declined."""
    cells: list[tuple[int, ...]] = []
    shares: list[float] = []
    first_group = 0
    countries = _axes_for(n_groups)
    for axis_sizes in countries:
        options = []
        for position, size in enumerate(axis_sizes):
            ids = list(range(first_group, first_group + size))
            first_group += size
            mix = rng.dirichlet(np.full(size, 2.0))
            if position:
                options.append([((g,), (1 - DECLINE_SHARE) * p) for g, p in zip(ids, mix, strict=True)])
                options[-1].append(((), DECLINE_SHARE))
            else:
                options.append([((g,), p) for g, p in zip(ids, mix, strict=True)])
        for combination in itertools.product(*options):
            cells.append(tuple(g for groups, _ in combination for g in groups))
            shares.append(math.prod(p for _, p in combination) / len(countries))
    return cells, np.array(shares) / sum(shares)


def _outcome_probabilities(skill_i: np.ndarray, skill_j: np.ndarray, log_nu: float) -> np.ndarray:
    """(rows, 3): P(i wins), P(j wins), P(tie) under the Davidson model."""
    half_gap = 0.5 * (skill_i - skill_j)
    logits = np.column_stack([half_gap, -half_gap, np.full_like(half_gap, log_nu)])
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=1, keepdims=True)


def simulate_counts(world: World, n_battles: int, rng: np.random.Generator) -> Counts:
    """Battles as sufficient statistics: counts per (cell, pair) by one multinomial draw, then outcomes.

    Models differ in popularity (log-normal), so some pairs are compared far more than others, as on
    Arena.
    """
    n_models = len(world.theta)
    first, second = np.triu_indices(n_models, k=1)
    popularity = rng.lognormal(0.0, 0.5, n_models)
    pair_share = popularity[first] * popularity[second]
    pair_share /= pair_share.sum()
    battles = rng.multinomial(n_battles, np.outer(world.cell_share, pair_share).ravel())
    nonzero = np.flatnonzero(battles)
    cell, pair = np.divmod(nonzero, len(first))
    i, j = first[pair], second[pair]
    membership = np.zeros((len(world.cells), world.offsets.shape[1]))
    for k, groups in enumerate(world.cells):
        membership[k, list(groups)] = 1.0
    table = world.theta[None, :] + membership @ world.offsets.T
    probabilities = _outcome_probabilities(table[cell, i], table[cell, j], world.log_nu)
    outcomes = rng.multinomial(battles[nonzero], probabilities)
    return Counts(cells=world.cells, rows=np.column_stack([cell, i, j, outcomes]))


def _random_world(n_models: int, n_groups: int, rng: np.random.Generator, *, offset_sd: float = 0.3) -> World:
    cells, shares = _frame_cells(n_groups, rng)
    theta = rng.normal(0.0, 0.8, n_models)
    offsets = rng.normal(0.0, offset_sd, (n_models, n_groups))
    return World(
        theta=theta - theta.mean(),
        offsets=offsets - offsets.mean(axis=0),
        log_nu=math.log(0.8),
        cells=cells,
        cell_share=shares,
    )


def fit_benchmark(n_models: int = 130, n_battles: int = 1_700_000, n_groups: int = 22, seed: int = 0) -> dict:
    """Time the published fit and Arena's logistic fit on one synthetic Arena-scale log.

    * ``fit_seconds``: ``fit_btd`` with groups (tau 0.5) and ties, its Laplace covariance, and the
      global board's 95% intervals, ranks and P(best) from 2,000 draws.
    * ``bt_seconds``: ``fit_btd(with_groups=False, tie_model=False, theta_prior_sd=None)``, the
      plain Bradley-Terry path (ties as half wins), including its covariance.
    * ``logistic_seconds``: ``fit_bt_logistic``, Arena's method, on the same counts;
      ``point_fit_ratio`` = logistic_seconds / bt_seconds (point estimates only: both take milliseconds).
    * ``fit_speedup`` = arena_bootstrap_seconds / intervals_seconds: the same estimator (plain
      Bradley-Terry) with 95% intervals on each model's log-strength, ours (sufficient statistics,
      Laplace posterior) against Arena's (the logistic fit refitted on ARENA_BOOTSTRAP_ROUNDS resamples
      of the battles, then percentiles).
    * ``fit_max_abs_diff``: the largest |difference| between the two plain-BT fits' centred natural-log
      strengths, limited by the logistic fit's loose (Arena) tolerance; ``tight_max_abs_diff`` and
      ``logistic_tight_seconds`` are the same with the logistic fit run to gtol 1e-12, ftol 1e-15.
    * ``sample_score_max_abs_error``: the grouped fit's headline scores on the sample's own mix of
      cells against the truth (at the mode).

    Every timing includes the fit's own aggregation of the counts; generating them is timed apart.
    """
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    world = _random_world(n_models, n_groups, rng)
    counts = simulate_counts(world, n_battles, rng)
    generate_seconds = time.perf_counter() - start

    start = time.perf_counter()
    fit = fit_btd(counts, n_models=n_models, n_groups=n_groups)
    skills_for(fit, [((), 1.0)])
    fit_seconds = time.perf_counter() - start

    start = time.perf_counter()
    plain = fit_btd(
        counts, n_models=n_models, n_groups=n_groups, with_groups=False, tie_model=False, theta_prior_sd=None
    )
    bt_seconds = time.perf_counter() - start

    start = time.perf_counter()
    logistic = fit_bt_logistic(counts, n_models)
    logistic_seconds = time.perf_counter() - start

    start = time.perf_counter()
    logistic_tight = fit_bt_logistic(counts, n_models, gtol=1e-12, ftol=1e-15)
    logistic_tight_seconds = time.perf_counter() - start

    # The same estimator and the same intervals (95% on each model's log-strength), both ways: ours
    # from the Laplace posterior of the sufficient-statistics fit, Arena's by refitting on battles
    # resampled with replacement.
    start = time.perf_counter()
    plain_with_intervals = fit_btd(
        counts, n_models=n_models, n_groups=n_groups, with_groups=False, tie_model=False, theta_prior_sd=None
    )
    half_width = 1.959964 * plain_with_intervals.theta_se()
    _ = (plain_with_intervals.theta - half_width, plain_with_intervals.theta + half_width)
    intervals_seconds = time.perf_counter() - start
    arena_seconds = arena_bootstrap_seconds(counts, n_models, rounds=ARENA_BOOTSTRAP_ROUNDS, rng=rng)
    return {
        "n_models": n_models,
        "n_battles": int(counts.n_votes),
        "n_groups": n_groups,
        "n_cells": len(counts.cells),
        "n_rows": len(counts.rows),
        "generate_seconds": generate_seconds,
        "fit_seconds": fit_seconds,
        "fit_converged": fit.converged,
        "bt_seconds": bt_seconds,
        "logistic_seconds": logistic_seconds,
        "fit_speedup": arena_seconds / intervals_seconds,
        "intervals_seconds": intervals_seconds,
        "arena_bootstrap_seconds": arena_seconds,
        "arena_bootstrap_rounds": ARENA_BOOTSTRAP_ROUNDS,
        "point_fit_ratio": logistic_seconds / bt_seconds,
        "fit_max_abs_diff": float(np.abs(plain.theta - logistic).max()),
        "logistic_tight_seconds": logistic_tight_seconds,
        "tight_max_abs_diff": float(np.abs(plain.theta - logistic_tight).max()),
        "sample_score_max_abs_error": _sample_score_error(fit, world),
    }


ARENA_BOOTSTRAP_ROUNDS = 100


def arena_bootstrap_seconds(counts: Counts, n_models: int, *, rounds: int, rng: np.random.Generator) -> float:
    """Seconds for Chatbot Arena's way to 95% intervals: `rounds` times, resample the battles with
    replacement, count them per pair and refit the logistic Bradley-Terry model; then take percentiles.

    The battle list is built from the counts first, untimed (Arena starts from it).
    """
    pair = (counts.rows[:, 1] * n_models + counts.rows[:, 2]).astype(np.int64)
    per_outcome = counts.rows[:, 3:].astype(np.int64).ravel()  # first wins, second wins, ties; row by row
    # One entry per battle: its pair, and its outcome (0 = first wins, 1 = second wins, 2 = tie).
    battle_pair = np.repeat(np.repeat(pair, 3), per_outcome)
    outcome = np.repeat(np.tile(np.arange(3), len(pair)), per_outcome)
    start = time.perf_counter()
    estimates = []
    for _ in range(rounds):
        sample = rng.integers(0, len(battle_pair), len(battle_pair))
        key = battle_pair[sample] * 3 + outcome[sample]
        tally = np.bincount(key, minlength=n_models * n_models * 3).reshape(n_models * n_models, 3)
        used = np.flatnonzero(tally.sum(axis=1))
        rows = np.column_stack([np.zeros(len(used)), used // n_models, used % n_models, tally[used]])
        estimates.append(fit_bt_logistic(Counts(cells=[()], rows=rows), n_models))
    np.percentile(np.array(estimates), [2.5, 97.5], axis=0)
    return time.perf_counter() - start


def _sample_score_error(fit, world: World) -> float:
    """Largest |fitted - true| headline score over the sample's own mix of cells, at the mode.

    (Not theta: when every rater has an age group, as in the default frame, theta and the age offsets
    are separated only by the priors, while population scores are pinned by the data.)
    """
    fitted = np.zeros(len(world.theta))
    true = np.zeros(len(world.theta))
    for cell, weight in zip(world.cells, world.cell_share, strict=True):
        groups = list(cell)
        fitted += weight * field_scores(fit.theta + fit.offsets[:, groups].sum(axis=1), fit.log_nu)
        true += weight * field_scores(world.theta + world.offsets[:, groups].sum(axis=1), world.log_nu)
    return float(np.abs(fitted - true).max())


# --- Coverage of the pooled board ---------------------------------------------------------------------

# Two axes (age, politics), three categories each: groups 0-2 and 3-5. The census mix and the
# sample's tilt away from it (the sample over-recruits the young and one party).
CENSUS_MARGINS = {0: {"a0": 0.30, "a1": 0.35, "a2": 0.35}, 1: {"p0": 0.35, "p1": 0.35, "p2": 0.30}}
SAMPLE_TILT = ((3.0, 1.0, 0.4), (0.5, 1.0, 2.5))


def _coverage_world(n_models: int, rng: np.random.Generator, offset_sd: float) -> tuple[World, np.ndarray]:
    """A world on the two-axis frame; returns it and the census joint over its cells."""
    categories = [list(shares) for shares in CENSUS_MARGINS.values()]
    cells = [(a, 3 + p) for a in range(3) for p in range(3)]
    census = np.array(
        [CENSUS_MARGINS[0][categories[0][a]] * CENSUS_MARGINS[1][categories[1][p - 3]] for a, p in cells]
    )
    tilt = np.array([SAMPLE_TILT[0][a] * SAMPLE_TILT[1][p - 3] for a, p in cells])
    theta = rng.normal(0.0, 0.3, n_models)
    offsets = rng.normal(0.0, offset_sd, (n_models, 6))
    world = World(
        theta=theta - theta.mean(),
        offsets=offsets - offsets.mean(axis=0),
        log_nu=math.log(0.5),
        cells=cells,
        cell_share=census * tilt / (census * tilt).sum(),
    )
    return world, census


def _true_population_score(world: World, census: np.ndarray) -> np.ndarray:
    scores = [
        weight * field_scores(world.theta + world.offsets[:, list(cell)].sum(axis=1), world.log_nu)
        for cell, weight in zip(world.cells, census, strict=True)
    ]
    return np.sum(scores, axis=0)


def _raked_population(counts: Counts) -> list[tuple[tuple[int, ...], float]]:
    """Post-stratification weights from the sample's vote counts per cell, raked to the census."""
    labels = [list(shares) for shares in CENSUS_MARGINS.values()]
    votes = np.bincount(counts.rows[:, 0].astype(np.intp), weights=counts.rows[:, 3:].sum(axis=1))
    sample = {(labels[0][a], labels[1][p - 3]): votes[k] for k, (a, p) in enumerate(counts.cells)}
    groups = {(labels[0][a], labels[1][p - 3]): (a, p) for a, p in counts.cells}
    return population_weights(sample, CENSUS_MARGINS, to_groups=groups.__getitem__)


def _precision_weighted(estimates: np.ndarray, ses: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Inverse-variance mean of per-group estimates (groups x models) and its normal interval."""
    precisions = ses**-2.0
    centre = (estimates * precisions).sum(axis=0) / precisions.sum(axis=0)
    half_width = z / np.sqrt(precisions.sum(axis=0))
    return centre - half_width, centre + half_width


def _board_estimate(board, z: float) -> tuple[np.ndarray, np.ndarray]:
    scores = np.array([row.score for row in board])
    return scores, np.array([(row.score_high - row.score_low) / (2 * z) for row in board])


def _naive_interval(counts: Counts, n_models: int, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Naive pooling: fit each group's raters on their own (no offsets), take each group board's score
    and standard error, and precision-weight them across all groups, as if they were independent
    estimates of one quantity. That ignores the census mix (weights follow sample sizes), that groups
    disagree, and that every vote sits in one group per axis (so it is counted twice)."""
    estimates, ses = [], []
    for g in range(6):
        keep = np.array([g in cell for cell in counts.cells])[counts.rows[:, 0].astype(np.intp)]
        group_fit = fit_btd(
            Counts(cells=counts.cells, rows=counts.rows[keep]),
            n_models=n_models,
            n_groups=6,
            with_groups=False,
        )
        score, se = _board_estimate(skills_for(group_fit, [((), 1.0)], n_draws=1000, seed=g), z)
        estimates.append(score)
        ses.append(se)
    return _precision_weighted(np.array(estimates), np.array(ses), z)


def _model_group_interval(fit, z: float) -> tuple[np.ndarray, np.ndarray]:
    """The same precision-weighting applied to the hierarchical fit's own group boards [((g,), 1)]."""
    boards = [_board_estimate(skills_for(fit, [((g,), 1.0)], n_draws=1000, seed=g), z) for g in range(6)]
    return _precision_weighted(np.array([b[0] for b in boards]), np.array([b[1] for b in boards]), z)


def _tally(truth: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """(covered count, summed width) for one batch of intervals."""
    return np.array([((low <= truth) & (truth <= high)).sum(), (high - low).sum()], dtype=float)


def coverage_simulation(
    n_sims: int = 100, seed: int = 0, *, n_models: int = 6, n_votes: int = 30_000, offset_sd: float = 0.3
) -> dict:
    """How often 95% intervals cover the population's true score (expected points against the field,
    averaged over the census's cells).

    The sample over-represents some groups (SAMPLE_TILT) and groups disagree (true offsets with sd
    ``offset_sd``). Each simulation draws a fresh true model and ``n_votes`` votes and compares:

    * ``coverage``: the pooled board, ``fit_btd`` (tau 0.5) with the sample's cells raked to the
      census margins as the population, interval from 1,000 Laplace draws;
    * ``naive_coverage``: precision-weighting of separately fitted group boards (``_naive_interval``);
    * ``model_group_coverage``: precision-weighting of the hierarchical fit's own group boards.

    Coverage is over all (simulation, model) intervals, ``n`` of them; ``*_width`` are mean interval
    widths. The defaults (100 simulations of 30,000 votes on 6 models) take about 15 s on two cores.
    """
    rng = np.random.default_rng(seed)
    z = 1.959963984540054
    tallies = {"pooled": np.zeros(2), "naive": np.zeros(2), "model_group": np.zeros(2)}
    for sim in range(n_sims):
        world, census = _coverage_world(n_models, rng, offset_sd)
        counts = simulate_counts(world, n_votes, rng)
        truth = _true_population_score(world, census)
        fit = fit_btd(counts, n_models=n_models, n_groups=6)
        board = skills_for(fit, _raked_population(counts), n_draws=1000, seed=sim)
        low, high = (np.array([getattr(row, name) for row in board]) for name in ("score_low", "score_high"))
        tallies["pooled"] += _tally(truth, low, high)
        tallies["naive"] += _tally(truth, *_naive_interval(counts, n_models, z))
        tallies["model_group"] += _tally(truth, *_model_group_interval(fit, z))
    n = n_sims * n_models
    return {
        "coverage": float(tallies["pooled"][0] / n),
        "naive_coverage": float(tallies["naive"][0] / n),
        "model_group_coverage": float(tallies["model_group"][0] / n),
        "width": float(tallies["pooled"][1] / n),
        "naive_width": float(tallies["naive"][1] / n),
        "model_group_width": float(tallies["model_group"][1] / n),
        "n": n,
    }


# --- Style control -------------------------------------------------------------------------------------

# The simulated features, in stats.style's order without code blocks and cut-off (the fit of a real
# tournament keeps whichever vary; the simulation plants effects on these four).
STYLE_FEATURES = ("length", "headers", "list_items", "bold")
# Planted preference, in log-odds per unit of the scaled difference: everyone prefers longer and more
# formatted replies by PLANTED_STYLE, and group STYLE_GROUP by PLANTED_GROUP_STYLE more.
PLANTED_STYLE = np.array([0.5, 0.15, 0.25, 0.15])
PLANTED_GROUP_STYLE = np.array([0.35, 0.0, 0.2, 0.0])
STYLE_GROUP = 0
# Two axes (3 and 2 groups), each declinable by STYLE_DECLINE of raters, so every cell is occupied,
# including (): the global coefficients are pinned by data, not only by the priors.
STYLE_AXES = (3, 2)
STYLE_DECLINE = 0.3


@dataclass
class StyleWorld:
    """Skills, each model's style habits and the raters' style preferences."""

    world: World
    length_mean: np.ndarray  # (n_models,): log of the typical reply length
    format_rate: np.ndarray  # (n_models, 3): Poisson means of headers, list items, bold spans
    style: np.ndarray  # (K,) global coefficients
    style_offsets: np.ndarray  # (K, n_groups)


def _style_cells(rng: np.random.Generator) -> tuple[list[tuple[int, ...]], np.ndarray]:
    options = []
    first = 0
    for size in STYLE_AXES:
        mix = rng.dirichlet(np.full(size, 3.0)) * (1 - STYLE_DECLINE)
        options.append([((first + g,), p) for g, p in enumerate(mix)] + [((), STYLE_DECLINE)])
        first += size
    cells = [
        tuple(g for groups, _ in combination for g in groups) for combination in itertools.product(*options)
    ]
    shares = np.array([math.prod(p for _, p in combination) for combination in itertools.product(*options)])
    return cells, shares / shares.sum()


def style_world(
    n_models: int, rng: np.random.Generator, *, planted: bool = True, world: World | None = None
) -> StyleWorld:
    """Models differ in verbosity and formatting independently of skill; raters prefer longer, more
    formatted replies by the planted amounts (none when ``planted`` is False), group STYLE_GROUP more.
    The skills and cells are ``world``'s if given, else drawn on the STYLE_AXES frame."""
    if world is None:
        n_groups = sum(STYLE_AXES)
        cells, shares = _style_cells(rng)
        theta = rng.normal(0.0, 0.4, n_models)
        offsets = rng.normal(0.0, 0.15, (n_models, n_groups))
        world = World(
            theta=theta - theta.mean(),
            offsets=offsets - offsets.mean(axis=0),
            log_nu=math.log(0.8),
            cells=cells,
            cell_share=shares,
        )
    n_groups = world.offsets.shape[1]
    style_offsets = np.zeros((len(STYLE_FEATURES), n_groups))
    if planted:
        style_offsets[:, STYLE_GROUP] = PLANTED_GROUP_STYLE
    return StyleWorld(
        world=world,
        length_mean=rng.normal(6.5, 0.7, n_models),
        format_rate=rng.gamma(1.5, 1.5, (n_models, 3)),
        style=PLANTED_STYLE.copy() if planted else np.zeros(len(STYLE_FEATURES)),
        style_offsets=style_offsets,
    )


def simulate_style_battles(sworld: StyleWorld, n_battles: int, rng: np.random.Generator) -> Counts:
    """One row per battle: cell, pair, each side's reply style drawn from its model's habits, the
    scaled normalised differences (stats.style) as features, and the outcome under the planted model."""
    world = sworld.world
    n_models = len(world.theta)
    cell = rng.choice(len(world.cells), size=n_battles, p=world.cell_share)
    i = rng.integers(n_models, size=n_battles)
    j = (i + rng.integers(1, n_models, size=n_battles)) % n_models

    def side(model: np.ndarray) -> np.ndarray:
        length = np.exp(sworld.length_mean[model] + rng.normal(0.0, 0.5, len(model)))
        return np.column_stack([length, rng.poisson(sworld.format_rate[model])])

    features, _, _ = scaled_columns(normalised_differences(side(i), side(j)))
    membership = np.zeros((len(world.cells), world.offsets.shape[1]))
    for k, groups in enumerate(world.cells):
        membership[k, list(groups)] = 1.0
    table = world.theta[None, :] + membership @ world.offsets.T
    cell_style = sworld.style[None, :] + membership @ sworld.style_offsets.T
    gap_style = np.einsum("rk,rk->r", features, cell_style[cell])
    probabilities = _outcome_probabilities(table[cell, i] + gap_style, table[cell, j], world.log_nu)
    outcome = (rng.random(n_battles)[:, None] > np.cumsum(probabilities, axis=1)[:, :2]).sum(axis=1)
    rows = np.column_stack([cell, i, j, outcome == 0, outcome == 1, outcome == 2]).astype(float)
    return Counts(cells=world.cells, rows=rows, features=features)


def _sample_skill(theta: np.ndarray, offsets: np.ndarray, world: World) -> np.ndarray:
    """Skill on the sample's own mix of cells."""
    membership_share = np.zeros(offsets.shape[1])
    for cell, share in zip(world.cells, world.cell_share, strict=True):
        membership_share[list(cell)] += share
    return theta + offsets @ membership_share


def _coefficient_intervals(
    fit, group: int, z: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Global coefficients and group ``group``'s (global + its offset), with their standard errors."""
    k = fit.n_features
    covariance = fit.style_covariance()
    global_se = np.sqrt(np.diag(covariance)[:k])
    block = slice(k * (1 + group), k * (2 + group))
    group_var = (
        np.diag(covariance)[:k] + np.diag(covariance[block, block]) + 2 * np.diag(covariance[:k, block])
    )
    return fit.style, global_se, fit.style + fit.style_offsets[:, group], np.sqrt(group_var)


def style_simulation(
    n_sims: int = 40, seed: int = 0, *, n_models: int = 16, n_battles: int = 20_000, planted: bool = True
) -> dict:
    """Raw and style-controlled boards against the true skills, over ``n_sims`` simulated tournaments.

    Each simulation draws a fresh StyleWorld and ``n_battles`` battles, fits ``fit_btd`` (tau 0.5,
    ties) without features (the raw board) and with them (the style-controlled board), and compares
    each board's skills on the sample's mix of cells with the truth by Kendall tau. Coverage: how often
    the 95% intervals hold the planted global coefficients and STYLE_GROUP's coefficients (global plus
    offset), and the style-controlled skills (from 1,000 Laplace draws of ``skills_for``).
    """
    rng = np.random.default_rng(seed)
    z = 1.959963984540054
    raw_tau, controlled_tau, skill_hits, skill_n = [], [], 0, 0
    global_hits = np.zeros(len(STYLE_FEATURES))
    group_hits = np.zeros(len(STYLE_FEATURES))
    estimates = []
    n_groups = sum(STYLE_AXES)
    for sim in range(n_sims):
        sworld = style_world(n_models, rng, planted=planted)
        world = sworld.world
        counts = simulate_style_battles(sworld, n_battles, rng)
        truth = _sample_skill(world.theta, world.offsets, world)
        raw = fit_btd(Counts(cells=counts.cells, rows=counts.rows), n_models=n_models, n_groups=n_groups)
        controlled = fit_btd(counts, n_models=n_models, n_groups=n_groups)
        raw_tau.append(kendalltau(truth, _sample_skill(raw.theta, raw.offsets, world)).statistic)
        controlled_skill = _sample_skill(controlled.theta, controlled.offsets, world)
        controlled_tau.append(kendalltau(truth, controlled_skill).statistic)
        population = list(zip(world.cells, world.cell_share, strict=True))
        board = skills_for(controlled, population, n_draws=1000, seed=sim)
        low, high = (np.array([getattr(row, name) for row in board]) for name in ("skill_low", "skill_high"))
        skill_hits += int(((low <= truth) & (truth <= high)).sum())
        skill_n += n_models
        beta, beta_se, group, group_se = _coefficient_intervals(controlled, STYLE_GROUP, z)
        planted_group = sworld.style + sworld.style_offsets[:, STYLE_GROUP]
        global_hits += np.abs(beta - sworld.style) <= z * beta_se
        group_hits += np.abs(group - planted_group) <= z * group_se
        estimates.append(np.r_[beta, group])
    mean_estimates = np.mean(estimates, axis=0)
    k = len(STYLE_FEATURES)
    return {
        "sims": n_sims,
        "raw_tau": float(np.mean(raw_tau)),
        "controlled_tau": float(np.mean(controlled_tau)),
        "tau_diff": float(np.mean(controlled_tau) - np.mean(raw_tau)),
        "coefficient_coverage": float((global_hits.sum() + group_hits.sum()) / (2 * k * n_sims)),
        "global_coverage": dict(zip(STYLE_FEATURES, (global_hits / n_sims).tolist(), strict=True)),
        "group_coverage": dict(zip(STYLE_FEATURES, (group_hits / n_sims).tolist(), strict=True)),
        "global_mean": dict(zip(STYLE_FEATURES, mean_estimates[:k].tolist(), strict=True)),
        "group_mean": dict(zip(STYLE_FEATURES, mean_estimates[k:].tolist(), strict=True)),
        "skill_coverage": skill_hits / skill_n,
    }


def style_fit_time(
    n_models: int = 130, n_battles: int = 1_700_000, n_groups: int = 22, seed: int = 0, repeats: int = 3
) -> dict:
    """Seconds for ``fit_btd`` (groups, ties, tau 0.5) and the global board, with the style features
    and without them, on the same simulated battles at the given scale and on ``fit_benchmark``'s frame
    (22 groups: the HUMAINE cells). Without features the fit aggregates the battles per (cell, pair);
    with them every battle is its own row.

    Each of ``repeats`` rounds times the fit without features, then with them from zero, then with them
    from the fit without them (as publishing does: ``style_fit_warm_*``), in wall-clock and CPU seconds.
    Seconds are medians over the rounds; each ratio is taken within a round, then the median, so the slow
    spells of a shared machine fall on both fits of a ratio alike. CPU seconds (``*_cpu_ratio``) are the
    steadier figure on a busy machine; ``style_fit_ratio`` (wall clock) is the one held to the target."""
    rng = np.random.default_rng(seed)
    sworld = style_world(n_models, rng, world=_random_world(n_models, n_groups, rng))
    counts = simulate_style_battles(sworld, n_battles, rng)
    plain_counts = Counts(cells=counts.cells, rows=counts.rows)

    def fit_and_board(data: Counts, start=None):
        fit = fit_btd(data, n_models=n_models, n_groups=n_groups, start=start)
        skills_for(fit, [((), 1.0)])
        return fit

    rounds: dict[str, list[tuple[float, float]]] = {"without": [], "with": [], "warm": []}
    converged = True
    for _ in range(repeats):
        plain, *seconds = _timed(fit_and_board, plain_counts)
        rounds["without"].append(seconds)
        for name, start in (("with", None), ("warm", plain)):
            fit, *seconds = _timed(fit_and_board, counts, start)
            rounds[name].append(seconds)
            converged = converged and fit.converged and plain.converged

    def median_ratio(name: str, clock: int) -> float:
        return float(
            np.median([r[clock] / p[clock] for r, p in zip(rounds[name], rounds["without"], strict=True)])
        )

    return {
        "style_fit_seconds": float(np.median([r[0] for r in rounds["with"]])),
        "plain_fit_seconds": float(np.median([r[0] for r in rounds["without"]])),
        "style_fit_ratio": median_ratio("with", 0),
        "style_fit_cpu_ratio": median_ratio("with", 1),
        "style_fit_warm_seconds": float(np.median([r[0] for r in rounds["warm"]])),
        "style_fit_warm_ratio": median_ratio("warm", 0),
        "style_fit_warm_cpu_ratio": median_ratio("warm", 1),
        "style_fit_repeats": repeats,
        "style_fit_converged": converged,
        "style_fit_models": n_models,
        "style_fit_battles": n_battles,
    }


def _timed(function, *args):
    """The function's result, then its wall-clock and CPU seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu
