import time

from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse
from django.utils.http import urlencode

from leaderboard.services import fits_publish
from tournaments.models import Dimension, Tournament


class Command(BaseCommand):
    help = (
        "Fit a tournament's boards now (as the hourly beat task does): one snapshot per dimension "
        "with votes, the pooled board and every group's. Prints where to see them."
    )

    def add_arguments(self, parser):
        parser.add_argument("--tournament", required=True, help="Slug of the tournament.")
        parser.add_argument(
            "--dimension",
            action="append",
            dest="dimensions",
            metavar="SLUG",
            help="Fit only this dimension (repeat for several). Default: every dimension with votes.",
        )

    def handle(self, *args, tournament: str, dimensions: list[str] | None, **options):
        try:
            target = Tournament.objects.get(slug=tournament)
        except Tournament.DoesNotExist:
            raise CommandError(f"No tournament has the slug {tournament!r}.") from None
        if dimensions:
            known = set(Dimension.objects.filter(tournament=target).values_list("slug", flat=True))
            unknown = sorted(set(dimensions) - known)
            if unknown:
                raise CommandError(
                    f"Tournament {tournament!r} has no dimension {', '.join(map(repr, unknown))} "
                    f"(it has: {', '.join(sorted(known)) or 'none'})."
                )
        started = time.monotonic()

        def on_dimension(dimension: Dimension) -> None:
            self.stderr.write(
                f"[{time.monotonic() - started:6.1f} s] fitting {dimension.slug}…", style_func=_plain
            )

        snapshots = fits_publish(
            tournament_id=target.pk, dimension_slugs=dimensions, on_dimension=on_dimension
        )
        if not snapshots:
            raise CommandError(
                f"Nothing to fit: tournament {tournament!r} has no counted votes on those dimensions."
            )
        board = reverse("leaderboard:board")
        api = reverse("api:boards")
        took = time.monotonic() - started
        lines = [f"Published {len(snapshots)} snapshot(s) of {target.slug!r} in {took:.1f} s."]
        for snapshot in snapshots:
            query = {"tournament": target.slug, "dimension": snapshot.dimension.slug}
            lines.append(
                f"  {snapshot.dimension.slug}: snapshot {snapshot.pk}, {snapshot.votes:,} vote(s) — "
                f"page {board}?{urlencode(query)}  API {api}?{urlencode(query)}"
            )
        self.stdout.write("\n".join(lines))


def _plain(text: str) -> str:
    """Progress is not an error: keep it out of the red Django gives stderr on a terminal."""
    return text
