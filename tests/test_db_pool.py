"""A server process holds a bounded number of PostgreSQL connections, however many threads ask at once.

Each request and socket message runs on a thread of its own; before the pool every such thread opened a
connection, and 100 open pages refetching after one label save asked PostgreSQL for 100 connections (its
default ``max_connections``): the label save itself then failed with "too many clients already".

The test process itself connects without the pool (tests/conftest.py), so a process of its own, with the
settings a server gets, runs the threads here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from django.conf import settings
from django.db import connection

from sessions_site import env
from tests.browser import REPO

# 40 threads, each taking a connection for 0.2 s and giving it back as a request's end does.
_THREADS = textwrap.dedent(
    """
    import sys, threading
    import django
    django.setup()
    from django.db import connections
    errors = []

    def work():
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SELECT pg_sleep(0.2)")
        except BaseException as error:
            errors.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print("errors", len(errors), errors[:1])
    sys.exit(1 if errors else 0)
    """
)


def _run_threads(pool_size: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run the 40 threads in a server-like process; the most backends it had open at once."""
    import psycopg

    database = connection.settings_dict["NAME"]
    child_env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessions_site.settings",
        "ARBOR_DB": "postgres",
        "PGDATABASE": database,
        "ARBOR_DB_POOL_SIZE": pool_size,
    }
    child_env.pop("DATABASE_URL", None)
    params = connection.get_connection_params()
    peak = 0
    count = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
        " AND backend_type = 'client backend'"
    )
    with psycopg.connect(**params, autocommit=True) as watcher:
        # The test process's own connection, and any other test's still closing: not the child's.
        before = int(watcher.execute(count, (database,)).fetchone()[0])  # type: ignore[index]
        process = subprocess.Popen(
            [sys.executable, "-c", _THREADS],
            cwd=REPO,
            env=child_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        deadline = time.monotonic() + 60
        while process.poll() is None and time.monotonic() < deadline:
            row = watcher.execute(count, (database,)).fetchone()
            peak = max(peak, int(row[0]) - before if row else 0)
            time.sleep(0.02)
        output, _ = process.communicate(timeout=30)
    return subprocess.CompletedProcess(process.args, process.returncode, output), peak


@pytest.mark.django_db(transaction=True)
def test_forty_threads_share_a_bounded_pool_and_all_succeed():
    if connection.vendor != "postgresql":
        pytest.skip("the connection pool is PostgreSQL's (SQLite opens a file, not a server connection)")
    connection.ensure_connection()
    size = env.postgres_pool({})["max_size"]  # type: ignore[index]
    pooled, peak = _run_threads(str(size))
    assert pooled.returncode == 0, pooled.stdout
    assert 0 < peak <= size
    # Without the pool the same process opens a connection per thread.
    unpooled, peak_without = _run_threads("0")
    assert unpooled.returncode == 0, unpooled.stdout
    assert peak_without > size


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
