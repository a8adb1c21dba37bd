"""One pair choice for all the boards a battle feeds.

A rater's vote lands on the pooled board and on each of their group boards, on every dimension. Each of
those (board, dimension) has its own matchmaker (``stats.matchmaker``: its own posterior and its own
fitted tie parameter) and so its own pair distribution. The pair a rater gets is drawn from the mixture
of those distributions, each weighted by what its board still needs:

``need = (w_leader * leader + w_intervals * intervals + w_raters * raters) * information``

with three shortfalls in [0, 1], each 0 once its part of the precision goal (:class:`Goal`) is met:

* ``leader``: the leader is not yet announced, ``(threshold - P(best)) / (threshold - 1 / models)``
  (1 with P(best) spread evenly, 0 once announced);
* ``intervals``: the widest 95% interval of a skill is wider than ``interval_width`` nats,
  ``1 - interval_width / widest``;
* ``raters``: fewer distinct raters than the board needs to be published, ``1 - raters / min_raters``;

and ``information`` the share of a battle that is not a tie between equal models, ``2 / (2 + nu)``
under the dimension's fitted Davidson ``nu``: the Fisher information a battle gives about a skill
difference, relative to a dimension without ties. A dimension whose votes are nearly all ties ("both
fine") learns almost nothing from a battle, so however far from its goal it stays, it cannot soak up
the budget. When every board has met its goal the needs are all zero and the boards count equally.

Guarantees carry over from the parts. Every part is a distribution over the same allowed pairs with
each pair at least ``floor / pairs`` and at most the cap, so their mixture (a convex combination) is
too; each part counts the pairs in flight, so the mixture does.

One more cap applies to the mixture itself (:func:`capped_mixture`). Each part caps a pair at 4% or four
times an even share, whichever is larger, but the parts agree: the pooled board and most group boards
have the same leaders, so their top-two parts all ask for the same pair, and with eight models that pair
took 7% of the battles. The mixture caps each pair at the tournament's ``pair_cap`` (5% by default), or
``SMALL_TOURNAMENT_MULTIPLE`` times an even share of the tournament's pairs when that is larger (so a
tournament of a few models can still steer), and never below an even share of the pairs the rater may
still have; the excess goes to the other pairs in proportion to what the mixture gave them. The
probability to record is the capped mixture's probability of the pair drawn from it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from stats.matchmaker import capped

__all__ = [
    "Goal",
    "Weights",
    "board_need",
    "board_rarity",
    "capped_mixture",
    "mixture",
    "mixture_weights",
    "pair_cap",
]

# Below 28 pairs (eight models) a 5% cap would be less than 1.4 times an even share; from there down the
# cap keeps that multiple, so that a tournament of four models (six pairs) may still give a pair 23%.
SMALL_TOURNAMENT_MULTIPLE = 1.4


@dataclass(frozen=True)
class Goal:
    """The precision a board aims at: an announced leader, narrow intervals, enough raters to publish."""

    threshold: float = 0.95
    # Width of a skill's 95% interval, in nats: 1.0 is about +-87 Elo points either side.
    interval_width: float = 1.0
    min_raters: int = 10
    # How the leader's shortfall falls as P(best) rises: "linear" (the module docstring) or "step" (1
    # until the leader is announced, whatever P(best) is).
    leader_shortfall: str = "linear"

    def __post_init__(self) -> None:
        if self.leader_shortfall not in ("linear", "step"):
            raise ValueError(f"leader_shortfall must be 'linear' or 'step', not {self.leader_shortfall!r}")
        if not 0.5 < self.threshold < 1.0:
            raise ValueError(f"threshold must be above 0.5 and below 1, not {self.threshold!r}")
        if not self.interval_width > 0:
            raise ValueError(f"interval_width must be positive, not {self.interval_width!r}")
        if self.min_raters < 0:
            raise ValueError(f"min_raters must not be negative, not {self.min_raters!r}")


@dataclass(frozen=True)
class Weights:
    """How much each part of the goal counts in a board's need."""

    leader: float = 1.0
    intervals: float = 0.5
    raters: float = 1.0

    def __post_init__(self) -> None:
        for name in ("leader", "intervals", "raters"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"the {name} weight must not be negative, not {getattr(self, name)!r}")


def board_need(
    *,
    p_best: float,
    models: int,
    widest_interval: float,
    raters: int,
    tie_parameter: float,
    goal: Goal = Goal(),
    weights: Weights = Weights(),
) -> float:
    """What a (board, dimension) still needs (see the module docstring). ``p_best`` is its favourite's
    P(best), ``models`` how many models it ranks, ``widest_interval`` the width of its widest 95%
    skill interval (nats), ``raters`` its distinct raters, ``tie_parameter`` its fitted Davidson nu."""
    if models < 2:
        raise ValueError("a board ranks at least two models")
    even = 1.0 / models
    leader = min(max((goal.threshold - p_best) / (goal.threshold - even), 0.0), 1.0)
    if goal.leader_shortfall == "step":
        leader = float(p_best < goal.threshold)
    intervals = max(1.0 - goal.interval_width / widest_interval, 0.0) if widest_interval > 0 else 0.0
    short = max(1.0 - raters / goal.min_raters, 0.0) if goal.min_raters else 0.0
    information = 2.0 / (2.0 + max(tie_parameter, 0.0))
    return (weights.leader * leader + weights.intervals * intervals + weights.raters * short) * information


def board_rarity(pooled_raters: int, board_raters: int, exponent: float = 1.0) -> float:
    """How much a board's need counts when one of its raters arrives: ``(pooled_raters /
    board_raters) ** exponent``. Only a group's own raters can feed its board, so a small group's board
    gets a battle only when one of its few raters is here; every rater feeds the pooled board (1)."""
    if exponent < 0:
        raise ValueError(f"the rarity exponent must not be negative, not {exponent!r}")
    if board_raters <= 0:
        return 1.0
    return (max(pooled_raters, board_raters) / board_raters) ** exponent


def mixture_weights(needs: Sequence[float]) -> list[float]:
    """The parts' weights: proportional to their needs, or equal when none needs anything."""
    if not needs:
        raise ValueError("there is nothing to mix")
    if any(not need >= 0 for need in needs):
        raise ValueError(f"needs must not be negative: {list(needs)!r}")
    total = sum(needs)
    if total <= 0:
        return [1.0 / len(needs)] * len(needs)
    return [need / total for need in needs]


def mixture(
    distributions: Sequence[Mapping[Hashable, float]], needs: Sequence[float]
) -> dict[Hashable, float]:
    """The need-weighted mixture of the parts' pair distributions (each summing to one)."""
    if len(distributions) != len(needs):
        raise ValueError("one need per distribution")
    combined: dict[Hashable, float] = {}
    for weight, distribution in zip(mixture_weights(needs), distributions, strict=True):
        for pair, p in distribution.items():
            combined[pair] = combined.get(pair, 0.0) + weight * p
    return combined


def pair_cap(cap: float, *, pairs: int, allowed: int) -> float:
    """The most one pair may have of the mixture (module docstring): ``cap``, or more when the tournament
    has few ``pairs`` or the rater has few ``allowed`` pairs left."""
    if not 0 < cap <= 1:
        raise ValueError(f"the pair cap must be above 0 and at most 1, not {cap!r}")
    if not 0 < allowed <= pairs:
        raise ValueError(f"allowed pairs must be between 1 and the {pairs} pairs, not {allowed!r}")
    return min(max(cap, SMALL_TOURNAMENT_MULTIPLE / pairs, 1.0 / allowed), 1.0)


def capped_mixture(
    distributions: Sequence[Mapping[Hashable, float]], needs: Sequence[float], cap: float
) -> dict[Hashable, float]:
    """The need-weighted mixture with no pair above ``cap`` (from :func:`pair_cap`)."""
    combined = mixture(distributions, needs)
    if cap >= 1:
        return combined
    lowered = capped(np.fromiter(combined.values(), float, len(combined)), cap, 0.0)
    return dict(zip(combined, lowered.tolist(), strict=True))
