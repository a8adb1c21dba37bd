"""Bulk writes for PostgreSQL: COPY, ids drawn ahead from a table's sequence, and foreign keys checked
once per referenced row instead of once per written row.

Hundreds of thousands of rows a second where the ORM's bulk inserts manage a few thousand. Callers keep a
portable path for other databases (``connection.vendor != "postgresql"``).

Why the foreign keys: PostgreSQL checks a foreign key with a trigger that runs one query per written row
(about 12 µs each on a 2-core machine). A battle import writes four rows with eight foreign keys per
battle, and those checks were two thirds of the database's work. `pg_triggers_skipped` turns triggers
off for the caller's own COPYs (`session_replication_role = replica`, as pg_restore does); the caller
then does what the triggers did, once per referenced row: `pg_rows_key_share` checks that the
referenced rows exist and locks them against deletion until commit, as each trigger would have. Rows
that reference rows written in the same COPYs need no lock: no other transaction can see them yet.
Turning triggers off needs a superuser (or, from PostgreSQL 15, a role granted SET on the parameter);
`pg_can_skip_triggers` tells, and callers fall back to the triggers.
"""

import contextlib
from collections.abc import Iterable

from django.db import DatabaseError, connection, transaction
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

# Lines per write: small enough that the server stores one chunk while the next is being formatted.
COPY_CHUNK_LINES = 2_000


def pg_ids_allocate(*, model: type[Model], count: int) -> list[int]:
    """`count` fresh primary keys from the table's own sequence, in increasing order (PostgreSQL).

    The sequence's name goes into the query as a constant (looked up per id, it cost 8 µs an id), and
    the ids come back as one text value rather than a row each."""
    if count <= 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [model._meta.db_table])
        (sequence,) = cursor.fetchone()
        cursor.execute(
            "SELECT string_agg(nextval(%s::regclass)::text, ',') FROM generate_series(1, %s)",
            [sequence, count],
        )
        (text,) = cursor.fetchone()
    return sorted(map(int, text.split(",")))


def pg_copy(*, model: type[Model], columns: list[str], lines: Iterable[str]) -> None:
    """COPY tab-separated `lines` into the model's table (PostgreSQL), sent in chunks as they come, so
    the server stores one chunk while the caller makes the next.

    Columns the lines leave out take their field's constant default (or NULL where the field allows
    it), so a field added to the model later cannot make the COPY fail; one with neither raises.
    """
    filled = _defaults_for_missing(model, columns)
    if filled:
        tail = "\t" + "\t".join(text for _column, text in filled) + "\n"
        lines = (line[:-1] + tail for line in lines)
        columns = [*columns, *(column for column, _text in filled)]
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    chunk: list[str] = []
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for line in lines:
            chunk.append(line)
            if len(chunk) == COPY_CHUNK_LINES:
                copy.write("".join(chunk))
                chunk = []
        if chunk:
            copy.write("".join(chunk))


def pg_can_skip_triggers() -> bool:
    """Whether this connection may turn triggers off for its own writes (`pg_triggers_skipped`)."""
    try:
        # In a savepoint of its own: a refusal leaves the caller's transaction usable.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute("SET LOCAL session_replication_role = DEFAULT")
    except DatabaseError:
        return False
    return True


@contextlib.contextmanager
def pg_triggers_skipped(skip: bool = True):
    """Writes in the block fire no triggers, foreign-key checks included (PostgreSQL, in a transaction;
    only where `pg_can_skip_triggers`). The caller vouches for the references of every row it writes:
    see the module's docstring. With `skip` false, a plain block."""
    if not skip:
        yield
        return
    if not connection.in_atomic_block:
        raise RuntimeError("pg_triggers_skipped works inside a transaction only")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
    yield
    # Not reached after an error: rolling the block's transaction or savepoint back undoes the SET.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = DEFAULT")


def pg_rows_key_share(*, model: type[Model], ids: Iterable[int]) -> None:
    """What a foreign-key trigger does for each row that references these: check that each row exists
    and lock it against deletion (and key changes) until the transaction ends (PostgreSQL)."""
    wanted = set(ids)
    if not wanted:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {table} WHERE id = ANY(%s) FOR KEY SHARE",  # noqa: S608 (our table)
            [sorted(wanted)],
        )
        missing = wanted - {row[0] for row in cursor.fetchall()}
    if missing:
        raise model.DoesNotExist(f"No {model._meta.verbose_name} with id {sorted(missing)[:5]}")


def _defaults_for_missing(model: type[Model], columns: list[str]) -> list[tuple[str, str]]:
    """(column, COPY text) for each concrete column not in `columns`, from its field's default."""
    filled = []
    for field in model._meta.concrete_fields:
        if field.column in columns or isinstance(field, AutoFieldMixin):
            continue  # an auto primary key left out is drawn from its sequence by PostgreSQL
        if field.has_default() and not callable(field.default):
            value = field.get_default()
        elif not field.has_default() and field.empty_strings_allowed and not field.null:
            value = ""  # what Django itself stores for a text field left blank
        elif field.null:
            value = None
        else:
            raise ValueError(f"COPY into {model._meta.db_table} needs a value for {field.column}")
        filled.append((field.column, _copy_text(value)))
    return filled


def _copy_text(value) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    text = str(value)
    if any(char in text for char in "\\\t\n\r"):
        raise ValueError(f"a default for COPY must be plain text, not {text!r}")
    return text
