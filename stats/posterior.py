"""Boards from a fitted posterior: seeded Laplace draws of a population's scores, and stored posteriors.

Pure numpy/scipy (no Django). The fit itself is ``stats.btd``; turning draws into intervals, shared ranks
and P(best) is ``stats.summaries``.

Derived quantities (``skills_for``)
-----------------------------------
A *population* is a list of ``(cell, weight)`` pairs with weights summing to 1: ``[((), 1.0)]`` is the
global board, ``[((g,), 1.0)]`` group ``g``'s board, raked cells (see ``stats.poststrat``) the pooled
board. The headline score of a model is its expected points (win 1, tie 1/2) against every other model,
each opponent weighted equally, averaged over the population's cells. Intervals, rank intervals and
P(best) come from multivariate normal draws from the Laplace posterior (seeded).

What the data pin down. Only cells that raters occupy are measured. If no rater is in cell ``()``,
for instance because every rater has an age group (age cannot be declined in the default frame), then
theta and the age offsets are separated only by the priors: moving every age group's offset of a model
down by delta and its theta up by delta changes no probability. The global board ``[((), 1.0)]`` and
the group boards ``[((g,), 1.0)]`` then describe a rater with the other axes' offsets at their prior
mean, and their intervals include that prior uncertainty (about tau / sqrt(number of age groups)). A
board over occupied cells, such as the post-stratified pooled board, is pinned by the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from stats.btd import Cell, Fit, Population
from stats.summaries import BoardRow, draws_summary, field_scores


def _validated_population(fit: Fit, population: Population) -> list[tuple[Cell, float]]:
    cells = [(tuple(cell), float(weight)) for cell, weight in population]
    if not cells or any(weight < 0 for _, weight in cells):
        raise ValueError("a population needs at least one cell and non-negative weights")
    if abs(sum(weight for _, weight in cells) - 1.0) > 1e-6:
        raise ValueError("population weights must sum to 1")
    for cell, _ in cells:
        if any(not 0 <= g < fit.n_groups for g in cell):
            raise ValueError(f"cell {cell} has a group id outside [0, {fit.n_groups})")
    return cells


def _draws(fit: Fit, groups: list[int], n_draws: int, rng: np.random.Generator):
    """Posterior draws of centred theta, the offsets of ``groups`` and log nu (Laplace, MVN)."""
    n = fit.n_models
    index = list(range(n))
    if fit.with_groups:
        for g in groups:
            index.extend(range(n * (1 + g), n * (2 + g)))
    if fit.tie_model:
        index.append(len(fit.covariance) - 1)
    mode = fit.packed()[index]
    factor = np.linalg.cholesky(fit.covariance[np.ix_(index, index)])
    sample = mode + rng.standard_normal((n_draws, len(index))) @ factor.T
    blocks = 1 + len(groups) * fit.with_groups
    shaped = sample[:, : n * blocks].reshape(n_draws, blocks, n)
    shaped = shaped - shaped.mean(axis=2, keepdims=True)  # centring: the likelihood-blind shifts go
    theta = shaped[:, 0]
    offsets = {g: shaped[:, 1 + k] for k, g in enumerate(groups)} if fit.with_groups else {}
    log_nu = sample[:, -1] if fit.tie_model else np.full(n_draws, -math.inf)
    return theta, offsets, log_nu


def _population_scores(theta, offsets, log_nu, cells: list[tuple[Cell, float]], *, chunk: int = 256):
    """Population skill (weighted mean over cells) and headline score, for each draw row."""
    skill = np.zeros_like(theta)
    score = np.zeros_like(theta)
    for cell, weight in cells:
        cell_skill = theta + sum((offsets.get(g, 0.0) for g in cell), np.zeros_like(theta))
        skill += weight * cell_skill
        # Chunks of draws keep the (draws, n, n) pairwise array small.
        for start in range(0, len(theta), chunk):
            rows = slice(start, start + chunk)
            score[rows] += weight * field_scores(cell_skill[rows], log_nu[rows])
    return skill, score


def skills_for(
    fit: Fit, population: Population, *, n_draws: int = 2000, seed: int = 0, level: float = 0.95
) -> list[BoardRow]:
    """The board of one population, one row per model in model order.

    Point values (score, skill) are at the posterior mode; intervals are central ``level`` intervals
    of ``n_draws`` seeded Laplace draws; rank_low/rank_high are percentiles of each draw's rank (1 =
    best); ``rank`` is the shared rank of the score intervals; p_best is the share of draws in which
    the model has the highest score. Groups absent from the fit (``with_groups=False``) add nothing.
    """
    skill, drawn_skill, scores = _population_draws(fit, population, n_draws=n_draws, seed=seed)
    board = draws_summary(scores.point, scores.draws, level=level)
    tail = (1 - level) / 2
    skill_low, skill_high = np.quantile(drawn_skill, [tail, 1 - tail], axis=0)
    return [
        BoardRow(
            model=m,
            score=float(board.point[m]),
            score_low=float(board.low[m]),
            score_high=float(board.high[m]),
            skill=float(skill[m]),
            skill_low=float(skill_low[m]),
            skill_high=float(skill_high[m]),
            rank=int(board.rank[m]),
            rank_low=int(board.rank_low[m]),
            rank_high=int(board.rank_high[m]),
            p_best=float(board.p_best[m]),
        )
        for m in range(fit.n_models)
    ]


def _population_draws(fit: Fit, population: Population, *, n_draws: int, seed: int):
    """Population skill at the mode, its draws, and the headline scores (mode and draws)."""
    cells = _validated_population(fit, population)
    groups = sorted({g for cell, _ in cells for g in cell}) if fit.with_groups else []
    mode_offsets = {g: fit.offsets[:, g][None, :] for g in groups}
    skill, score = _population_scores(fit.theta[None, :], mode_offsets, np.array([fit.log_nu]), cells)
    theta, offsets, log_nu = _draws(fit, groups, n_draws, np.random.default_rng(seed))
    drawn_skill, drawn_score = _population_scores(theta, offsets, log_nu, cells)
    return skill[0], drawn_skill, ScoreDraws(point=score[0], draws=drawn_score)


# --- Stored posteriors and boards from draws (the personal leaderboard) ------------------------------
#
# A profile board is a population of one cell, and weighting several dimensions combines their boards
# draw by draw, so the functions below hand out the score draws themselves. ``skills_for`` is built on
# them (same seed, same numbers).


@dataclass(frozen=True)
class ScoreDraws:
    """Headline scores of one population: at the posterior mode, and for each posterior draw."""

    point: np.ndarray  # (n_models,)
    draws: np.ndarray  # (n_draws, n_models)


def skill_and_score_draws(
    fit: Fit, population: Population, *, n_draws: int = 2000, seed: int = 0
) -> tuple[ScoreDraws, ScoreDraws]:
    """The population's skills (log-strengths) and headline scores, each at the mode and per draw, from
    the same draws as ``score_draws`` with the same seed."""
    skill, drawn_skill, scores = _population_draws(fit, population, n_draws=n_draws, seed=seed)
    return ScoreDraws(point=skill, draws=drawn_skill), scores


def score_draws(fit: Fit, population: Population, *, n_draws: int = 2000, seed: int = 0) -> ScoreDraws:
    """The headline scores ``skills_for`` summarises, before summarising: equal seeds give equal draws."""
    return _population_draws(fit, population, n_draws=n_draws, seed=seed)[2]


def _model_blocks(fit: Fit) -> int:
    """How many n_models-long blocks (theta, then each group's offsets) lead the packed parameters."""
    return 1 + fit.n_groups * fit.with_groups


def centred_covariance(fit: Fit) -> np.ndarray:
    """The covariance of the centred parameters: every theta/offset block centred on both sides.

    Draws are centred block by block (``_draws``), so this is all of the covariance they depend on. It
    is singular (no variance along the common shifts) and its entries are on the scale of the real
    uncertainties, so it keeps its precision when stored in float32; ``covariance_from_centred`` makes
    it positive definite again.
    """
    n, size = fit.n_models, len(fit.covariance)
    centring = np.eye(size)
    for block in range(_model_blocks(fit)):
        part = slice(n * block, n * (block + 1))
        centring[part, part] -= 1.0 / n
    return centring @ fit.covariance @ centring


def covariance_from_centred(centred: np.ndarray, *, n_models: int, blocks: int) -> np.ndarray:
    """A positive definite covariance whose centred form is ``centred``: unit variance is added along
    each block's common shift, a direction the likelihood cannot see and centring removes again, so
    every draw of centred parameters has the same distribution as under the fitted covariance."""
    covariance = np.array(centred, dtype=float)
    for block in range(blocks):
        part = slice(n_models * block, n_models * (block + 1))
        covariance[part, part] += 1.0 / n_models
    return covariance


def fit_restored(
    *,
    theta: np.ndarray,
    offsets: np.ndarray,
    log_nu: float,
    covariance: np.ndarray,
    tie_model: bool = True,
    with_groups: bool = True,
    style: np.ndarray | None = None,
    style_offsets: np.ndarray | None = None,
) -> Fit:
    """A Fit rebuilt from a stored posterior (mode and covariance), for ``skills_for`` and
    ``score_draws``; ``style`` / ``style_offsets`` for a style-controlled fit. The solver's diagnostics
    are not stored: they read as not available."""
    theta = np.asarray(theta, dtype=float)
    offsets = np.asarray(offsets, dtype=float).reshape(len(theta), -1)
    style = np.zeros(0) if style is None else np.asarray(style, dtype=float).reshape(-1)
    if style_offsets is not None:
        style_offsets = np.asarray(style_offsets, dtype=float).reshape(len(style), offsets.shape[1])
    size = (len(theta) + len(style)) * (1 + offsets.shape[1] * with_groups) + tie_model
    if np.shape(covariance) != (size, size):
        raise ValueError(f"covariance must be {size} x {size} for these parameters")
    return Fit(
        theta=theta,
        offsets=offsets,
        log_nu=float(log_nu),
        covariance=np.asarray(covariance, dtype=float),
        with_groups=with_groups,
        tie_model=tie_model,
        group_prior_sd=np.full(offsets.shape[1], math.nan),
        theta_prior_sd=None,
        converged=True,
        iterations=0,
        message="restored from a stored posterior",
        grad_norm=math.nan,
        neg_log_posterior=math.nan,
        log_marginal=math.nan,
        style=style,
        style_offsets=style_offsets,
    )
