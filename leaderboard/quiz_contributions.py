"""Quiz answers a visitor chose to add to the open data ("add my answers to the open data").

Only a visitor who ticks the box has anything stored: their answers (the quiz's address form, see
`leaderboard.quiz`), the publishable groups of their profile and the one other dimension they judged,
as a `QuizContribution`, with no rater, session or cookie. It is an audience of its own: the fits, the
live ratings and the battle export read `tournaments.VoteChoice`, never these rows, so they never reach
a study's boards. They get a board of their own (`contributed_board`: a Bradley-Terry-Davidson fit of
their overall verdicts, no groups) and a download of their own (`contribution_lines`).

Idempotent: the same answers sent twice store once (the digest of the tournament and the answers is
unique), and answers that extend ones already added (the visitor answered more and ticked again) grow
that contribution instead of adding the first answers a second time. Rate limited per network, like
other anonymous writes.
"""

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from django.db import IntegrityError, transaction

from config.errors import InvalidInput
from config.ratelimit import rate_limit
from leaderboard.models import QuizAnswer, QuizContribution
from leaderboard.quiz import DIMENSION, Answer, item_code, quiz_answers_parsed, quiz_data
from raters.models import Group
from stats.btd import Counts, fit_btd
from tournaments.models import Dimension, LLMModel, Tournament

FORMAT_VERSION = 1
OUTCOME_SIDES = {"a": 0, "b": 1, "tie": 2}


@dataclass(frozen=True)
class Added:
    contribution: QuizContribution
    answers: int  # verdicts stored by this submission (0: all were already there)


@dataclass(frozen=True)
class ContributedRow:
    name: str
    rank: int
    score: float  # log-odds, centred
    low: float
    high: float
    verdicts: int  # overall verdicts about the model


def quiz_contribution_add(
    *,
    tournament: Tournament,
    encoded: str,
    groups: tuple[Group, ...],
    dimension: Dimension | None,
    opted_in: bool,
    network: str,
) -> Added:
    """Store the visitor's answers, only if they ticked the box. Raises InvalidInput (nothing stored)
    without the tick, without answers, or with an answer the quiz cannot read."""
    if not opted_in:
        raise InvalidInput(
            "Tick \u201cadd my answers to the open data\u201d to add them. Nothing was stored."
        )
    rate_limit(
        action="quiz answers added",
        key=network,
        limit=settings.RATE_LIMIT_QUIZ_CONTRIBUTIONS_PER_MINUTE,
    )
    answers = _answers_checked(tournament, encoded)
    tokens = [answer.token for answer in answers]
    digests = [_digest(tournament, tokens[:n]) for n in range(1, len(tokens) + 1)]
    try:
        with transaction.atomic():
            return _stored(tournament, answers, digests, groups, dimension)
    except IntegrityError:
        # The same answers arrived twice at once: the other request stored them.
        return Added(QuizContribution.objects.get(digest=digests[-1]), 0)


def _answers_checked(tournament: Tournament, encoded: str) -> list[Answer]:
    data = quiz_data(tournament=tournament)
    if data is None or not encoded:
        raise InvalidInput(
            "There are no answers to add: judge at least one battle first. Nothing was stored."
        )
    answers, problems = quiz_answers_parsed(encoded=encoded, data=data)
    if problems or not answers:
        raise InvalidInput(
            "Some of these answers are not about a battle the quiz offers (an old or altered link). "
            "Nothing was stored; reload your board and tick the box again."
        )
    return answers


def _digest(tournament: Tournament, tokens: list[str]) -> str:
    return hashlib.sha256(f"{tournament.pk}|{'.'.join(tokens)}".encode()).hexdigest()


def _stored(tournament, answers, digests, groups, dimension) -> Added:
    known = QuizContribution.objects.select_for_update().filter(digest__in=digests)
    earlier = max(known, key=lambda c: len(c.encoded), default=None)
    if earlier is not None and earlier.digest == digests[-1]:
        return Added(earlier, 0)  # the same answers again
    already = len(earlier.encoded.split(".")) if earlier else 0  # answers stored before
    contribution = earlier or QuizContribution(tournament=tournament, dimension=dimension)
    contribution.digest, contribution.encoded = digests[-1], ".".join(a.token for a in answers)
    contribution.save()
    contribution.groups.set(groups)
    rows = _answer_rows(contribution, tournament, answers[already:], dimension)
    QuizAnswer.objects.bulk_create(rows)
    return Added(contribution, len(rows))


def _answer_rows(contribution, tournament, answers: list[Answer], dimension) -> list[QuizAnswer]:
    items = quiz_data(tournament=tournament).items
    overall = tournament.dimensions.get(slug=DIMENSION)
    rows = []
    for answer in answers:
        battle_id = items[answer.code].battle_id
        rows.append(
            QuizAnswer(
                contribution=contribution, battle_id=battle_id, dimension=overall, outcome=answer.outcome
            )
        )
        if dimension is not None and answer.dimension_outcome:
            rows.append(
                QuizAnswer(
                    contribution=contribution,
                    battle_id=battle_id,
                    dimension=dimension,
                    outcome=answer.dimension_outcome,
                )
            )
    return rows


def contributed_board(*, tournament: Tournament) -> tuple[list[ContributedRow], int, int]:
    """The board of the quiz visitors who added their answers: a Bradley-Terry-Davidson fit of their
    overall verdicts, with 95% intervals, best first; and how many contributions and verdicts it rests
    on. Empty rows before any verdict."""
    verdicts = list(
        QuizAnswer.objects.filter(contribution__tournament=tournament, dimension__slug=DIMENSION).values_list(
            "battle__model_a_id", "battle__model_b_id", "outcome"
        )
    )
    contributions = QuizContribution.objects.filter(tournament=tournament).count()
    if not verdicts:
        return [], contributions, 0
    model_ids = sorted({a for a, _, _ in verdicts} | {b for _, b, _ in verdicts})
    index = {model_id: k for k, model_id in enumerate(model_ids)}
    rows = np.zeros((len(verdicts), 6))
    for k, (model_a, model_b, outcome) in enumerate(verdicts):
        rows[k, 1], rows[k, 2] = index[model_a], index[model_b]
        rows[k, 3 + OUTCOME_SIDES[outcome]] = 1
    fit = fit_btd(Counts(cells=[()], rows=rows), n_models=len(model_ids), n_groups=0, with_groups=False)
    names = dict(LLMModel.objects.filter(pk__in=model_ids).values_list("pk", "name"))
    counts = np.bincount(rows[:, 1].astype(int), minlength=len(model_ids)) + np.bincount(
        rows[:, 2].astype(int), minlength=len(model_ids)
    )
    errors = fit.theta_se()
    order = np.argsort(-fit.theta, kind="stable")
    board = [
        ContributedRow(
            name=names[model_ids[k]],
            rank=rank,
            score=float(fit.theta[k]),
            low=float(fit.theta[k] - 1.96 * errors[k]),
            high=float(fit.theta[k] + 1.96 * errors[k]),
            verdicts=int(counts[k]),
        )
        for rank, k in enumerate(order, start=1)
    ]
    return board, contributions, len(verdicts)


def contribution_lines(*, tournament: Tournament) -> Iterator[str]:
    """The contributed answers as JSON lines, one contribution a line, oldest first: the quiz item code
    of each battle (stable, unlike the battle export's per-download pseudonyms, and no rater's id),
    its models, and the verdict per dimension. Groups are left out: a visitor's combination of groups
    could single them out, and the export publishes none."""
    contributions = QuizContribution.objects.filter(tournament=tournament).order_by("pk")
    for contribution in contributions.iterator(chunk_size=200):
        answers = contribution.answers.select_related("battle__model_a", "battle__model_b", "dimension")
        by_battle: dict[int, dict] = {}
        for answer in answers.order_by("pk"):
            entry = by_battle.setdefault(
                answer.battle_id,
                {
                    "item": item_code(answer.battle),
                    "model_a": answer.battle.model_a.slug,
                    "model_b": answer.battle.model_b.slug,
                    "votes": {},
                },
            )
            entry["votes"][answer.dimension.slug] = answer.outcome
        yield (
            json.dumps(
                {
                    "populus": FORMAT_VERSION,
                    "tournament": tournament.slug,
                    "added": contribution.created_at.date().isoformat(),
                    "answers": list(by_battle.values()),
                }
            )
            + "\n"
        )
