"""Interactive queries (treeview/interactive.py, the search view, sessions_site/handler.py): a time limit with
a clear message, cancellation when the client leaves, and no database connection left open after any request.

The live-server test needs PostgreSQL (it counts the server's connections in ``pg_stat_activity``); the others
run on SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from tests.browser import REPO, free_port
from tests.test_search import write_session
from treeview.interactive import QueryCancelled, QueryGuard, QueryTimeout, query_limits, run_interactive
from treeview.search import EntryHits, parse_query
from treeview.services.sync import sync_file


def slow_sql() -> tuple[str, list[Any]]:
    """A statement that runs for seconds on this database (and does nothing else)."""
    if connection.vendor == "postgresql":
        return "SELECT pg_sleep(%s)", [5]
    # A recursive count to a hundred million: seconds of SQLite's virtual machine.
    return (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %s) SELECT count(*) FROM c",
        [100_000_000],
    )


def run_slow_sql() -> None:
    sql, params = slow_sql()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)


@pytest.mark.django_db
def test_a_statement_past_the_time_limit_is_stopped_with_query_timeout():
    started = time.monotonic()
    with pytest.raises(QueryTimeout) as stopped, query_limits(limit_ms=100):
        run_slow_sql()

    assert time.monotonic() - started < 3
    assert stopped.value.timeout_ms == 100
    # The connection still works, and later statements have no limit.
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone()[0] == 1
        if connection.vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"


@pytest.mark.django_db
def test_statements_within_the_limit_run_and_errors_that_are_not_a_timeout_pass_through():
    with query_limits(limit_ms=5000), connection.cursor() as cursor:
        cursor.execute("SELECT 41 + 1")
        assert cursor.fetchone()[0] == 42
        if connection.vendor == "postgresql":
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "5s"
    if connection.vendor == "postgresql":
        # The limit ends with the block, also inside a transaction (this test's).
        with connection.cursor() as cursor:
            cursor.execute("SHOW statement_timeout")
            assert cursor.fetchone()[0] == "0"
    with pytest.raises(Exception) as failed, query_limits(limit_ms=5000), connection.cursor() as cursor:
        cursor.execute("SELECT * FROM no_such_table")
    assert not isinstance(failed.value, QueryTimeout | QueryCancelled)


@pytest.mark.django_db(transaction=True)
def test_a_guard_cancelled_from_another_thread_stops_the_running_statement():
    guard = QueryGuard()
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            with query_limits(limit_ms=60_000, guard=guard):
                run_slow_sql()
        except BaseException as error:  # noqa: BLE001 -- handed to the test thread
            outcome.append(error)
        finally:
            connection.close()

    worker = threading.Thread(target=work)
    started = time.monotonic()
    worker.start()
    time.sleep(0.5)
    guard.cancel()
    worker.join(10)

    assert not worker.is_alive()
    assert time.monotonic() - started < 4
    assert len(outcome) == 1 and isinstance(outcome[0], QueryCancelled), outcome


@pytest.mark.django_db
def test_a_guard_cancelled_before_the_block_starts_runs_nothing():
    guard = QueryGuard()
    guard.cancel()
    with pytest.raises(QueryCancelled), query_limits(guard=guard):
        pytest.fail("the block ran")


@pytest.mark.django_db(transaction=True)
async def test_cancelling_run_interactive_cancels_its_statement():
    task = asyncio.ensure_future(run_interactive(run_slow_sql))
    await asyncio.sleep(0.5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    # The worker thread is free again soon: the next call does not wait seconds behind the statement.
    assert await run_interactive(lambda: 7) == 7
    assert time.monotonic() - started < 3


@pytest.mark.django_db
@pytest.mark.parametrize("htmx", [False, True])
def test_a_search_past_the_time_limit_says_so_instead_of_failing(
    client, settings, tmp_path, monkeypatch, htmx
):
    sync_file(write_session(tmp_path / "w.jsonl", "w", ["walrus one", "walrus two"]))
    settings.ARBOR_QUERY_TIMEOUT_MS = 200

    def slow_search(self: EntryHits, wanted: int) -> list[int]:
        run_slow_sql()  # a real statement the database stops at the limit
        return []

    monkeypatch.setattr(EntryHits, "_first", slow_search)
    headers = {"HX-Request": "true"} if htmx else {}

    response = client.get("/search/", {"q": "walrus"}, headers=headers)

    html = response.content.decode()
    assert response.status_code == (200 if htmx else 503)
    assert 'role="alert"' in html
    assert "took longer than 0.2\u00a0s and was stopped" in html
    assert 'class="search-hit"' not in html
    # The limit is off again for the next request: the same search works.
    monkeypatch.undo()
    again = client.get("/search/", {"q": "walrus"}).content.decode()
    assert again.count('class="search-hit"') == 2


@pytest.mark.django_db(transaction=True)
def test_a_search_blocked_past_the_limit_on_postgresql_gets_the_message(client, settings, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("a lock that blocks readers is PostgreSQL's (SQLite in WAL mode never blocks a reader)")
    import psycopg

    sync_file(write_session(tmp_path / "w.jsonl", "w", ["walrus one", "walrus two"]))
    settings.ARBOR_QUERY_TIMEOUT_MS = 300
    params = connection.get_connection_params()
    with psycopg.connect(**params) as locker:
        locker.execute("LOCK TABLE treeview_entry IN ACCESS EXCLUSIVE MODE")
        started = time.monotonic()
        response = client.get("/search/", {"q": "walrus"})
        elapsed = time.monotonic() - started
        locker.rollback()

    assert response.status_code == 503
    assert "took longer than 0.3\u00a0s and was stopped" in response.content.decode()
    assert elapsed < 5


@pytest.mark.django_db
def test_a_common_word_shows_the_first_hits_and_says_more_match(client, tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules["treeview.views.search"], "MAX_HITS", 60)
    texts = [f"walrus number {n}" for n in range(100)]
    sync_file(write_session(tmp_path / "many.jsonl", "many", texts))

    hits = EntryHits(parse_query("walrus"), limit=60)
    first = client.get("/search/", {"q": "walrus"}).content.decode()
    last = client.get("/search/", {"q": "walrus", "page": 2}).content.decode()

    assert hits.count() == 60 and hits.more
    assert "More than 60 entries match" in first and "the first 60 are shown" in first
    assert "page 1 of 2" in first
    assert 'data-hit-count="60+"' in first
    assert last.count('class="search-hit"') == 10  # hits 51 to 60: the first 60 in file order
    assert 'data-entry-id="m0000059"' in last and 'data-entry-id="m0000060"' not in last


# -- no connection left open: a live daphne and PostgreSQL's own count ----------------------------------


def server_connections(database: str, *, but: int = 0) -> list[tuple[Any, ...]]:
    """The server's connections to ``database`` other than the test process's own (and ``but``)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, state, wait_event_type, left(query, 60) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid() AND pid <> %s"
            " AND backend_type = 'client backend'",
            [database, but],
        )
        return cursor.fetchall()


@contextlib.contextmanager
def live_daphne(database: str, tmp_path: Path, **extra: str) -> Iterator[int]:
    """daphne on the test database (PostgreSQL), single-user, giving up on a left request after 1 s."""
    import os

    port = free_port()
    settings_dict = connection.settings_dict
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "ARBOR_REDIS_URL")}
    env.update(
        DATABASE_URL=(
            f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
            f"{settings_dict['PORT'] or 5432}/{database}"
        ),
        ARBOR_DATA_DIR=str(tmp_path / "data"),
        ARBOR_SESSION_DIRS=str(tmp_path / "no-agent-dirs"),
        ARBOR_SINGLE_USER="1",
        DJANGO_DEBUG="1",
        DJANGO_SETTINGS_MODULE="sessions_site.settings",
        **extra,
    )
    command = [sys.executable, "-m", "daphne", "--application-close-timeout", "1", "-b", "127.0.0.1"]
    log = (tmp_path / "daphne.log").open("ab")
    process = subprocess.Popen(
        [*command, "-p", str(port), "sessions_site.asgi:application"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (tmp_path / "daphne.log").read_text()
            try:
                if b" 200 " in raw_get(port, "/", wait=5):
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "daphne did not start"
            time.sleep(0.2)
        yield port
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def raw_get(port: int, path: str, *, wait: float) -> bytes:
    """GET ``path``; gives up (closes the socket: the client leaves) after ``wait`` seconds."""
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
        return received


def until(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("pool", [0, 3], ids=["no-pool", "pool"])
def test_no_connection_is_left_open_after_clients_leave_slow_requests(tmp_path, pool):
    """Without the pool (ARBOR_DB_POOL_SIZE=0) a finished request closes its connection; with it, the
    connection goes back to the pool: idle, no transaction, never more than the pool's size."""
    if connection.vendor != "postgresql":
        pytest.skip("counts PostgreSQL's connections (pg_stat_activity)")
    import psycopg

    database = connection.settings_dict["NAME"]

    def settled() -> bool:
        rows = server_connections(database)
        return len(rows) <= pool and all(row[1] == "idle" for row in rows)

    sync_file(write_session(tmp_path / "w.jsonl", "w", [f"walrus {n}" for n in range(30)]))
    with live_daphne(
        database, tmp_path, ARBOR_QUERY_TIMEOUT_MS="60000", ARBOR_DB_POOL_SIZE=str(pool)
    ) as port:
        for path in ("/", "/search/?q=walrus"):  # both work, and leave nothing open
            assert b" 200 " in raw_get(port, path, wait=10)
        assert until(settled, 5), server_connections(database)

        with psycopg.connect(**connection.get_connection_params()) as locker:
            # Every request that reads entries or sessions now waits for the lock.
            locker.execute("LOCK TABLE treeview_entry, treeview_agentsession IN ACCESS EXCLUSIVE MODE")
            clients = [
                threading.Thread(target=raw_get, args=(port, path), kwargs={"wait": 0.5})
                for path in ["/search/?q=walrus"] * 3 + ["/"] * 3
            ]
            for client in clients:
                client.start()
            for client in clients:
                client.join()
            # The searches are cancelled as their clients leave: no statement of theirs waits on.
            mine = locker.info.backend_pid
            assert until(
                lambda: not any("treeview_entry" in row[3] for row in server_connections(database, but=mine)),
                5,
            ), server_connections(database, but=mine)
            time.sleep(1.5)  # daphne gives up on the left requests (application_close_timeout 1 s)
            locker.rollback()
        # The session list requests finish once the lock is gone, and close their connections.
        assert until(settled, 10), server_connections(database)

        # A burst of ordinary requests leaves nothing open either.
        burst = [
            threading.Thread(target=raw_get, args=(port, path), kwargs={"wait": 10})
            for path in ["/", "/search/?q=walrus", "/search/?q=walrus+7"] * 5
        ]
        for client in burst:
            client.start()
        for client in burst:
            client.join()
        assert until(settled, 5), server_connections(database)
