"""How the ratings follow the battle flow (connected in LeaderboardConfig.ready): each recorded vote is
applied by the single ratings writer, and a change in which votes count rebuilds the tournament's live
ratings from the log. Both run once the sender's transaction commits."""

from django.dispatch import receiver

from leaderboard.tasks import apply_votes, replay_ratings
from tournaments.signals import counted_votes_changed, vote_recorded


@receiver(vote_recorded, dispatch_uid="leaderboard.vote_apply")
def vote_apply(sender, *, vote_id: int, **kwargs) -> None:
    apply_votes.delay_on_commit(vote_id)


@receiver(counted_votes_changed, dispatch_uid="leaderboard.ratings_rebuild")
def ratings_rebuild(sender, *, tournament_ids, **kwargs) -> None:
    for tournament_id in sorted(tournament_ids):
        replay_ratings.delay_on_commit(tournament_id)
