from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from leaderboard.live_trueskill import DEFAULT_MU, DEFAULT_SIGMA, rate_outcome
from leaderboard.models import AppliedVote, Rating
from raters.models import Rater
from tournaments.models import Outcome, Vote


def ratings_apply_vote(*, vote_id: int) -> bool:
    """Apply one vote to the live ratings of every dimension, pooled and for each of the rater's groups.

    Exactly once: the applied marker is written in the same transaction as the ratings and is unique per
    vote, so a repeat (a redelivered task, a reconciler pass) changes nothing. Returns whether this call
    handled the vote.
    """
    with transaction.atomic():
        vote = Vote.objects.select_for_update(of=("self",)).select_related("battle__rater").get(pk=vote_id)
        if AppliedVote.objects.filter(vote=vote).exists():
            return False
        battle = vote.battle
        if battle.flagged_reason or battle.rater.status == Rater.Status.EXCLUDED:
            # A model gave its identity away, or quality control excluded the rater: the vote stays for
            # audit but moves no rating. Replays ask again, so lifting an exclusion brings it back.
            AppliedVote.objects.create(vote=vote, counted=False)
            return True
        group_ids = list(battle.rater.groups.values_list("pk", flat=True))
        choices = list(vote.choices.select_related("dimension"))
        ratings = _locked_ratings(
            dimension_ids=[c.dimension_id for c in choices],
            group_ids=group_ids,
            model_ids=[battle.model_a_id, battle.model_b_id],
        )
        now = timezone.now()
        for choice in choices:
            for group_id in [None, *group_ids]:
                rating_a = ratings[(choice.dimension_id, group_id, battle.model_a_id)]
                rating_b = ratings[(choice.dimension_id, group_id, battle.model_b_id)]
                _update_pair(
                    rating_a,
                    rating_b,
                    outcome=choice.outcome,
                    draw_probability=choice.dimension.draw_probability,
                )
                rating_a.updated_at = rating_b.updated_at = now
        Rating.objects.bulk_update(ratings.values(), ["mu", "sigma", "wins", "losses", "ties", "updated_at"])
        AppliedVote.objects.create(vote=vote)
    return True


def _locked_ratings(*, dimension_ids: list[int], group_ids: list[int], model_ids: list[int]) -> dict:
    """Every rating row the vote touches, created if missing and locked in primary-key order so that
    concurrent writers cannot deadlock."""
    Rating.objects.bulk_create(
        [
            Rating(dimension_id=d, group_id=g, model_id=m, mu=DEFAULT_MU, sigma=DEFAULT_SIGMA)
            for d in dimension_ids
            for g in [None, *group_ids]
            for m in model_ids
        ],
        ignore_conflicts=True,
    )
    rows = (
        Rating.objects.select_for_update()
        .filter(dimension_id__in=dimension_ids, model_id__in=model_ids)
        .filter(Q(group__isnull=True) | Q(group_id__in=group_ids))
        .order_by("pk")
    )
    return {(r.dimension_id, r.group_id, r.model_id): r for r in rows}


def _update_pair(rating_a: Rating, rating_b: Rating, *, outcome: str, draw_probability: float) -> None:
    (rating_a.mu, rating_a.sigma), (rating_b.mu, rating_b.sigma) = rate_outcome(
        (rating_a.mu, rating_a.sigma),
        (rating_b.mu, rating_b.sigma),
        outcome=outcome,
        draw_probability=draw_probability,
    )
    if outcome == Outcome.TIE:
        rating_a.ties += 1
        rating_b.ties += 1
    else:
        winner, loser = (rating_a, rating_b) if outcome == Outcome.A else (rating_b, rating_a)
        winner.wins += 1
        loser.losses += 1


def ratings_apply_pending(*, up_to_vote_id: int | None = None, tournament_id: int | None = None) -> int:
    """Apply every vote not yet applied, oldest first, so ratings follow vote order. Returns how many."""
    pending = Vote.objects.filter(applied__isnull=True).order_by("pk")
    if up_to_vote_id is not None:
        pending = pending.filter(pk__lte=up_to_vote_id)
    if tournament_id is not None:
        pending = pending.filter(battle__tournament_id=tournament_id)
    return sum(ratings_apply_vote(vote_id=vote_id) for vote_id in pending.values_list("pk", flat=True))


def ratings_replay(*, tournament_id: int) -> int:
    """Rebuild every live rating of a tournament from its vote log, in vote order. Used after votes are
    removed (erasure); readers keep seeing the old ratings until the rebuilt ones commit."""
    with transaction.atomic():
        Rating.objects.filter(dimension__tournament_id=tournament_id).delete()
        AppliedVote.objects.filter(vote__battle__tournament_id=tournament_id).delete()
        return ratings_apply_pending(tournament_id=tournament_id)
