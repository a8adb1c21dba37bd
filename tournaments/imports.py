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

Rows are written in batches, all in one transaction that locks the tournament row: two imports into one
tournament take turns, and an import that fails part-way leaves nothing behind. The import_battles command
rebuilds the live ratings in the same transaction.

How an import goes fast (PostgreSQL; SQLite takes the ORM's portable path, a few thousand rows a second).
Measured at 170,000 battles (in CPU-seconds, about 20 in all), the time went to the foreign-key triggers
(6-7 s, two thirds of the database's work: eight per battle, one query each), to Python's work per row
(5.5 s: reading JSON, validating, hashing the public id, formatting the COPY text), to drawing ids from
the sequences (about 3 s, the sequence being looked up per id) and to storing rows and their index
entries. So:

- the log is read, validated and hashed in a thread of its own (`_read_ahead`), a few batches ahead,
  while this one writes: the two take turns on Python's lock, and the server stores one batch while the
  next is being read;
- each batch goes in as one COPY per table, ids drawn ahead from the tables' sequences
  (`config.bulk.pg_ids_allocate`, the sequence named once per batch);
- foreign keys are checked once per referenced row rather than per written row where the database role
  allows it (`config.bulk`: the tournament, dimension, models and raters are checked and locked as the
  triggers would; every other reference is to a row written in the same batch); otherwise the triggers
  run, fired at the end of each batch so their queue never grows with the log.
"""

import contextlib
import hashlib
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django.utils.text import slugify

from config.bulk import (
    pg_can_skip_triggers,
    pg_copy,
    pg_ids_allocate,
    pg_rows_key_share,
    pg_triggers_skipped,
)
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
# Batches the reading thread may be ahead of the writing one: enough to keep both busy, and what bounds
# the memory an import holds (a few batches of parsed rows), whatever the log's size.
READ_AHEAD_BATCHES = 2
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
    fraction_read: float = 0.0  # how far through the log the rows counted so far reach (0 to 1)
    # The first id of the votes written (in increasing order from there), if any were by COPY.
    first_vote_id: int | None = None
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


class _ImportIds:
    """`battle_import_id` as 32 hex digits (which PostgreSQL and Django both read as a UUID), made
    without a UUID object per row: the SHA-1 of the namespace and the slug is computed once and copied,
    then the version and variant bits are set as `uuid.uuid5` sets them."""

    def __init__(self, tournament: Tournament):
        self._prefix = hashlib.sha1(  # noqa: S324 (UUID version 5 is defined on SHA-1)
            IMPORT_NAMESPACE.bytes + f"{tournament.slug}|".encode()
        )

    def hex(self, row: ArenaBattle) -> str:
        digest = self._prefix.copy()
        digest.update(row.content_key.encode())
        value = int.from_bytes(digest.digest()[:16])
        return f"{value & _UUID_CLEAR | _UUID_VERSION_5:032x}"


# uuid.UUID's own masks: clear the version nibble and the variant bits, then set version 5, RFC 4122.
_UUID_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID_VERSION_5 = (5 << 76) | (0x8000 << 48)


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
    fraction_read: Callable[[], float] | None = None,
) -> ImportReport:
    """Import parsed rows into the tournament in batches of `batch_size` rows, in one transaction. Bad
    rows are counted and the first ones kept in the report; if the rows' source turns unreadable
    (`UnreadableLog`), what came before is kept and the report says why it stopped. `fraction_read`
    tells how far through its log `rows` has got, for the progress line. The live ratings are the
    caller's to rebuild (the import_battles command replays them)."""
    tournament_import_check(tournament=tournament)
    importer = _Importer(tournament, bulk_copy=bulk_copy)
    report = importer.report
    ids = _ImportIds(tournament)

    def read(put: Callable[[_Batch], None]) -> None:
        """In the reading thread: parse, classify and hash rows into batches. No database work here."""
        batch = _Batch()
        try:
            for row in rows:
                batch.rows_read += 1
                if row.__class__ is BadRow:
                    batch.bad_rows.append(row)
                elif row.anony is False and not include_named:
                    batch.named_skipped += 1
                else:
                    batch.battles.setdefault(ids.hex(row), row)
                if batch.rows_read >= batch_size:
                    batch.fraction_read = fraction_read() if fraction_read else 0.0
                    put(batch)
                    batch = _Batch()
        except UnreadableLog as error:
            batch.stopped_by = str(error)
        batch.fraction_read = fraction_read() if fraction_read else 1.0
        put(batch)

    with (
        transaction.atomic(),
        # Closed on the way out, even by an error: the reading thread stops then.
        contextlib.closing(_read_ahead(read, depth=READ_AHEAD_BATCHES)) as batches,
    ):
        # Imports into one tournament take turns, so the existence checks stay true until commit.
        Tournament.objects.select_for_update().get(pk=tournament.pk)
        for batch in batches:
            report.rows_read += batch.rows_read
            report.named_skipped += batch.named_skipped
            report.bad += len(batch.bad_rows)
            report.bad_rows.extend(batch.bad_rows[: MAX_BAD_ROWS_KEPT - len(report.bad_rows)])
            report.stopped_by = batch.stopped_by
            report.fraction_read = batch.fraction_read
            # Rows repeating another of the same batch count as already imported.
            repeated = batch.rows_read - batch.named_skipped - len(batch.bad_rows) - len(batch.battles)
            report.already_imported += repeated
            importer.write(batch.battles)
            if on_progress and batch.rows_read:
                on_progress(report)
        _statistics_refresh(imported=report.imported)
    return report


def _statistics_refresh(*, imported: int) -> None:
    """ANALYZE the tables an import grew by a tenth or more (autovacuum's own rule), at once rather
    than a minute after commit: with the counts of an empty table, PostgreSQL plans the queries that
    follow (the ratings replay, the fit, the boards) for a handful of rows, and nested loops over
    millions of rows are slow."""
    if connection.vendor != "postgresql" or not imported:
        return
    tables = [model._meta.db_table for model in (Battle, Vote, VoteChoice)]
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [tables[0]])
        (known,) = cursor.fetchone()
        # -1 (PostgreSQL 14 and later) or 0: never analyzed.
        if known <= 0 or imported >= 0.1 * known:
            cursor.execute(f"ANALYZE {', '.join(tables)}")


@dataclass
class _Batch:
    rows_read: int = 0
    named_skipped: int = 0
    bad_rows: list[BadRow] = field(default_factory=list)
    battles: dict[str, ArenaBattle] = field(default_factory=dict)  # public id (hex): the first row saying it
    fraction_read: float = 0.0
    stopped_by: str = ""


class _Abandoned(Exception):
    """The consumer of `_read_ahead` has stopped: the producing thread ends."""


_FINISHED = object()


def _read_ahead(produce: Callable[[Callable], None], *, depth: int) -> Iterator:
    """Yield what `produce(put)` puts, in order, while `produce` runs on in a thread of its own at most
    `depth` items ahead. An exception in `produce` is raised here; leaving the loop early stops it."""
    items: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item) -> None:
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return
            except queue.Full:
                continue
        raise _Abandoned

    def run() -> None:
        try:
            produce(put)
            put(_FINISHED)
        except _Abandoned:
            pass
        except BaseException as error:  # handed to the consumer, which raises it
            with contextlib.suppress(_Abandoned):
                put(_Failed(error))

    thread = threading.Thread(target=run, name="import-read-ahead", daemon=True)
    thread.start()
    try:
        while (item := items.get()) is not _FINISHED:
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()


@dataclass
class _Failed:
    error: BaseException


class _Importer:
    def __init__(self, tournament: Tournament, *, bulk_copy: bool = True):
        self.tournament = tournament
        # PostgreSQL's COPY when the database is PostgreSQL; the ORM's portable inserts otherwise.
        self.bulk_copy = bulk_copy and connection.vendor == "postgresql"
        # Whether this import checks its foreign keys itself (see config.bulk); decided at set-up.
        self.skip_triggers = False
        self.report = ImportReport()
        self.study: Study | None = None
        self.overall_id: int | None = None
        self.model_ids: dict[str, int] = {}
        self.rater_ids: dict[str, int] = {}

    def write(self, battles: dict[str, ArenaBattle]) -> None:
        """Write the battles not imported before (keys: public ids as hex)."""
        if not battles:
            return
        if self.study is None:
            self._set_up()
        existing = _battles_existing(list(battles))
        new = [(public_id, row) for public_id, row in battles.items() if public_id not in existing]
        self.report.already_imported += len(battles) - len(new)
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
        if self.bulk_copy:
            self.skip_triggers = pg_can_skip_triggers()
        if self.skip_triggers:
            # The tournament is locked already (FOR UPDATE, stronger than a trigger's lock).
            pg_rows_key_share(model=Dimension, ids=[self.overall_id])

    def _create(self, new: list[tuple[str, ArenaBattle]]) -> None:
        models = self._model_ids({name for _, row in new for name in (row.model_a, row.model_b)})
        raters = self._rater_ids({_rater_key(row) for _, row in new})
        if self.bulk_copy:
            with pg_triggers_skipped(self.skip_triggers):
                _battles_copy(self, new, models=models, raters=raters)
            if not self.skip_triggers:
                _deferred_checks_run()
        else:
            _battles_orm(self, new, models=models, raters=raters)

    def _model_ids(self, names: set[str]) -> dict[str, int]:
        added = []
        for name in sorted(names - self.model_ids.keys()):
            model = (
                self.tournament.llm_models.filter(name=name).order_by("pk").first()
                or LLMModel.objects.filter(base_url=IMPORTED_BASE_URL, api_model=name).order_by("pk").first()
                or self._model_create(name)
            )
            self.tournament.llm_models.add(model)
            self.model_ids[name] = model.pk
            added.append(model.pk)
        if self.skip_triggers:
            pg_rows_key_share(model=LLMModel, ids=added)
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

    def _rater_ids(self, keys: set[str]) -> dict[str, int]:
        if len(self.rater_ids) > _RATER_CACHE_LIMIT:
            self.rater_ids.clear()  # one rater per question id can mean one per row: keep memory bounded
        hashes = {key: keyed_hash(settings.PANEL_ID_HMAC_KEY, key) for key in keys - self.rater_ids.keys()}
        if not hashes:
            return self.rater_ids
        missing = set(hashes.values())
        found = dict(
            Rater.objects.filter(study=self.study, participant_hash__in=missing).values_list(
                "participant_hash", "pk"
            )
        )
        if self.skip_triggers:
            pg_rows_key_share(model=Rater, ids=found.values())
        new_hashes = sorted(missing - found.keys())
        if self.bulk_copy:
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


def _battles_existing(public_ids: list[str]) -> set[str]:
    """Which of these public ids (32 hex digits) battles have already, as hex."""
    if connection.vendor == "postgresql":
        # One text parameter rather than one parameter per id, or a list psycopg adapts item by item:
        # tens of thousands of ids a batch.
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT public_id FROM {Battle._meta.db_table} "  # noqa: S608 (our table)
                "WHERE public_id = ANY(string_to_array(%s, ',')::uuid[])",
                [",".join(public_ids)],
            )
            return {row[0].hex for row in cursor.fetchall()}
    found = Battle.objects.filter(public_id__in=public_ids).values_list("public_id", flat=True)
    return {public_id.hex for public_id in found}


def _deferred_checks_run() -> None:
    """Run the foreign-key checks queued so far now rather than at commit: the queue stays one batch
    long, and the progress line shows their time where it is spent."""
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET CONSTRAINTS ALL DEFERRED")


def _battles_orm(
    importer: "_Importer",
    new: list[tuple[str, ArenaBattle]],
    *,
    models: dict[str, int],
    raters: dict[str, int],
) -> None:
    """The portable path (SQLite): the ORM's bulk inserts, a few thousand rows a second."""
    rows = [row for _, row in new]
    now = timezone.now()
    battles = Battle.objects.bulk_create(
        Battle(
            public_id=uuid.UUID(public_id),
            tournament=importer.tournament,
            rater_id=raters[_rater_key(row)],
            model_a_id=models[row.model_a],
            model_b_id=models[row.model_b],
            state=Battle.State.VOTED,
            pair_probability=1.0,
            ended_at=row.timestamp or now,
        )
        for public_id, row in new
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
    new: list[tuple[str, ArenaBattle]],
    *,
    models: dict[str, int],
    raters: dict[str, int],
) -> None:
    """The PostgreSQL path: battle and vote ids drawn from the tables' sequences in log order, then one
    COPY per table, its lines made as they are sent. Every value is an id, a UUID, a constant or a
    timestamp we format, so no text needs escaping."""
    now = timezone.now().isoformat()
    battle_ids = pg_ids_allocate(model=Battle, count=len(new))
    vote_ids = pg_ids_allocate(model=Vote, count=len(new))
    if importer.report.first_vote_id is None:
        importer.report.first_vote_id = vote_ids[0]
    tournament_id, overall_id = importer.tournament.pk, importer.overall_id
    # Each battle's time, made once and written twice (battle and vote).
    fromtimestamp = datetime.fromtimestamp
    stamps = [now if row.tstamp is None else fromtimestamp(row.tstamp, UTC).isoformat() for _, row in new]
    pg_copy(
        model=Battle,
        columns=[
            "id", "public_id", "tournament_id", "rater_id", "model_a_id", "model_b_id", "state",
            "pair_probability", "void_reason", "flagged_reason", "attention_expected", "created_at",
            "ended_at",
        ],
        lines=(
            f"{battle_id}\t{public_id}\t{tournament_id}\t{raters[_rater_key(row)]}\t{models[row.model_a]}\t"
            f"{models[row.model_b]}\tvoted\t1\t\t\t\t{when}\t{when}\n"
            for battle_id, (public_id, row), when in zip(battle_ids, new, stamps, strict=True)
        ),
    )  # fmt: skip
    pg_copy(
        model=Vote,
        columns=["id", "battle_id", "created_at", "seconds_to_vote", "attention_answer"],
        lines=(
            f"{vote_id}\t{battle_id}\t{when}\t\\N\t\n"
            for vote_id, battle_id, when in zip(vote_ids, battle_ids, stamps, strict=True)
        ),
    )
    # Choices are referenced by nothing: their ids come from the table's own default.
    pg_copy(
        model=VoteChoice,
        columns=["vote_id", "dimension_id", "outcome"],
        lines=(
            f"{vote_id}\t{overall_id}\t{WINNERS[row.winner]}\n"
            for vote_id, (_, row) in zip(vote_ids, new, strict=True)
        ),
    )


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
