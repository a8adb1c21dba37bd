"""Published ratings for one dimension: a Bradley-Terry-Davidson fit with hierarchical group offsets.

Pure numpy/scipy (no Django), so the batch job, the benchmark and the tests can all call it directly.

The model
---------
A rater belongs to a *cell*: the tuple of demographic groups they are in, one per axis they answered
(an axis they declined adds nothing, so the cell of someone who declined everything is ``()``). In cell
``c`` model ``i`` has the effective skill

    s_i = theta_i + sum_{g in c} u_{i,g}

and a comparison of ``i`` with ``j`` ends, with ``D = e^{s_i} + e^{s_j} + nu e^{(s_i + s_j) / 2}``, in

    P(i wins) = e^{s_i} / D,   P(j wins) = e^{s_j} / D,   P(tie) = nu e^{(s_i + s_j) / 2} / D.

``nu`` (Davidson's tie parameter) is fitted on the log scale. Dividing through by ``e^{(s_i + s_j)/2}``
shows the likelihood depends on the skills only through ``d = s_i - s_j``; that is what makes the fit
work on sufficient statistics: a row ``(cell, i, j, wins_i, wins_j, ties)`` carries everything the votes
of that cell on that pair say, so the cost grows with distinct (cell, pair) rows, never with raw votes.

Priors and identifiability
--------------------------
* ``theta_i ~ Normal(0, theta_prior_sd^2)`` (weak, default sd 10; ``None`` = flat, plain likelihood).
* ``u_{i,g} ~ Normal(0, tau_g^2)``: group offsets are shrunk towards zero, so a group with little data
  looks like everyone else. ``tau`` is ``group_prior_sd``: a number (all groups), one number per group,
  or ``"estimate"``, which refits over ``tau_grid`` and keeps the value with the highest
  Laplace-approximate marginal likelihood (empirical Bayes on a grid; one common tau for all groups).
* Identifiability by **centring**. Adding a constant to every theta, or to every model's offset in one
  group, changes no probability. The Gaussian priors already pin those directions at zero (the mode has
  sum(theta) = 0 and sum_i u_{i,g} = 0 exactly), and a quadratic penalty ``(n / 2) mean(theta)^2`` pins
  the theta direction when the theta prior is flat. These directions are exact eigenvectors of the
  Hessian, so they do not mix with anything else: every reported estimate, draw and standard error is of
  the *centred* parameters, which is equivalent to a sum-to-zero constraint. ``Fit.covariance`` is the
  raw inverse Hessian; its variance along the common shifts (prior-only) is removed by centring draws.

The fit is the posterior mode (MAP), by Newton's method with the analytic gradient and Hessian, each
step solved by conjugate gradients preconditioned by the Hessian's per-model blocks and, exactly, its
global parameters (``_newton_cg``; scipy's trust-region Newton-CG or L-BFGS-B on request), and the
Laplace approximation gives the posterior covariance: the inverse of the negative log-posterior Hessian
at the mode.

Boards of a population (scores, intervals, ranks, P(best)) are drawn from this posterior in
``stats.posterior`` and summarised in ``stats.summaries``.

Style covariates (style control)
--------------------------------
With ``Counts.features`` (one row per battle: the K normalised style differences of ``stats.style``,
side i minus side j), the gap of a row in cell ``c`` becomes

    d = s_i - s_j + sum_k z_k (beta_k + sum_{g in c} gamma_{g,k})

``beta`` is the global style coefficient of each feature (log-odds per unit of the scaled difference;
prior ``Normal(0, theta_prior_sd^2)``, flat when that is None) and ``gamma_g`` group g's offset from it,
shrunk like the skill offsets: ``gamma_{g,k} ~ Normal(0, tau_g^2)`` with the same tau (estimated
together with it under ``"estimate"``). The skills of this fit are the *style-controlled* skills:
what a model scores against another with style held equal (z = 0), so ``stats.posterior`` makes the
style-controlled boards from it unchanged. The style parameters follow the skill blocks in the packed
vector and are not centred (no shift leaves the likelihood unchanged). Continuous covariates cannot
be summed per (cell, pair), so rows with features are never merged: the cost grows with battles, not
with distinct (cell, pair) rows, which at Arena scale (almost every (cell, pair) seen once or twice)
is about the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy import linalg, optimize, sparse

__all__ = ["Cell", "Counts", "Fit", "Population", "fit_bt_logistic", "fit_bt_plain", "fit_btd"]

Cell = tuple[int, ...]
Population = Sequence[tuple[Cell, float]]

OUTCOMES = ("i", "j", "tie")
DEFAULT_TAU_GRID = (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0, 1.5)
# Aggregate by counting into every (cell, pair) slot when there are at most this many of them.
_DENSE_KEYS = 20_000_000
# Curvature of the centring penalty on mean(theta); any positive value gives the same centred fit.
_CENTRING = 1.0


# --- Sufficient statistics -------------------------------------------------------------------------


@dataclass
class Counts:
    """Votes aggregated per (cell, pair).

    ``cells[k]`` is the tuple of group ids of cell ``k``. Each row of ``rows`` is
    ``(cell index, i, j, wins_i, wins_j, ties)``; counts may be fractional, and the same (cell, pair)
    may appear in several rows, in either orientation (the fit adds them up).
    """

    cells: list[tuple[int, ...]]
    rows: np.ndarray  # shape (n, 6): cell index, i, j, wins_i, wins_j, ties
    # Optional (n, K) style covariates per row (i minus j, see stats.style); rows with them stay apart.
    features: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.rows = np.asarray(self.rows, dtype=float).reshape(-1, 6)
        if self.features is not None:
            self.features = np.asarray(self.features, dtype=float).reshape(len(self.rows), -1)
            if not np.isfinite(self.features).all():
                raise ValueError("style features must be finite")

    @property
    def n_features(self) -> int:
        return 0 if self.features is None else self.features.shape[1]

    @classmethod
    def from_votes(
        cls, votes: Iterable[tuple[Cell, int, int, str]], n_models: int, *, aggregate: bool = True
    ) -> Counts:
        """Counts from single votes ``(cell groups, i, j, outcome)``, outcome "i", "j" or "tie".

        With ``aggregate=False`` every vote keeps its own row (to test that aggregation changes nothing).
        """
        cell_index: dict[Cell, int] = {}
        rows: list[tuple[int, int, int, int, int, int]] = []
        for groups, i, j, outcome in votes:
            if outcome not in OUTCOMES:
                raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
            if not (0 <= i < n_models and 0 <= j < n_models) or i == j:
                raise ValueError(f"bad pair ({i}, {j}) for {n_models} models")
            cell = cell_index.setdefault(tuple(groups), len(cell_index))
            rows.append((cell, i, j, outcome == "i", outcome == "j", outcome == "tie"))
        counts = cls(cells=list(cell_index), rows=np.array(rows, dtype=float).reshape(-1, 6))
        return counts.aggregated(n_models) if aggregate else counts

    def aggregated(self, n_models: int) -> Counts:
        """The same counts with one row per distinct (cell, unordered pair), oriented i < j.

        With style features, rows are only oriented (a swap negates the features), never merged."""
        if self.features is not None:
            return self._oriented()
        cell, i, j = (self.rows[:, k].astype(np.intp) for k in range(3))
        wins_i, wins_j, ties = self.rows[:, 3], self.rows[:, 4], self.rows[:, 5]
        swap = i > j
        low, high = np.where(swap, j, i), np.where(swap, i, j)
        key = (cell * n_models + low) * n_models + high
        columns = (np.where(swap, wins_j, wins_i), np.where(swap, wins_i, wins_j), ties)
        if len(self.cells) * n_models**2 <= _DENSE_KEYS:
            # Small key space: counting into every possible (cell, pair) slot beats sorting the rows.
            seen = np.bincount(key, minlength=len(self.cells) * n_models**2) > 0
            keys = np.flatnonzero(seen)
            sums = [np.bincount(key, weights=column, minlength=len(seen))[keys] for column in columns]
        else:
            keys, inverse = np.unique(key, return_inverse=True)
            sums = [np.bincount(inverse, weights=column, minlength=len(keys)) for column in columns]
        pair, cells = keys % (n_models * n_models), keys // (n_models * n_models)
        rows = np.column_stack([cells, pair // n_models, pair % n_models, *sums])
        return Counts(cells=list(self.cells), rows=rows)

    def _oriented(self) -> Counts:
        rows, features = self.rows.copy(), self.features.copy()
        swap = rows[:, 1] > rows[:, 2]
        rows[swap] = rows[swap][:, [0, 2, 1, 4, 3, 5]]
        features[swap] *= -1.0
        return Counts(cells=list(self.cells), rows=rows, features=features)

    @property
    def n_votes(self) -> float:
        return float(self.rows[:, 3:].sum())


# --- The fitted posterior ----------------------------------------------------------------------------


@dataclass
class Fit:
    """The posterior mode and its Laplace approximation.

    Parameters are packed as ``[theta (n_models), offsets group by group (n_groups blocks of n_models),
    log_nu]``; the offsets block is absent without groups and log_nu without the tie model (then
    ``log_nu`` is ``-inf``: no ties, which were counted as half a win each way).
    """

    theta: np.ndarray  # (n_models,), centred
    offsets: np.ndarray  # (n_models, n_groups), each group's column centred; zeros without groups
    log_nu: float
    covariance: np.ndarray  # inverse negative log-posterior Hessian over the packed parameters
    with_groups: bool
    tie_model: bool
    group_prior_sd: np.ndarray  # (n_groups,)
    theta_prior_sd: float | None
    converged: bool
    iterations: int
    message: str
    grad_norm: float
    neg_log_posterior: float
    log_marginal: float  # Laplace approximation of log p(data | tau), up to a tau-free constant
    tau_search: dict[float, float] = field(default_factory=dict)  # tau -> log_marginal, if estimated
    style: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (K,) global style coefficients
    style_offsets: np.ndarray | None = None  # (K, n_groups) each group's offset; None = zeros

    def __post_init__(self) -> None:
        self.style = np.asarray(self.style, dtype=float).reshape(-1)
        if self.style_offsets is None:
            self.style_offsets = np.zeros((len(self.style), self.offsets.shape[1]))

    @property
    def n_features(self) -> int:
        return len(self.style)

    def _style_index(self) -> int:
        """Where the style block starts in the packed parameters."""
        return self.n_models * (1 + self.n_groups * self.with_groups)

    def style_covariance(self) -> np.ndarray:
        """Covariance of [beta (K), gamma group by group (n_groups blocks of K, with groups)]."""
        start = self._style_index()
        size = self.n_features * (1 + self.n_groups * self.with_groups)
        return self.covariance[start : start + size, start : start + size]

    @property
    def n_models(self) -> int:
        return len(self.theta)

    @property
    def n_groups(self) -> int:
        return self.offsets.shape[1]

    def packed(self) -> np.ndarray:
        """The mode as one vector, in the layout of ``covariance``."""
        return _pack(
            self.theta,
            self.offsets,
            self.log_nu,
            with_groups=self.with_groups,
            tie_model=self.tie_model,
            style=self.style,
            style_offsets=self.style_offsets,
        )

    def theta_se(self) -> np.ndarray:
        """Posterior standard deviations of the centred theta."""
        n = self.n_models
        block = _centre_both(self.covariance[:n, :n])
        return np.sqrt(np.clip(np.diag(block), 0.0, None))

    def offsets_se(self) -> np.ndarray:
        """Posterior standard deviations of the centred offsets, shape (n_models, n_groups)."""
        if not self.with_groups:
            return np.zeros_like(self.offsets)
        n = self.n_models
        out = np.empty_like(self.offsets)
        for g in range(self.n_groups):
            block = slice(n * (1 + g), n * (2 + g))
            out[:, g] = np.sqrt(np.clip(np.diag(_centre_both(self.covariance[block, block])), 0.0, None))
        return out

    def log_nu_se(self) -> float:
        return math.sqrt(self.covariance[-1, -1]) if self.tie_model else 0.0


def _centre_both(block: np.ndarray) -> np.ndarray:
    """C @ block @ C with C = I - 11'/n: the covariance of centred parameters."""
    block = block - block.mean(axis=0, keepdims=True)
    return block - block.mean(axis=1, keepdims=True)


def _pack(theta, offsets, log_nu, *, with_groups: bool, tie_model: bool, style=None, style_offsets=None):
    parts = [theta]
    if with_groups:
        parts.append(offsets.T.ravel())
    if style is not None and len(style):
        parts.append(style)
        if with_groups:
            parts.append(np.asarray(style_offsets).T.ravel())
    if tie_model:
        parts.append([log_nu])
    return np.concatenate(parts)


# --- The objective -----------------------------------------------------------------------------------


@dataclass
class _Problem:
    """Preprocessed rows and prior settings: everything the objective needs, as flat arrays."""

    n_models: int
    n_groups: int
    with_groups: bool
    tie_model: bool
    cell: np.ndarray  # (rows,) cell index
    i: np.ndarray
    j: np.ndarray
    wins_i: np.ndarray
    wins_j: np.ndarray
    ties: np.ndarray
    design: np.ndarray  # (cells, 1 + groups): column 0 all ones (theta), then group membership
    theta_precision: float
    group_precision: np.ndarray  # (n_groups,)
    # (K, rows): style covariates divided by style_scale, one row per feature (so each feature's values
    # are contiguous); K = 0 without style.
    features: np.ndarray
    # Internally the style coefficients are multiplied by style_scale (and the features divided by it),
    # which puts their curvature on the scale of the skills': a feature touches every row, a model only
    # about 2/n of them, and without this scipy's unpreconditioned trust-ncg takes several times as many
    # conjugate-gradient steps (the default solver's preconditioner does not care). Fit, its covariance
    # and start vectors are always in the natural units.
    style_scale: float = 1.0
    # The last point whose row terms were computed, and those terms (see _row_terms).
    last_terms: tuple[np.ndarray, _RowTerms] | None = field(default=None, repr=False)

    @property
    def n_features(self) -> int:
        return self.features.shape[0]

    @property
    def blocks(self) -> int:
        """Skill blocks (theta, then each group's offsets): also the rows of the style coefficients."""
        return 1 + self.n_groups * self.with_groups

    @property
    def style_start(self) -> int:
        return self.n_models * self.blocks

    def style_table(self, x: np.ndarray) -> np.ndarray:
        """(blocks, K): beta, then each group's gamma."""
        k = self.n_features
        return x[self.style_start : self.style_start + self.blocks * k].reshape(self.blocks, k)

    @property
    def n_cells(self) -> int:
        return self.design.shape[0]

    @cached_property
    def cell_bounds(self) -> np.ndarray:
        """(cells + 1,): cell c's rows are rows[bounds[c]:bounds[c + 1]] (style rows are sorted by cell)."""
        return np.searchsorted(self.cell, np.arange(self.n_cells + 1))

    @cached_property
    def table_i(self) -> np.ndarray:
        """Each row's (cell, i) position in the flattened (cells, models) skill table."""
        return self.cell * self.n_models + self.i

    @cached_property
    def table_j(self) -> np.ndarray:
        return self.cell * self.n_models + self.j

    def cell_slices(self) -> Iterable[tuple[int, slice]]:
        """(cell, its rows) for every cell with rows; style rows are sorted by cell (see _problem)."""
        bounds = self.cell_bounds
        for c in np.flatnonzero(bounds[:-1] < bounds[1:]):
            yield c, slice(bounds[c], bounds[c + 1])

    @cached_property
    def total(self) -> np.ndarray:
        return self.wins_i + self.wins_j + self.ties

    @cached_property
    def ties_total(self) -> float:
        return float(self.ties.sum())

    @cached_property
    def net_wins(self) -> np.ndarray:
        return self.wins_i - self.wins_j

    @cached_property
    def pair_slot(self) -> np.ndarray:
        """Each row's (cell, i, j) position in a flattened (cells, models, models) table."""
        return self.table_i * self.n_models + self.j

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        n, groups = self.n_models, self.n_groups
        theta = x[:n]
        offsets = x[n : n * (1 + groups)].reshape(groups, n).T if self.with_groups else np.zeros((n, groups))
        log_nu = float(x[-1]) if self.tie_model else -math.inf
        return theta, offsets, log_nu

    def skill_table(self, theta: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """(cells, models): each model's effective skill in each cell."""
        return theta[None, :] + self.design[:, 1:] @ offsets.T


def _check_counts(counts: Counts, *, n_models: int, n_groups: int, with_groups: bool) -> None:
    if n_models < 2:
        raise ValueError("need at least two models")
    rows = counts.rows
    if not len(rows):
        return
    if rows[:, 3:].min() < 0 or not np.isfinite(rows).all():
        raise ValueError("counts must be finite and non-negative")
    i, j = rows[:, 1].astype(np.intp), rows[:, 2].astype(np.intp)
    if min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n_models or (i == j).any():
        raise ValueError(f"model indices must be distinct and in [0, {n_models})")
    if rows[:, 0].min() < 0 or rows[:, 0].max() >= len(counts.cells):
        raise ValueError("a row refers to a cell that is not in counts.cells")
    for cell in counts.cells if with_groups else []:
        if len(set(cell)) != len(cell) or any(not 0 <= g < n_groups for g in cell):
            raise ValueError(f"cell {cell} must hold distinct group ids in [0, {n_groups})")


def _design(cells: list[Cell], n_groups: int) -> np.ndarray:
    """(cells, 1 + groups): a column of ones for theta, then each cell's group membership."""
    design = np.zeros((len(cells), 1 + n_groups))
    design[:, 0] = 1.0
    for k, cell in enumerate(cells):
        design[k, [1 + g for g in cell]] = 1.0
    return design


def _problem(
    counts: Counts,
    *,
    n_models: int,
    n_groups: int,
    with_groups: bool,
    tie_model: bool,
    theta_prior_sd: float | None,
    tau: np.ndarray,
) -> _Problem:
    """Validate and aggregate the counts; without groups, cells are merged (they cannot matter)."""
    _check_counts(counts, n_models=n_models, n_groups=n_groups, with_groups=with_groups)
    if with_groups:
        cells, merged = [tuple(cell) for cell in counts.cells], counts
    else:
        cells = [()]
        merged = Counts(cells=[()], rows=counts.rows * [0, 1, 1, 1, 1, 1], features=counts.features)
    if counts.features is None:
        merged = merged.aggregated(n_models)
    kept = np.flatnonzero(merged.rows[:, 3] + merged.rows[:, 4] + merged.rows[:, 5] > 0)
    if merged.features is not None:
        # Sorted by cell, so each cell's rows are one slice (_cell_sums, _cell_outer); aggregated rows
        # already are. Cell numbers as 16-bit integers where they fit, which numpy sorts by radix.
        cell_of_kept = merged.rows[kept, 0]
        small = len(cells) <= np.iinfo(np.int16).max
        kept = kept[np.argsort(cell_of_kept.astype(np.int16 if small else np.intp), kind="stable")]
    # One gather each (np.take: faster than fancy indexing for a whole row).
    rows = np.take(merged.rows, kept, axis=0)
    if merged.features is None:
        features = np.zeros((0, len(rows)))
    else:
        features = np.take(merged.features.T, kept, axis=1)
        features /= _style_scale(n_models)
    wins_i, wins_j, ties = rows[:, 3].copy(), rows[:, 4].copy(), rows[:, 5].copy()
    if not tie_model:
        # Ties become half a win for each side, and nu is 0: plain Bradley-Terry.
        wins_i += ties / 2
        wins_j += ties / 2
        ties[:] = 0.0
    return _Problem(
        n_models=n_models,
        n_groups=n_groups,
        with_groups=with_groups,
        tie_model=tie_model,
        cell=rows[:, 0].astype(np.intp),
        i=rows[:, 1].astype(np.intp),
        j=rows[:, 2].astype(np.intp),
        wins_i=wins_i,
        wins_j=wins_j,
        ties=ties,
        design=_design(cells, n_groups),
        theta_precision=0.0 if theta_prior_sd is None else theta_prior_sd**-2,
        group_precision=tau**-2.0,
        features=features,
        style_scale=_style_scale(n_models),
    )


def _style_scale(n_models: int) -> float:
    # sqrt(n / 4) took the fewest Hessian-vector products in trust-ncg on bench.fit's style worlds
    # (60 models, 22 groups: 453 against 543 for sqrt(n / 2), 795 for sqrt(2 n), 3,787 unscaled).
    return math.sqrt(max(n_models / 4.0, 1.0))


def _style_units(problem: _Problem, x: np.ndarray, factor: float) -> np.ndarray:
    """x with its style block multiplied by factor (style_scale: natural -> internal; 1/style_scale back)."""
    x = np.array(x, dtype=float)
    start, size = problem.style_start, problem.blocks * problem.n_features
    x[start : start + size] *= factor
    return x


@dataclass(frozen=True)
class _RowTerms:
    """Per row: half the skill gap a = d/2, log D' (D divided by e^{(s_i+s_j)/2}) and the outcome
    probabilities as p_i + p_j, p_i - p_j and p_tie; and log nu."""

    half_gap: np.ndarray
    log_denominator: np.ndarray
    p_sum: np.ndarray
    p_diff: np.ndarray
    p_tie: np.ndarray
    log_nu: float


def _row_terms(problem: _Problem, x: np.ndarray) -> _RowTerms:
    """The per-row terms at x: most of the cost of an objective or a Hessian.

    The solver asks for the Hessian at the point whose objective it has just computed, so the last
    point's terms are kept and reused. The arithmetic is in place where it can be: with one row per
    battle (style covariates) these are millions of rows, and every temporary array costs a pass."""
    if problem.last_terms is not None and np.array_equal(problem.last_terms[0], x):
        return problem.last_terms[1]
    theta, offsets, log_nu = problem.unpack(x)
    half_table = 0.5 * problem.skill_table(theta, offsets).ravel()
    half_gap = half_table.take(problem.table_i)
    half_gap -= half_table.take(problem.table_j)
    if problem.n_features:
        design = problem.design[:, : problem.blocks]
        half_style = 0.5 * (design @ problem.style_table(x))  # (cells, K): beta + the cell's gammas
        for c, rows in problem.cell_slices():
            # einsum, not a matrix product: OpenBLAS spreads that one over threads, which on ~10^4 rows
            # costs more than it gains (twice the time on a busy machine).
            half_gap[rows] += np.einsum("kr,k->r", problem.features[:, rows], half_style[c])
    # D' = e^a + e^-a + nu, each term scaled by e^-top (top its largest exponent) so none overflows;
    # exp and log vectorise where np.logaddexp does not, and the scaled terms give the probabilities.
    # Without the tie model log nu is -inf and its term is 0.
    top = np.maximum(np.abs(half_gap), log_nu)
    win_i = np.exp(np.subtract(half_gap, top))
    win_j = np.negative(half_gap)
    win_j -= top
    np.exp(win_j, out=win_j)
    tie = np.exp(np.subtract(log_nu, top))
    wins = win_i + win_j
    inverse = wins + tie
    log_denominator = np.log(inverse)
    log_denominator += top
    np.reciprocal(inverse, out=inverse)
    wins *= inverse
    win_i -= win_j
    win_i *= inverse
    tie *= inverse
    terms = _RowTerms(
        half_gap=half_gap,
        log_denominator=log_denominator,
        p_sum=wins,
        p_diff=win_i,
        p_tie=tie,
        log_nu=log_nu,
    )
    problem.last_terms = (np.array(x, copy=True), terms)
    return terms


def _prior_terms(problem: _Problem, x: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log prior (without constants) plus the centring penalty, and its gradient."""
    n = problem.n_models
    theta = x[:n]
    grad = np.zeros_like(x)
    mean = theta.mean()
    value = 0.5 * problem.theta_precision * theta @ theta + 0.5 * _CENTRING * n * mean**2
    grad[:n] = problem.theta_precision * theta + _CENTRING * mean
    if problem.with_groups:
        offsets = x[n : n * (1 + problem.n_groups)].reshape(problem.n_groups, n)
        precision = problem.group_precision[:, None]
        value += 0.5 * float((precision * offsets**2).sum())
        grad[n : n * (1 + problem.n_groups)] = (precision * offsets).ravel()
    if problem.n_features:
        start, coefficients = problem.style_start, problem.style_table(x)
        precision = np.r_[problem.theta_precision, problem.group_precision][: problem.blocks, None]
        precision = precision / problem.style_scale**2
        value += 0.5 * float((precision * coefficients**2).sum())
        grad[start : start + coefficients.size] = (precision * coefficients).ravel()
    return value, grad


def _cell_sums(problem: _Problem, values: np.ndarray) -> np.ndarray:
    """(cells, K): per cell, sum over rows of values * each feature."""
    sums = np.zeros((problem.n_cells, problem.n_features))
    for c, rows in problem.cell_slices():
        sums[c] = problem.features[:, rows] @ values[rows]
    return sums


def _cell_outer(problem: _Problem, weights: np.ndarray) -> np.ndarray:
    """(cells, K, K): per cell, sum over rows of weights * z z'."""
    outer = np.zeros((problem.n_cells, problem.n_features, problem.n_features))
    for c, rows in problem.cell_slices():
        z = problem.features[:, rows]
        outer[c] = (z * weights[rows]) @ z.T
    return outer


def _objective(x: np.ndarray, problem: _Problem) -> tuple[float, np.ndarray]:
    """Negative log posterior and its analytic gradient."""
    terms = _row_terms(problem, x)
    total = problem.total
    tie_term = problem.ties_total * terms.log_nu if problem.tie_model else 0.0
    log_lik = problem.net_wins @ terms.half_gap + tie_term - total @ terms.log_denominator
    prior, grad = _prior_terms(problem, x)
    value = float(prior) - float(log_lik)
    # d(-log lik)/d(s_i - s_j) per row, spread onto the (cell, model) skill table with bincount.
    residual = total * terms.p_diff
    residual -= problem.net_wins
    residual *= 0.5
    table_grad = _scatter_pairs(problem, residual)
    n = problem.n_models
    grad[:n] += table_grad.sum(axis=0)
    if problem.with_groups:
        grad[n : n * (1 + problem.n_groups)] += (problem.design[:, 1:].T @ table_grad).ravel()
    if problem.n_features:
        start, size = problem.style_start, problem.blocks * problem.n_features
        style_grad = problem.design[:, : problem.blocks].T @ _cell_sums(problem, residual)
        grad[start : start + size] += style_grad.ravel()
    if problem.tie_model:
        grad[-1] += float(total @ terms.p_tie) - problem.ties_total
    return value, grad


def _scatter_pairs(problem: _Problem, values: np.ndarray) -> np.ndarray:
    """(cells, models) table of sum(values) over rows where the model is i minus rows where it is j."""
    size = problem.n_cells * problem.n_models
    plus = np.bincount(problem.table_i, weights=values, minlength=size)
    minus = np.bincount(problem.table_j, weights=values, minlength=size)
    return (plus - minus).reshape(problem.n_cells, problem.n_models)


def _hessian(x: np.ndarray, problem: _Problem) -> np.ndarray:
    """Analytic Hessian of the negative log posterior (dense).

    Per row, the negative log likelihood is N log D'(d, log nu) minus terms linear in the parameters,
    so its Hessian is N times that of log D': with p_i, p_j, p_t the outcome probabilities,
    d2/dd2 = (p_i + p_j - (p_i - p_j)^2) / 4, d2/dd dlognu = -p_t (p_i - p_j) / 2,
    d2/dlognu2 = p_t (1 - p_t). In skill-table coordinates each cell contributes a weighted graph
    Laplacian; block (a, b) of the parameter Hessian (a, b = theta or a group) sums the Laplacians of
    the cells holding both, which is one matrix product over cells.
    """
    terms = _row_terms(problem, x)
    total, p_diff, p_tie = problem.total, terms.p_diff, terms.p_tie
    curvature = p_diff * p_diff
    np.subtract(terms.p_sum, curvature, out=curvature)
    curvature *= 0.25 * total
    n, cells = problem.n_models, problem.n_cells
    weights = np.bincount(problem.pair_slot, weights=curvature, minlength=cells * n * n).reshape(cells, n, n)
    weights += weights.transpose(0, 2, 1)
    laplacians = -weights
    laplacians[:, np.arange(n), np.arange(n)] += weights.sum(axis=2)
    design = problem.design if problem.with_groups else problem.design[:, :1]
    blocks = design.shape[1]
    pair_design = (design[:, :, None] * design[:, None, :]).reshape(cells, blocks * blocks)
    summed = (pair_design.T @ laplacians.reshape(cells, n * n)).reshape(blocks, blocks, n, n)
    k = problem.n_features
    skill_size, style_size = blocks * n, blocks * k
    size = skill_size + style_size + problem.tie_model
    hessian = np.zeros((size, size))
    hessian[:skill_size, :skill_size] = summed.transpose(0, 2, 1, 3).reshape(skill_size, skill_size)
    if k:
        # d = ... + z . (style coefficients of the cell): the style rows are the skill rows with the
        # +1/-1 of models i and j replaced by the features.
        style = slice(skill_size, skill_size + style_size)
        outer = _cell_outer(problem, curvature)
        hessian[style, style] = (
            (pair_design.T @ outer.reshape(cells, k * k)).reshape(blocks, blocks, k, k).transpose(0, 2, 1, 3)
        ).reshape(style_size, style_size)
        cross = np.stack([_scatter_pairs(problem, curvature * z) for z in problem.features], axis=-1)
        mixed = (pair_design.T @ cross.reshape(cells, n * k)).reshape(blocks, blocks, n, k)
        hessian[:skill_size, style] = mixed.transpose(0, 2, 1, 3).reshape(skill_size, style_size)
        hessian[style, :skill_size] = hessian[:skill_size, style].T
    if problem.tie_model:
        tie_cross = -0.5 * total * p_tie
        tie_cross *= p_diff
        cross = _scatter_pairs(problem, tie_cross)
        hessian[:skill_size, -1] = hessian[-1, :skill_size] = (design.T @ cross).ravel()
        if k:
            style_tie = (design.T @ _cell_sums(problem, tie_cross)).ravel()
            hessian[style, -1] = hessian[-1, style] = style_tie
        hessian[-1, -1] = float(total @ (p_tie - p_tie * p_tie))
    _add_prior_hessian(hessian, problem)
    return hessian


def _add_prior_hessian(hessian: np.ndarray, problem: _Problem) -> None:
    n = problem.n_models
    hessian[:n, :n] += _CENTRING / n
    hessian[np.arange(n), np.arange(n)] += problem.theta_precision
    if problem.with_groups:
        diagonal = np.arange(n, n * (1 + problem.n_groups))
        hessian[diagonal, diagonal] += np.repeat(problem.group_precision, n)
    k = problem.n_features
    if k:
        precision = np.r_[problem.theta_precision, problem.group_precision][: problem.blocks]
        precision = precision / problem.style_scale**2
        diagonal = np.arange(problem.style_start, problem.style_start + problem.blocks * k)
        hessian[diagonal, diagonal] += np.repeat(precision, k)


# --- Fitting -------------------------------------------------------------------------------------


def fit_btd(
    counts: Counts,
    *,
    n_models: int,
    n_groups: int,
    group_prior_sd: float | Sequence[float] | str = 0.5,
    theta_prior_sd: float | None = 10.0,
    with_groups: bool = True,
    tie_model: bool = True,
    method: str = "newton",
    tau_grid: Sequence[float] = DEFAULT_TAU_GRID,
    start: Fit | None = None,
) -> Fit:
    """MAP fit of the Bradley-Terry-Davidson model with group offsets, plus its Laplace covariance.

    ``group_prior_sd`` is tau: one value, one per group, or ``"estimate"`` (the ``tau_grid`` value with
    the highest Laplace marginal likelihood, refitting from the previous mode). ``with_groups=False``
    drops the offsets (and merges cells); ``tie_model=False`` counts each tie as half a win for each
    side with nu = 0, and with ``theta_prior_sd=None`` that is plain Bradley-Terry maximum likelihood.
    ``method`` is "newton" (Newton with the analytic Hessian, preconditioned conjugate-gradient steps
    and a line search), scipy's "trust-ncg" (the same unpreconditioned, in a trust region),
    "trust-exact" (exact Cholesky steps) or "L-BFGS-B" (gradient only); all find the same mode.

    ``start``: a fit of the same models and groups to start from, e.g. the fit without style features
    when fitting with them (its skills and log nu; style coefficients start at 0). It changes only where
    the solver starts, so the mode is the same up to the solver's tolerance.
    """
    if isinstance(group_prior_sd, str):
        if group_prior_sd != "estimate":
            raise ValueError('group_prior_sd must be a number, one number per group, or "estimate"')
        return _fit_estimating_tau(
            counts,
            n_models=n_models,
            n_groups=n_groups,
            theta_prior_sd=theta_prior_sd,
            with_groups=with_groups,
            tie_model=tie_model,
            method=method,
            tau_grid=tau_grid,
        )
    tau = np.broadcast_to(np.asarray(group_prior_sd, dtype=float), (n_groups,)).copy()
    if (tau <= 0).any():
        raise ValueError("group_prior_sd must be positive")
    problem = _problem(
        counts,
        n_models=n_models,
        n_groups=n_groups,
        with_groups=with_groups,
        tie_model=tie_model,
        theta_prior_sd=theta_prior_sd,
        tau=tau,
    )
    return _fit_problem(
        problem, method=method, start=_start_from(problem, start), theta_prior_sd=theta_prior_sd
    )


def _start_from(problem: _Problem, fit: Fit | None) -> np.ndarray | None:
    if fit is None:
        return None
    if fit.n_models != problem.n_models or fit.n_groups != problem.n_groups:
        raise ValueError("start must be a fit of the same models and groups")
    x = _start(problem)
    skills = problem.style_start
    x[:skills] = _pack(fit.theta, fit.offsets, 0.0, with_groups=problem.with_groups, tie_model=False)
    if problem.tie_model and fit.tie_model:
        x[-1] = fit.log_nu
    return x  # style coefficients 0 in either units


def _fit_estimating_tau(counts: Counts, *, tau_grid: Sequence[float], **kwargs) -> Fit:
    """Empirical Bayes for one common tau: the grid value with the highest Laplace marginal."""
    if not kwargs["with_groups"]:
        raise ValueError("tau can only be estimated with groups")
    best: Fit | None = None
    start: np.ndarray | None = None
    search: dict[float, float] = {}
    # From wide to narrow, so each refit starts from a nearby mode.
    for tau in sorted(tau_grid, reverse=True):
        problem = _problem(
            counts,
            n_models=kwargs["n_models"],
            n_groups=kwargs["n_groups"],
            with_groups=True,
            tie_model=kwargs["tie_model"],
            theta_prior_sd=kwargs["theta_prior_sd"],
            tau=np.full(kwargs["n_groups"], float(tau)),
        )
        fit = _fit_problem(
            problem, method=kwargs["method"], start=start, theta_prior_sd=kwargs["theta_prior_sd"]
        )
        start = _style_units(problem, fit.packed(), problem.style_scale)
        search[float(tau)] = fit.log_marginal
        if best is None or fit.log_marginal > best.log_marginal:
            best = fit
    assert best is not None  # noqa: S101 - tau_grid is not empty
    best.tau_search = dict(sorted(search.items()))
    return best


def _start(problem: _Problem) -> np.ndarray:
    """Zeros, and nu matching the tie share of equal models: P(tie) = nu / (2 + nu)."""
    size = (problem.n_models + problem.n_features) * problem.blocks + problem.tie_model
    x = np.zeros(size)
    if problem.tie_model:
        share = (problem.ties.sum() + 0.5) / (problem.total.sum() + 1.0)
        x[-1] = math.log(2 * share / (1 - share))
    return x


# Solver tolerance on the gradient of the per-vote objective (see _minimise).
GTOL = 1e-10
METHODS = ("newton", "trust-ncg", "trust-exact", "L-BFGS-B")


def _minimise(problem: _Problem, x0: np.ndarray, method: str) -> optimize.OptimizeResult:
    """Minimise the negative log posterior divided by the number of votes.

    Why divide: Newton-CG solves each Newton system only to a relative residual that shrinks with
    |grad| (min(0.1, |grad|) here, min(0.5, sqrt(|grad|)) in scipy), so with gradients in raw vote
    counts (thousands) every step would be a crude one and convergence linear; per vote, |grad| < 1 and
    the steps are full Newton steps.
    """
    scale = 1.0 / max(float(problem.total.sum()), 1.0)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _objective(x, problem)
        return scale * value, scale * grad

    def hessian(x: np.ndarray) -> np.ndarray:
        return scale * _hessian(x, problem)

    if method == "newton":
        return _newton_cg(problem, x0, objective, hessian)
    if method in ("trust-ncg", "trust-exact"):
        return optimize.minimize(
            objective, x0, jac=True, hess=hessian, method=method, options={"gtol": GTOL, "maxiter": 200}
        )
    if method == "L-BFGS-B":
        return optimize.minimize(
            objective,
            x0,
            jac=True,
            method="L-BFGS-B",
            options={"gtol": GTOL, "ftol": 1e-15, "maxiter": 20_000, "maxcor": 30},
        )
    raise ValueError(f"method must be one of {METHODS}")


# Newton steps at most; and the objective's relative rounding, below which a line search cannot see a
# decrease (then the gradient decides, see _newton_cg).
_MAX_NEWTON = 200
_ROUNDING = 1e-12


def _newton_cg(problem: _Problem, x0: np.ndarray, objective, hessian) -> optimize.OptimizeResult:
    """Newton's method, each step solved by conjugate gradients preconditioned by _BlockPreconditioner
    to a relative residual of min(0.1, |grad|) (so convergence is quadratic near the mode), then a
    backtracking line search. The objective is convex, so a Newton step is always a descent direction.

    Every iterate is centred (see _centred): the common shifts of the skill blocks are invisible to
    the likelihood, and the prior is minimised along them at zero exactly, so centring is their exact
    minimisation and keeps the conjugate gradients out of directions only the prior pins."""
    x = _centred(problem, x0)
    value, grad = objective(x)
    products = 0
    for iteration in range(_MAX_NEWTON):
        norm = float(np.linalg.norm(grad))
        if norm <= GTOL:
            return _solver_result(x, value, grad, iteration, products, True, "gradient below tolerance")
        matrix = hessian(x)
        step, used = _conjugate_gradients(
            matrix, -grad, _BlockPreconditioner(matrix, problem), min(0.1, norm) * norm
        )
        products += used
        slope = float(grad @ step)
        length = 1.0
        while True:
            candidate = _centred(problem, x + length * step)
            new_value, new_grad = objective(candidate)
            if new_value <= value + 1e-4 * length * slope:
                break
            # Near the mode a step's gain can be below the objective's rounding: then take it if it does
            # not visibly raise the objective and it lowers the gradient.
            unseen = _ROUNDING * max(1.0, abs(value))
            if -length * slope <= unseen and new_value <= value + unseen and np.linalg.norm(new_grad) < norm:
                break
            length /= 2
            if length < 1e-10:
                return _solver_result(x, value, grad, iteration, products, False, "line search failed")
        x, value, grad = candidate, new_value, new_grad
    done = bool(np.linalg.norm(grad) <= GTOL)
    message = "gradient below tolerance" if done else "maximum number of iterations"
    return _solver_result(x, value, grad, _MAX_NEWTON, products, done, message)


def _solver_result(x, value, grad, iterations, products, success, message) -> optimize.OptimizeResult:
    return optimize.OptimizeResult(
        x=x, fun=value, jac=grad, nit=iterations, nhessp=products, success=success, message=message
    )


def _conjugate_gradients(matrix: np.ndarray, rhs: np.ndarray, preconditioner, tolerance: float):
    """Preconditioned conjugate gradients for matrix @ x = rhs from x = 0, until |residual| <= tolerance;
    returns x and the matrix-vector products used."""
    x = np.zeros_like(rhs)
    residual = rhs.copy()
    direction = preconditioner(residual)
    along = float(residual @ direction)
    for products in range(1, len(rhs) + 1):
        image = matrix @ direction
        curvature = float(direction @ image)
        if curvature <= 0:  # only by rounding: the Hessian is positive definite
            return (x if products > 1 else direction), products
        size = along / curvature
        x += size * direction
        residual -= size * image
        if np.linalg.norm(residual) <= tolerance:
            return x, products
        preconditioned = preconditioner(residual)
        along, previous = float(residual @ preconditioned), along
        direction = preconditioned + (along / previous) * direction
    return x, len(rhs)


class _BlockPreconditioner:
    """An approximate inverse of the Hessian for the conjugate-gradient steps: exact within each model's
    skill parameters and for the global ones (the style coefficients and log nu), dropping only how the
    skills of different models couple.

    Why this shape: theta and the group offsets of one model are nearly collinear (every rater has an
    age group, so theta and the age offsets move together and only the priors tell them apart), which
    makes the Hessian ill conditioned *within* each model's 1 + groups parameters; between models the
    coupling is that of a well-connected comparison graph, each pair a small share of a model's
    comparisons. The global parameters touch every row, and the style coefficients are confounded with
    the skills of models whose replies are consistently long or formatted, so their coupling to the
    skills is kept exactly, by the Schur complement of the skills' block-diagonal part. On the Arena-scale
    benchmark this takes the conjugate-gradient steps of a fit from ~270 (without style) and ~590 (with
    it) in scipy's unpreconditioned trust-ncg to under 20.
    """

    def __init__(self, hessian: np.ndarray, problem: _Problem) -> None:
        n, blocks = problem.n_models, problem.blocks
        self.n, self.blocks, self.skills = n, blocks, n * blocks
        # Model m's parameter in block a sits at a * n + m: per_model[m, a, b] is their Hessian entry.
        index = np.arange(blocks)[None, :] * n + np.arange(n)[:, None]
        per_model = hessian[index[:, :, None], index[:, None, :]]
        inverse = np.linalg.inv(per_model)
        self.inverse = 0.5 * (inverse + inverse.transpose(0, 2, 1))
        self.coupling = hessian[: self.skills, self.skills :]
        global_block = hessian[self.skills :, self.skills :]
        self.global_factor = None
        if global_block.size:
            self.solved_coupling = self._solve_skills(self.coupling)
            try:
                self.global_factor = linalg.cho_factor(
                    global_block - self.coupling.T @ self.solved_coupling, lower=True
                )
            except linalg.LinAlgError:
                # The approximate Schur complement need not be positive definite: drop the coupling.
                self.coupling = self.solved_coupling = None
                self.global_factor = linalg.cho_factor(global_block, lower=True)

    def _solve_skills(self, rhs: np.ndarray) -> np.ndarray:
        """The block-diagonal part's inverse times rhs, (skills, columns)."""
        columns = rhs.shape[1]
        by_model = rhs.reshape(self.blocks, self.n, columns).transpose(1, 0, 2)
        return np.matmul(self.inverse, by_model).transpose(1, 0, 2).reshape(self.skills, columns)

    def __call__(self, residual: np.ndarray) -> np.ndarray:
        out = np.empty_like(residual)
        skills = self._solve_skills(residual[: self.skills, None])[:, 0]
        if self.global_factor is not None:
            rest = residual[self.skills :]
            if self.coupling is not None:
                rest = rest - self.coupling.T @ skills
            out[self.skills :] = rest = linalg.cho_solve(self.global_factor, rest)
            if self.coupling is not None:
                skills = skills - self.solved_coupling @ rest
        # Centred, like the iterates (see _newton_cg).
        shaped = skills.reshape(self.blocks, self.n)
        out[: self.skills] = (shaped - shaped.mean(axis=1, keepdims=True)).ravel()
        return out


def _fit_problem(
    problem: _Problem, *, method: str, start: np.ndarray | None, theta_prior_sd: float | None
) -> Fit:
    result = _minimise(problem, _start(problem) if start is None else start, method)
    # Newton's iterates are centred already (centring again would miss the cached row terms at x).
    x = result.x if method == "newton" else _centred(problem, result.x)
    value, grad = _objective(x, problem)
    hessian = _hessian(x, problem)
    factor = linalg.cho_factor(hessian, lower=True)
    covariance = linalg.cho_solve(factor, np.eye(len(x)))
    theta, offsets, log_nu = problem.unpack(x)
    # Back to natural units: coefficients b = b' / scale, so their covariance rows and columns too.
    style = problem.style_table(x) / problem.style_scale
    units = _style_units(problem, np.ones(len(x)), 1.0 / problem.style_scale)
    covariance = covariance * units[:, None] * units[None, :]
    grad_norm = float(np.linalg.norm(_style_units(problem, grad, problem.style_scale)))
    return Fit(
        theta=theta.copy(),
        offsets=offsets.copy(),
        log_nu=log_nu,
        covariance=covariance,
        with_groups=problem.with_groups,
        tie_model=problem.tie_model,
        group_prior_sd=problem.group_precision**-0.5,
        theta_prior_sd=theta_prior_sd,
        # scipy's trust-ncg can stop on "bad approximation" once a Newton step's gain is below the
        # rounding of the objective; the per-vote gradient is the honest test.
        converged=bool(result.success or grad_norm <= 100 * GTOL * max(float(problem.total.sum()), 1.0)),
        iterations=int(result.nit),
        message=str(result.message),
        grad_norm=grad_norm,
        neg_log_posterior=value,
        log_marginal=_log_marginal(problem, value, np.diag(factor[0])),
        style=style[0].copy(),
        style_offsets=style[1:].T.copy() if problem.with_groups else None,
    )


def _centred(problem: _Problem, x: np.ndarray) -> np.ndarray:
    """Remove the (numerically tiny) common shifts the likelihood cannot see."""
    x = x.copy()
    n = problem.n_models
    blocks = 1 + problem.n_groups * problem.with_groups
    shaped = x[: n * blocks].reshape(blocks, n)
    x[: n * blocks] = (shaped - shaped.mean(axis=1, keepdims=True)).ravel()
    return x


def _log_marginal(problem: _Problem, neg_log_posterior: float, cholesky_diagonal: np.ndarray) -> float:
    """Laplace: log p(y | tau) ~ -(neg log posterior at the mode, with the prior's normalising
    constants) + (P/2) log 2 pi - (1/2) log det H. Terms that do not depend on tau are dropped."""
    value = -neg_log_posterior - float(np.sum(np.log(cholesky_diagonal)))
    if problem.with_groups:
        # Each group's tau governs its n_models skill offsets and its K style offsets.
        per_group = problem.n_models + problem.n_features
        value -= 0.5 * per_group * float(np.sum(np.log(2 * math.pi / problem.group_precision)))
        value += 0.5 * per_group * problem.n_groups * math.log(2 * math.pi)
    return value


# --- Plain Bradley-Terry references ------------------------------------------------------------------


def _pair_wins(counts: Counts, n_models: int) -> np.ndarray:
    """wins[a, b]: times a beat b over all cells, each tie counted as half a win for both."""
    rows = counts.rows
    i, j = rows[:, 1].astype(np.intp), rows[:, 2].astype(np.intp)
    wins = np.zeros((n_models, n_models))
    np.add.at(wins, (i, j), rows[:, 3] + rows[:, 5] / 2)
    np.add.at(wins, (j, i), rows[:, 4] + rows[:, 5] / 2)
    return wins


def fit_bt_plain(counts: Counts, n_models: int, *, tol: float = 1e-13, max_iter: int = 100_000) -> np.ndarray:
    """Plain Bradley-Terry maximum likelihood (ties as half wins, no prior), centred log-strengths.

    Uses Zermelo's minorisation-maximisation iteration (p_i <- W_i / sum_j N_ij / (p_i + p_j)), a
    different algorithm from ``fit_btd`` on purpose, so that their agreement checks both. The MLE
    exists only if every model has both won and lost (with a connected comparison graph).
    """
    wins = _pair_wins(counts, n_models)
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    if (total_wins <= 0).any() or (total_wins >= games.sum(axis=1)).any():
        raise ValueError("the maximum likelihood estimate does not exist: a model never won or never lost")
    log_p = np.zeros(n_models)
    for _ in range(max_iter):
        strength = np.exp(log_p)
        updated = np.log(total_wins) - np.log((games / (strength[:, None] + strength[None, :])).sum(axis=1))
        updated -= updated.mean()
        change = np.abs(updated - log_p).max()
        log_p = updated
        if change < tol:
            return log_p
    raise ValueError("Bradley-Terry iteration did not converge")


def fit_bt_logistic(
    counts: Counts, n_models: int, *, gtol: float = 1e-6, ftol: float = 2.220446049250313e-09
) -> np.ndarray:
    """Plain Bradley-Terry the way Chatbot Arena fits it, as centred natural-log strengths.

    Logistic regression without intercept or regularisation: one design row per pair with +1 for the
    first model and -1 for the second, target 1 weighted by the first's wins plus half the ties and
    target 0 weighted by the second's wins plus half the ties; the sample-weighted mean logistic loss
    is minimised by scipy's L-BFGS-B (``gtol`` is the solver tolerance Arena passes, 1e-6, and ``ftol``
    scipy's default relative-decrease stop; lower both for a tight fit).
    """
    wins = _pair_wins(counts, n_models)
    first, second = np.nonzero(np.triu(wins + wins.T, k=1))
    pairs = len(first)
    design = sparse.csr_matrix(
        (
            np.r_[np.ones(pairs), -np.ones(pairs)],
            (np.r_[np.arange(pairs), np.arange(pairs)], np.r_[first, second]),
        ),
        shape=(pairs, n_models),
    )
    positive, negative = wins[first, second], wins[second, first]
    scale = 1.0 / (positive.sum() + negative.sum())

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        margin = design @ beta
        # -log sigmoid(z) = logaddexp(0, -z); d/dz of the weighted loss = (w+ + w-) sigmoid(z) - w+.
        value = scale * float(positive @ np.logaddexp(0, -margin) + negative @ np.logaddexp(0, margin))
        residual = (positive + negative) * _sigmoid(margin) - positive
        return value, scale * (design.T @ residual)

    result = optimize.minimize(
        loss,
        np.zeros(n_models),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": gtol, "ftol": ftol, "maxiter": 10_000},
    )
    return result.x - result.x.mean()


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0, -z))
