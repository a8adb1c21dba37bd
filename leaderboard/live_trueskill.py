"""Live TrueSkill updates for one battle outcome, through the closed-form kernel (no Django here).

The kernel reproduces the `trueskill` package's rate_1vs1 (see trueskill_kernel.py for how closely)
about a hundred times faster, which is what makes replaying the vote log after an exclusion cheap.
"""

from leaderboard.trueskill_kernel import TrueSkillParams, rate_1vs1


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
