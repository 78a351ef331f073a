"""Interactive queries: what a person waits for in a page gets a time limit, is stopped when they leave, and
gives its database connection back.

* :func:`query_limits`: the queries of a block get ``ARBOR_QUERY_TIMEOUT_MS`` (PostgreSQL: the
  transaction-local ``statement_timeout``; SQLite: a progress handler that interrupts the statement) and can
  be stopped from another thread (:meth:`QueryGuard.cancel`: a cancel request to the PostgreSQL server,
  SQLite's ``interrupt()``). A statement stopped by the limit raises :class:`QueryTimeout`; one stopped by
  a cancel raises :class:`QueryCancelled`.
* :func:`run_interactive`: from an async view, run a function of the ORM in a worker thread under those
  limits; when the view is cancelled (the client disconnected, or the server gave up on the request), the
  running statement is cancelled rather than left to finish, and the worker's connection is closed when it
  returns (``CONN_MAX_AGE`` semantics, as ``close_old_connections`` applies them), whatever happened.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, close_old_connections, connections, transaction

__all__ = ["QueryCancelled", "QueryGuard", "QueryTimeout", "query_limits", "run_interactive"]

T = TypeVar("T")

#: SQLite calls the progress handler every this many virtual-machine instructions (a few microseconds).
SQLITE_PROGRESS_STEPS = 2000

_PG_SETTINGS = "SELECT set_config('statement_timeout', %s, true), set_config('jit', %s, true)"

# SQLSTATE query_canceled: both a statement_timeout and a cancel request end a statement with it.
_PG_QUERY_CANCELED = "57014"


class QueryTimeout(Exception):
    """A query ran past the time limit of interactive queries and the database stopped it."""

    def __init__(self, timeout_ms: int) -> None:
        super().__init__(f"the query took longer than {timeout_ms} ms and was stopped")
        self.timeout_ms = timeout_ms


class QueryCancelled(Exception):
    """A query was stopped by :meth:`QueryGuard.cancel` (the person who asked for it has gone)."""


def timeout_ms() -> int:
    """``ARBOR_QUERY_TIMEOUT_MS`` (0: no limit)."""
    return int(getattr(settings, "ARBOR_QUERY_TIMEOUT_MS", 0))


class QueryGuard:
    """Stops the statements of one :func:`query_limits` block from another thread; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._raw: Any = None
        self._vendor = ""
        self.deadline: float | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def attach(self, vendor: str, raw: Any) -> None:
        """The driver connection the block runs on; a guard cancelled before this raises at once."""
        with self._lock:
            self._vendor, self._raw = vendor, raw
            if self._cancelled:
                raise QueryCancelled("cancelled before it started")

    def detach(self) -> None:
        with self._lock:
            self._raw = None

    def cancel(self) -> None:
        """Stop the running statement (if any) and every later one of the block."""
        with self._lock:
            self._cancelled = True
            raw, vendor = self._raw, self._vendor
            if raw is None:
                return
            try:
                if vendor == "postgresql":
                    raw.cancel()  # psycopg: a cancel request over its own connection, safe from any thread
                elif vendor == "sqlite":
                    raw.interrupt()
            except Exception:  # noqa: BLE001 -- the connection may be closing; nothing left to stop then
                pass

    def _sqlite_progress(self) -> int:
        # Non-zero: SQLite stops the statement with "interrupted".
        if self._cancelled:
            return 1
        return 1 if self.deadline is not None and time.monotonic() > self.deadline else 0


@contextmanager
def query_limits(
    using: str = DEFAULT_DB_ALIAS, limit_ms: int | None = None, guard: QueryGuard | None = None
) -> Iterator[QueryGuard]:
    """Run the block's queries under the interactive time limit (``limit_ms``, default
    ``ARBOR_QUERY_TIMEOUT_MS``; 0: none), stoppable through the guard it yields.

    Raises :class:`QueryTimeout` or :class:`QueryCancelled` (instead of the driver's error) when a statement
    of the block was stopped. On PostgreSQL the block runs in a transaction (a savepoint inside one), as the
    limit is a transaction-local setting.
    """
    limit = timeout_ms() if limit_ms is None else limit_ms
    guard = QueryGuard() if guard is None else guard
    connection = connections[using]
    connection.ensure_connection()
    vendor = connection.vendor
    started = time.monotonic()
    guard.deadline = started + limit / 1000 if limit > 0 else None
    try:
        if vendor == "postgresql":
            with transaction.atomic(using=using):
                with connection.cursor() as cursor:
                    cursor.execute("SELECT current_setting('statement_timeout'), current_setting('jit')")
                    before = cursor.fetchone()
                    # No JIT either: compiling costs a tenth of a second that a short query never wins back.
                    cursor.execute(_PG_SETTINGS, [f"{limit}ms", "off"])
                guard.attach(vendor, connection.connection)
                try:
                    yield guard
                finally:
                    guard.detach()
                # Inside an outer transaction the settings would outlive the block (a failed block's savepoint
                # is rolled back, settings included).
                with connection.cursor() as cursor:
                    cursor.execute(_PG_SETTINGS, list(before))
        elif vendor == "sqlite":
            raw = connection.connection
            guard.attach(vendor, raw)
            raw.set_progress_handler(guard._sqlite_progress, SQLITE_PROGRESS_STEPS)
            try:
                yield guard
            finally:
                raw.set_progress_handler(None, 0)
                guard.detach()
        else:
            yield guard
    except DatabaseError as error:
        if not _stopped(vendor, error):
            raise
        if guard.cancelled:
            raise QueryCancelled(str(error)) from error
        raise QueryTimeout(limit) from error


def _stopped(vendor: str, error: DatabaseError) -> bool:
    """Whether ``error`` is a statement stopped by a time limit or a cancel (not any other failure)."""
    cause = error.__cause__
    if vendor == "postgresql":
        return getattr(cause, "sqlstate", None) == _PG_QUERY_CANCELED
    if vendor == "sqlite":
        return "interrupted" in str(cause or error)
    return False


def _close_connections(using: str) -> None:
    # Not inside a transaction (a test's): closing would end it. Requests never hold one here.
    if not connections[using].in_atomic_block:
        close_old_connections()


async def run_interactive(
    func: Callable[..., T], *args: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any
) -> T:
    """``func(*args, **kwargs)`` under :func:`query_limits`, in the request's worker thread.

    If the awaiting task is cancelled, the statement running is cancelled too (it would otherwise go on for as
    long as it takes, holding its connection), and the worker closes its connection once ``func`` has
    returned or failed, whether or not anybody still waits for it.
    """
    guard = QueryGuard()

    def work() -> T:
        try:
            with query_limits(using, guard=guard):
                return func(*args, **kwargs)
        finally:
            _close_connections(using)

    future = asyncio.ensure_future(sync_to_async(work, thread_sensitive=True)())
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        guard.cancel()
        # The worker raises QueryCancelled; nobody needs it (retrieved so asyncio does not log it).
        future.add_done_callback(lambda done: done.cancelled() or done.exception())
        raise
