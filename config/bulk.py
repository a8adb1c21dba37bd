"""Bulk writes for PostgreSQL: COPY and ids drawn ahead from a table's sequence.

Hundreds of thousands of rows a second where the ORM's bulk inserts manage a few thousand. Callers keep a
portable path for other databases (``connection.vendor != "postgresql"``)."""

from django.db import connection
from django.db.models import Model

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
    """COPY tab-separated `lines` into the model's table (PostgreSQL), in chunks of a few megabytes."""
    if not lines:
        return
    table = connection.ops.quote_name(model._meta.db_table)
    names = ", ".join(connection.ops.quote_name(column) for column in columns)
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for start in range(0, len(lines), 20_000):
            copy.write("".join(lines[start : start + 20_000]))
