"""The matchmaker: which two models the next rater should compare.

Pure numpy/scipy, no Django: the site, the benchmark (``bench.matchmaking``) and the tests
all drive this one class.

Interface
---------
``Matchmaker(models, *, seed=None, **settings)``
    ``models`` are hashables (the site passes primary keys); their order is their identity: pair keys
    are tuples in this order and ties in ``ranking()`` break by it. ``seed`` is an int, ``None`` or a
    ``numpy.random.Generator``; all randomness comes from ``numpy.random.default_rng(seed)``.
    ``settings`` are the fields of :class:`Settings` (below), checked on construction.
``observe(model_a, model_b, outcome)``
    Record one battle; ``outcome`` is ``"a"`` (model_a won), ``"b"`` or ``"tie"``. An unknown model, a
    model against itself or another outcome raises ``ValueError``.
``observe_many(battles)``
    The same for an iterable of ``(model_a, model_b, outcome)``. The posterior depends on the battles
    only through per-pair counts, so the result is exactly that of ``observe`` in any order; it is
    vectorised for rebuilds (100k votes in well under a second). Nothing is recorded if one is bad.
``observe_counts(rows)``
    Aggregated battles ``(model_a, model_b, wins_a, wins_b, ties)``, e.g. from a GROUP BY query.
``pair_distribution(*, exclude_pairs=(), in_flight=()) -> dict[tuple, float]``
    The explicit distribution ``propose`` samples from: every eligible unordered pair (a tuple in the
    order of ``models``) -> probability; they sum to 1 and each is at least ``floor_share / eligible
    pairs``. ``exclude_pairs`` (pairs in either order) are never proposed: the site passes the pairs
    this rater has had and every pair with a cooled-down or withdrawn model. ``in_flight`` lists the
    pairs (repeats allowed) whose battles are running. ``ValueError`` if no pair is eligible.
``propose(*, exclude_pairs=(), in_flight=()) -> (model_a, model_b, probability)``
    One draw from ``pair_distribution``, sides in random order; ``probability`` is the unordered
    pair's probability there (store it with the battle for inverse-probability weighting).
``ranking() -> list``
    Models best first by posterior mean.
``posterior() -> (mean, covariance)``, ``intervals(level=0.95)``, ``probability_best()``,
``placing() -> list``
    The Gaussian posterior over the skills (centred: only differences are identified); central
    intervals; P(best) from posterior draws; the models still in placement (posterior sd above
    ``placement_sd``: new or with few battles). ``tie_parameter()`` is the fitted Davidson nu.

The posterior
-------------
Skills ``theta`` (log-odds, "nats"; 400 Elo points = ln 10 nats) with prior ``Normal(0, prior_sd^2)``
each. A battle of ``i`` and ``j`` with ``d = theta_i - theta_j`` ends by the Bradley-Terry-Davidson
likelihood, ``D = e^(d/2) + e^(-d/2) + nu``:

    P(i wins) = e^(d/2) / D,   P(j wins) = e^(-d/2) / D,   P(tie) = nu / D.

The tie parameter ``nu`` is not fixed: ``log nu`` (prior ``Normal(log 0.5, 2^2)``) is fitted jointly with
the skills from the same counts, so a dimension where two thirds of the votes are ties ("both fine")
gets a large ``nu``, and then a tie says little about the skills, as the data show. ``ties="ignore"``
drops ties instead (plain Bradley-Terry). The posterior is the batch Laplace approximation: the mode by
Newton's method (warm-started, so one or two steps per new battle), and the inverse Hessian at the mode
as a *full* covariance; ``log nu`` is integrated out by taking the skills' block of that inverse. A full
covariance matters: after many A-vs-B battles it knows the difference A - B well but not A and B
separately, which independent per-model sigmas (TrueSkill) get wrong under adaptive pairing.

The policy
----------
``pair_distribution`` mixes four parts over the eligible pairs:

* floor (``floor_share``): spread uniformly, so every pair keeps a probability at least
  ``floor_share / eligible pairs`` and no pair is starved;
* top-two Thompson sampling (``top_two_share``) for "who is best?": in each of ``thompson_draws``
  posterior draws the leader ``i`` is the best model and its challenger ``j`` the best of the others;
  the probability of each contest ``(i, j)`` is tallied exactly from the draws (``P(i leads) P(j best
  of the rest) + the same with i and j swapped``), among the models that have an eligible pair. Each
  contest's mass is then spread over the battles of ``i`` or ``j`` in proportion to the square of how
  much each would shrink the variance of ``theta_i - theta_j``: mostly the direct battle, and battles
  with a close common opponent, which also tell the two apart when the direct pair is capped or
  excluded. The share is scheduled by what the posterior knows about the best: full while P(best) is
  spread over at most ``top_two_contenders`` models (``1 / sum P(best)^2``) and the favourite's P(best)
  is at most ``top_two_focus``; smaller while the field is still open (placement and the whole ranking
  teach more then), and down to 0 as the favourite becomes sure;
* whole ranking (the rest): pair weight ``P(the pair is misordered) * information a battle adds to
  the difference`` = ``Phi(-|m|/s) * log(1 + s^2 h)`` with ``m, s`` the posterior mean and sd of the
  difference and ``h`` the expected Fisher information of one battle;
* placement (``placement_share``, taken from the whole-ranking part): while some active models have a
  posterior sd (centred) above ``placement_sd`` and others not, this share goes to pairs with a
  placement model, weighted as above, until their intervals are usable.

A part with nothing to say (e.g. every pair it wants is excluded) gives its share to the other parts.

Then no pair gets more than ``max_pair_probability`` (or ``max_pair_multiple`` times the uniform
probability, when there are few pairs): the excess goes to the pairs below the cap in proportion to
what the policy asked for them above the floor. This is the *target* distribution; it depends only on
the data and the exclusions, and is computed once per state of the data (the Thompson draws are fixed
per state: common random numbers).

Battles in flight count (a pending penalty). With ``M`` battles in flight, ``k`` of them on a pair, and
``t`` the pair's target probability without the floor, the pair gets what it still lacks of its share
of the ``M + 1`` battles, ``max(0, t (M + 1) - k)``; these are normalised, the floor is added back and
the cap applied again. A burst of proposals with nothing observed therefore stays within each pair's
share of the target instead of repeating its likeliest pair, and a pair with more than its share in
flight gets only the floor. Everything is explicit, so the probability ``propose`` returns is exact for
what it samples.

Cost: ``observe`` only adds counts; the fit and the target are computed lazily, once per state of the
data and set of exclusions (a few milliseconds for 50 models), and each proposal after that costs well
under a millisecond. ``bench.matchmaking`` measures the policy against uniform pairing.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, fields

import numpy as np
from scipy import linalg, special

__all__ = ["OUTCOMES", "Matchmaker", "Settings"]

OUTCOMES = ("a", "b", "tie")
TIE_HANDLING = ("davidson", "ignore")
# Newton's method stops when its next step would move no parameter by more than this (in nats: a
# thousandth of the smallest posterior sd that matters).
_STEP_TOLERANCE = 1e-5
_MAX_NEWTON_STEPS = 100
# Target distributions kept per data version, one per set of exclusions (raters differ in theirs).
_MAX_CACHED_TARGETS = 64
# The top-two part spreads the mass of at most this many leader-challenger contests (the likeliest).
_MAX_CONTESTS = 32


@dataclass(frozen=True)
class Settings:
    """Tuning of the posterior and the policy; every field can be passed to ``Matchmaker(**settings)``."""

    # Prior sd of each skill, in nats (1.0 nats = 174 Elo points): weak next to LLM-arena spreads.
    prior_sd: float = 1.0
    # "davidson": ties through the Davidson parameter nu, fitted from the data; "ignore": drop ties.
    ties: str = "davidson"
    # Prior of log nu: centre (nu = 0.5, about a 20% tie rate between equals) and sd.
    log_nu_prior_mean: float = math.log(0.5)
    log_nu_prior_sd: float = 2.0
    # Share spread uniformly over the eligible pairs: each pair's probability >= floor_share / pairs.
    floor_share: float = 0.1
    # Share given to top-two Thompson sampling among the leaders ("who is best?") while that question is
    # open: full while P(best) is spread over at most top_two_contenders models (effectively) and the
    # favourite's P(best) is at most top_two_focus, falling as P(best) spreads wider or the favourite
    # becomes sure (to 0 at P(best) = 1; top_two_focus = 1 keeps the share fixed).
    top_two_share: float = 0.8
    top_two_contenders: float = 3.0
    top_two_focus: float = 0.5
    # Share reserved for pairs with a model in placement, while there are such models and others.
    placement_share: float = 0.2
    # A model is in placement while its posterior sd is above this (nats; 0.35 is about 60 Elo).
    placement_sd: float = 0.35
    # No pair gets more than this probability, or than max_pair_multiple times the uniform 1 / pairs if
    # that is larger (a tournament of a few models has few pairs to spread over).
    max_pair_probability: float = 0.04
    max_pair_multiple: float = 4.0
    # Posterior draws tallied into the explicit top-two Thompson distribution.
    thompson_draws: int = 256

    def __post_init__(self) -> None:
        if self.ties not in TIE_HANDLING:
            raise ValueError(f"ties must be one of {TIE_HANDLING}, not {self.ties!r}")
        positive = (
            "prior_sd",
            "log_nu_prior_sd",
            "placement_sd",
            "max_pair_probability",
            "thompson_draws",
            "top_two_contenders",
        )
        if self.max_pair_multiple < 1:
            raise ValueError("max_pair_multiple must be at least 1 (times the uniform probability)")
        for name in positive:
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("floor_share", "top_two_share", "placement_share", "top_two_focus"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, not {getattr(self, name)!r}")
        if not self.floor_share > 0.0:
            raise ValueError("floor_share must be positive: every pair keeps a minimum probability")
        if self.floor_share + self.top_two_share > 1.0:
            raise ValueError("floor_share + top_two_share must not exceed 1")


@dataclass(frozen=True)
class _Pairs:
    """Every unordered pair of model indices, i < j, and the index of each pair."""

    first: np.ndarray
    second: np.ndarray
    index: np.ndarray  # (n, n): pair index of (i, j) and (j, i); -1 on the diagonal

    @classmethod
    def of(cls, n: int) -> _Pairs:
        first, second = np.triu_indices(n, 1)
        index = np.full((n, n), -1, dtype=np.intp)
        index[first, second] = index[second, first] = np.arange(len(first))
        return cls(first=first, second=second, index=index)


def _davidson(d: np.ndarray, log_nu: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P(first wins), P(second wins), P(tie) for skill differences ``d`` (stable for any size of d)."""
    half = 0.5 * d
    log_denominator = np.logaddexp(np.logaddexp(half, -half), log_nu)
    return np.exp(half - log_denominator), np.exp(-half - log_denominator), np.exp(log_nu - log_denominator)


def _battle_information(d: np.ndarray, log_nu: float) -> np.ndarray:
    """Fisher information about d of one battle (the same for every outcome: Davidson is exponential)."""
    win, loss, _ = _davidson(d, log_nu)
    return 0.25 * (win + loss) - 0.25 * (win - loss) ** 2


def capped(probabilities: np.ndarray, cap: float, floor: float) -> np.ndarray:
    """Lower every probability above ``cap`` to it and give the excess to the pairs below the cap, in
    proportion to what they have above the ``floor`` (what the policy asked for them), so that pairs
    the policy has no use for stay at the floor."""
    p = probabilities.copy()
    for _ in range(len(p)):
        over = p > cap * (1 + 1e-12)
        if not over.any():
            break
        excess = float((p[over] - cap).sum())
        p[over] = cap
        room = p < cap
        wanted = np.where(room, np.maximum(p - floor, 0.0), 0.0)
        if wanted.sum() <= 0:
            wanted = room.astype(float)
        p += excess * wanted / wanted.sum()
    return p / p.sum()


def _row(row, length: int, shape: str) -> tuple:
    """``row`` as a tuple of ``length`` items, or a ValueError that says what was expected."""
    try:
        items = tuple(row)
    except TypeError:
        items = ()
    if len(items) != length:
        raise ValueError(f"each battle must be {shape}, not {row!r}")
    return items


class Matchmaker:
    """A Gaussian posterior over the models' skills and the pair distribution it implies.

    See the module docstring for the interface, the model and the policy.
    """

    def __init__(self, models: Sequence[Hashable], *, seed=None, **settings) -> None:
        unknown = set(settings) - {f.name for f in fields(Settings)}
        if unknown:
            raise ValueError(f"unknown matchmaker settings: {sorted(unknown)}")
        self.settings = Settings(**settings)
        self.models = list(models)
        if len(self.models) < 2:
            raise ValueError("the matchmaker needs at least two models")
        self._index = {model: k for k, model in enumerate(self.models)}
        if len(self._index) != len(self.models):
            raise ValueError("models must be distinct")
        self._rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        n = len(self.models)
        self._pairs = _Pairs.of(n)
        # Per pair (i < j): wins of i, wins of j, ties. The posterior depends on nothing else.
        self._counts = np.zeros((len(self._pairs.first), 3))
        self._version = 0
        self._fit_version = -1
        self._with_ties = self.settings.ties == "davidson"
        self._x = np.zeros(n + self._with_ties)  # the mode: theta, then log nu if fitted
        if self._with_ties:
            self._x[n] = self.settings.log_nu_prior_mean
        self._precision = np.eye(len(self._x))
        self._covariance = np.eye(n)
        self._covariance_version = -1
        self._draws_version = -1
        self._normal_draws = np.zeros((0, n))
        self._targets: dict[bytes, np.ndarray] = {}
        self._targets_version = -1

    # --- Observing ----------------------------------------------------------------------------------

    def observe(self, model_a: Hashable, model_b: Hashable, outcome: str) -> None:
        self.observe_many([(model_a, model_b, outcome)])

    def observe_many(self, battles: Iterable[tuple[Hashable, Hashable, str]]) -> None:
        rows = [_row(battle, 3, "(model_a, model_b, outcome)") for battle in battles]
        column = {"a": 0, "b": 1, "tie": 2}
        for _, _, outcome in rows:
            if not isinstance(outcome, str) or outcome not in column:
                raise ValueError(f"outcome must be one of {OUTCOMES}, not {outcome!r}")
        a, b = self._indices_of(row[0] for row in rows), self._indices_of(row[1] for row in rows)
        tally = np.zeros((len(rows), 3))
        tally[np.arange(len(rows)), [column[row[2]] for row in rows]] = 1.0
        self._add(a, b, tally)

    def observe_counts(self, rows: Iterable[tuple[Hashable, Hashable, float, float, float]]) -> None:
        """Add aggregated battles ``(model_a, model_b, wins_a, wins_b, ties)`` (counts may be fractional).

        The same as observing each battle: the posterior depends on the battles only through these counts.
        """
        rows = [_row(row, 5, "(model_a, model_b, wins_a, wins_b, ties)") for row in rows]
        tally = np.array([row[2:] for row in rows], dtype=float).reshape(len(rows), 3)
        if not np.isfinite(tally).all() or (tally < 0).any():
            raise ValueError("counts must be finite and not negative")
        self._add(self._indices_of(row[0] for row in rows), self._indices_of(row[1] for row in rows), tally)

    def _indices_of(self, models: Iterable[Hashable]) -> np.ndarray:
        return np.array([self._model_index(model) for model in models], dtype=np.intp)

    def _add(self, a: np.ndarray, b: np.ndarray, tally: np.ndarray) -> None:
        if not len(a):
            return
        if (a == b).any():
            same = self.models[int(a[np.flatnonzero(a == b)[0]])]
            raise ValueError(f"a model cannot battle itself: {same!r}")
        # Orient every row as (lower index, higher index): a win of "a" is then a win of the first.
        swapped = a > b
        tally = tally.copy()
        tally[swapped, :2] = tally[swapped, 1::-1]
        np.add.at(self._counts, self._pairs.index[a, b], tally)
        self._version += 1

    def _model_index(self, model: Hashable) -> int:
        try:
            return self._index[model]
        except (KeyError, TypeError):
            raise ValueError(f"unknown model {model!r}: not one of the matchmaker's models") from None

    # --- The posterior ------------------------------------------------------------------------------

    def posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and full covariance of the skills, in the order of ``models``.

        Centred: only differences of skills are identified, so both describe the skills minus their
        average (the raw covariance would add the prior's uncertainty about a common shift to every sd).
        """
        mean, covariance = self._raw_posterior()
        mean = mean - mean.mean()
        covariance = covariance - covariance.mean(axis=0, keepdims=True)
        covariance = covariance - covariance.mean(axis=1, keepdims=True)
        return mean, 0.5 * (covariance + covariance.T)

    def _raw_posterior(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and covariance before centring (full rank, for drawing; differences are the same)."""
        self._fit()
        if self._covariance_version != self._fit_version:
            self._covariance = self._skill_covariance(self._precision)
            self._covariance_version = self._fit_version
        return self._x[: len(self.models)].copy(), self._covariance.copy()

    def ranking(self) -> list:
        self._fit()
        mean = self._x[: len(self.models)]
        order = np.lexsort((np.arange(len(mean)), -mean))
        return [self.models[k] for k in order]

    def intervals(self, level: float = 0.95) -> dict[Hashable, tuple[float, float]]:
        """Central posterior interval of each model's skill (centred, so only differences matter)."""
        mean, covariance = self.posterior()
        half = special.ndtri(0.5 + level / 2) * np.sqrt(np.diag(covariance))
        return {
            m: (float(lo), float(hi)) for m, lo, hi in zip(self.models, mean - half, mean + half, strict=True)
        }

    def placing(self) -> list:
        """Models still in placement: posterior sd above ``placement_sd`` (new, or few battles)."""
        _, covariance = self.posterior()
        sd = np.sqrt(np.diag(covariance))
        return [m for m, s in zip(self.models, sd, strict=True) if s > self.settings.placement_sd]

    def probability_best(self) -> dict[Hashable, float]:
        """P(model is best), tallied over the Thompson draws."""
        mean, covariance = self._raw_posterior()
        draws = mean + self._draws() @ linalg.cholesky(covariance, lower=True).T
        best = np.bincount(draws.argmax(axis=1), minlength=len(mean)) / len(draws)
        return {m: float(p) for m, p in zip(self.models, best, strict=True)}

    def tie_parameter(self) -> float:
        """The fitted Davidson nu (0 when ties are ignored)."""
        self._fit()
        return math.exp(self._x[-1]) if self._with_ties else 0.0

    def _skill_covariance(self, precision: np.ndarray) -> np.ndarray:
        n = len(self.models)
        covariance = linalg.cho_solve(linalg.cho_factor(precision), np.eye(len(precision)))
        block = covariance[:n, :n]
        return 0.5 * (block + block.T)

    def _fit(self) -> None:
        """Posterior mode by damped Newton from the last mode, and the Hessian there."""
        if self._fit_version == self._version:
            return
        observed = np.flatnonzero(self._counts.sum(axis=1) > 0)
        first, second = self._pairs.first[observed], self._pairs.second[observed]
        counts = self._counts[observed]
        if not self._with_ties:
            counts = counts.copy()
            counts[:, 2] = 0.0
        x = self._x.copy()
        value, gradient, hessian = self._objective(x, first, second, counts)
        for _ in range(_MAX_NEWTON_STEPS):
            step = linalg.cho_solve(linalg.cho_factor(hessian), gradient)
            if np.abs(step).max() < _STEP_TOLERANCE:
                # Converged: the last step is too small to change the Hessian that matters.
                x = x - step
                break
            scale = 1.0
            while True:
                candidate = x - scale * step
                new_value, new_gradient, new_hessian = self._objective(candidate, first, second, counts)
                if new_value <= value + 1e-4 * scale * -float(gradient @ step) or scale < 1e-8:
                    break
                scale *= 0.5
            x, value, gradient, hessian = candidate, new_value, new_gradient, new_hessian
        self._x, self._precision, self._fit_version = x, hessian, self._version

    def _objective(self, x, first, second, counts) -> tuple[float, np.ndarray, np.ndarray]:
        """Negative log posterior, its gradient and Hessian (positive definite through the priors)."""
        n = len(self.models)
        settings = self.settings
        log_nu = x[n] if self._with_ties else -np.inf
        theta = x[:n]
        d = theta[first] - theta[second]
        wins, losses, ties = counts[:, 0], counts[:, 1], counts[:, 2]
        total = wins + losses + ties
        half = 0.5 * d
        log_denominator = np.logaddexp(np.logaddexp(half, -half), log_nu)
        p_win, p_loss, p_tie = (
            np.exp(half - log_denominator),
            np.exp(-half - log_denominator),
            np.exp(log_nu - log_denominator),
        )
        log_likelihood = (wins - losses) @ half - total @ log_denominator
        gradient = np.zeros(len(x))
        hessian = np.zeros((len(x), len(x)))
        value = -log_likelihood + 0.5 * float(theta @ theta) / settings.prior_sd**2
        by_d = 0.5 * (total * (p_win - p_loss) - (wins - losses))
        gradient[:n] = (
            np.bincount(first, by_d, n) - np.bincount(second, by_d, n) + theta / settings.prior_sd**2
        )
        curvature = total * 0.25 * ((p_win + p_loss) - (p_win - p_loss) ** 2)
        hessian[:n, :n] = _laplacian(n, first, second, curvature)
        hessian[np.arange(n), np.arange(n)] += 1.0 / settings.prior_sd**2
        if self._with_ties:
            value += ties.sum() * -log_nu
            offset = log_nu - settings.log_nu_prior_mean
            value += 0.5 * offset**2 / settings.log_nu_prior_sd**2
            gradient[n] = float(total @ p_tie - ties.sum()) + offset / settings.log_nu_prior_sd**2
            hessian[n, n] = float(total @ (p_tie * (1 - p_tie))) + 1.0 / settings.log_nu_prior_sd**2
            cross = -0.5 * total * p_tie * (p_win - p_loss)
            hessian[:n, n] = hessian[n, :n] = np.bincount(first, cross, n) - np.bincount(second, cross, n)
        return float(value), gradient, hessian

    # --- The policy ---------------------------------------------------------------------------------

    def pair_distribution(self, *, exclude_pairs=(), in_flight=()) -> dict[tuple, float]:
        eligible, probabilities = self._distribution(exclude_pairs, in_flight)
        first, second = self._pairs.first[eligible], self._pairs.second[eligible]
        return {
            (self.models[i], self.models[j]): float(p)
            for i, j, p in zip(first.tolist(), second.tolist(), probabilities, strict=True)
        }

    def propose(self, *, exclude_pairs=(), in_flight=()) -> tuple[Hashable, Hashable, float]:
        eligible, probabilities = self._distribution(exclude_pairs, in_flight)
        cumulative = np.cumsum(probabilities)
        chosen = min(
            int(np.searchsorted(cumulative, self._rng.random() * cumulative[-1], side="right")),
            len(eligible) - 1,
        )
        pair = eligible[chosen]
        i, j = int(self._pairs.first[pair]), int(self._pairs.second[pair])
        if self._rng.random() < 0.5:
            i, j = j, i
        return self.models[i], self.models[j], float(probabilities[chosen])

    def _pair_indices(self, pairs: Iterable) -> np.ndarray:
        firsts, seconds = [], []
        for pair in pairs:
            try:
                model_a, model_b = pair
            except (TypeError, ValueError):
                raise ValueError(f"a pair must be two models, not {pair!r}") from None
            a, b = self._model_index(model_a), self._model_index(model_b)
            if a == b:
                raise ValueError(f"a pair must be two different models, not {pair!r}")
            firsts.append(a)
            seconds.append(b)
        # One fancy index for all pairs, not a numpy lookup per pair (a quarter faster with 55 in flight).
        return self._pairs.index[np.array(firsts, dtype=np.intp), np.array(seconds, dtype=np.intp)]

    def _draws(self) -> np.ndarray:
        """Standard normal draws, fixed while the observed data do not change (common random numbers)."""
        if self._draws_version != self._version:
            self._normal_draws = self._rng.standard_normal((self.settings.thompson_draws, len(self.models)))
            self._draws_version = self._version
        return self._normal_draws

    def _distribution(self, exclude_pairs, in_flight) -> tuple[np.ndarray, np.ndarray]:
        """Eligible pair indices and their probabilities (the explicit distribution propose samples)."""
        n_pairs = len(self._pairs.first)
        allowed = np.ones(n_pairs, dtype=bool)
        allowed[self._pair_indices(exclude_pairs)] = False
        eligible = np.flatnonzero(allowed)
        if not len(eligible):
            raise ValueError("no pair of models is eligible: every pair is excluded")
        flying = np.bincount(self._pair_indices(in_flight), minlength=n_pairs)[eligible]
        target = self._target(allowed, eligible)
        floor = self.settings.floor_share
        if not flying.any() or floor >= 1:
            return eligible, target
        wanted = (target - floor / len(eligible)) / (1 - floor)
        wanted = np.maximum(wanted * (flying.sum() + 1) - flying, 0.0)
        probabilities = floor / len(eligible) + (1 - floor) * wanted / wanted.sum()
        return eligible, capped(probabilities, self._cap(len(eligible)), floor / len(eligible))

    def _cap(self, n_eligible: int) -> float:
        return max(self.settings.max_pair_probability, self.settings.max_pair_multiple / n_eligible)

    def _target(self, allowed: np.ndarray, eligible: np.ndarray) -> np.ndarray:
        """The distribution with nothing in flight; it depends only on the data and the exclusions."""
        key = allowed.tobytes()
        if self._targets_version != self._version:
            self._targets, self._targets_version = {}, self._version
        if key not in self._targets:
            if len(self._targets) >= _MAX_CACHED_TARGETS:
                self._targets.clear()
            self._targets[key] = self._mixture(eligible)
        return self._targets[key]

    def _mixture(self, eligible: np.ndarray) -> np.ndarray:
        settings = self.settings
        mean, covariance = self._raw_posterior()
        n = len(self.models)
        log_nu = self._x[n] if self._with_ties else -np.inf
        first, second = self._pairs.first[eligible], self._pairs.second[eligible]
        information = _battle_information(mean[first] - mean[second], log_nu)
        active = np.zeros(n, dtype=bool)
        active[first] = active[second] = True
        variance = np.diag(covariance)
        difference_var = np.maximum(variance[first] + variance[second] - 2 * covariance[first, second], 1e-12)
        centred_sd = np.sqrt(np.maximum(np.diag(self.posterior()[1]), 0.0))
        gap = np.abs(mean[first] - mean[second])
        ranking = special.ndtr(-gap / np.sqrt(difference_var)) * np.log1p(difference_var * information)
        placing = (centred_sd > settings.placement_sd) & active
        placement = np.zeros(len(eligible))
        if placing.any() and (active & ~placing).any():
            placement = ranking * (placing[first] | placing[second])
        contests, favourite = self._top_two(mean, covariance, active)
        top_two = self._contest_battles(contests, covariance, eligible, information, difference_var)
        top_two_share = settings.top_two_share
        # Scheduled by what the posterior knows about the best: little use before a few contenders stand
        # out (1 / sum P(best)^2 is their effective number), none once the favourite is surely the best.
        top_two_share *= min(1.0, settings.top_two_contenders * float((favourite**2).sum()))
        if settings.top_two_focus < 1:
            top_two_share *= min(1.0, (1 - favourite.max()) / (1 - settings.top_two_focus))

        shares = {
            "floor": settings.floor_share,
            "top_two": top_two_share,
            "placement": settings.placement_share * (1 - settings.floor_share - top_two_share),
        }
        shares["ranking"] = 1.0 - sum(shares.values())
        weights = {
            "floor": np.ones(len(eligible)),
            "top_two": top_two,
            "placement": placement,
            "ranking": ranking,
        }
        totals = {name: float(w.sum()) for name, w in weights.items()}
        # A part with nothing to say (e.g. every pair it wants is excluded) gives its share to the other
        # parts of the policy; the floor stays what it is unless no part has anything to say.
        speaking = [
            name for name, total in totals.items() if name != "floor" and total > 0 and np.isfinite(total)
        ]
        scale = (1 - shares["floor"]) / sum(shares[name] for name in speaking) if speaking else 0.0
        probabilities = shares["floor"] * weights["floor"] / totals["floor"]
        for name in speaking:
            probabilities = probabilities + scale * shares[name] * weights[name] / totals[name]
        return capped(probabilities, self._cap(len(eligible)), settings.floor_share / len(eligible))

    def _contest_battles(self, contests, covariance, eligible, information, difference_var) -> np.ndarray:
        """Spread each leader-challenger pair's top-two mass over the eligible battles of either model.

        A battle (k, l) reduces the variance of the contest's difference theta_i - theta_j by
        ``h c^2 / (1 + h s^2)``: ``c`` the posterior covariance of the two differences, ``s^2`` the
        variance of theta_k - theta_l, ``h`` the battle's information. The direct battle is the best
        single one, but capped; battles of i and of j with a common, close opponent also tell i from j.
        The weights are that reduction squared, so the mass stays on the few most useful battles.
        """
        pairs = self._pairs
        chosen = np.flatnonzero(contests > 0)
        chosen = chosen[np.argsort(-contests[chosen], kind="stable")[:_MAX_CONTESTS]]
        leader, challenger = pairs.first[chosen], pairs.second[chosen]
        usefulness = np.zeros(len(pairs.first))  # h / (1 + h s^2), zero for excluded pairs
        usefulness[eligible] = information / (1 + information * difference_var)
        along = covariance[:, leader] - covariance[:, challenger]  # (n, contests)
        # Every battle of the leader (columns 0..m-1) and of the challenger (columns m..2m-1).
        side = np.concatenate([leader, challenger])
        along = np.concatenate([along, along], axis=1)
        columns = np.arange(len(side))
        cross = along[side, columns][None, :] - along  # (n opponents, 2m)
        battle = pairs.index[side].T  # pair index of (side model, opponent); -1 for itself
        valid = battle >= 0
        valid[leader, columns[len(chosen) :]] = False  # the direct battle is already on the leader's side
        gain = np.where(valid, cross**2 * usefulness[np.maximum(battle, 0)], 0.0) ** 2
        totals = gain[:, : len(chosen)].sum(axis=0) + gain[:, len(chosen) :].sum(axis=0)
        scale = np.divide(contests[chosen], totals, out=np.zeros(len(chosen)), where=totals > 0)
        spread = np.bincount(battle[valid], (gain * np.tile(scale, 2)[None, :])[valid], len(pairs.first))
        return spread[eligible]

    def _top_two(
        self, mean: np.ndarray, covariance: np.ndarray, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-two Thompson probability of every pair, tallied from posterior draws among active models,
        and every model's probability of being the best."""
        n = len(mean)
        draws = mean + self._draws() @ linalg.cholesky(covariance, lower=True).T
        draws[:, ~active] = -np.inf
        rows = np.arange(len(draws))
        leader = draws.argmax(axis=1)
        draws[rows, leader] = -np.inf
        runner_up = draws.argmax(axis=1)
        best = np.bincount(leader, minlength=n) / len(draws)
        both = np.bincount(leader * n + runner_up, minlength=n * n).reshape(n, n) / len(draws)
        # P(j is the best of all but i) = P(j leads) + P(i leads and j is second).
        challenger = best[None, :] + both
        first, second = self._pairs.first, self._pairs.second
        return best[first] * challenger[first, second] + best[second] * challenger[second, first], best


def _laplacian(n: int, first: np.ndarray, second: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Sum over pairs of weight * (e_i - e_j)(e_i - e_j)^T, as a dense (n, n) matrix."""
    flat = np.concatenate([first * n + first, second * n + second, first * n + second, second * n + first])
    values = np.concatenate([weights, weights, -weights, -weights])
    return np.bincount(flat, values, n * n).reshape(n, n)
