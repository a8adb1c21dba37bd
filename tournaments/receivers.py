"""How the battle flow answers what the people's side announces (connected in TournamentsConfig.ready)."""

from django.dispatch import receiver

from raters.models import Rater
from raters.signals import rater_erasing
from tournaments.models import Battle, Vote
from tournaments.signals import counted_votes_changed


@receiver(rater_erasing, dispatch_uid="tournaments.battles_erase")
def battles_erase(sender, *, rater: Rater, **kwargs) -> dict[str, int]:
    """Delete the erased rater's battles and votes; the ratings of their tournaments are rebuilt."""
    battles = Battle.objects.filter(rater=rater)
    votes = Vote.objects.filter(battle__in=battles)
    tournament_ids = set(votes.values_list("battle__tournament_id", flat=True))
    removed = {"votes": votes.count(), "battles": battles.count()}
    votes.delete()
    battles.delete()
    counted_votes_changed.send(sender=Battle, tournament_ids=tournament_ids)
    return removed
