"""Closed-form TrueSkill update for one head-to-head game (math only, no factor graph, no Django).

It reproduces ``trueskill.rate_1vs1`` of the ``trueskill`` package (0.4.5, default backend) for the
same mu, sigma, beta, tau and draw_probability, at a small fraction of the cost, so that replaying
hundreds of thousands of votes is fast.

Why a closed form is exact here
-------------------------------
For two single-player teams the package's factor graph is a chain: prior -> skill -> performance ->
team performance -> difference -> truncation. There is one difference variable and one truncation
factor, so its message schedule settles after a single pass (the second pass recomputes the same
truncation up to rounding and stops). The result is one moment-matching step (assumed-density
filtering), which can be written out directly.

Equations (winner = player 1, loser = player 2; for a draw the order is just the two players)
--------------------------------------------------------------------------------------------
Notation: N(x) = exp(-x^2 / 2) / sqrt(2 pi) is the standard normal density, Phi(x) its cumulative
distribution, Phi^-1 the inverse of Phi.

  1. Dynamics (the package's PriorFactor adds tau^2 to each prior variance before the game):
         s1^2 <- s1^2 + tau^2,      s2^2 <- s2^2 + tau^2
  2. Performance difference d = perf1 - perf2 ~ Normal(mu1 - mu2, c^2), where
         c^2 = 2 beta^2 + s1^2 + s2^2
     and the draw margin for two players (the package's calc_draw_margin(p, size=2)):
         eps = Phi^-1((p + 1) / 2) * sqrt(2) * beta
     Standardised:  t = (mu1 - mu2) / c,   e = eps / c.
  3. Truncated-Gaussian corrections V (for the mean) and W (for the variance):
       win  (d > eps):   x = t - e
                         V = N(x) / Phi(x)
                         W = V * (V + x)
       draw (|d| <= eps): a = e - |t|,   b = -e - |t|,   D = Phi(a) - Phi(b)
                         V = sign(t) * (N(b) - N(a)) / D          (sign(0) = +1)
                         W = V^2 + (a N(a) - b N(b)) / D
  4. Update:
         mu1' = mu1 + (s1^2 / c) * V        s1' = sqrt(s1^2 * (1 - (s1^2 / c^2) * W))
         mu2' = mu2 - (s2^2 / c) * V        s2' = sqrt(s2^2 * (1 - (s2^2 / c^2) * W))

Failures, as in the package
---------------------------
The package raises FloatingPointError when a win's W is not strictly between 0 and 1 (Phi(x)
underflows to 0 for a hopeless upset, or N(x) underflows for an overwhelming favourite; with the
default beta neither happens for mu in [0, 50]), and when a draw's D is 0. This module raises
FloatingPointError in the same cases, and also if a draw would give a variance that is not positive
(where the package fails with ZeroDivisionError or ValueError instead).

What limits agreement with the package
--------------------------------------
The package's default backend does not use an exact Phi. Its erfc is the Chebyshev-fitted
approximation "erfcc" of Numerical Recipes (fractional error below 1.2e-7), Phi(x) is
0.5 * erfc(-x / sqrt(2)), its density is exact (it is only called with sigma = 1), and its Phi^-1
runs two Halley steps on that approximate erfc from a rational first guess: it inverts the
approximate erfc, not the true one. This matters. Phi^-1 moves the draw margin by up to ~3e-7, and
in a lopsided upset W = V (V + x) with V ~ -x cancels, so Phi's 1e-7 relative error is amplified by
about x^2 (W off by ~1e-4 at x = -30). With the true Phi the updates differ from the package's by
up to ~5e-5 in the tested ranges, far above 1e-6. So:

* ``numerics="package"`` (the default) evaluates Phi with the same erfcc approximation, in the same
  order of floating-point operations (so equal arguments give bit-identical V and W), and computes
  Phi^-1 by solving Phi(x) = q with Newton steps until they stop changing x: the root the package's
  two Halley steps reach, to ~2e-14 in the draw margin for draw_probability in [0, 0.99]. What
  remains is rounding in the arguments t and e: the package passes precisions (1 / sigma^2) and
  precision-adjusted means between factors, this module uses the closed form above, and the two
  differ by a few ulps. That is amplified only where W is close to 1 (an upset, where V + x cancels).
  Measured (tests/stats/test_trueskill.py): at most ~1e-11 in any mu or sigma over
  6,000 random games (mu in [0, 50], sigma in [0.5, 12], draw_probability in [0.01, 0.8], beta in
  [1, 8], a quarter of them 0-vs-50 gaps). In a sweep with beta = 0.3: at most ~1e-10 up to gaps of
  35 standard deviations of the performance difference (|t| <= 35). Beyond ~37 (reachable only with
  beta below ~0.7, e.g. mu 0 vs 50 with sigma 0.5) Phi and N are subnormal numbers (below 2.2e-308)
  with few significant bits, and a one-ulp change in t moves the result by up to ~5e-6; both
  implementations are numerically meaningless there, and past ~38.5 both raise.
* ``numerics="exact"`` uses Phi(x) = 0.5 * erfc(-x / sqrt(2)) with ``math.erfc`` and an accurate
  Phi^-1 (Newton on that Phi). This is the textbook TrueSkill update, not the package's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

__all__ = ["NUMERICS", "TrueSkillParams", "normal_cdf", "normal_pdf", "normal_ppf", "rate_1vs1"]

Rating = tuple[float, float]

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def normal_pdf(x: float) -> float:
    """Standard normal density (exact; computed exactly as the package computes it)."""
    return _INV_SQRT_2PI * math.exp(-(x * x) / 2.0)


def _erfc_nr(x: float) -> float:
    """erfc by the Chebyshev fit "erfcc" of Numerical Recipes (fractional error < 1.2e-7).

    erfc(z) ~ t * exp(-z^2 + P(t)) with t = 1 / (1 + z / 2) for z = |x| >= 0, where P is a degree-9
    polynomial, evaluated here in Horner form (innermost coefficient first), in the same order of
    operations as the trueskill package so that the results are bit-identical; erfc(-z) = 2 - erfc(z).
    """
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    p = 0.17087277
    p = -0.82215223 + t * p
    p = 1.48851587 + t * p
    p = -1.13520398 + t * p
    p = 0.27886807 + t * p
    p = -0.18628806 + t * p
    p = 0.09678418 + t * p
    p = 0.37409196 + t * p
    p = 1.00002368 + t * p
    r = t * math.exp(-z * z - 1.26551223 + t * p)
    return 2.0 - r if x < 0 else r


def _cdf_package(x: float) -> float:
    return 0.5 * _erfc_nr(-x / _SQRT2)


def _cdf_exact(x: float) -> float:
    return 0.5 * math.erfc(-x / _SQRT2)


_CDFS: dict[str, Callable[[float], float]] = {"package": _cdf_package, "exact": _cdf_exact}
NUMERICS = tuple(_CDFS)


def normal_cdf(x: float, numerics: str = "exact") -> float:
    """Standard normal CDF: exact (``math.erfc``) or the package's approximation (``"package"``)."""
    return _CDFS[numerics](x)


def normal_ppf(q: float, numerics: str = "exact") -> float:
    """Inverse of ``normal_cdf(., numerics)`` for 0 < q < 1.

    Solves Phi(-z) = min(q, 1 - q) for z >= 0 and returns z for q >= 0.5, -z below, as the package
    does (its approximate erfc jumps by 6e-8 at 0, so Phi(x) = 0.5 has a root on each side of 0 and
    the package takes the positive one). First guess: the rational approximation of Abramowitz &
    Stegun 26.2.22 (error < 3e-3); then Newton steps z += (Phi(-z) - tail) / N(z) until a step no
    longer changes z. With the package's Phi this is the root its own inverse reaches.
    """
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    cdf = _CDFS[numerics]
    tail = min(q, 1.0 - q)
    s = math.sqrt(-2.0 * math.log(tail))
    z = max(0.0, s - (2.30753 + 0.27061 * s) / (1.0 + s * (0.99229 + 0.04481 * s)))
    for _ in range(100):
        previous = z
        z = max(0.0, z + (cdf(-z) - tail) / normal_pdf(z))
        if abs(z - previous) <= 4e-16 * max(1.0, z):
            break
    return z if q >= 0.5 else -z


@dataclass(frozen=True)
class TrueSkillParams:
    """The TrueSkill environment; the defaults are the trueskill package's defaults.

    ``numerics`` selects how the normal CDF and its inverse are computed: ``"package"`` reproduces the
    trueskill package's default backend, ``"exact"`` uses ``math.erfc`` (see the module docstring).
    """

    mu: float = 25.0
    sigma: float = 25 / 3
    beta: float = 25 / 6
    tau: float = 25 / 3 / 100  # the package's SIGMA / 100; one ulp above 25 / 300
    draw_probability: float = 0.10
    numerics: str = "package"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mu) and math.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError("mu must be finite and sigma positive")
        if not (math.isfinite(self.beta) and self.beta > 0):
            raise ValueError("beta must be positive")
        if not (math.isfinite(self.tau) and self.tau >= 0):
            raise ValueError("tau must be non-negative")
        if not 0.0 <= self.draw_probability < 1.0:
            raise ValueError("draw_probability must be in [0, 1)")
        if self.numerics not in _CDFS:
            raise ValueError(f"numerics must be one of {NUMERICS}")

    @cached_property
    def draw_margin(self) -> float:
        """Phi^-1((draw_probability + 1) / 2) * sqrt(2) * beta: the package's calc_draw_margin(p, 2)."""
        q = (self.draw_probability + 1.0) / 2.0
        return normal_ppf(q, self.numerics) * _SQRT2 * self.beta

    @cached_property
    def _constants(self) -> tuple[float, float, float, Callable[[float], float]]:
        """(tau^2, 2 beta^2, draw margin, CDF), looked up once per game."""
        return self.tau**2, 2.0 * self.beta**2, self.draw_margin, _CDFS[self.numerics]


def _win_corrections(x: float, cdf: Callable[[float], float]) -> tuple[float, float]:
    """V and W for a win, x = t - e."""
    phi = cdf(x)
    if phi == 0.0:  # the package then sets V = -x, so W = 0: it raises
        raise FloatingPointError(f"win is numerically impossible (x = {x!r})")
    v = normal_pdf(x) / phi
    w = v * (v + x)
    if not 0.0 < w < 1.0:
        raise FloatingPointError(f"win correction W = {w!r} is outside (0, 1) (x = {x!r})")
    return v, w


def _draw_corrections(t: float, e: float, cdf: Callable[[float], float]) -> tuple[float, float]:
    """V and W for a draw."""
    gap = abs(t)
    a, b = e - gap, -e - gap
    mass = cdf(a) - cdf(b)
    if mass == 0.0:
        raise FloatingPointError(f"draw is numerically impossible (t = {t!r}, e = {e!r})")
    pdf_a, pdf_b = normal_pdf(a), normal_pdf(b)
    v = (pdf_b - pdf_a) / mass
    w = v * v + (a * pdf_a - b * pdf_b) / mass
    return (-v if t < 0 else v), w


def rate_1vs1(
    winner: Rating, loser: Rating, *, drawn: bool, params: TrueSkillParams
) -> tuple[Rating, Rating]:
    """New (mu, sigma) of ``winner`` and ``loser`` after one game (for a draw, of the two players).

    Raises FloatingPointError where the package cannot rate the game either (see the module docstring).
    """
    mu1, sigma1 = winner
    mu2, sigma2 = loser
    tau_sq, two_beta_sq, margin, cdf = params._constants
    var1 = sigma1 * sigma1 + tau_sq
    var2 = sigma2 * sigma2 + tau_sq
    c_sq = two_beta_sq + (var1 + var2)
    c = math.sqrt(c_sq)
    t = (mu1 - mu2) / c
    e = margin / c
    if drawn:
        v, w = _draw_corrections(t, e, cdf)
    else:
        v, w = _win_corrections(t - e, cdf)
    new_var1 = var1 * (1.0 - var1 / c_sq * w)
    new_var2 = var2 * (1.0 - var2 / c_sq * w)
    if not (new_var1 > 0.0 and new_var2 > 0.0):
        raise FloatingPointError(f"update gives a non-positive variance (W = {w!r})")
    return (
        (mu1 + var1 / c * v, math.sqrt(new_var1)),
        (mu2 - var2 / c * v, math.sqrt(new_var2)),
    )


# --- Live ratings: one battle outcome at a time ---------------------------------------------------------


def rate_outcome(
    a: tuple[float, float], b: tuple[float, float], *, outcome: str, params: TrueSkillParams
) -> tuple[tuple[float, float], tuple[float, float]]:
    """New (mu, sigma) for sides a and b after `outcome` ("a", "b" or "tie")."""
    if outcome == "b":
        new_b, new_a = rate_1vs1(b, a, drawn=False, params=params)
        return new_a, new_b
    return rate_1vs1(a, b, drawn=outcome == "tie", params=params)


def conservative_score(mu: float, sigma: float) -> float:
    """mu - 3 sigma: a skill the model exceeds with about 99.9% confidence."""
    return mu - 3 * sigma
