"""A server process holds a bounded number of PostgreSQL connections, however many threads ask at once.

Each request and socket message runs on a thread of its own; before the pool every such thread opened a
connection, and 100 open pages refetching after one label save asked PostgreSQL for 100 connections (its
default ``max_connections``): the label save itself then failed with "too many clients already".
"""

from __future__ import annotations

import threading
import time

import pytest
from django.conf import settings
from django.db import connection, connections

from sessions_site import env


def _backends_of_this_database(cursor) -> int:
    cursor.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    return int(cursor.fetchone()[0])


@pytest.mark.django_db(transaction=True)
def test_forty_threads_share_a_bounded_pool_and_all_succeed():
    if connection.vendor != "postgresql":
        pytest.skip("the connection pool is PostgreSQL's (SQLite opens a file, not a server connection)")
    pool = settings.DATABASES["default"]["OPTIONS"].get("pool")
    assert pool, "the PostgreSQL settings configure a connection pool"
    size = pool["max_size"]
    threads_count = size * 4
    errors: list[BaseException] = []

    def work() -> None:
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_sleep(0.2)")
        except BaseException as error:  # noqa: BLE001 -- reported below
            errors.append(error)
        finally:
            connections["default"].close()  # what request_finished does at the end of every request

    peak = 0
    threads = [threading.Thread(target=work) for _ in range(threads_count)]
    with psycopg_watcher() as watch:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while any(thread.is_alive() for thread in threads) and time.monotonic() < deadline:
            peak = max(peak, _backends_of_this_database(watch))
            time.sleep(0.02)
        for thread in threads:
            thread.join(timeout=5)

    assert errors == []
    # The pool's own connections, at most its size (the test's main-thread connection may be one of them).
    assert 0 < peak <= size + 1


class psycopg_watcher:  # noqa: N801 -- used as a context manager
    """A connection outside Django's pool that counts the server's backends."""

    def __enter__(self):
        import psycopg

        params = connection.get_connection_params()
        self._conn = psycopg.connect(**params, autocommit=True)
        return self._conn.cursor()

    def __exit__(self, *exc_info) -> None:
        self._conn.close()


def test_pool_size_comes_from_the_environment():
    assert env.postgres_pool({"ARBOR_DB_POOL_SIZE": "0"}) is None
    assert env.postgres_pool({"ARBOR_DB_POOL_SIZE": "4", "ARBOR_DB_POOL_TIMEOUT": "7"}) == {
        "min_size": 0,
        "max_size": 4,
        "timeout": 7,
        "max_idle": 10,
    }
    config = env.database_config(base_dir=settings.BASE_DIR, environ={"ARBOR_DB": "sqlite"})
    assert "pool" not in config.get("OPTIONS", {})
    url_config = env.database_config(
        base_dir=settings.BASE_DIR, environ={"DATABASE_URL": "postgres://h/arbor?sslmode=require"}
    )
    assert url_config["OPTIONS"] == {"sslmode": "require", "pool": env.postgres_pool({})}
