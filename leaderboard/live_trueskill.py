"""Live TrueSkill updates for one battle outcome, using the `trueskill` package. No Django here."""

from functools import lru_cache

import trueskill

DEFAULT_MU = trueskill.MU
DEFAULT_SIGMA = trueskill.SIGMA


@lru_cache(maxsize=64)
def _environment(draw_probability: float) -> trueskill.TrueSkill:
    return trueskill.TrueSkill(draw_probability=draw_probability)


def rate_outcome(
    a: tuple[float, float], b: tuple[float, float], *, outcome: str, draw_probability: float
) -> tuple[tuple[float, float], tuple[float, float]]:
    """New (mu, sigma) for sides a and b after `outcome` ("a", "b" or "tie")."""
    env = _environment(draw_probability)
    rating_a, rating_b = env.create_rating(*a), env.create_rating(*b)
    if outcome == "b":
        new_b, new_a = trueskill.rate_1vs1(rating_b, rating_a, env=env)
    else:
        new_a, new_b = trueskill.rate_1vs1(rating_a, rating_b, drawn=outcome == "tie", env=env)
    return (new_a.mu, new_a.sigma), (new_b.mu, new_b.sigma)


def conservative_score(mu: float, sigma: float) -> float:
    """mu - 3 sigma: a skill the model exceeds with about 99.9% confidence."""
    return mu - 3 * sigma
