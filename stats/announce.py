"""Announcing a board's leader: only when the data say so.

A board *announces* its leader when the top model's P(best) (the share of posterior draws in which it is
the best) reaches a threshold, 0.95 by default; until then it says "no clear leader yet". This is
fixed-confidence identification: the board waits as long as the data need, and the threshold bounds how
often an announcement names the wrong model.

Battles still needed (an estimate for staff planning a study, not a promise). A board's precision grows
like ``sqrt(n)`` in its counted battles ``n`` when the pairs keep being rated in the same mix, so a
"z-score" of how clear the leader is grows like ``sqrt(n)`` too and reaches the threshold's normal
quantile ``z* = Phi^-1(threshold)`` after ``n (z* / z)^2`` battles; the estimate is what is left of that.
The z-score is the leader's P(best) read as a normal quantile, ``Phi^-1(P(best))``, which counts every
contender; while P(best) is at most one half (several contenders) it is the top two models' instead:
their score gap over the sd of the difference (the two 95% interval half-widths over 1.96, added in
quadrature, ignoring their correlation). When the top two look equal there is no estimate (None).

A minimum of battles before announcing (``min_battles``; the site's ``POPULUS_MIN_ANNOUNCE_BATTLES``,
300). A board's P(best) is read after every fit, so it gets many chances to cross the threshold by
chance while the data are few. In ``bench.matchmaking_boards`` (8 models, 16 seeds x 8,000 battles,
2026-11-26) 6.5% of the announcements were wrong under the matchmaker and 4.9% under uniform pairs
without a minimum; with 300 battles, 3.7% and 4.2%, for 2-3% more battles to announce.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scipy import stats as _scipy_stats

__all__ = ["DEFAULT_THRESHOLD", "battles_to_announce", "leader_index"]

DEFAULT_THRESHOLD = 0.95
# A 95% interval is 1.96 posterior sds either side of the estimate.
_Z95 = float(_scipy_stats.norm.ppf(0.975))


def leader_index(
    p_best: Sequence[float | None],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    battles: int | None = None,
    min_battles: int = 0,
) -> int | None:
    """Index of the model whose P(best) is at least ``threshold`` (None: no clear leader yet).

    ``threshold`` must be above one half, so at most one model can reach it. A board with fewer than
    ``min_battles`` counted ``battles`` announces nothing yet (see the module docstring)."""
    if not 0.5 < threshold <= 1.0:
        raise ValueError(f"threshold must be above 0.5 and at most 1, not {threshold!r}")
    if min_battles < 0:
        raise ValueError(f"min_battles must not be negative, not {min_battles!r}")
    if min_battles and (battles is None or battles < min_battles):
        return None
    known = [(p, k) for k, p in enumerate(p_best) if p is not None]
    if not known:
        return None
    p, k = max(known)
    return k if p >= threshold else None


def battles_to_announce(
    *,
    p_best: float,
    leader: tuple[float, float, float],
    runner_up: tuple[float, float, float],
    battles: int,
    threshold: float = DEFAULT_THRESHOLD,
    min_battles: int = 0,
) -> int | None:
    """Estimated further battles until the board announces a leader (see the module docstring).

    ``p_best`` is the leader's P(best); ``leader`` and ``runner_up`` are ``(score, low, high)`` with a
    95% interval; ``battles`` the board's counted battles so far. Returns 0 once P(best) has reached the
    threshold, at least 1 before, and None when no estimate can be made (no battles, or the top two
    look equal)."""
    if not 0.5 < threshold < 1.0:
        raise ValueError(f"threshold must be above 0.5 and below 1, not {threshold!r}")
    short = max(min_battles - battles, 0)
    if p_best >= threshold:
        return short
    needed_z = float(_scipy_stats.norm.ppf(threshold))
    if p_best > 0.5:
        z = float(_scipy_stats.norm.ppf(p_best))
    else:
        gap = leader[0] - runner_up[0]
        sd = math.hypot(leader[2] - leader[1], runner_up[2] - runner_up[1]) / (2 * _Z95)
        if gap <= 0 or not math.isfinite(gap) or sd <= 0:
            return None
        z = gap / sd
    if battles <= 0:
        return None
    return max(1, short, math.ceil(battles * ((needed_z / z) ** 2 - 1)))
