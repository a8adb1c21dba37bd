"""Simulated votes for the demo and the web benchmark, so boards, charts and the personal board have
something to show without anyone rating. They are written straight to the database, each battle with a
one-turn conversation (an everyday question and the offline demo models' replies to it, as they would
have answered it live), then fitted; nothing here runs in a real study. The conversations are what the
personal board's judging quiz shows and what style control reads. The two writers,
`admitted_raters_write` and `voted_battles_write`, also give the tests their board data.
"""

import random

from django.utils import timezone

from leaderboard.services import fits_publish, ratings_replay
from raters.models import Country, Rater, Study
from tournaments import demo_models
from tournaments.models import Battle, LLMModel, Reply, Tournament, Turn, Vote, VoteChoice

# The simulated raters' questions (the demo models' replies are made from them).
DEMO_QUESTIONS = (
    "How do I plan a small vegetable garden on a balcony?",
    "What should I check before buying a used bicycle?",
    "How does compound interest work on a savings account?",
    "How can I prepare for a job interview at a hospital?",
    "What is a good way to learn Spanish vocabulary faster?",
    "How do I write a polite complaint to my landlord about the heating?",
    "How should I organise a weekly budget for a family of four?",
    "What are sensible first steps to train for a ten kilometre run?",
    "How do I choose a laptop for university coursework?",
    "How can I make my small flat warmer in winter without high bills?",
    "What should I pack for a three day hiking trip?",
    "How do I start keeping chickens in a suburban garden?",
)


def demo_votes_seed(*, raters: int, votes_per_rater: int, seed: int = 0) -> dict:
    """Made-up raters of the demo study in every country and group, voting on every dimension of the
    demo tournament (models of different, random skill; some ties), applied to the live ratings and
    fitted. Returns a summary."""
    rng = random.Random(seed)  # noqa: S311 (made-up votes, not secrets)
    tournament = Tournament.objects.get(slug="demo")
    study = Study.objects.get(slug="demo")
    models = list(tournament.llm_models.order_by("pk"))
    skills = {model.pk: rng.gauss(0, 1) for model in models}
    dimensions = list(tournament.dimensions.all())
    countries = list(Country.objects.prefetch_related("axes__groups"))
    people = [rng.choice(countries) for _ in range(raters)]
    created = admitted_raters_write(
        study,
        [
            (country, [rng.choice(list(axis.groups.all())).pk for axis in country.axes.all()])
            for country in people
        ],
    )
    plans = []
    for rater in created:
        for _ in range(votes_per_rater):
            model_a, model_b = rng.sample(models, 2)
            outcomes = {}
            for dimension in dimensions:
                if rng.random() < dimension.draw_probability:
                    outcomes[dimension.pk] = "tie"
                else:
                    edge = skills[model_a.pk] - skills[model_b.pk] + rng.gauss(0, 1)
                    outcomes[dimension.pk] = "a" if edge > 0 else "b"
            plans.append((rater, model_a, model_b, outcomes))
    votes = voted_battles_write(
        tournament, plans, pair_probability=1 / (len(models) * (len(models) - 1)), seconds_to_vote=30
    )
    conversations_write([vote.battle for vote in votes], models, rng)
    ratings_replay(tournament_id=tournament.pk)  # the live ratings, as the ratings worker would have them
    fits_publish(tournament_id=tournament.pk)
    return {"raters": raters, "battles": len(votes), "models": len(models), "dimensions": len(dimensions)}


def conversations_write(battles: list[Battle], models: list[LLMModel], rng: random.Random) -> None:
    """One turn per battle: a question drawn from DEMO_QUESTIONS and each side's demo model's reply."""
    styles = {model.pk: model.demo_style for model in models}
    turns = Turn.objects.bulk_create(
        (Turn(battle=battle, index=0, message=rng.choice(DEMO_QUESTIONS)) for battle in battles),
        batch_size=2000,
    )
    Reply.objects.bulk_create(
        (
            Reply(
                turn=turn,
                side=side,
                state=Reply.State.DONE,
                content=demo_models.reply(styles[model_id], [("user", turn.message)]),
            )
            for turn, battle in zip(turns, battles, strict=True)
            for side, model_id in (("a", battle.model_a_id), ("b", battle.model_b_id))
        ),
        batch_size=2000,
    )


def admitted_raters_write(study: Study, memberships: list[tuple[Country | None, list[int]]]) -> list[Rater]:
    """One admitted rater of `study` per (country, group ids), written straight to the database."""
    now = timezone.now()
    raters = Rater.objects.bulk_create(
        (
            Rater(
                study=study,
                source=Rater.Source.OPEN,
                status=Rater.Status.ADMITTED,
                consented_at=now,
                screened_at=now,
                admitted_at=now,
                country=country,
            )
            for country, _ in memberships
        ),
        batch_size=2000,
    )
    Rater.groups.through.objects.bulk_create(
        (
            Rater.groups.through(rater_id=rater.pk, group_id=group_id)
            for rater, (_, group_ids) in zip(raters, memberships, strict=True)
            for group_id in group_ids
        ),
        batch_size=5000,
    )
    return raters


def voted_battles_write(
    tournament: Tournament, plans: list[tuple], *, pair_probability: float, seconds_to_vote: int
) -> list[Vote]:
    """Voted battles written straight to the log, with no conversation: one per plan ``(rater, model_a,
    model_b, {dimension id: outcome})``. The boards and fits read only these rows."""
    now = timezone.now()
    battles = Battle.objects.bulk_create(
        (
            Battle(
                tournament=tournament,
                rater=rater,
                model_a=model_a,
                model_b=model_b,
                pair_probability=pair_probability,
                state=Battle.State.VOTED,
                ended_at=now,
            )
            for rater, model_a, model_b, _ in plans
        ),
        batch_size=2000,
    )
    votes = Vote.objects.bulk_create(
        (Vote(battle=battle, seconds_to_vote=seconds_to_vote) for battle in battles), batch_size=2000
    )
    VoteChoice.objects.bulk_create(
        (
            VoteChoice(vote=vote, dimension_id=dimension_id, outcome=outcome)
            for vote, plan in zip(votes, plans, strict=True)
            for dimension_id, outcome in plan[3].items()
        ),
        batch_size=5000,
    )
    return votes
