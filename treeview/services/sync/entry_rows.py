"""Writing Entry rows fast: ``insert_entry_rows`` (multi-row INSERT or COPY) and its writer thread."""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from contextlib import closing
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connections, router

from treeview.models import Entry
from treeview.services.columns import ENTRY_FIELDS

#: The Entry fields a row of :meth:`_Importer._add` fills, in order (every column but the primary key).
_ENTRY_COLUMNS = ("session", "seq", "line", "origin", "in_file", "before", "digest", "raw", *ENTRY_FIELDS)
_TS = _ENTRY_COLUMNS.index("ts")
_RAW = _ENTRY_COLUMNS.index("raw")
_ORIGIN_FILE = Entry.Origin.FILE.value
_SQLITE_ROWS_PER_INSERT = 500


def insert_entry_rows(rows: list[tuple[Any, ...]], connection: Any = None) -> None:
    """Insert Entry rows given as tuples in ``_ENTRY_COLUMNS`` order, in the connection's transaction.

    The same rows ``Entry.objects.bulk_create`` would write, without its per-row cost: no model instances,
    multi-row INSERTs (SQLite) or one ``COPY`` (PostgreSQL) per batch, and the driver's own cursor, because
    with DEBUG on Django's cursor would keep the text of every statement, parameters included (the whole
    file, hundreds of MB). Errors are still raised as Django's database exceptions. ``raw`` may be given as
    its UTF-8 bytes; it is stored as text all the same. ``connection`` (Django's, default: the one Entry is
    written to) may be passed in from another thread (see :class:`_RowWriter`).
    """
    if connection is None:
        connection = connections[router.db_for_write(Entry)]
        connection.ensure_connection()
    meta = Entry._meta
    columns = ", ".join(connection.ops.quote_name(meta.get_field(name).column) for name in _ENTRY_COLUMNS)
    table = connection.ops.quote_name(meta.db_table)
    with connection.wrap_database_errors, closing(connection.create_cursor()) as cursor:
        if connection.vendor == "postgresql":
            # COPY is several times faster than INSERT for large text rows; psycopg adapts every value
            # (timestamptz included) exactly as it does for query parameters.
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    raw = row[_RAW]
                    if isinstance(raw, bytes):
                        row = (*row[:_RAW], raw.decode(), *row[_RAW + 1 :])
                    copy.write_row(row)
        else:
            _insert_sqlite(connection, cursor, table, columns, rows)


def _insert_sqlite(
    connection: Any, cursor: Any, table: str, columns: str, rows: list[tuple[Any, ...]]
) -> None:
    # Many rows per statement: SQLite releases the GIL while it runs one, so a whole statement's b-tree work
    # overlaps with the reading thread (executemany binds and steps row by row).
    limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    width = len(_ENTRY_COLUMNS)
    per = max(1, min(_SQLITE_ROWS_PER_INSERT, limit // width))
    # Bytes of the raw line become TEXT with the same bytes (CAST reads a blob as text in the database's
    # encoding, UTF-8 for every database Django creates): no decoding to a str to encode it back.
    utf8 = connection.connection.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
    marks = ["%s"] * width
    marks[_RAW] = "CAST(%s AS TEXT)"
    one = "(" + ", ".join(marks) + ")"
    to_text = _sqlite_datetime(connection)
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        params = [value for row in chunk for value in row]
        for index in range(_TS, len(params), width):
            params[index] = to_text(params[index])
        if not utf8:
            for index in range(_RAW, len(params), width):
                if isinstance(params[index], bytes):
                    params[index] = params[index].decode()
        values = ", ".join([one] * len(chunk))
        cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {values}", params)


def _sqlite_datetime(connection: Any) -> Callable[[datetime | None], str | None]:
    """``connection.ops.adapt_datetimefield_value`` for SQLite, without its per-call overhead for the usual
    value: a datetime already in the connection's time zone (UTC), which only loses its tzinfo."""
    adapt: Callable[[datetime | None], str | None] = connection.ops.adapt_datetimefield_value
    zone = connection.timezone if settings.USE_TZ else None

    def to_text(value: datetime | None) -> str | None:
        if value is not None and zone is not None and value.tzinfo is zone:
            # What adapt does: make_naive(value, zone) (same wall time, as value is in zone), then str().
            return str(value.replace(tzinfo=None))
        return adapt(value)

    return to_text


class _RowWriter:
    """Inserts batches of Entry rows on a second thread, in the importing thread's transaction.

    Parsing a line and deriving its columns is Python work; inserting it is mostly the database's (SQLite
    releases the GIL while it writes, PostgreSQL works in its own process), so the two overlap. The
    importing thread must not use the connection until :meth:`close` or :meth:`abort` returned; it does
    not: while lines stream in it only reads the file. At most two batches wait in the queue.
    """

    def __init__(self, connection: Any) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # The raw lines are TOASTed: PostgreSQL's default pglz compression made the server the
                # bottleneck of a large import (lz4: about 30 % less COPY time, 3 % more space).
                # SET LOCAL: this transaction only, and only where the server was built with lz4.
                cursor.execute(
                    "SELECT set_config('default_toast_compression', 'lz4', true) FROM pg_settings"
                    " WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
                )
        connection.ensure_connection()
        self.connection = connection
        self.error: BaseException | None = None
        self.stop = False
        self.queue: queue.Queue[list[tuple[Any, ...]] | None] = queue.Queue(maxsize=2)
        self.thread = threading.Thread(target=self._run, name="arbor-import-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (rows := self.queue.get()) is not None:
            if self.error is None and not self.stop:
                try:
                    insert_entry_rows(rows, self.connection)
                except BaseException as error:  # re-raised in the importing thread
                    self.error = error

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self._raise()
        self.queue.put(rows)

    def close(self) -> None:
        """Wait until every row is inserted; raise what the insert raised."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self._raise()

    def abort(self) -> None:
        """Skip what is still queued and wait for the thread (no error raised: one is already on its way)."""
        self.stop = True
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error
