"""A generated Chatbot Arena battle log at any size, for the scale benchmark (no Django).

Shaped like the public log: JSON lines with ``model_a``, ``model_b``, ``winner``, ``anony`` and ``tstamp``,
no judge ids. Skills are spread like Arena's (about 400 Elo points from top to bottom of a field of 130),
pairs are drawn very unevenly (each model's popularity is log-normal, so the busiest pairs have hundreds of
times the battles of the quietest, as on Arena, where new and popular models are shown far more often), and
outcomes follow a Bradley-Terry-Davidson model whose tie parameter gives about 30% ties.
"""

import json
import math
from pathlib import Path

import numpy as np

START_TSTAMP = 1_680_000_000.0
SECONDS_PER_BATTLE = 3.7  # about 1.7 million battles over 2.5 months, as in the public log
TIE_NU = 0.95  # Davidson's nu: with these skills, about 30% of battles are ties


def arena_log_write(
    path: Path, *, battles: int, models: int = 130, seed: int = 0, chunk: int = 200_000
) -> dict[str, float]:
    """Write `battles` rows to `path` (JSON lines). Returns the log's true skills and tie share."""
    rng = np.random.default_rng(seed)
    skills = np.sort(rng.normal(0.0, 0.55, models))[::-1]
    popularity = rng.lognormal(0.0, 1.0, models)
    names = [f"model-{index:03d}" for index in range(models)]
    # Ordered pairs without self-pairs, each drawn in proportion to the product of popularities.
    first, second = np.nonzero(~np.eye(models, dtype=bool))
    weights = popularity[first] * popularity[second]
    weights /= weights.sum()
    ties = 0
    written = 0
    with Path(path).open("w") as file:
        while written < battles:
            size = min(chunk, battles - written)
            drawn = rng.choice(len(first), size=size, p=weights)
            a, b = first[drawn], second[drawn]
            strength_a, strength_b = np.exp(skills[a]), np.exp(skills[b])
            tie = TIE_NU * np.sqrt(strength_a * strength_b)
            total = strength_a + strength_b + tie
            u = rng.random(size) * total
            outcome = np.where(u < strength_a, 0, np.where(u < strength_a + strength_b, 1, 2))
            ties += int((outcome == 2).sum())
            winners = ("model_a", "model_b", "tie")
            lines = []
            for index in range(size):
                tstamp = round(START_TSTAMP + (written + index) * SECONDS_PER_BATTLE, 3)
                lines.append(
                    json.dumps(
                        {
                            "model_a": names[a[index]],
                            "model_b": names[b[index]],
                            "winner": winners[outcome[index]],
                            "anony": True,
                            "tstamp": tstamp,
                        }
                    )
                )
            file.write("\n".join(lines) + "\n")
            written += size
    return {
        "tie_share": ties / max(battles, 1),
        "skill_spread_elo": float((skills[0] - skills[-1]) * 400 / math.log(10)),
    }
