"""Skills on Chatbot Arena's familiar rating scale (no Django).

A Bradley-Terry skill difference d (natural log-odds: P(i beats j) = 1 / (1 + e^-d) when ties are set
aside) is 400 / ln 10 (about 173.7) rating points, so that, as in Arena's ratings, a model rated 400 points
higher is expected to win ten times as often as it loses. The anchor is the field: **1000 is the mean skill
of the models on the board**, in every posterior draw, so the intervals are those of each model against
the field and do not move when one anchor model is uncertain. Arena anchors its own board differently
(a named model at a fixed rating), so compare differences between models, not the numbers themselves.

With Davidson's ties the skills are those of the strengths ``exp(skill)``; Arena's published fits count a
tie as half a win each way, which lands close to the same skills when ties are spread evenly.
"""

import math
from dataclasses import dataclass

import numpy as np

ARENA_SCALE = 400 / math.log(10)
ARENA_ANCHOR = 1000.0


@dataclass(frozen=True)
class ArenaRatings:
    point: np.ndarray  # (n_models,)
    low: np.ndarray
    high: np.ndarray


def arena_ratings(skill: np.ndarray, drawn_skill: np.ndarray, *, level: float = 0.95) -> ArenaRatings:
    """Ratings of `skill` (n_models,) at the posterior mode and central `level` intervals over the draws
    `drawn_skill` (n_draws, n_models), each centred on its own field mean."""
    skill = np.asarray(skill, dtype=float)
    drawn_skill = np.asarray(drawn_skill, dtype=float).reshape(-1, len(skill))
    point = ARENA_ANCHOR + ARENA_SCALE * (skill - skill.mean())
    drawn = ARENA_ANCHOR + ARENA_SCALE * (drawn_skill - drawn_skill.mean(axis=1, keepdims=True))
    tail = (1 - level) / 2
    low, high = np.quantile(drawn, [tail, 1 - tail], axis=0)
    return ArenaRatings(point=point, low=low, high=high)
