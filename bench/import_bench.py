"""Benchmark importing generated sessions into the database (SQLite and PostgreSQL).

Run from the repository root (PostgreSQL: a local server on 127.0.0.1:5432, user postgres, trust auth)::

    .venv/bin/python bench/import_bench.py                         # 1k, 10k, 100k; SQLite and PostgreSQL
    .venv/bin/python bench/import_bench.py --sizes 100000 --backends sqlite --repeat 1
    .venv/bin/python bench/import_bench.py --keep                  # keep generated files in bench/out/
    .venv/bin/python bench/import_bench.py --record                # also write the results into BENCHMARKS.md
    .venv/bin/python bench/import_bench.py --sizes 100000 --backends sqlite --profile import
                                                                   # cProfile of one import, to stderr

For every size, backend and repetition the parent makes a fresh database (SQLite: a new ``ARBOR_DATA_DIR``
temporary directory; PostgreSQL: a new database ``arbor_bench_…`` dropped at the end, passed as
``DATABASE_URL``), runs ``manage.py migrate`` and copies the session file into a temporary directory. Then
three fresh child processes (this script with ``--child``), each timing one call of ``sync_file``:

* ``import``: the first import of the copy (wall time, MB/s, peak RSS of that process);
* ``reimport``: the same unchanged file again (the first call, and the median of 20 more);
* ``sync``: after the parent appended the next 1,000 entries of the same generated session to the copy.

Peak memory is ``ru_maxrss`` of the child, so the interpreter and Django (about 60 MB) are included.
Generated sessions are shared with ``bench/run.py`` (``bench/out/session-<n>-s<seed>-<hash>.jsonl``); the
1,000 appended entries are the next lines of the longer session with the same seed (the generator's output
for fewer entries is a prefix of the one for more), cached as ``bench/out/append-…``. Files this run had to
generate are deleted at the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report import replace_block, targets_line

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.run import _fingerprint, _fmt_mb, _fmt_s, ensure_session, machine_info  # noqa: E402

OUT = ROOT / "bench" / "out"
BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:import:begin -->"
END = "<!-- bench:import:end -->"
APPENDED = 1000
REIMPORT_CALLS = 20
PG_SERVER = "postgres://postgres@127.0.0.1:5432"

# Targets for the 100k-entry (~250 MB) session.
TARGET_SQLITE_S = 7.0
TARGET_POSTGRES_S = 15.0
TARGET_PEAK_MB = 500.0
TARGET_REIMPORT_MS = 50.0
TARGET_SYNC_S = 1.0


# ---------------------------------------------------------------------------------------------------------
# Child: one timed sync_file in a fresh interpreter


def _peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return _peak_mb()


def child(op: str, path: str, profile: bool, trace: bool) -> dict[str, Any]:
    """Time one ``sync_file(path)`` (``op`` says which kind is expected) in this process."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessions_site.settings")
    import django

    django.setup()
    from django.db import connection

    from treeview.services.sync import sync_file

    connection.ensure_connection()  # the connection is not what is measured
    result: dict[str, Any] = {"rss_start_mb": _rss_mb(), "vendor": connection.vendor}
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    if trace:
        import tracemalloc

        tracemalloc.start(10)
    t0 = time.perf_counter()
    synced = sync_file(path)
    elapsed = time.perf_counter() - t0
    if trace:
        import tracemalloc

        current, traced_peak = tracemalloc.get_traced_memory()
        snapshot = tracemalloc.take_snapshot()
        tracemalloc.stop()
        result["traced_peak_mb"] = traced_peak / 2**20
        print(
            f"tracemalloc: peak {traced_peak / 2**20:.1f} MB, now {current / 2**20:.1f} MB", file=sys.stderr
        )
        for stat in snapshot.statistics("lineno")[:15]:
            print(f"  {stat}", file=sys.stderr)
    if profiler is not None:
        profiler.disable()
        import pstats

        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
    if synced.status == "failed":
        raise SystemExit(f"sync_file failed: {synced.error}")
    result.update(
        status=synced.status,
        seconds=elapsed,
        entries_added=synced.entries_added,
        bytes_read=synced.bytes_read,
        entry_count=synced.session.entry_count if synced.session is not None else 0,
    )
    if op == "reimport":
        times = []
        for _ in range(REIMPORT_CALLS):
            t0 = time.perf_counter()
            again = sync_file(path)
            times.append(time.perf_counter() - t0)
            assert again.status == "unchanged", again.status
        result["median_s"] = statistics.median(times)
    result["peak_mb"] = _peak_mb()
    return result


# ---------------------------------------------------------------------------------------------------------
# Parent: files, databases, children, report


def ensure_appended(entries: int, seed: int) -> tuple[Path, bool]:
    """The ``APPENDED`` generated lines that follow the ``entries``-entry session (cached, else made)."""
    path = OUT / f"append-{entries}+{APPENDED}-s{seed}-{_fingerprint()}.jsonl"
    if path.exists():
        return path, False
    from treeview.session.generate import generate_session

    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        # Line 0 is the header, then the entries the shorter session already has.
        for index, line in enumerate(generate_session(entries + APPENDED, seed)):
            if index > entries:
                fh.write(line + "\n")
    os.replace(tmp, path)
    return path, True


@contextmanager
def fresh_database(
    backend: str, *, data_root: Path | None = None, pg_name: str | None = None
) -> Iterator[dict[str, str]]:
    """Environment for a child: a new, migrated, empty database (and a scratch ARBOR_DATA_DIR, made under
    ``data_root`` if given). ``pg_name``: the PostgreSQL database's name (made again if it exists; default:
    a new unique name); it is dropped at the end either way."""
    if data_root is not None:
        data_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arbor-bench-", dir=data_root) as data_dir:
        env = {**os.environ, "ARBOR_DATA_DIR": data_dir, "DJANGO_SETTINGS_MODULE": "sessions_site.settings"}
        env.pop("DATABASE_URL", None)
        env.pop("ARBOR_DB", None)
        name = ""
        if backend == "postgres":
            name = pg_name or f"arbor_bench_{os.getpid()}_{uuid.uuid4().hex[:8]}"
            if pg_name:
                _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            _pg_admin(f'CREATE DATABASE "{name}"')
            env["DATABASE_URL"] = f"{PG_SERVER}/{name}"
        try:
            subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"],
                cwd=ROOT,
                env=env,
                check=True,
            )
            yield env
        finally:
            if name:
                _pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _pg_admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_SERVER}/postgres", autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


def run_child(
    op: str, path: Path, env: dict[str, str], profile: bool = False, trace: bool = False
) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", op, str(path)]
    if profile:
        cmd += ["--profile", op]
    if trace:
        cmd.append("--trace")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=None, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def one_round(
    backend: str, source: Path, appended: Path, entries: int, profile: str, trace: bool
) -> dict[str, Any]:
    """Import, re-import and grow one copy of ``source`` in a fresh database; checks what each step did."""
    with fresh_database(backend) as env, tempfile.TemporaryDirectory(prefix="arbor-bench-file-") as tmp:
        copy = Path(tmp) / source.name
        shutil.copyfile(source, copy)
        imported = run_child("import", copy, env, profile == "import", trace)
        assert imported["status"] == "new" and imported["entry_count"] == entries, imported
        again = run_child("reimport", copy, env, profile == "reimport")
        assert again["status"] == "unchanged", again
        with open(copy, "ab") as out, open(appended, "rb") as extra:
            shutil.copyfileobj(extra, out)
        synced = run_child("sync", copy, env, profile == "sync", trace)
        assert synced["status"] == "grown" and synced["entries_added"] == APPENDED, synced
        assert synced["entry_count"] == entries + APPENDED, synced
        return {
            "import_s": imported["seconds"],
            "import_peak_mb": imported["peak_mb"],
            "reimport_first_s": again["seconds"],
            "reimport_s": again["median_s"],
            "sync_s": synced["seconds"],
            "sync_peak_mb": synced["peak_mb"],
        }


def render(rows: list[dict[str, Any]], info: dict[str, str], repeat: int, seed: int) -> str:
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}, "
        f"{info['platform']}; {info['date']}. {rows[0]['server'] if rows else ''}"
        f"Median of {repeat} round(s) per size and database, seed {seed}; every number is one `sync_file` "
        "call in a fresh process on a fresh database.",
        "",
        "| database | entries | file | import | MB/s | peak RSS | unchanged re-import (first / median) "
        f"| sync +{APPENDED:,} entries | its peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['backend']} | {row['entries']:,} | {row['file_mb']:.3g} MB "
            f"| **{_fmt_s(row['import_s'])}** "
            f"| {row['file_mb'] / row['import_s']:.0f} | {_fmt_mb(row['import_peak_mb'])} "
            f"| {_fmt_s(row['reimport_first_s'])} / {_fmt_s(row['reimport_s'])} "
            f"| {_fmt_s(row['sync_s'])} | {_fmt_mb(row['sync_peak_mb'])} |"
        )
    checks: list[tuple[str, bool, str]] = []
    for row in rows:
        if row["entries"] < 100_000:
            continue
        name = row["backend"]
        limit = TARGET_SQLITE_S if name == "SQLite" else TARGET_POSTGRES_S
        checks.append((f"{name} import", row["import_s"] <= limit, f"≤ {limit:g} s"))
        checks.append(
            (f"{name} peak RSS", row["import_peak_mb"] < TARGET_PEAK_MB, f"< {TARGET_PEAK_MB:g} MB")
        )
        checks.append(
            (
                f"{name} unchanged re-import",
                row["reimport_first_s"] * 1000 < TARGET_REIMPORT_MS,
                f"< {TARGET_REIMPORT_MS:g} ms",
            )
        )
        checks.append(
            (f"{name} sync of {APPENDED:,}", row["sync_s"] < TARGET_SYNC_S, f"< {TARGET_SYNC_S:g} s")
        )
    if checks:
        lines.append("")
        lines.append(targets_line(checks))
    return "\n".join(lines)


def record(table: str) -> None:
    replace_block(BENCHMARKS, BEGIN, END, table, "Import into the database")


def _server_versions(backends: list[str]) -> str:
    import sqlite3

    parts = []
    if "sqlite" in backends:
        parts.append(f"SQLite {sqlite3.sqlite_version}")
    if "postgres" in backends:
        import psycopg

        with psycopg.connect(f"{PG_SERVER}/postgres") as conn:
            row = conn.execute("SHOW server_version").fetchone()
        parts.append(f"PostgreSQL {row[0] if row else '?'} on 127.0.0.1")
    return (", ".join(parts) + ". ") if parts else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated entry counts")
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="rounds per size and backend (median reported)")
    parser.add_argument("--keep", action="store_true", help="keep the files this run generated in bench/out/")
    parser.add_argument("--record", action="store_true", help="write the results table into BENCHMARKS.md")
    parser.add_argument(
        "--profile",
        choices=["import", "reimport", "sync"],
        default="",
        help="one extra round with cProfile around that step (to stderr)",
    )
    parser.add_argument("--trace", action="store_true", help="the extra round also runs tracemalloc")
    parser.add_argument("--child", nargs=2, metavar=("OP", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.profile != "", args.trace)))
        return 0

    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    for name in backends:
        if name not in ("sqlite", "postgres"):
            parser.error(f"unknown backend {name!r}")
    generated: list[Path] = []
    rows: list[dict[str, Any]] = []
    try:
        for size in sizes:
            source, gen_s = ensure_session(size, args.seed)
            if gen_s is not None:
                generated.append(source)
            appended, made = ensure_appended(size, args.seed)
            if made:
                generated.append(appended)
            file_mb = source.stat().st_size / 1e6
            note = f"generated in {gen_s:.1f} s" if gen_s is not None else "cached"
            print(f"# {size:,} entries: {source.name} ({file_mb:.1f} MB, {note})", file=sys.stderr)
            for backend in backends:
                rounds = []
                for attempt in range(args.repeat):
                    got = one_round(backend, source, appended, size, "", False)
                    rounds.append(got)
                    print(
                        f"  {backend} round {attempt + 1}: import {got['import_s']:.3f}s "
                        f"({file_mb / got['import_s']:.0f} MB/s, peak {got['import_peak_mb']:.0f} MB), "
                        f"unchanged {got['reimport_first_s'] * 1000:.2f} ms "
                        f"(median {got['reimport_s'] * 1000:.2f} ms), "
                        f"sync +{APPENDED} {got['sync_s']:.3f}s (peak {got['sync_peak_mb']:.0f} MB)",
                        file=sys.stderr,
                    )
                if args.profile or args.trace:
                    one_round(backend, source, appended, size, args.profile, args.trace)
                if not rounds:
                    continue
                row: dict[str, Any] = {
                    "backend": {"sqlite": "SQLite", "postgres": "PostgreSQL"}[backend],
                    "entries": size,
                    "file_mb": file_mb,
                }
                for key in rounds[0]:
                    row[key] = float(statistics.median(r[key] for r in rounds))
                rows.append(row)
    finally:
        if not args.keep:
            for path in generated:
                path.unlink(missing_ok=True)

    # Grouped by database, as the table reads best.
    rows.sort(key=lambda row: (row["backend"] != "SQLite", row["entries"]))
    if rows:
        rows[0]["server"] = _server_versions(backends)
    table = render(rows, machine_info(), args.repeat, args.seed)
    print(table)
    if args.record:
        record(table)
        print(f"\nrecorded in {BENCHMARKS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
