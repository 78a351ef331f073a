"""Benchmark the search across sessions on a 570,000-entry database (issue 11, finding 3).

Run from the repository root (PostgreSQL: a local server on 127.0.0.1:5432, user postgres, trust auth)::

    .venv/bin/python bench/search_bench.py                       # SQLite and PostgreSQL
    .venv/bin/python bench/search_bench.py --backends postgres --runs 10
    .venv/bin/python bench/search_bench.py --record              # also write the results into BENCHMARKS.md
    .venv/bin/python bench/search_bench.py --build-only          # only make (or check) the databases

The data: generated sessions (``python -m treeview.session generate``'s generator, distinct seeds) of
5 × 100,000, 1 × 50,000 and 20 × 1,000 entries, 570,000 in all, imported once with ``sync_file`` into a
PostgreSQL database named ``arbor_bench570k`` and a SQLite file ``bench/out/search570k/db.sqlite3``. Both
are reused by later runs (a database whose entry count is not 570,000 is made again); ``manage.py migrate``
runs on them first, so a new migration is applied (and timed) on the existing data. Each session file is
generated, imported into both databases and deleted, so the 1.4 GB of sessions never sit on disk at once.

The measurement: a fresh child process per database asks the results page (``/search/?q=…`` through the
Django test client and the whole middleware stack, single-user mode, the page rendered) ``--runs`` times for
each query after one warm-up request, in turn (query 1, 2, …, 1, 2, …), and reports p50 / p95 / max in ms,
the number of hits the page reports, and the statement timeouts. Results go to ``bench/out/search-<ts>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import replace_block, targets_line  # noqa: E402
from bench.run import machine_info  # noqa: E402

OUT = ROOT / "bench" / "out"
DATA_DIR = OUT / "search570k"
BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:search:begin -->"
END = "<!-- bench:search:end -->"
PG_SERVER = "postgres://postgres@127.0.0.1:5432"
PG_NAME = "arbor_bench570k"

#: (entries, seed) of the generated sessions: 570,000 entries in all.
SESSIONS = [(100_000, 101 + i) for i in range(5)] + [(50_000, 106)] + [(1_000, 107 + i) for i in range(20)]
TOTAL = sum(entries for entries, _ in SESSIONS)

#: What is asked: a common word (in a third of the entries), two of them, the worst short prefix (``con``: the
#: index merges the lists of 105 words), a common word of three letters, a rare word, a path (three words), a
#: word that is nowhere, and a later page of a common word.
QUERIES = [
    ("common word", "tree"),
    ("two common words", "parse tree"),
    ("short common prefix", "con"),
    ("common 3-letter word", "the"),
    ("rare word", "zyzzogeton"),
    ("path", "src/app.py"),
    ("no hit", "qqqxqqq"),
    ("common word, page 10", "tree&page=10"),
]
TARGET_P95_MS = 500.0


def _env(backend: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessions_site.settings",
        "ARBOR_DATA_DIR": str(DATA_DIR),
        "ARBOR_SINGLE_USER": "1",
        "DJANGO_DEBUG": "1",
    }
    env.pop("DATABASE_URL", None)
    env.pop("ARBOR_DB", None)
    if backend == "postgres":
        env["DATABASE_URL"] = f"{PG_SERVER}/{PG_NAME}"
    return env


def _pg(sql: str, database: str = "postgres") -> Any:
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/{database}", autocommit=True) as conn:
        cursor = conn.execute(sql)  # type: ignore[arg-type]
        return cursor.fetchall() if cursor.description else None


# ---------------------------------------------------------------------------------------------------------
# Building the databases


def _entry_count(backend: str) -> int | None:
    if backend == "postgres":
        if not _pg(f"SELECT 1 FROM pg_database WHERE datname = '{PG_NAME}'"):
            return None
        try:
            return int(_pg("SELECT count(*) FROM treeview_entry", PG_NAME)[0][0])
        except Exception:
            return 0
    import sqlite3

    path = DATA_DIR / "db.sqlite3"
    if not path.exists():
        return None
    with sqlite3.connect(path) as conn:
        try:
            return int(conn.execute("SELECT count(*) FROM treeview_entry").fetchone()[0])
        except sqlite3.Error:
            return 0


def _migrate(backend: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
        cwd=ROOT,
        env=_env(backend),
        check=True,
    )
    return time.perf_counter() - t0


def build(backends: list[str]) -> dict[str, Any]:
    """Make (or reuse) the 570k-entry databases; returns what was done and how long it took."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    todo = []
    for backend in backends:
        count = _entry_count(backend)
        if count == TOTAL:
            continue
        print(f"{backend}: {count} entries, building {TOTAL:,}", file=sys.stderr)
        if backend == "postgres":
            _pg(f'DROP DATABASE IF EXISTS "{PG_NAME}" WITH (FORCE)')
            _pg(f'CREATE DATABASE "{PG_NAME}"')
        else:
            for name in ("db.sqlite3", "db.sqlite3-wal", "db.sqlite3-shm"):
                (DATA_DIR / name).unlink(missing_ok=True)
        todo.append(backend)
    info: dict[str, Any] = {"built": todo, "migrate_s": {}}
    for backend in backends:
        info["migrate_s"][backend] = _migrate(backend)
    if not todo:
        return info
    from treeview.session.generate import write_session

    import_s: dict[str, float] = dict.fromkeys(todo, 0.0)
    for entries, seed in SESSIONS:
        path = DATA_DIR / f"session-{entries}-s{seed}.jsonl"
        write_session(path, entries, seed)
        try:
            for backend in todo:
                t0 = time.perf_counter()
                subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), "--import", str(path)],
                    cwd=ROOT,
                    env=_env(backend),
                    check=True,
                )
                import_s[backend] += time.perf_counter() - t0
                print(f"{backend}: imported {entries:,} (seed {seed})", file=sys.stderr)
        finally:
            path.unlink(missing_ok=True)
    for backend in todo:
        count = _entry_count(backend)
        if count != TOTAL:
            raise SystemExit(f"{backend}: {count} entries after the build, expected {TOTAL}")
    if "postgres" in todo:
        _pg("VACUUM ANALYZE", PG_NAME)
    info["import_s"] = import_s
    return info


def import_child(path: str) -> None:
    import django

    django.setup()
    from treeview.services.sync import sync_file

    result = sync_file(path)
    if result.status != "new":
        raise SystemExit(f"import of {path}: {result.status} {result.error}")


# ---------------------------------------------------------------------------------------------------------
# Measuring


def measure_child(runs: int) -> dict[str, Any]:
    """Ask every query ``runs`` times (after a warm-up) through the test client; timings in ms."""
    import re

    import django

    django.setup()
    from django.db import connection
    from django.test import Client

    client = Client(SERVER_NAME="localhost")
    times: dict[str, list[float]] = {name: [] for name, _ in QUERIES}
    hits: dict[str, str] = {}
    timeouts: dict[str, int] = {name: 0 for name, _ in QUERIES}
    statuses: dict[str, list[int]] = {name: [] for name, _ in QUERIES}
    for round_ in range(runs + 1):
        for name, q in QUERIES:
            query, _, page = q.partition("&page=")
            params = {"q": query, **({"page": page} if page else {})}
            t0 = time.perf_counter()
            response = client.get("/search/", params)
            elapsed = (time.perf_counter() - t0) * 1000
            body = response.content.decode()
            if round_ == 0:
                found = re.search(r'data-hit-count="([^"]*)"', body)
                hits[name] = found.group(1) if found else "?"
                continue
            times[name].append(elapsed)
            statuses[name].append(response.status_code)
            if "search-timeout" in body:
                timeouts[name] += 1
    result: dict[str, Any] = {"vendor": connection.vendor, "queries": []}
    for name, q in QUERIES:
        values = sorted(times[name])
        result["queries"].append(
            {
                "name": name,
                "q": q,
                "hits": hits[name],
                "p50_ms": statistics.median(values),
                "p95_ms": values[min(len(values) - 1, round(0.95 * (len(values) - 1)))],
                "max_ms": values[-1],
                "timeouts": timeouts[name],
                "errors": sum(1 for status in statuses[name] if status >= 400),
            }
        )
    return result


def measure(backend: str, runs: int) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure", str(runs)],
        cwd=ROOT,
        env=_env(backend),
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def render(results: dict[str, dict[str, Any]], info: dict[str, str], runs: int, load: str) -> str:
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}; "
        f"{info['date']}. Load average when measured: {load}. {TOTAL:,} entries in {len(SESSIONS)} generated "
        f"sessions; each query asked {runs} times through the test client (the whole page, single-user mode) "
        "after a warm-up, the queries in turn.",
        "",
        "| database | query | `q` | hits shown | p50 | p95 | max | timeouts |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    checks: list[tuple[str, bool, str]] = []
    for backend, result in results.items():
        worst = 0.0
        for row in result["queries"]:
            q = row["q"].replace("&page=", "` page `")
            lines.append(
                f"| {names[backend]} | {row['name']} | `{q}` | {row['hits']} | {row['p50_ms']:.0f} ms "
                f"| **{row['p95_ms']:.0f} ms** | {row['max_ms']:.0f} ms | {row['timeouts']} |"
            )
            worst = max(worst, row["p95_ms"])
        checks.append(
            (f"{names[backend]} every search p95", worst < TARGET_P95_MS, f"< {TARGET_P95_MS:g} ms")
        )
    lines += ["", targets_line(checks).replace("Targets (100k)", f"Targets ({TOTAL // 1000}k)")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--runs", type=int, default=20, help="requests per query (after one warm-up)")
    parser.add_argument("--record", action="store_true", help="write the results table into BENCHMARKS.md")
    parser.add_argument("--build-only", action="store_true", help="only make (or check) the databases")
    parser.add_argument("--import", dest="import_path", help=argparse.SUPPRESS)
    parser.add_argument("--measure", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.import_path:
        import_child(args.import_path)
        return 0
    if args.measure is not None:
        print(json.dumps(measure_child(args.measure)))
        return 0
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    built = build(backends)
    print(json.dumps(built), file=sys.stderr)
    if args.build_only:
        return 0
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    results = {backend: measure(backend, args.runs) for backend in backends}
    info = machine_info()
    OUT.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    (OUT / f"search-{stamp}.json").write_text(
        json.dumps({"info": info, "load": load, "build": built, "results": results}, indent=2)
    )
    table = render(results, info, args.runs, load)
    print(table)
    if args.record:
        replace_block(BENCHMARKS, BEGIN, END, table, "Search across sessions (570k entries)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
