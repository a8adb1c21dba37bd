"""One person's own leaderboard: an individual-level Bradley-Terry-Davidson model, shrunk to their groups.

Pure numpy/scipy (no Django): the site, the benchmark and outside checks call it directly.

The model
---------
For a person ``r`` in the groups ``c`` the skill of model ``i`` is

    s_{r,i} = theta_i + sum_{g in c} u_{i,g} + b_{r,i},      b_r ~ Normal(0, T),

and a comparison ends as in ``stats.btd`` (Davidson's ties, with the fitted ``nu``). ``theta`` and the
group offsets ``u`` are the published fit: ``stats.btd.fit_btd`` on all votes, group offsets shrunk with
an estimated tau. ``b_r`` is the person's own taste, a random effect shrunk towards zero; ``T`` is the
covariance of tastes across models, so ``sqrt(T_ii)`` is how much people disagree about model ``i``
beyond their groups (``Population.taste_spread``).

Why a random effect with a learnt covariance, not factors
    Tastes in LLM replies are plausibly low-rank (length, formatting, tone): someone who prefers A's
    terse reply to B's will likely prefer C's terse one too. A Gaussian random effect whose covariance
    ``T`` is learnt from the panel captures that (a rank-K taste is a rank-K ``T``) without choosing K or
    fitting factor loadings from raters who each see a few pairs once: an answer about A v B moves C as
    far as ``T`` says they go together. It fails safe: if individuals do not differ beyond their
    groups, ``T`` shrinks towards zero and the personal board *is* the profile board (the control in
    ``bench personal``). ``taste="isotropic"`` keeps ``T = sigma^2 I`` (one parameter).

How much individuals vary
    First one scale ``sigma`` by empirical Bayes on raters with at least ``min_rater_votes`` votes: with
    theta and u fixed at the published mode, each rater's marginal likelihood ``p(votes_r | sigma) = int
    p(votes_r | b) N(b; 0, sigma^2 I) db`` is Laplace-approximated over the models they saw (an unseen
    model's ``b`` integrates out exactly), and ``sigma`` is the ``sigma_grid`` value with the highest sum
    over raters: the grid-and-Laplace rule ``stats.btd`` uses for tau. Then ``T`` by Laplace-EM from
    ``sigma^2 I``: each rater's posterior mode ``m_r`` and covariance ``V_r`` under the current ``T``, and
    ``T <- mean_r (m_r m_r' + V_r)``, centred (only differences are identified), with a small floor.
    Panel raters give few, noisy votes each, so ``T`` is estimated with a downward bias (Laplace on
    binary outcomes) and slowly: ``bench personal`` reports it against a model told the true ``T``.

A visitor
    ``population.person(groups)`` starts from the prior ``s ~ Normal(theta + u_c, Cov_c + T)``
    where ``Cov_c`` is the fit's Laplace covariance of the profile board (centred). Each
    ``observe(a, b, outcome)`` adds one vote; the posterior is its Laplace approximation (Newton to the
    mode, the inverse Hessian as covariance). With three answers the prior dominates and the board moves
    little; with twenty on overlapping models it moves a lot (``T`` sets the scale).

    ``predict`` integrates the Davidson probabilities over the posterior of ``s_a - s_b`` (Gauss-Hermite),
    ``p_best`` draws skills from the posterior (seeded, so a URL of answers gives the same board), and
    ``choose`` scores each candidate pair by the expected information its answer gives about the skills,
    ``0.5 log(1 + Var(s_a - s_b) I(E[s_a - s_b]))`` with ``I`` the Fisher information of one Davidson
    outcome, weighted up for pairs of models that may both be this person's best (``top_weight``), and
    picks at random among the candidates within ``near_equal`` of the best score. That prefers pairs
    that are close for this person and pairs where they are uncertain, which are the pairs the
    population finds close or their group disagrees on.

Style control
    Fitted with ``features`` (each vote's style covariates, ``stats.style``), ``theta``, ``u`` and the
    pooled board come from ``stats.btd``'s style-controlled fit, and every vote's expected gap adds its
    replies' style valued at the voter's groups' coefficients, ``z . (beta + sum_{g in c} gamma_g)``.
    The boards are then scores with reply length and formatting held equal, the tastes ``T`` are what
    is left once style is accounted for, and a visitor's answer on a battle is read net of that
    battle's style (``Person.observe(..., features=...)``). Predictions and the choice of the next pair
    are about models, so they hold style equal.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import special as scipy_special

from stats.btd import Counts, Fit, fit_btd

__all__ = ["OUTCOMES", "Person", "Population"]

OUTCOMES = ("a", "tie", "b")
# Multipliers of the learnt taste covariance tried by cross-validation (0 is "no individual taste").
DEFAULT_TASTE_SCALE_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
TASTE_FOLDS = 2
DEFAULT_SIGMA_GRID = (0.01, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.65, 0.8, 1.0, 1.25, 1.5, 2.0)
_HERMITE_X, _HERMITE_W = np.polynomial.hermite.hermgauss(24)
_BTD_OUTCOME = {"a": "i", "b": "j", "tie": "tie"}
# Half the skill gap's derivative of log P(outcome) has this constant part, per outcome.
_SCORE_CONSTANT = {"a": 0.5, "b": -0.5, "tie": 0.0}


def davidson(gap: np.ndarray | float, log_nu: float) -> np.ndarray:
    """P(a), P(tie), P(b) for the skill gap ``s_a - s_b`` (last axis of the result)."""
    half = 0.5 * np.asarray(gap, dtype=float)
    logits = np.stack([half, np.full_like(half, log_nu), -half], axis=-1)
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def _integrated_outcomes(gap_mean, gap_variance, log_nu: float) -> np.ndarray:
    """P(a), P(tie), P(b) (last axis) for skill gaps known only as Normal(gap_mean, gap_variance): the
    Davidson probabilities averaged over each gap by Gauss-Hermite quadrature."""
    mean, variance = np.asarray(gap_mean, dtype=float), np.asarray(gap_variance, dtype=float)
    gaps = mean[..., None] + np.sqrt(2.0 * variance)[..., None] * _HERMITE_X
    p = (davidson(gaps, log_nu) * _HERMITE_W[:, None]).sum(axis=-2)
    return p / p.sum(axis=-1, keepdims=True)


def _gap_terms(gap: np.ndarray, outcome_constant: np.ndarray, log_nu: float):
    """log P(outcome), its derivative in the gap, and the Fisher information, per vote."""
    p = davidson(gap, log_nu)
    p_a, p_tie, p_b = p[..., 0], p[..., 1], p[..., 2]
    chosen = np.where(outcome_constant > 0, p_a, np.where(outcome_constant < 0, p_b, p_tie))
    score = outcome_constant - 0.5 * (p_a - p_b)
    information = 0.25 * ((p_a + p_b) - (p_a - p_b) ** 2)
    return np.log(chosen), score, information


def _fisher(gap: np.ndarray | float, log_nu: float) -> np.ndarray:
    p = davidson(gap, log_nu)
    return 0.25 * ((p[..., 0] + p[..., 2]) - (p[..., 0] - p[..., 2]) ** 2)


@dataclass
class _Votes:
    """One rater's (or visitor's) votes as index arrays."""

    a: np.ndarray
    b: np.ndarray
    constant: np.ndarray  # +1/2 a won, -1/2 b won, 0 tie
    mean_gap: np.ndarray  # the prior mean's gap s_a - s_b, per vote


_FLOOR_SD = 0.02


@dataclass
class _Stacked:
    """Many raters' votes in one set of arrays, each vote with its rater's row (0, 1, ... in order)."""

    rater: np.ndarray
    votes: _Votes
    starts: np.ndarray  # each rater's first vote, and the total at the end

    @classmethod
    def of(cls, raters: list[_Votes]) -> _Stacked:
        sizes = np.array([len(v.a) for v in raters], dtype=np.intp)
        joined = _Votes(
            *(np.concatenate([getattr(v, f) for v in raters]) for f in ("a", "b", "constant", "mean_gap"))
        )
        return cls(np.repeat(np.arange(len(raters)), sizes), joined, np.concatenate([[0], np.cumsum(sizes)]))

    def chunk(self, rows: slice) -> _Stacked:
        """The raters of ``rows`` (a slice), renumbered from 0."""
        first, last = self.starts[rows.start], self.starts[rows.stop]
        votes = _subset(self.votes, slice(first, last))
        return _Stacked(
            self.rater[first:last] - rows.start, votes, self.starts[rows.start : rows.stop + 1] - first
        )


# Raters' posteriors are solved together, up to this many Hessian entries at a time (8 bytes each).
_BATCH_ENTRIES = 4_000_000


def _rater_chunks(n_raters: int, n_models: int):
    size = max(1, _BATCH_ENTRIES // (n_models * n_models))
    for start in range(0, n_raters, size):
        yield slice(start, min(start + size, n_raters))


def _laplace_terms(stacked: _Stacked, precision: np.ndarray, modes: np.ndarray, log_nu: float):
    """At the raters' tastes ``modes`` (raters, models), under the prior N(0, precision^-1) for each:
    each vote's log-likelihood, and per rater the gradient of the log posterior and its negative Hessian
    (raters, models, models)."""
    r, v = stacked.rater, stacked.votes
    gap = v.mean_gap + modes[r, v.a] - modes[r, v.b]
    log_lik, score, information = _gap_terms(gap, v.constant, log_nu)
    gradient = -modes @ precision
    np.add.at(gradient, (r, v.a), score)
    np.add.at(gradient, (r, v.b), -score)
    hessian = np.repeat(precision[None], len(modes), axis=0)
    np.add.at(hessian, (r, v.a, v.a), information)
    np.add.at(hessian, (r, v.b, v.b), information)
    np.add.at(hessian, (r, v.a, v.b), -information)
    np.add.at(hessian, (r, v.b, v.a), -information)
    return log_lik, gradient, hessian


def _newton_modes(
    stacked: _Stacked,
    precision: np.ndarray,
    log_nu: float,
    start: np.ndarray,
    *,
    steps: int,
    tolerance: float,
):
    """Newton steps on every rater's tastes together, one batched solve a step (one small solve per rater
    in a Python loop is what made the fits slow): the modes, and the negative Hessian of the last step."""
    modes = start.copy()
    for _ in range(steps):
        _, gradient, hessian = _laplace_terms(stacked, precision, modes, log_nu)
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        modes += step
        if np.abs(step).max() < tolerance:
            break
    return modes, hessian


def _rater_posteriors(stacked: _Stacked, precision: np.ndarray, log_nu: float, start: np.ndarray):
    """Laplace posteriors of many raters' tastes over every model, prior N(0, precision^-1) for each:
    modes (raters, models) and posterior covariances (raters, models, models)."""
    modes, hessian = _newton_modes(stacked, precision, log_nu, start, steps=30, tolerance=1e-6)
    return modes, np.linalg.inv(hessian)


def _raters_log_marginal(stacked: _Stacked, sigma: float, log_nu: float, start: np.ndarray):
    """Laplace log p(votes | sigma) summed over the raters of ``stacked``, each over its own effects on
    every model (prior N(0, sigma^2) on each), and the modes. A model a rater never met adds nothing: its
    prior's normalising term and its share of the Hessian's determinant cancel."""
    n_models = start.shape[1]
    precision = sigma**-2 * np.eye(n_models)
    modes, _ = _newton_modes(stacked, precision, log_nu, start, steps=50, tolerance=1e-8)
    log_lik, _, hessian = _laplace_terms(stacked, precision, modes, log_nu)
    _, log_det = np.linalg.slogdet(hessian)
    value = (
        log_lik.sum()
        - 0.5 * sigma**-2 * np.square(modes).sum()
        - modes.size * math.log(sigma)
        - 0.5 * log_det.sum()
    )
    return float(value), modes


def _subset(votes: _Votes, keep: np.ndarray | slice) -> _Votes:
    return _Votes(
        a=votes.a[keep], b=votes.b[keep], constant=votes.constant[keep], mean_gap=votes.mean_gap[keep]
    )


def _held_out_log_likelihood(
    trains: _Stacked, tests: _Stacked, precision: np.ndarray, log_nu: float
) -> float:
    """log P(test votes) summed over raters, each under the rater's posterior from their train votes
    (raters in the same rows of both), each vote's gap integrated over the posterior (as
    ``Person.predict`` does)."""
    n_raters, n = len(trains.starts) - 1, len(precision)
    total = 0.0
    for rows in _rater_chunks(n_raters, n):
        modes, covariances = _rater_posteriors(
            trains.chunk(rows), precision, log_nu, np.zeros((rows.stop - rows.start, n))
        )
        test = tests.chunk(rows)
        r, v = test.rater, test.votes
        mean = v.mean_gap + modes[r, v.a] - modes[r, v.b]
        gap_variance = covariances[r, v.a, v.a] + covariances[r, v.b, v.b] - 2 * covariances[r, v.a, v.b]
        p = _integrated_outcomes(mean, gap_variance.clip(0.0), log_nu)
        chosen = np.where(v.constant > 0, p[:, 0], np.where(v.constant < 0, p[:, 2], p[:, 1]))
        total += float(np.log(chosen).sum())
    return total


@dataclass
class Population:
    """The published fit plus how much individuals vary beyond their groups (``sigma``)."""

    models: list[str]
    groups: list[str]
    group_fit: Fit  # with group offsets (or without, if the votes carry no groups)
    pooled: Fit  # no groups: the pooled board
    sigma: float
    # Covariance of individual tastes across models, (n_models, n_models): sigma^2 I, or learnt (below).
    taste: np.ndarray | None = None
    sigma_search: dict[float, float] = field(default_factory=dict)  # sigma -> summed log marginal
    taste_scale: float = 1.0  # the cross-validated multiplier already applied to ``taste``
    taste_scale_search: dict[float, float] = field(default_factory=dict)  # multiplier -> held-out log lik
    n_raters_for_sigma: int = 0
    seed: int = 0
    n_draws: int = 4000
    choose_draws: int = 500
    top_weight: float = 1.0
    near_equal: float = 0.05

    @classmethod
    def fit(
        cls,
        votes: Iterable[tuple[object, str, str, str, Sequence[str]]],
        *,
        features: np.ndarray | None = None,
        seed: int | None = None,
        group_prior_sd: float | str = "estimate",
        sigma: float | None = None,
        sigma_grid: Sequence[float] = DEFAULT_SIGMA_GRID,
        min_rater_votes: int = 2,
        taste: str = "covariance",
        em_iterations: int = 100,
        taste_scale_grid: Sequence[float] = DEFAULT_TASTE_SCALE_GRID,
        n_draws: int = 4000,
        top_weight: float = 1.0,
        near_equal: float = 0.05,
    ) -> Population:
        """Fit from votes ``(rater_id, model_a, model_b, outcome "a"/"b"/"tie", groups)``.

        ``sigma`` fixes the individual spread instead of estimating it over ``sigma_grid``. ``taste`` is
        "covariance" (the tastes' covariance across models learnt by ``em_iterations`` of Laplace-EM,
        starting from sigma^2 I) or "isotropic" (sigma^2 I). The learnt covariance is then multiplied by
        the ``taste_scale_grid`` value that best predicts raters' held-out votes (an empty grid: kept).

        ``features``: per vote, in the order of ``votes``, its battle's style covariates (side A minus
        side B, as ``stats.style.style_matrix`` makes them). With them both fits hold reply style equal
        (``stats.btd``'s style-controlled fit: the boards are scores with style held equal), and every
        vote's expected gap carries what its replies' style adds for the voter's groups, so the tastes
        learnt are what is left once style is accounted for.
        """
        if taste not in ("covariance", "isotropic"):
            raise ValueError('taste must be "covariance" or "isotropic"')
        rows = [(rater, a, b, outcome, tuple(groups)) for rater, a, b, outcome, groups in votes]
        for _, a, b, outcome, _ in rows:
            if outcome not in OUTCOMES:
                raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
            if a == b:
                raise ValueError(f"a model cannot meet itself: {a!r}")
        if not rows:
            raise ValueError("no votes")
        models = sorted({m for row in rows for m in row[1:3]})
        groups = sorted({g for row in rows for g in row[4]})
        model_index = {m: k for k, m in enumerate(models)}
        group_index = {g: k for k, g in enumerate(groups)}
        btd_votes = [
            (
                tuple(sorted(group_index[g] for g in cell)),
                model_index[a],
                model_index[b],
                _BTD_OUTCOME[outcome],
            )
            for _, a, b, outcome, cell in rows
        ]
        counts = Counts.from_votes(btd_votes, len(models), aggregate=features is None)
        if features is not None:
            counts = Counts(cells=counts.cells, rows=counts.rows, features=features)
        pooled = fit_btd(counts, n_models=len(models), n_groups=len(groups), with_groups=False)
        if groups:
            fit = fit_btd(counts, n_models=len(models), n_groups=len(groups), group_prior_sd=group_prior_sd)
        else:
            fit = pooled
        population = cls(
            models=models,
            groups=groups,
            group_fit=fit,
            pooled=pooled,
            sigma=0.0,
            seed=0 if seed is None else int(seed),
            n_draws=n_draws,
            top_weight=top_weight,
            near_equal=near_equal,
        )
        z = counts.features if counts.features is not None else np.zeros((len(rows), 0))
        coefficients = {cell: population._style_coefficients(cell) for cell, *_ in btd_votes}
        by_rater: dict[object, list[tuple[int, int, float, tuple[int, ...], float]]] = {}
        for k, ((rater, _, _, outcome, _), (cell, i, j, _)) in enumerate(zip(rows, btd_votes, strict=True)):
            style = float(z[k] @ coefficients[cell])
            by_rater.setdefault(rater, []).append((i, j, _SCORE_CONSTANT[outcome], cell, style))
        raters = [population._votes(v) for v in by_rater.values() if len(v) >= min_rater_votes]
        population.n_raters_for_sigma = len(raters)
        if sigma is not None:
            population.sigma = float(sigma)
        elif raters:
            population.sigma, population.sigma_search = population._estimate_sigma(raters, sigma_grid)
        else:
            population.sigma = float(min(sigma_grid))
        population.taste = population.sigma**2 * np.eye(len(models))
        if taste == "covariance" and raters and sigma is None:
            population.taste = population._estimate_taste(raters, em_iterations)
        if raters and sigma is None and taste_scale_grid:
            population.taste_scale, population.taste_scale_search = population._cross_validated_scale(
                raters, taste_scale_grid
            )
            # The floor keeps a visitor's prior invertible when the cross-validation says "no taste".
            population.taste = population.taste_scale * population.taste + _FLOOR_SD**2 * np.eye(len(models))
        return population

    @property
    def n_features(self) -> int:
        """Style covariates the fits hold equal (0: the boards as voted)."""
        return self.group_fit.n_features

    def style_gap(self, groups: Sequence[str], features: Sequence[float] | None) -> float:
        """What a battle's reply style adds to the gap s_a - s_b for someone in these groups: its
        covariates (A minus B, scaled as the fit's) times the groups' style coefficients; 0 without."""
        if features is None:
            return 0.0
        z = np.asarray(features, dtype=float).reshape(-1)
        if len(z) != self.n_features:
            raise ValueError(f"expected {self.n_features} style covariates, not {len(z)}")
        return float(z @ self._style_coefficients(self._cell(groups)))

    def _style_coefficients(self, cell: tuple[int, ...]) -> np.ndarray:
        """(K,): the global style coefficients plus the cell's groups' offsets."""
        fit = self.group_fit
        return fit.style + fit.style_offsets[:, list(cell)].sum(axis=1)

    def taste_spread(self) -> dict[str, float]:
        """Per model, the sd of individual tastes beyond the groups: how much people disagree about it."""
        n = len(self.models)
        centre = np.eye(n) - 1.0 / n
        spread = np.sqrt(np.clip(np.diag(centre @ self.taste @ centre), 0.0, None))
        return {m: float(v) for m, v in zip(self.models, spread, strict=True)}

    # --- Boards of a profile ---------------------------------------------------------------------

    def _cell(self, groups: Sequence[str]) -> tuple[int, ...]:
        # A group the fit has never seen has no offset: it shrinks entirely to zero.
        index = {g: k for k, g in enumerate(self.groups)}
        return tuple(sorted(index[g] for g in groups if g in index))

    def profile_skills(self, groups: Sequence[str] = ()) -> np.ndarray:
        """The profile board's skills, theta + the groups' offsets (centred), in ``models`` order."""
        cell = self._cell(groups)
        skills = self.group_fit.theta + (self.group_fit.offsets[:, list(cell)].sum(axis=1) if cell else 0.0)
        return skills - skills.mean()

    def pooled_skills(self) -> np.ndarray:
        return self.pooled.theta - self.pooled.theta.mean()

    def profile_covariance(self, groups: Sequence[str] = ()) -> np.ndarray:
        """Laplace covariance of the profile board's centred skills."""
        n = len(self.models)
        cell = self._cell(groups)
        design = np.zeros((n, self.group_fit.covariance.shape[0]))
        design[:, :n] = np.eye(n)
        if self.group_fit.with_groups:
            for g in cell:
                design[:, n * (1 + g) : n * (2 + g)] += np.eye(n)
        covariance = design @ self.group_fit.covariance @ design.T
        centre = np.eye(n) - 1.0 / n
        return centre @ covariance @ centre

    def predict_board(self, skills: np.ndarray, model_a: str, model_b: str, *, pooled: bool = False):
        """Plug-in probabilities of a board (no uncertainty): what the pooled or profile board says."""
        log_nu = (self.pooled if pooled else self.group_fit).log_nu
        index = {m: k for k, m in enumerate(self.models)}
        p = davidson(skills[index[model_a]] - skills[index[model_b]], log_nu)
        return dict(zip(OUTCOMES, map(float, p), strict=True))

    def person(self, groups: Sequence[str] = ()) -> Person:
        """A new visitor in these groups, with no answers yet (their board is the profile board)."""
        prior_mean = self.profile_skills(groups)
        taste = self.sigma**2 * np.eye(len(self.models)) if self.taste is None else self.taste
        prior_covariance = self.profile_covariance(groups) + taste
        return Person(population=self, groups=tuple(groups), prior_mean=prior_mean, prior=prior_covariance)

    # --- sigma -----------------------------------------------------------------------------------

    def _votes(self, votes: list[tuple[int, int, float, tuple[int, ...], float]]) -> _Votes:
        """A rater's votes (a, b, outcome constant, cell, style gap) with their expected gaps."""
        a = np.array([v[0] for v in votes], dtype=np.intp)
        b = np.array([v[1] for v in votes], dtype=np.intp)
        cells = {cell: self.profile_skills([self.groups[g] for g in cell]) for *_, cell, _ in votes}
        gap = np.array([cells[cell][i] - cells[cell][j] + style for i, j, _, cell, style in votes])
        constant = np.array([v[2] for v in votes])
        return _Votes(a=a, b=b, constant=constant, mean_gap=gap)

    def _estimate_taste(self, raters: list[_Votes], iterations: int) -> np.ndarray:
        """Laplace-EM for the covariance of tastes: each rater's posterior (mode m, covariance V) under
        the current covariance, then the covariance becomes the mean of m m' + V, centred (only
        differences between models are identified). A floor of FLOOR_SD^2 keeps it invertible."""
        n = len(self.models)
        centre = np.eye(n) - 1.0 / n
        floor = _FLOOR_SD**2 * np.eye(n)
        covariance = self.sigma**2 * np.eye(n)
        stacked = _Stacked.of(raters)
        modes = np.zeros((len(raters), n))
        for _ in range(iterations):
            precision = np.linalg.inv(covariance)
            total = np.zeros((n, n))
            for rows in _rater_chunks(len(raters), n):
                modes[rows], posteriors = _rater_posteriors(
                    stacked.chunk(rows), precision, self.group_fit.log_nu, modes[rows]
                )
                total += modes[rows].T @ modes[rows] + posteriors.sum(axis=0)
            updated = centre @ (total / len(raters)) @ centre + floor
            change = np.abs(updated - covariance).max()
            covariance = updated
            if change < 1e-4:
                break
        return covariance

    def _cross_validated_scale(self, raters: list[_Votes], grid: Sequence[float]) -> tuple[float, dict]:
        """The multiplier of the taste covariance whose posteriors best predict raters' own held-out votes.

        Laplace-EM on raters with a few binary votes each shrinks the covariance well below the truth
        (and the model has no term for careless answers), so its shape is kept and its size is chosen
        by what it is for: each rater's votes are split into ``TASTE_FOLDS`` folds (seeded), the rater's
        posterior on the other folds predicts each fold, and the multiplier with the highest summed
        predictive log-likelihood wins. A multiplier of 0 is the profile board, so without individual
        tastes the cross-validation keeps the visitor there."""
        rng = np.random.default_rng([self.seed, 3])
        log_nu = self.group_fit.log_nu
        folds = [rng.permutation(len(votes.a)) % TASTE_FOLDS for votes in raters]
        trains, tests = [], []
        for votes, fold in zip(raters, folds, strict=True):
            for held in range(TASTE_FOLDS):
                train, test = _subset(votes, fold != held), _subset(votes, fold == held)
                if len(train.a) and len(test.a):
                    trains.append(train)
                    tests.append(test)
        scales = sorted(float(s) for s in grid)
        if not trains:  # no rater with votes on both sides of a split: nothing to predict
            return scales[0], dict.fromkeys(scales, 0.0)
        trains_stacked, tests_stacked = _Stacked.of(trains), _Stacked.of(tests)
        search = {}
        for scale in scales:
            covariance = scale * self.taste + _FLOOR_SD**2 * np.eye(len(self.models))
            search[scale] = _held_out_log_likelihood(
                trains_stacked, tests_stacked, np.linalg.inv(covariance), log_nu
            )
        return max(search, key=search.get), search

    def _estimate_sigma(self, raters: list[_Votes], grid: Sequence[float]) -> tuple[float, dict]:
        search: dict[float, float] = {}
        stacked = _Stacked.of(raters)
        modes = np.zeros((len(raters), len(self.models)))
        # From narrow to wide, each rater's mode warm-starts the next sigma.
        for sigma in sorted(float(s) for s in grid):
            total = 0.0
            for rows in _rater_chunks(len(raters), len(self.models)):
                value, modes[rows] = _raters_log_marginal(
                    stacked.chunk(rows), sigma, self.group_fit.log_nu, modes[rows]
                )
                total += value
            search[sigma] = total
        return max(search, key=search.get), search


@dataclass
class Person:
    """One visitor's posterior over their own skills; ``observe`` adds an answer."""

    population: Population
    groups: tuple[str, ...]
    prior_mean: np.ndarray
    prior: np.ndarray
    answers: list[tuple[str, str, str]] = field(default_factory=list)
    # What each answered battle's reply style adds to its gap (Population.style_gap; 0 without style).
    answer_style: list[float] = field(default_factory=list)
    mean: np.ndarray = field(init=False)
    covariance: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self._index = {m: k for k, m in enumerate(self.population.models)}
        self._prior_precision = np.linalg.inv(self.prior)
        self.mean = self.prior_mean.copy()
        self.covariance = self.prior.copy()

    @property
    def models(self) -> list[str]:
        return self.population.models

    def observe(
        self, model_a: str, model_b: str, outcome: str, features: Sequence[float] | None = None
    ) -> None:
        """Add one answer: ``outcome`` "a" (model_a better), "b" or "tie". ``features``: the battle's
        style covariates when the population holds style equal, so the answer is read net of what its
        replies' style adds for people in this visitor's groups (an answer for the longer reply says
        less about the model when the groups prefer longer replies)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
        if model_a == model_b or model_a not in self._index or model_b not in self._index:
            raise ValueError(f"unknown or equal models: {model_a!r}, {model_b!r}")
        style = self.population.style_gap(self.groups, features)
        self.answers.append((model_a, model_b, outcome))
        self.answer_style.append(style)
        self._refit()

    def _refit(self) -> None:
        a = np.array([self._index[x] for x, _, _ in self.answers], dtype=np.intp)
        b = np.array([self._index[y] for _, y, _ in self.answers], dtype=np.intp)
        constant = np.array([_SCORE_CONSTANT[o] for *_, o in self.answers])
        style = np.array(self.answer_style)
        log_nu = self.population.group_fit.log_nu
        skills = self.mean.copy()
        for _ in range(50):
            _, score, information = _gap_terms(skills[a] - skills[b] + style, constant, log_nu)
            gradient = -self._prior_precision @ (skills - self.prior_mean)
            np.add.at(gradient, a, score)
            np.add.at(gradient, b, -score)
            hessian = self._hessian(a, b, information)
            step = np.linalg.solve(hessian, gradient)
            skills += step
            if np.abs(step).max() < 1e-9:
                break
        _, _, information = _gap_terms(skills[a] - skills[b] + style, constant, log_nu)
        self.mean = skills
        covariance = np.linalg.inv(self._hessian(a, b, information))
        self.covariance = 0.5 * (covariance + covariance.T)

    def _hessian(self, a: np.ndarray, b: np.ndarray, information: np.ndarray) -> np.ndarray:
        hessian = self._prior_precision.copy()
        np.add.at(hessian, (a, a), information)
        np.add.at(hessian, (b, b), information)
        np.add.at(hessian, (a, b), -information)
        np.add.at(hessian, (b, a), -information)
        return hessian

    # --- What the person's board says ------------------------------------------------------------

    def _gap(self, i: int, j: int) -> tuple[float, float]:
        c = self.covariance
        return float(self.mean[i] - self.mean[j]), float(max(c[i, i] + c[j, j] - 2 * c[i, j], 0.0))

    def predict(self, model_a: str, model_b: str) -> dict[str, float]:
        """P(a), P(tie), P(b) for this person, averaged over what we still do not know about them."""
        mean, variance = self._gap(self._index[model_a], self._index[model_b])
        p = _integrated_outcomes(mean, variance, self.population.group_fit.log_nu)
        return dict(zip(OUTCOMES, map(float, p), strict=True))

    def skills(self) -> np.ndarray:
        """Posterior mean skills, centred, in ``models`` order."""
        return self.mean - self.mean.mean()

    def standard_errors(self) -> np.ndarray:
        n = len(self.mean)
        centre = np.eye(n) - 1.0 / n
        return np.sqrt(np.clip(np.diag(centre @ self.covariance @ centre), 0.0, None))

    def ranking(self) -> list[str]:
        """Models, best for this person first."""
        order = np.argsort(-self.mean, kind="stable")
        return [self.models[k] for k in order]

    def draws(self, n_draws: int | None = None) -> np.ndarray:
        """Posterior skill draws (seeded by the population and the answers, so reproducible)."""
        rng = np.random.default_rng([self.population.seed, len(self.answers), 1])
        root = np.linalg.cholesky(self.covariance + 1e-12 * np.eye(len(self.mean)))
        noise = rng.standard_normal((n_draws or self.population.n_draws, len(self.mean)))
        return self.mean + noise @ root.T

    def p_best(self, n_draws: int | None = None) -> dict[str, float]:
        """P(model is this person's best), from posterior draws."""
        draws = self.draws(n_draws)
        best = np.bincount(draws.argmax(axis=1), minlength=len(self.models))
        return {m: float(c) / len(draws) for m, c in zip(self.models, best, strict=True)}

    def choose(self, candidates: Sequence[tuple[str, str]]) -> int:
        """Index of the most informative next pair among ``(model_a, model_b)`` candidates: the one whose
        answer is expected to leave the fewest pairs of models in doubt (see ``_expected_doubt``),
        picked at random among those within ``near_equal`` of the best."""
        if not candidates:
            raise ValueError("no candidates")
        i = np.array([self._index[x] for x, _ in candidates], dtype=np.intp)
        j = np.array([self._index[y] for _, y in candidates], dtype=np.intp)
        weights = self._pair_weights()
        scores = self._expected_doubt(weights) - self._expected_doubt(weights, i, j)
        near = np.flatnonzero(scores >= scores.max() - self.population.near_equal * abs(scores.max()))
        rng = np.random.default_rng([self.population.seed, len(self.answers), 2])
        return int(rng.choice(near))

    def _pair_weights(self) -> np.ndarray:
        """Weight of each pair of models (upper triangle order) in the doubt: 1, plus ``top_weight`` for
        pairs of contenders for this person's best (both must be: the best against a foregone loser
        decides nothing; with P(best) spread evenly every pair gets the full ``top_weight``)."""
        p_best = self.p_best(self.population.choose_draws)
        best = np.array([p_best[m] for m in self.models])
        first, second = np.triu_indices(len(self.models), 1)
        return 1.0 + self.population.top_weight * len(self.models) * np.sqrt(best[first] * best[second])

    def _expected_doubt(self, weights: np.ndarray, i: np.ndarray | None = None, j: np.ndarray | None = None):
        """The weighted sum over pairs of models of P(their order on this board is wrong), now (no ``i``,
        ``j``) or expected after one more answer on each candidate pair ``(i[c], j[c])``.

        One answer is one Newton step of the Laplace posterior: with d = e_i - e_j, information I and
        score s at the current gap, the mean moves by Sigma d s / (1 + I d'Sigma d) and the covariance
        loses I Sigma d d'Sigma / (1 + I d'Sigma d); the doubt is averaged over the three answers with
        their predicted probabilities. Kendall's tau counts exactly these misordered pairs, so this
        targets the visitor's whole ranking, with the top weighted up."""
        first, second = np.triu_indices(len(self.models), 1)
        c = self.covariance
        gap_mean = self.mean[first] - self.mean[second]
        gap_variance = c[first, first] + c[second, second] - 2 * c[first, second]
        if i is None:
            return float((weights * _p_misordered(gap_mean, gap_variance)).sum())
        log_nu = self.population.group_fit.log_nu
        towards = c[:, i] - c[:, j]  # (models, candidates): Sigma d per candidate
        variance = np.clip(towards[i, np.arange(len(i))] - towards[j, np.arange(len(i))], 0.0, None)
        candidate_gap = self.mean[i] - self.mean[j]
        information = _fisher(candidate_gap, log_nu)
        shrink = 1.0 / (1.0 + information * variance)
        moved = (towards[first] - towards[second]).T  # (candidates, pairs): how each pair's gap moves
        after_variance = np.clip(gap_variance - (information * shrink)[:, None] * moved**2, 1e-12, None)
        expected = np.zeros(len(i))
        answers = self._predicted(candidate_gap, variance)
        for column, outcome in enumerate(OUTCOMES):
            _, score, _ = _gap_terms(candidate_gap, np.full(len(i), _SCORE_CONSTANT[outcome]), log_nu)
            after_mean = gap_mean + (score * shrink)[:, None] * moved
            doubt = (weights * _p_misordered(after_mean, after_variance)).sum(axis=1)
            expected += answers[:, column] * doubt
        return expected

    def _predicted(self, gap_mean: np.ndarray, gap_variance: np.ndarray) -> np.ndarray:
        """P(a), P(tie), P(b) per pair with these posterior gaps (rows), as ``predict`` computes them."""
        return _integrated_outcomes(gap_mean, gap_variance, self.population.group_fit.log_nu)


def _p_misordered(gap_mean: np.ndarray, gap_variance: np.ndarray) -> np.ndarray:
    """P(the sign of a Normal(gap_mean, gap_variance) gap is not the sign of its mean)."""
    return scipy_special.ndtr(-np.abs(gap_mean) / np.sqrt(np.clip(gap_variance, 1e-12, None)))
