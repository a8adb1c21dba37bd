"""Importing external battle logs (Chatbot Arena's battle format, or CSV) into a tournament.

Reading and validating rows is in `tournaments.arena_format` (plain Python); this module writes them. How
imported data is shaped:

- **Imported tournaments hold imported battles only.** A tournament is "imported" when its battles all
  belong to raters of its import study (slug ``import-<tournament slug>``). An import is refused if the
  tournament holds any battle of a rater from another study (a real panel or open-link rater), so
  imported and human-rated votes never mix on one board. Nothing in the schema marks the tournament.
- **One verdict, on "overall" only.** Arena logs carry one verdict per battle, so each imported vote has
  a single choice, on the "overall" dimension; the other dimensions get no imported votes and their
  boards stay empty. A tournament without dimensions gets the defaults first.
- **Imported tournaments publish their pooled board** whatever the number of distinct raters (see
  `tournaments.selectors.tournament_is_imported` and `leaderboard.boards`).
- **Models** are matched by name: a model of the tournament with that name, else a placeholder made by an
  earlier import (same API model name on the imported base URL). Unknown models become such placeholders:
  endpoint models on ``https://imported.invalid/v1``, inactive, so they are never matched into a live
  battle; their slug comes from the name, made unique.
- **Raters.** Each distinct ``judge`` becomes one anonymous rater of the import study: source "panel",
  the judge id kept only as its HMAC under ``PANEL_ID_HMAC_KEY``, admitted and screened, with no country
  and no groups, so their votes count on the pooled board only. A row without a judge is credited to a
  rater per ``question_id`` if it has one, else to one "anonymous" rater per tournament (the keyed values
  are namespaced so they never equal a judge id's hash).
- **Battles** are voted, with no turns or replies, ``pair_probability`` 1.0 (how the pair was drawn is
  unknown), and ``created_at`` / ``ended_at`` and the vote's ``created_at`` from ``tstamp`` (the import
  time without one). Quality-control checks are not run on imported votes.
- **Idempotent.** A battle's public id is ``uuid5(IMPORT_NAMESPACE, "<tournament slug>|<row digest>")``
  where the digest covers what the row says (models, winner, judge, question id, tstamp), not its line
  number or format. Importing a log again, or a log overlapping an earlier one (even converted between
  JSON and CSV), creates nothing new. The price: rows that say exactly the same thing are one battle, so
  a log listing one battle twice imports it once (Arena's rows carry a tstamp to the microsecond and a
  question id, so true repeats are rare there; a bare CSV of model_a, model_b, winner collapses repeats).
  Renaming the tournament's slug changes the keys: re-importing afterwards would duplicate.
- **Non-anonymous battles** (``anony`` false: the judge saw the model names before voting) are skipped
  unless asked for, since every Populus vote is cast blind.
- **Order.** Votes are stored and applied to the ratings in the order of the log (TrueSkill depends on
  order); the log is not re-sorted by tstamp.

Rows are written in batches, each in one transaction that locks the tournament row, so two imports into
one tournament take turns. After the last batch the new votes are applied to the live ratings.
"""

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.bulk import pg_copy, pg_ids_allocate
from config.errors import Conflict, InvalidInput, NotFound
from raters.models import Rater, Study
from raters.panel import keyed_hash
from tournaments.arena_format import WINNERS, ArenaBattle, BadRow, UnreadableLog
from tournaments.models import IMPORTED_BASE_URL, Battle, Dimension, LLMModel, Tournament, Vote, VoteChoice
from tournaments.selectors import import_study_slug
from tournaments.services import tournament_add_default_dimensions

# Fixed forever: imported battles' public ids derive from it, which is what makes re-imports idempotent.
IMPORT_NAMESPACE = uuid.UUID("2f6f4bb4-6a5e-5d8e-9b7e-8a3c1f0d2e41")
OVERALL_DIMENSION = "overall"
DEFAULT_BATCH_SIZE = 10_000
MAX_BAD_ROWS_KEPT = 50
# Keyed values of raters without a judge id start with a NUL, which no judge id from a log does.
_QUESTION_PREFIX = "\x00question_id:"
_ANONYMOUS = "\x00anonymous"
_RATER_CACHE_LIMIT = 100_000


@dataclass
class ImportReport:
    rows_read: int = 0
    imported: int = 0
    already_imported: int = 0  # in the database already, or repeated earlier in the log
    named_skipped: int = 0  # anony false, not asked for
    bad: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)  # the first MAX_BAD_ROWS_KEPT
    models_created: list[str] = field(default_factory=list)
    raters_created: int = 0
    ratings_pending: int = 0
    ratings_applied: int = 0
    # Set when the log turned unreadable part-way: the rows before it were imported.
    stopped_by: str = ""
    phase: str = "importing"  # then "rating", then "done"
    started: float = field(default_factory=time.monotonic)
    rows_seconds: float = 0.0  # reading and writing the rows
    ratings_seconds: float = 0.0  # rebuilding the live ratings

    @property
    def skipped(self) -> int:
        return self.already_imported + self.named_skipped

    @property
    def rows_per_second(self) -> float:
        return self.rows_read / max(time.monotonic() - self.started, 1e-6)


def battle_import_id(*, tournament: Tournament, row: ArenaBattle) -> uuid.UUID:
    return uuid.uuid5(IMPORT_NAMESPACE, f"{tournament.slug}|{row.content_key}")


def tournament_for_import(*, slug: str, name: str | None = None, create: bool = False) -> Tournament:
    """The tournament to import into; with `create`, made first if no tournament has the slug (a second
    run of the same command finds it and imports into it again, which changes nothing)."""
    existing = Tournament.objects.filter(slug=slug).first()
    if existing is not None:
        return existing
    if not create:
        raise NotFound(f"No tournament has the slug {slug!r}; pass --create (and --name) to make it.")
    tournament = Tournament(slug=slug, name=(name or slug)[:120])
    try:
        tournament.full_clean()
    except ValidationError as error:
        raise InvalidInput(f"Cannot create tournament {slug!r}: {'; '.join(error.messages)}") from None
    tournament.save()
    tournament_add_default_dimensions(tournament=tournament)
    return tournament


def tournament_import_check(*, tournament: Tournament) -> None:
    """Raise `Conflict` unless battles may be imported into this tournament."""
    if not settings.PANEL_ID_HMAC_KEY:
        raise Conflict("PANEL_ID_HMAC_KEY is not set: judge ids can only be stored as keyed hashes.")
    study_slug = import_study_slug(tournament)
    if Study.objects.filter(slug=study_slug).exclude(tournament=tournament).exists():
        raise Conflict(
            f"The study {study_slug!r}, where imported raters go, belongs to another tournament. "
            "Rename that study first."
        )
    real = Battle.objects.filter(tournament=tournament).exclude(rater__study__slug=study_slug).count()
    if real:
        raise Conflict(
            f"Tournament {tournament.slug!r} holds {real} battle(s) rated on Populus by panel or open-link "
            "raters. Imported battles must not mix with them: import into a tournament of its own."
        )
    if tournament.dimensions.exists() and not tournament.dimensions.filter(slug=OVERALL_DIMENSION).exists():
        raise Conflict(
            f"Tournament {tournament.slug!r} has no {OVERALL_DIMENSION!r} dimension, where imported "
            "verdicts are recorded."
        )


def battles_import(
    *,
    tournament: Tournament,
    rows: Iterable[ArenaBattle | BadRow],
    batch_size: int = DEFAULT_BATCH_SIZE,
    include_named: bool = False,
    on_progress: Callable[[ImportReport], None] | None = None,
    bulk_copy: bool = True,
) -> ImportReport:
    """Import parsed rows into the tournament in batches of `batch_size` rows. Bad rows are counted and
    the first ones kept in the report; if the rows' source turns unreadable (`UnreadableLog`), what came
    before is kept and the report says why it stopped. The live ratings are the caller's to rebuild (the
    import_battles command replays them)."""
    tournament_import_check(tournament=tournament)
    importer = _Importer(tournament, bulk_copy=bulk_copy)
    report = importer.report
    batch: list[ArenaBattle] = []
    since_flush = 0
    try:
        for row in rows:
            report.rows_read += 1
            since_flush += 1
            if isinstance(row, BadRow):
                report.bad += 1
                if len(report.bad_rows) < MAX_BAD_ROWS_KEPT:
                    report.bad_rows.append(row)
            elif row.anony is False and not include_named:
                report.named_skipped += 1
            else:
                batch.append(row)
            if since_flush >= batch_size:
                importer.write(batch)
                batch, since_flush = [], 0
                if on_progress:
                    on_progress(report)
    except UnreadableLog as error:
        report.stopped_by = str(error)
    importer.write(batch)
    return report


class _Importer:
    def __init__(self, tournament: Tournament, *, bulk_copy: bool = True):
        self.tournament = tournament
        # PostgreSQL's COPY when the database is PostgreSQL; the ORM's portable inserts otherwise.
        self.bulk_copy = bulk_copy
        self.report = ImportReport()
        self.study: Study | None = None
        self.overall_id: int | None = None
        self.model_ids: dict[str, int] = {}
        self.rater_ids: dict[str, int] = {}

    def write(self, batch: list[ArenaBattle]) -> None:
        if not batch:
            return
        with transaction.atomic():
            # Imports into one tournament take turns, so the existence check below stays true.
            Tournament.objects.select_for_update().get(pk=self.tournament.pk)
            if self.study is None:
                self._set_up()
            fresh: dict[uuid.UUID, ArenaBattle] = {}
            for row in batch:
                fresh.setdefault(battle_import_id(tournament=self.tournament, row=row), row)
            existing = _battles_existing(list(fresh))
            new = {public_id: row for public_id, row in fresh.items() if public_id not in existing}
            self.report.already_imported += len(batch) - len(new)
            if new:
                self._create(new)
                self.report.imported += len(new)

    def _set_up(self) -> None:
        if not self.tournament.dimensions.exists():
            tournament_add_default_dimensions(tournament=self.tournament)
        self.overall_id = Dimension.objects.get(tournament=self.tournament, slug=OVERALL_DIMENSION).pk
        self.study, _ = Study.objects.get_or_create(
            slug=import_study_slug(self.tournament),
            defaults={
                "name": f"Imported battles: {self.tournament.name}"[:120],
                "tournament": self.tournament,
                "is_open": False,
                "allows_open_entry": False,
            },
        )
        # Nobody may enter the import study through a link, even if someone opened it in the admin.
        Study.objects.filter(pk=self.study.pk).update(is_open=False, allows_open_entry=False)

    def _create(self, new: dict[uuid.UUID, ArenaBattle]) -> None:
        rows = list(new.values())
        models = self._model_ids({name for row in rows for name in (row.model_a, row.model_b)})
        raters = self._rater_ids([_rater_key(row) for row in rows])
        if connection.vendor == "postgresql" and self.bulk_copy:
            _battles_copy(self, new, models=models, raters=raters)
        else:
            _battles_orm(self, new, models=models, raters=raters)

    def _model_ids(self, names: set[str]) -> dict[str, int]:
        for name in sorted(names - self.model_ids.keys()):
            model = (
                self.tournament.llm_models.filter(name=name).order_by("pk").first()
                or LLMModel.objects.filter(base_url=IMPORTED_BASE_URL, api_model=name).order_by("pk").first()
                or self._model_create(name)
            )
            self.tournament.llm_models.add(model)
            self.model_ids[name] = model.pk
        return self.model_ids

    def _model_create(self, name: str) -> LLMModel:
        base = slugify(name)[:80].strip("-") or "imported-model"
        for attempt in range(1, 1000):
            suffix = "" if attempt == 1 else f"-{attempt}"
            slug = f"{base[: 80 - len(suffix)].rstrip('-')}{suffix}"
            if LLMModel.objects.filter(slug=slug).exists():
                continue
            try:
                with transaction.atomic():
                    model = LLMModel.objects.create(
                        slug=slug,
                        name=name,
                        provider=LLMModel.Provider.OPENAI_COMPATIBLE,
                        base_url=IMPORTED_BASE_URL,
                        api_model=name,
                        is_active=False,
                    )
            except IntegrityError:
                continue  # another import took the slug a moment ago
            self.report.models_created.append(name)
            return model
        raise Conflict(f"Could not find a free slug for the model {name!r}.")

    def _rater_ids(self, keys: list[str]) -> dict[str, int]:
        if len(self.rater_ids) > _RATER_CACHE_LIMIT:
            self.rater_ids.clear()  # one rater per question id can mean one per row: keep memory bounded
        hashes = {
            key: keyed_hash(settings.PANEL_ID_HMAC_KEY, key) for key in set(keys) - self.rater_ids.keys()
        }
        if not hashes:
            return self.rater_ids
        missing = set(hashes.values())
        found = dict(
            Rater.objects.filter(study=self.study, participant_hash__in=missing).values_list(
                "participant_hash", "pk"
            )
        )
        new_hashes = sorted(missing - found.keys())
        if connection.vendor == "postgresql" and self.bulk_copy:
            found.update(_raters_copy(study_id=self.study.pk, hashes=new_hashes))
        else:
            now = timezone.now()
            created = Rater.objects.bulk_create(
                Rater(
                    study=self.study,
                    source=Rater.Source.PANEL,
                    participant_hash=h,
                    status=Rater.Status.ADMITTED,
                    consented_at=now,
                    screened_at=now,
                    admitted_at=now,
                )
                for h in new_hashes
            )
            found.update((rater.participant_hash, rater.pk) for rater in created)
        self.report.raters_created += len(new_hashes)
        for key, h in hashes.items():
            self.rater_ids[key] = found[h]
        return self.rater_ids


def _battles_existing(public_ids: list[uuid.UUID]) -> set[uuid.UUID]:
    if connection.vendor == "postgresql":
        # One array parameter rather than one parameter per id: tens of thousands of ids a batch.
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT public_id FROM {Battle._meta.db_table} WHERE public_id = ANY(%s)",  # noqa: S608 (our table)
                [public_ids],
            )
            return {row[0] for row in cursor.fetchall()}
    return set(Battle.objects.filter(public_id__in=public_ids).values_list("public_id", flat=True))


def _battles_orm(
    importer: "_Importer",
    new: dict[uuid.UUID, ArenaBattle],
    *,
    models: dict[str, int],
    raters: dict[str, int],
) -> None:
    """The portable path (SQLite): the ORM's bulk inserts, a few thousand rows a second."""
    rows = list(new.values())
    now = timezone.now()
    battles = Battle.objects.bulk_create(
        Battle(
            public_id=public_id,
            tournament=importer.tournament,
            rater_id=raters[_rater_key(row)],
            model_a_id=models[row.model_a],
            model_b_id=models[row.model_b],
            state=Battle.State.VOTED,
            pair_probability=1.0,
            ended_at=row.timestamp or now,
        )
        for public_id, row in new.items()
    )
    votes = Vote.objects.bulk_create(Vote(battle=battle) for battle in battles)
    VoteChoice.objects.bulk_create(
        VoteChoice(vote=vote, dimension_id=importer.overall_id, outcome=row.outcome)
        for vote, row in zip(votes, rows, strict=True)
    )
    # created_at is auto_now_add, which bulk_create overwrites with now; the log's time goes in after.
    dated = [
        (b, v, row.timestamp)
        for b, v, row in zip(battles, votes, rows, strict=True)
        if row.tstamp is not None
    ]
    for battle, vote, when in dated:
        battle.created_at = vote.created_at = when
    if dated:
        Battle.objects.bulk_update([b for b, _, _ in dated], ["created_at"])
        Vote.objects.bulk_update([v for _, v, _ in dated], ["created_at"])


def _battles_copy(
    importer: "_Importer",
    new: dict[uuid.UUID, ArenaBattle],
    *,
    models: dict[str, int],
    raters: dict[str, int],
) -> None:
    """The PostgreSQL path: ids drawn from the tables' sequences in log order, then one COPY per table.
    Every value is an id, a UUID, a constant or a timestamp we format, so no text needs escaping."""
    now = timezone.now().isoformat()
    count = len(new)
    battle_ids = pg_ids_allocate(model=Battle, count=count)
    vote_ids = pg_ids_allocate(model=Vote, count=count)
    choice_ids = pg_ids_allocate(model=VoteChoice, count=count)
    tournament_id, overall_id = importer.tournament.pk, importer.overall_id
    battles, votes, choices = [], [], []
    for battle_id, vote_id, choice_id, (public_id, row) in zip(
        battle_ids, vote_ids, choice_ids, new.items(), strict=True
    ):
        when = now if row.tstamp is None else datetime.fromtimestamp(row.tstamp, tz=UTC).isoformat()
        battles.append(
            f"{battle_id}\t{public_id}\t{tournament_id}\t{raters[_rater_key(row)]}\t{models[row.model_a]}\t"
            f"{models[row.model_b]}\tvoted\t1\t\t\t\t{when}\t{when}\n"
        )
        votes.append(f"{vote_id}\t{battle_id}\t{when}\t\\N\t\n")
        choices.append(f"{choice_id}\t{vote_id}\t{overall_id}\t{WINNERS[row.winner]}\n")
    pg_copy(
        model=Battle,
        columns=[
            "id", "public_id", "tournament_id", "rater_id", "model_a_id", "model_b_id", "state",
            "pair_probability", "void_reason", "flagged_reason", "attention_expected", "created_at",
            "ended_at",
        ],
        lines=battles,
    )  # fmt: skip
    pg_copy(
        model=Vote,
        columns=["id", "battle_id", "created_at", "seconds_to_vote", "attention_answer"],
        lines=votes,
    )
    pg_copy(model=VoteChoice, columns=["id", "vote_id", "dimension_id", "outcome"], lines=choices)


def _raters_copy(*, study_id: int, hashes: list[str]) -> dict[str, int]:
    if not hashes:
        return {}
    now = timezone.now().isoformat()
    ids = pg_ids_allocate(model=Rater, count=len(hashes))
    pg_copy(
        model=Rater,
        columns=[
            "id", "public_id", "study_id", "source", "participant_hash", "panel_session_hash", "status",
            "consented_at", "country_id", "screened_at", "admitted_at", "completed_at", "api_client_id",
            "created_at", "battles_voted",
        ],
        lines=[
            f"{rater_id}\t{uuid.uuid4()}\t{study_id}\t{Rater.Source.PANEL}\t{h}\t\t{Rater.Status.ADMITTED}\t"
            f"{now}\t\\N\t{now}\t{now}\t\\N\t\\N\t{now}\t0\n"
            for rater_id, h in zip(ids, hashes, strict=True)
        ],
    )  # fmt: skip
    return dict(zip(hashes, ids, strict=True))


def _rater_key(row: ArenaBattle) -> str:
    """What the row's rater is keyed on: the judge id, else the question id, else one anonymous rater."""
    if row.judge is not None:
        return row.judge
    if row.question_id is not None:
        return _QUESTION_PREFIX + row.question_id
    return _ANONYMOUS
