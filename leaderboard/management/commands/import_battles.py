import time
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from config.errors import ApplicationError
from leaderboard.services import ratings_replay
from tournaments.arena_format import BattleLog, UnreadableLog
from tournaments.imports import (
    DEFAULT_BATCH_SIZE,
    ImportReport,
    battles_import,
    import_study_slug,
    tournament_for_import,
)
from tournaments.models import Tournament, Vote

BAR_WIDTH = 24
MAX_NAMES_LISTED = 30


class Command(BaseCommand):
    help = (
        "Import external battle logs into a tournament of imported battles: Chatbot Arena's format (a JSON "
        "array or JSON lines with model_a, model_b, winner, optional judge, tstamp, anony, question_id) or "
        "CSV with the same columns and a header row. Each battle becomes a vote on the 'overall' dimension; "
        "re-importing a log creates nothing new. See tournaments/imports.py."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="The log: .json (array), .jsonl (one object a line) or .csv.")
        parser.add_argument("--tournament", required=True, help="Slug of the tournament to import into.")
        parser.add_argument(
            "--create",
            action="store_true",
            help="Make the tournament (with the default dimensions) if no tournament has that slug.",
        )
        parser.add_argument("--name", help="With --create: the new tournament's name (default: the slug).")
        parser.add_argument(
            "--format",
            choices=["arena", "csv"],
            help="arena: a JSON array or JSON lines (told apart by the first character); csv: a CSV with "
            "a header row. Default: csv for a .csv file, arena otherwise.",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=DEFAULT_BATCH_SIZE,
            help=f"Rows per batch (one COPY per table; default {DEFAULT_BATCH_SIZE}). The whole import "
            "is one transaction.",
        )
        parser.add_argument(
            "--progress-every",
            type=int,
            default=10_000,
            help="Print a progress line every this many rows (default 10,000; every batch on a terminal).",
        )
        parser.add_argument(
            "--include-named",
            action="store_true",
            help="Also import non-anonymous battles (anony false), whose judge saw the model names before "
            "voting. Skipped by default: Populus votes are blind.",
        )

    def handle(self, *args, file, tournament, create, name, format, batch_size, progress_every, **options):
        include_named = options["include_named"]
        if batch_size < 1 or progress_every < 1:
            raise CommandError("--batch-size and --progress-every must be at least 1.")
        if name and not create:
            raise CommandError("--name names a tournament made by --create.")
        try:
            # An unknown tournament is reported before the log is read; one to create is made only once
            # the log opens, so a mistyped path leaves no empty tournament behind.
            target = None if create else tournament_for_import(slug=tournament)
            log = BattleLog.open(file, format)
        except (ApplicationError, UnreadableLog) as error:
            raise CommandError(getattr(error, "message", str(error))) from None
        if target is None:
            try:
                target = tournament_for_import(slug=tournament, name=name, create=True)
            except ApplicationError as error:
                log.close()
                raise CommandError(error.message) from None
        if create and target.name != (name or target.slug):
            self.stderr.write(f"Tournament {target.slug!r} exists ({target.name!r}): importing into it.")
        progress = _Progress(self.stderr, every=progress_every)
        with log:
            try:
                # One transaction for the rows and the live ratings: all of it lands, or none.
                with transaction.atomic():
                    report = battles_import(
                        tournament=target,
                        rows=log.rows(),
                        batch_size=batch_size,
                        include_named=include_named,
                        on_progress=progress.show,
                        fraction_read=log.fraction_read,
                    )
                    _ratings_apply(report, tournament=target, on_progress=progress.show)
            except ApplicationError as error:
                progress.finish()
                raise CommandError(error.message) from None
        progress.finish()
        self._report_bad_rows(report)
        if report.rows_read == 0 and not report.stopped_by:
            raise CommandError(f"{file} holds no battles.")
        self._summary(report, target, file, log.format_name)
        if report.stopped_by:
            raise CommandError(f"{report.stopped_by} {report.imported} battle(s) were imported before that.")
        if report.bad == report.rows_read:
            raise CommandError(f"Every row of {file} was bad ({report.bad}); nothing was imported.")

    def _report_bad_rows(self, report: ImportReport) -> None:
        if not report.bad:
            return
        self.stderr.write(f"{report.bad:,} bad row(s), skipped:")
        for bad_row in report.bad_rows:
            self.stderr.write(f"  {bad_row}")
        if report.bad > len(report.bad_rows):
            self.stderr.write(f"  … and {report.bad - len(report.bad_rows):,} more bad row(s).")

    def _summary(self, report: ImportReport, tournament: Tournament, file: str, format_name: str) -> None:
        lines = [
            f"Imported {report.imported:,} battle(s) into tournament {tournament.slug!r} from {file} "
            f"({format_name}).",
            f"Rows: {report.rows_read:,} read, {report.imported:,} imported, "
            f"{report.already_imported:,} already imported, {report.named_skipped:,} non-anonymous skipped"
            f"{'' if not report.named_skipped else ' (--include-named imports them)'}, {report.bad:,} bad.",
        ]
        if report.models_created:
            names = ", ".join(report.models_created[:MAX_NAMES_LISTED])
            more = len(report.models_created) - MAX_NAMES_LISTED
            names += f", … and {more} more" if more > 0 else ""
            lines.append(f"New models, inactive: {len(report.models_created)} ({names}).")
        if report.raters_created:
            study = import_study_slug(tournament)
            lines.append(f"New anonymous raters: {report.raters_created:,}, in study {study!r}.")
        lines.append(
            f"Ratings: {report.ratings_applied:,} vote(s) applied to the live ratings, on the 'overall' "
            "dimension only (Arena logs carry one verdict per battle)."
        )
        rate = report.rows_read / max(report.rows_seconds, 1e-9)
        lines.append(
            f"Took {report.rows_seconds:.1f} s for the rows ({rate:,.0f} rows/s) and "
            f"{report.ratings_seconds:.1f} s for the live ratings."
        )
        self.stdout.write("\n".join(lines))


def _ratings_apply(
    report: ImportReport, *, tournament: Tournament, on_progress: Callable[[ImportReport], None]
) -> None:
    """Bring the live ratings up to date with the new votes: a replay of the tournament's whole log in
    memory, far faster than applying tens of thousands of votes one database transaction at a time."""
    report.phase = "rating"
    report.rows_seconds = time.monotonic() - report.started
    report.ratings_pending = Vote.objects.filter(battle__tournament=tournament, applied__isnull=True).count()
    on_progress(report)
    if report.ratings_pending:
        # Nothing new (a re-import): the live ratings are already those of the log.
        # The votes this import wrote are in this very transaction (see ratings_replay).
        ratings_replay(tournament_id=tournament.pk, new_votes_from=report.first_vote_id)
    report.ratings_applied = report.ratings_pending
    report.ratings_seconds = time.monotonic() - report.started - report.rows_seconds
    report.phase = "done"
    on_progress(report)


class _Progress:
    """Progress lines on stderr: overwritten in place on a terminal, one line every N rows otherwise."""

    def __init__(self, stream, *, every: int):
        self.stream = stream
        self.every = every
        self.tty = stream.isatty()
        self.next_at = every
        self.last_shown = -1
        self.open_line = False

    def show(self, report: ImportReport) -> None:
        if report.phase == "importing":
            if self.tty or report.rows_read >= self.next_at:
                self.next_at = (report.rows_read // self.every + 1) * self.every
                self._write(self._rows_line(report))
        elif report.phase == "rating" and self.last_shown != -2:
            if self.last_shown != report.rows_read:
                self._write(self._rows_line(report))
            self._end_line()
            self.stream.write(
                f"Applying {report.ratings_pending:,} vote(s) to the live ratings…", style_func=_plain
            )
            self.last_shown, self.next_at = -2, self.every
        elif report.phase == "rating" and (self.tty or report.ratings_applied >= self.next_at):
            self.next_at = (report.ratings_applied // self.every + 1) * self.every
            done = report.ratings_applied / max(report.ratings_pending, 1)
            self._write(f"{_bar(done)}  votes {report.ratings_applied:,} of {report.ratings_pending:,}")
        elif report.phase == "done":
            self._end_line()

    def finish(self) -> None:
        self._end_line()

    def _rows_line(self, report: ImportReport) -> str:
        self.last_shown = report.rows_read
        return (
            f"{_bar(report.fraction_read)}  rows {report.rows_read:,}  imported {report.imported:,}  "
            f"skipped {report.skipped:,}  bad {report.bad:,}  {report.rows_per_second:,.0f} rows/s"
        )

    def _write(self, line: str) -> None:
        if self.tty:
            self.stream.write(f"\r{line}", style_func=_plain, ending="")
            self.stream.flush()
            self.open_line = True
        else:
            self.stream.write(line, style_func=_plain)

    def _end_line(self) -> None:
        if self.open_line:
            self.stream.write("", style_func=_plain)
            self.open_line = False


def _bar(fraction: float) -> str:
    filled = round(fraction * BAR_WIDTH)
    return f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {fraction:4.0%}"


def _plain(text: str) -> str:
    """Progress is not an error: keep it out of the red Django gives stderr on a terminal."""
    return text
