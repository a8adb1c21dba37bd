from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from raters.models import Rater
from raters.services import rater_erase


class Command(BaseCommand):
    help = "Erase a rater's personal data, battles and votes (right to erasure); ratings are rebuilt."

    def add_arguments(self, parser):
        parser.add_argument("rater_id", help="The rater's public id (a UUID, as shown in the admin).")

    def handle(self, *args, rater_id, **options):
        try:
            rater = Rater.objects.get(public_id=rater_id)
        except (Rater.DoesNotExist, ValidationError):
            raise CommandError(f"No rater has the id {rater_id!r}.") from None
        record = rater_erase(rater=rater, erased_by="command")
        self.stdout.write(
            f"Erased rater {record.rater_public_id}: {record.votes_removed} votes and "
            f"{record.battles_removed} battles removed; ratings are being rebuilt."
        )
