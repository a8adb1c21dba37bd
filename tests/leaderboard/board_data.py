"""Fast board data for tests: raters in chosen groups and voted battles written straight to the log
(the chat itself does not matter to boards), then a real fit."""

import random

from leaderboard.demo_votes import admitted_raters_write, voted_battles_write
from raters.models import Country, Group, Rater, Study
from tournaments.models import Tournament, Vote


def raters_in(study: Study, *group_slugs: str, count: int) -> list[Rater]:
    """`count` admitted raters, each in every one of the given groups (one per axis)."""
    groups = list(Group.objects.filter(slug__in=group_slugs).select_related("axis__country"))
    assert len(groups) == len(group_slugs), f"unknown group among {group_slugs}"
    country = groups[0].axis.country if groups else Country.objects.first()
    return admitted_raters_write(study, [(country, [group.pk for group in groups])] * count)


def votes_cast(
    tournament: Tournament,
    raters: list[Rater],
    *,
    per_rater: int = 3,
    favourite_wins: float = 0.8,
    tie_rate: float = 0.1,
    dimensions: tuple[str, ...] = ("overall",),
    seed: int = 0,
    models=None,
) -> list[Vote]:
    """Each rater votes on `per_rater` battles between random pairs of `models` (the tournament's, by
    default); the first model wins most of its battles. One outcome per battle, on every dimension given."""
    rng = random.Random(seed)
    models = list(models or tournament.llm_models.order_by("pk"))
    favourite = models[0]
    chosen = list(tournament.dimensions.filter(slug__in=dimensions))
    plans = []
    for rater in raters:
        for _ in range(per_rater):
            model_a, model_b = rng.sample(models, 2)
            if rng.random() < tie_rate:
                outcome = "tie"
            elif favourite in (model_a, model_b):
                favourite_won = rng.random() < favourite_wins
                outcome = "a" if (model_a == favourite) == favourite_won else "b"
            else:
                outcome = rng.choice("ab")
            plans.append((rater, model_a, model_b, {dimension.pk: outcome for dimension in chosen}))
    return voted_battles_write(tournament, plans, pair_probability=0.25, seconds_to_vote=60)
