from celery import shared_task

from leaderboard import services


@shared_task
def apply_votes(vote_id: int) -> int:
    """Apply this vote, and any earlier one still waiting, on the single-writer `ratings` queue."""
    return services.ratings_apply_pending(up_to_vote_id=vote_id)


@shared_task
def reconcile_ratings() -> int:
    return services.ratings_apply_pending()


@shared_task
def replay_ratings(tournament_id: int) -> int:
    return services.ratings_replay(tournament_id=tournament_id)


@shared_task
def publish_fits() -> int:
    """The periodic batch fit of every tournament with votes; returns how many snapshots were stored."""
    return sum(len(services.fits_publish(tournament_id=t)) for t in services.tournaments_with_votes())


@shared_task
def publish_fits_for(tournament_id: int) -> int:
    return len(services.fits_publish(tournament_id=tournament_id))
