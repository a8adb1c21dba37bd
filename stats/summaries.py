"""Board summaries: headline scores against the field, intervals, shared ranks, rank intervals, P(best).

Pure numpy/scipy (no Django); works on any score with draws (``stats.posterior`` makes them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class BoardRow:
    """One model on one board. Score = expected points against the field; rank = shared rank."""

    model: int
    score: float
    score_low: float
    score_high: float
    skill: float
    skill_low: float
    skill_high: float
    rank: int
    rank_low: int
    rank_high: int
    p_best: float


def field_scores(skills: np.ndarray, log_nu: float | np.ndarray) -> np.ndarray:
    """Expected points (win 1, tie 1/2) against each other model equally, for skills (..., n_models).

    ``log_nu`` is a number or has the shape of ``skills`` without its last axis.
    """
    n = skills.shape[-1]
    # Points = (e^h + nu/2) / (e^h + e^-h + nu) with h = d/2. Divided through by e^|h| this is
    # (1 or e^-2|h|, + w/2) / (1 + e^-2|h| + w) with w = nu e^-|h|: two exponentials per pair instead of
    # log-sum-exps (this runs for every draw of every cell), and nothing can overflow once w's exponent
    # is capped (draws of log nu on little data reach the thousands; the points are then 1/2 either way).
    half_gap = 0.5 * (skills[..., :, None] - skills[..., None, :])
    distance = np.abs(half_gap)
    log_nu = np.asarray(log_nu, dtype=float)[..., None, None]
    far = np.exp(-2.0 * distance)
    w = np.exp(np.minimum(log_nu - distance, 700.0))
    points = ((np.where(half_gap >= 0, 1.0, far) + 0.5 * w) / (1.0 + far + w)).sum(axis=-1) - 0.5
    return points / (n - 1)


def shared_ranks(low: np.ndarray, high: np.ndarray, *, clearance: float = 0.0) -> np.ndarray:
    """Rank = 1 + the number of models whose interval lies wholly above this one's (low > our high), and
    by more than ``clearance`` (a negative clearance also counts models overlapping by less than that)."""
    low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
    return 1 + (low[None, :] - high[:, None] > clearance).sum(axis=1)


def rank_margin(low: np.ndarray, high: np.ndarray, share: float) -> float:
    """The margin ``settled_ranks`` asks for, as a ``share`` of the board's typical (median) interval
    width, so that it scales with what the board can tell apart."""
    return float(share * np.median(np.asarray(high, dtype=float) - np.asarray(low, dtype=float)))


def settled_ranks(low: np.ndarray, high: np.ndarray, previous: np.ndarray, *, margin: float) -> np.ndarray:
    """Shared ranks that rise only on clear evidence.

    A model never shows a better rank than the plain interval rule gives it (``shared_ranks``), and it
    rises from its ``previous`` rank only past the models that now overlap it by at least ``margin``: a
    model lying above it, or overlapping it by less, still counts as above. So a handful of votes that
    nudge an interval's edge past its neighbour's, honest or rigged, do not lift a model; falling needs
    no margin, and a model with no previous rank (0: new to the board) gets the plain rule."""
    plain = shared_ranks(low, high)
    not_cleared = shared_ranks(low, high, clearance=-margin)
    return np.maximum(plain, np.minimum(np.asarray(previous, dtype=int), not_cleared))


@dataclass(frozen=True)
class DrawSummary:
    """A board summarised from score draws, one entry per model, in model order (see ``skills_for``)."""

    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank: np.ndarray  # shared rank of the intervals
    rank_low: np.ndarray
    rank_high: np.ndarray
    p_best: np.ndarray


def draws_summary(point: np.ndarray, draws: np.ndarray, *, level: float = 0.95) -> DrawSummary:
    """Intervals, shared ranks, rank intervals and P(best) of any score with draws, e.g. a weighted sum
    of several dimensions' ``ScoreDraws`` taken draw by draw. The same rules as ``skills_for``."""
    tail = (1 - level) / 2
    low, high = np.quantile(draws, [tail, 1 - tail], axis=0)
    ranks = stats.rankdata(-draws, axis=1, method="min")
    return DrawSummary(
        point=np.asarray(point, dtype=float),
        low=low,
        high=high,
        rank=shared_ranks(low, high),
        rank_low=np.quantile(ranks, tail, axis=0, method="inverted_cdf").astype(int),
        rank_high=np.quantile(ranks, 1 - tail, axis=0, method="inverted_cdf").astype(int),
        p_best=np.bincount(draws.argmax(axis=1), minlength=draws.shape[1]) / len(draws),
    )
