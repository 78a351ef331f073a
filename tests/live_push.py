"""A live Arbor server and the real push client, for tests/test_push.py and bench/push_bench.py.

The server is daphne in a subprocess (SQLite under a temporary data directory, or a PostgreSQL database of
its own); the client is ``python -m treeview.push`` in a subprocess that cannot import Django at all (it is
blocked), which is how it runs on a laptop. What the server holds is read back with its own management
commands, never from the test process's database.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.browser import ASGI_APP, REPO, _wait_until_serving, free_port, server_env

#: Runs the push client with ``import django`` made impossible.
CLIENT = (
    "import sys; sys.modules['django'] = None; "
    "from treeview.push.cli import main; sys.exit(main(sys.argv[1:]))"
)

_STATE = """
import json, sys
from treeview.models import AgentSession
from treeview.ingest.models import IngestSource
from treeview.services.export import export_text
out = {}
for session in AgentSession.objects.order_by("pk"):
    sources = list(IngestSource.objects.filter(session=session).values("bytes_received", "bytes_stored"))
    out[session.session_id + ":" + str(session.pk)] = {
        "export": export_text(session),
        "entry_count": session.entry_count,
        "rows": session.entries.count(),
        "ids": list(session.entries.exclude(entry_id="").values_list("entry_id", flat=True)),
        "title": session.title,
        "owner": session.owner.username if session.owner else None,
        "visibility": session.visibility,
        "received": sum(s["bytes_received"] for s in sources),
        "stored": sum(s["bytes_stored"] for s in sources),
    }
sys.stdout.write(json.dumps(out))
"""


@dataclass
class Server:
    """A live server: its environment, URL, and the workers serving it."""

    root: Path
    env: dict[str, str]
    ports: list[int]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports[0]}"

    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def manage(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=self.env,
            check=True,
            timeout=timeout,
            capture_output=True,
        )
        return done.stdout.decode()

    def shell(self, code: str) -> str:
        return self.manage("shell", "-v", "0", "-c", code)

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.shell(_STATE))
        return result

    def start(self) -> None:
        """Start (or restart) a daphne worker on each port."""
        for port in self.ports:
            log = (self.root / f"daphne-{port}.log").open("ab")
            self.processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "daphne",
                        "--proxy-headers",
                        "-b",
                        "127.0.0.1",
                        "-p",
                        str(port),
                        ASGI_APP,
                    ],
                    cwd=REPO,
                    env=self.env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            log.close()
        for port, process in zip(self.ports, self.processes[-len(self.ports) :], strict=True):
            _wait_until_serving(f"http://127.0.0.1:{port}/accounts/login/", process, time.monotonic() + 60)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []


def postgres_env(database: str) -> dict[str, str]:
    return {
        "ARBOR_DB": "postgres",
        "PGHOST": os.environ.get("PGHOST", "127.0.0.1"),
        "PGPORT": os.environ.get("PGPORT", "5432"),
        "PGUSER": os.environ.get("PGUSER", "postgres"),
        "PGDATABASE": database,
    }


def recreate_postgres_database(database: str) -> None:
    import psycopg

    params = postgres_env(database)
    with psycopg.connect(
        host=params["PGHOST"],
        port=params["PGPORT"],
        user=params["PGUSER"],
        dbname="postgres",
        autocommit=True,
    ) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{database}"')


@contextlib.contextmanager
def live(
    root: Path, *, workers: int = 1, users: tuple[str, ...] = ("alice",), **extra: str
) -> Iterator[Server]:
    """A migrated server under ``root`` with ``users`` (password "pw"), served by ``workers`` daphnes."""
    env = server_env(root, **{"ARBOR_SINGLE_USER": "0", **extra})
    # ARBOR_TEST_PORT: the first of the ports to serve on (a helper's own range), else any free ones.
    first = os.environ.get("ARBOR_TEST_PORT")
    ports = [int(first) + n for n in range(workers)] if first else [free_port() for _ in range(workers)]
    server = Server(root, env, ports)
    server.manage("migrate", "-v", "0")
    creates = "; ".join(f"User.objects.create_user({name!r}, password='pw')" for name in users)
    server.shell(f"from django.contrib.auth.models import User; {creates}")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def token_for(server: Server, username: str, *extra: str) -> str:
    return server.manage("create_token", username, *extra).strip()


def push(
    server_url: str,
    token: str,
    *args: str,
    home: Path,
    timeout: float = 300,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``arbor push`` once; ``home`` is its HOME (no config file unless a test writes one)."""
    return subprocess.run(
        [sys.executable, "-c", CLIENT, "--server", server_url, "--token", token, *args],
        cwd=REPO,
        env=client_env(home, env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def client_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("DJANGO", "ARBOR", "PG", "DATABASE"))
    }
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def watch(server_url: str, token: str, *args: str, home: Path, log: Path) -> subprocess.Popen[bytes]:
    """``arbor push --watch`` in the background, its output in ``log``."""
    out = log.open("ab")
    process = subprocess.Popen(
        [sys.executable, "-c", CLIENT, "--server", server_url, "--token", token, "--watch", *args],
        cwd=REPO,
        env=client_env(home),
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    out.close()
    return process


def wait_for(predicate: Any, timeout: float, step: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(step)
