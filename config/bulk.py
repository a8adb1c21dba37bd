"""Bulk writes for PostgreSQL: COPY and ids drawn ahead from a table's sequence.

Hundreds of thousands of rows a second where the ORM's bulk inserts manage a few thousand. Callers keep a
portable path for other databases (``connection.vendor != "postgresql"``)."""

from django.db import connection
from django.db.models import Model
from django.db.models.fields import AutoFieldMixin

COPY_CHUNK_LINES = 20_000


def pg_ids_allocate(*, model: type[Model], count: int) -> list[int]:
    """`count` fresh primary keys from the table's own sequence, in increasing order (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s) ORDER BY 1",
            [model._meta.db_table, count],
        )
        return [row[0] for row in cursor.fetchall()]


def pg_copy(*, model: type[Model], columns: list[str], lines: list[str]) -> None:
    """COPY tab-separated `lines` into the model's table (PostgreSQL), in chunks of a few megabytes.

    Columns the lines leave out take their field's constant default (or NULL where the field allows
    it), so a field added to the model later cannot make the COPY fail; one with neither raises.
    """
    if not lines:
        return
    filled = _defaults_for_missing(model, columns)
    if filled:
        tail = "\t" + "\t".join(text for _column, text in filled) + "\n"
        lines = [line[:-1] + tail for line in lines]
        columns = [*columns, *(column for column, _text in filled)]
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for start in range(0, len(lines), 20_000):
            copy.write("".join(lines[start : start + 20_000]))


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
