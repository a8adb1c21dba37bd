"""Fast board data for tests: raters in chosen groups and voted battles written straight to the log
(the chat itself does not matter to boards), then a real fit."""

import random

from django.utils import timezone

from raters.models import Country, Group, Rater, Study
from tournaments.models import Battle, Tournament, Vote, VoteChoice


def raters_in(study: Study, *group_slugs: str, count: int) -> list[Rater]:
    """`count` admitted raters, each in every one of the given groups (one per axis)."""
    groups = list(Group.objects.filter(slug__in=group_slugs).select_related("axis__country"))
    assert len(groups) == len(group_slugs), f"unknown group among {group_slugs}"
    country = groups[0].axis.country if groups else Country.objects.first()
    now = timezone.now()
    raters = Rater.objects.bulk_create(
        Rater(
            study=study,
            source=Rater.Source.OPEN,
            status=Rater.Status.ADMITTED,
            consented_at=now,
            screened_at=now,
            admitted_at=now,
            country=country,
        )
        for _ in range(count)
    )
    Rater.groups.through.objects.bulk_create(
        Rater.groups.through(rater_id=rater.pk, group_id=group.pk) for rater in raters for group in groups
    )
    return raters


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
            plans.append((rater, model_a, model_b, outcome))
    battles = Battle.objects.bulk_create(
        Battle(
            tournament=tournament,
            rater=rater,
            model_a=model_a,
            model_b=model_b,
            pair_probability=0.25,
            state=Battle.State.VOTED,
        )
        for rater, model_a, model_b, _ in plans
    )
    votes = Vote.objects.bulk_create(Vote(battle=battle, seconds_to_vote=60) for battle in battles)
    chosen = list(tournament.dimensions.filter(slug__in=dimensions))
    VoteChoice.objects.bulk_create(
        VoteChoice(vote=vote, dimension=dimension, outcome=plan[3])
        for vote, plan in zip(votes, plans, strict=True)
        for dimension in chosen
    )
    return votes
