"""Load and fault benchmark (issue 11): Arbor in multi-user mode under a busy team's load, on loopback only.

Run from the repository root (PostgreSQL on 127.0.0.1:5432 with trust auth, Redis on 127.0.0.1:6379)::

    .venv/bin/python bench/load_bench.py                        # SQLite and PostgreSQL (+ Redis)
    .venv/bin/python bench/load_bench.py --backends sqlite --seconds 10
    .venv/bin/python bench/load_bench.py --record               # also write the results into BENCHMARKS.md

For each database: a fresh database (``bench/import_bench.fresh_database``) with the generated 50,000-entry
session (seed 2) and the hand-made fixtures imported, 50 users, and one daphne (``--workers N``: N of them, as
``./arbor serve --workers N`` runs, with Redis on both databases) in the production profile
(``DJANGO_DEBUG=0``, ``ARBOR_SINGLE_USER=0``; on PostgreSQL with the Redis channel layer and cache). Then:

* **load**: 20, then 50 signed-in clients for ``--seconds`` each, every client asking in turn for the session
  list, the 50k session's page, a filter switch (htmx), a search across sessions and a deep link; per kind
  p50/p95, errors (any status >= 400, a timeout, a dropped connection); daphne's RSS before, right after, and
  after 10 s of rest; on PostgreSQL the server connections of the database still open after the load;
* **fan-out**: 100 websockets on the 50k page, each refetching what an open page refetches when told the
  session changed (the rows of its tree pane in view, from the rows endpoint), while 20 label saves are
  made and one more client reads the session list: time from a save until every page has refetched, bytes
  per refetch, the list's p95;
* **kill -9 during import**: the generated 100,000-entry session imported into a fresh database, the import
  killed at several points, then run again to the end: the export must be the file byte for byte and hold as
  many entries as the file.

Every phase is bounded in time and in count; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.import_bench import fresh_database  # noqa: E402
from bench.report import replace_block, targets_line  # noqa: E402
from bench.run import ensure_session, machine_info  # noqa: E402
from tests.browser import daphne  # noqa: E402

BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:load:begin -->"
END = "<!-- bench:load:end -->"
PAGE_ENTRIES = 50_000
IMPORT_ENTRIES = 100_000
USERS = 50
PASSWORD = "load-bench-password-1"
SOCKETS = 100
LABEL_SAVES = 20
REQUEST_TIMEOUT = 60.0
REDIS_URL = "redis://127.0.0.1:6379/7"
# What an open page asks for when told that its session changed (static/live.js → static/explorer.js): the
# rows in view of its tree pane, from the rows endpoint (a 1440x900 window shows about 26 rows; 40 more on
# each side), with its selection to keep. Before: the whole tree pane and the reading pane
# (GET /s/<id>/ with HX-Request and HX-Target: tree, about 871 KB on the 50k page).
REFETCH_ROWS = 26 + 2 * 40
SEARCH_WORDS = ["tree", "parse tree", "test", "error", "function", "file"]
FIXTURES = ROOT / "tests" / "data" / "handmade"


# -- the server ---------------------------------------------------------------------------------------------


def _server_env(env: dict[str, str], backend: str) -> dict[str, str]:
    env = {
        **env,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "load-bench-" + "x" * 50,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "ARBOR_HTTPS": "0",
        "ARBOR_SINGLE_USER": "0",
        "ARBOR_SESSION_DIRS": str(Path(env["ARBOR_DATA_DIR"]) / "no-agent-dirs"),
        "ARBOR_WRITE_BACK": "0",
        # Many clients sign in from one address in this benchmark.
        "ARBOR_LOGIN_FAILURES": "1000",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("REDIS_URL", None)
    env.pop("ARBOR_REDIS_URL", None)
    if backend == "postgres":
        env["ARBOR_REDIS_URL"] = REDIS_URL
    return env


def _manage(env: dict[str, str], *args: str, timeout: float = 900) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=timeout,
        stdout=subprocess.PIPE,
        text=True,
    )
    return done.stdout


def _prepare(env: dict[str, str], session_file: Path) -> str:
    """Import the sessions and make the users; the 50k session's id. The user who saves labels in the fan-out
    (``u2``) may write on that session (a grant, as its owner gives one): the others only read."""
    _manage(env, "import_sessions", "-q", str(session_file), str(FIXTURES))
    sid = str(json.loads(session_file.open("rb").readline())["id"])
    setup = (
        "from django.contrib.auth.models import User\n"
        "from treeview.models import AgentSession, SessionGrant\n"
        f"User.objects.bulk_create([User(username=f'u{{i}}') for i in range({USERS})])\n"
        "for user in User.objects.all():\n"
        f"    user.set_password({PASSWORD!r}); user.save()\n"
        f"session = AgentSession.objects.get(session_id={sid!r})\n"
        "SessionGrant.objects.create(session=session, user=User.objects.get(username='u2'))\n"
    )
    _manage(env, "shell", "-c", setup)
    return sid


def _daphne_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            if b"daphne" in b" ".join(cmdline) and port.encode() in cmdline:
                return int(proc.name)
    raise RuntimeError(f"no daphne process serves {url}")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _pg_connections(env: dict[str, str]) -> int | None:
    url = env.get("DATABASE_URL")
    if not url:
        return None
    import psycopg

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (name,)
        ).fetchone()
    return int(row[0]) if row else 0


#: ``ARBOR_DB_POOL_SIZE``'s default (sessions_site/env.py): one daphne holds at most this many connections.
POOL_SIZE = 10


def _pg_connections_rested(env: dict[str, str], limit: float = 130.0) -> tuple[int | None, float]:
    """The connections still open once the server has rested: the pool closes an idle one every ``max_idle``
    (10 s, so at most 100 s for a full pool); polled until none is left or ``limit`` seconds have passed."""
    started = time.monotonic()
    while True:
        count = _pg_connections(env)
        waited = time.monotonic() - started
        if not count or waited >= limit:
            return count, waited
        time.sleep(1)


# -- clients ------------------------------------------------------------------------------------------------


async def _signed_in_client(base: str, index: int) -> httpx.AsyncClient:
    client = httpx.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT, follow_redirects=False)
    page = await client.get("/accounts/login/")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert token, "no CSRF token on the sign-in page"
    answer = await client.post(
        "/accounts/login/",
        data={"username": f"u{index % USERS}", "password": PASSWORD, "csrfmiddlewaretoken": token.group(1)},
        headers={"Referer": base + "/accounts/login/"},
    )
    if answer.status_code != 302:
        raise RuntimeError(f"sign-in answered {answer.status_code}")
    return client


def _requests(sid: str, deep_id: str) -> list[tuple[str, str, dict[str, str]]]:
    htmx = {"HX-Request": "true", "HX-Target": "tree"}
    page = f"/s/{sid}/"
    return [
        ("list", "/", {}),
        ("page", page, {}),
        ("filter", page + "?filter=no-tools", htmx),
        ("filter", page + "?filter=user-only", htmx),
        ("search", "/search/?q={word}", {}),
        ("deep link", page + f"?targetId={deep_id}", {}),
    ]


async def _client_loop(
    client: httpx.AsyncClient,
    plan: list[tuple[str, str, dict[str, str]]],
    until: float,
    latencies: dict[str, list[float]],
    errors: dict[str, int],
    offset: int,
) -> None:
    step = offset
    while time.monotonic() < until:
        kind, url, headers = plan[step % len(plan)]
        step += 1
        url = url.format(word=SEARCH_WORDS[step % len(SEARCH_WORDS)])
        started = time.monotonic()
        try:
            response = await client.get(url, headers=headers)
            if response.status_code >= 400:
                errors[f"{kind}: HTTP {response.status_code}"] += 1
                continue
        except httpx.HTTPError as error:
            errors[f"{kind}: {type(error).__name__}"] += 1
            continue
        latencies[kind].append(time.monotonic() - started)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _load(
    bases: list[str], sid: str, deep_id: str, clients: int, seconds: float, pids: list[int]
) -> dict[str, Any]:
    # Clients spread over the workers as a front server spreads them (round robin).
    signed_in = [await _signed_in_client(bases[index % len(bases)], index) for index in range(clients)]
    plan = _requests(sid, deep_id)
    # Warm-up: every kind once on every worker, so "before" is the RSS of servers that have served each page.
    for client in signed_in[: len(bases)]:
        for _kind, url, headers in plan:
            await client.get(url.format(word="tree"), headers=headers)
    rss_before = sum(_rss_mb(pid) for pid in pids)
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, int] = defaultdict(int)
    until = time.monotonic() + seconds
    await asyncio.gather(
        *(_client_loop(c, plan, until, latencies, errors, i) for i, c in enumerate(signed_in))
    )
    rss_after = sum(_rss_mb(pid) for pid in pids)
    for client in signed_in:
        await client.aclose()
    await asyncio.sleep(10)
    return {
        "clients": clients,
        "seconds": seconds,
        "kinds": {
            kind: {"n": len(v), "p50": statistics.median(v), "p95": _pct(v, 0.95)}
            for kind, v in sorted(latencies.items())
        },
        "errors": dict(errors),
        "rss_before": rss_before,
        "rss_after": rss_after,
        "rss_rest": sum(_rss_mb(pid) for pid in pids),
    }


async def _fan_out(bases: list[str], sid: str, label_target: str) -> dict[str, Any]:
    import websockets

    # Pages are spread over the workers as a front server spreads them (round robin); the label saves reach
    # every page's worker through the channel layer.
    base = bases[0]
    page_client = await _signed_in_client(base, 0)
    cookie = "; ".join(f"{name}={value}" for name, value in page_client.cookies.items())
    refetch_done: dict[int, list[float]] = defaultdict(list)
    refetch_bytes: list[int] = []
    refetch_errors = 0
    saves: list[float] = []
    stop = asyncio.Event()

    async def open_page(index: int) -> None:
        nonlocal refetch_errors
        own = bases[index % len(bases)]
        client = httpx.AsyncClient(base_url=own, timeout=REQUEST_TIMEOUT, cookies=page_client.cookies)
        async with websockets.connect(
            f"ws://{own.split('://', 1)[1]}/ws/s/{sid}/",
            additional_headers={"Cookie": cookie, "Origin": own},
            open_timeout=30,
        ) as socket:
            connected.append(index)
            if len(connected) == SOCKETS:
                ready.set()
            while not stop.is_set():
                try:
                    message = json.loads(await asyncio.wait_for(socket.recv(), timeout=0.5))
                except TimeoutError:
                    continue
                if message.get("type") != "changed":
                    continue
                save_index = len(saves) - 1
                try:
                    answer = await client.get(
                        f"/s/{sid}/rows/",
                        params={"start": 0, "count": REFETCH_ROWS, "targetId": label_target},
                    )
                    refetch_bytes.append(len(answer.content))
                    if answer.status_code >= 400:
                        refetch_errors += 1
                except httpx.HTTPError:
                    refetch_errors += 1
                refetch_done[save_index].append(time.monotonic())
        await client.aclose()

    ready = asyncio.Event()
    connected: list[int] = []
    pages = []
    # Pages open over a few seconds, not in one burst (daphne's listen backlog is 50 connections).
    for index in range(SOCKETS):
        pages.append(asyncio.create_task(open_page(index)))
        while len(connected) < index - 10:
            await asyncio.sleep(0.05)
    await asyncio.wait_for(ready.wait(), timeout=120)
    await asyncio.sleep(1)

    list_latencies: list[float] = []
    list_errors = 0

    async def read_list() -> None:
        nonlocal list_errors
        reader = await _signed_in_client(bases[1 % len(bases)], 1)
        while not stop.is_set():
            started = time.monotonic()
            try:
                answer = await reader.get("/")
                if answer.status_code >= 400:
                    list_errors += 1
            except httpx.HTTPError:
                list_errors += 1
            list_latencies.append(time.monotonic() - started)
            await asyncio.sleep(0.2)
        await reader.aclose()

    list_task = asyncio.create_task(read_list())
    saver = await _signed_in_client(base, 2)
    page = await saver.get(f"/s/{sid}/")
    token = saver.cookies.get("csrftoken") or ""
    for number in range(LABEL_SAVES):
        saves.append(time.monotonic())
        answer = await saver.post(
            f"/s/{sid}/label/",
            data={"target_id": label_target, "label": f"load {number}", "csrfmiddlewaretoken": token},
            headers={"X-CSRFToken": token, "Referer": f"{base}/s/{sid}/"},
        )
        if answer.status_code >= 400:
            raise RuntimeError(f"label save answered {answer.status_code}: {answer.text[:200]}")
        await asyncio.sleep(1.0)
    await asyncio.sleep(5)
    stop.set()
    await asyncio.gather(*pages, list_task, return_exceptions=True)
    await saver.aclose()
    await page_client.aclose()
    del page
    # Per save: the time until the last page that heard it had refetched (pages may coalesce saves).
    spans = [max(done) - saves[i] for i, done in sorted(refetch_done.items()) if i >= 0 and done]
    return {
        "sockets": SOCKETS,
        "saves": LABEL_SAVES,
        "refetches": sum(len(done) for done in refetch_done.values()),
        "refetch_errors": refetch_errors,
        "refetch_kb": statistics.median(refetch_bytes) / 1024 if refetch_bytes else 0.0,
        "all_refetched_p50": statistics.median(spans) if spans else float("nan"),
        "all_refetched_max": max(spans) if spans else float("nan"),
        "list_p95": _pct(list_latencies, 0.95),
        "list_errors": list_errors,
    }


# -- kill -9 during import ----------------------------------------------------------------------------------


def _kill_during_import(backend: str, path: Path, delays: list[float]) -> list[dict[str, Any]]:
    expected = hashlib.sha256(path.read_bytes()).hexdigest()
    with path.open("rb") as handle:
        lines = sum(1 for _ in handle)
        handle.seek(0)
        sid = json.loads(handle.readline())["id"]
    results = []
    for delay in delays:
        with fresh_database(backend) as env:
            env = {**env, "ARBOR_SESSION_DIRS": str(Path(env["ARBOR_DATA_DIR"]) / "none")}
            process = subprocess.Popen(
                [sys.executable, "manage.py", "import_sessions", "-q", str(path)],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            time.sleep(delay)
            killed = process.poll() is None
            process.send_signal(signal.SIGKILL)
            process.wait()
            _manage(env, "import_sessions", "-q", str(path))
            export = subprocess.run(
                [sys.executable, "manage.py", "export_session", sid, "-o", "-"],
                cwd=ROOT,
                env=env,
                check=True,
                stdout=subprocess.PIPE,
            ).stdout
            count = _manage(
                env,
                "shell",
                "--no-imports",
                "-c",
                f"from treeview.models import Entry; print(Entry.objects.filter(session__session_id={sid!r})"
                ".count())",
            ).strip()
            results.append(
                {
                    "delay": delay,
                    "killed": killed,
                    "identical": hashlib.sha256(export).hexdigest() == expected,
                    "entries": int(count),
                    "file_entries": lines - 1,
                }
            )
            print(f"  kill -9 after {delay:.0f} s: {results[-1]}", file=sys.stderr)
    return results


# -- the run ------------------------------------------------------------------------------------------------


def _deep_id(path: Path, depth: int) -> str:
    """An entry ``depth`` lines into the file (a deep link far from the leaf)."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle):
            if number == depth:
                return str(json.loads(line)["id"])
    raise ValueError("the session is shorter than that")


def run_backend(
    backend: str, seconds: float, client_counts: list[int], kill_delays: list[float], workers: int = 1
) -> dict[str, Any]:
    session_file, _ = ensure_session(PAGE_ENTRIES, 2)
    results: dict[str, Any] = {"backend": backend, "workers": workers}
    with fresh_database(backend) as base_env:
        env = _server_env(base_env, backend)
        if workers > 1:
            env["ARBOR_REDIS_URL"] = REDIS_URL  # several workers share live updates through Redis
        sid = _prepare(env, session_file)
        deep_id = _deep_id(session_file, PAGE_ENTRIES // 2)
        log = Path(env["ARBOR_DATA_DIR"]) / "daphne.log"
        with contextlib.ExitStack() as servers:
            urls = [servers.enter_context(daphne(env, log, timeout=120)) for _ in range(workers)]
            pids = [_daphne_pid(each) for each in urls]
            results["load"] = []
            for clients in client_counts:
                print(f"{backend}: {clients} clients for {seconds:.0f} s", file=sys.stderr)
                outcome = asyncio.run(_load(urls, sid, deep_id, clients, seconds, pids))
                outcome["connections_after"] = _pg_connections(env)
                results["load"].append(outcome)
            print(f"{backend}: {SOCKETS} sockets, {LABEL_SAVES} label saves", file=sys.stderr)
            results["fan_out"] = asyncio.run(_fan_out(urls, sid, deep_id))
            results["fan_out"]["connections_after"] = _pg_connections(env)
            rested, waited = _pg_connections_rested(env)
            results["connections_rested"], results["rest_seconds"] = rested, waited
        text = log.read_text(errors="replace")
        results["tracebacks"] = text.count("Traceback")
        # The scratch data directory goes with the database: keep daphne's log as the run's evidence.
        kept = ROOT / "bench" / "out" / f"load-daphne-{backend}.log"
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(text)
    if kill_delays:
        import_file, _ = ensure_session(IMPORT_ENTRIES, 1)
        print(f"{backend}: kill -9 during import at {kill_delays}", file=sys.stderr)
        results["kill"] = _kill_during_import(backend, import_file, kill_delays)
    return results


def render(all_results: list[dict[str, Any]], info: dict[str, str], seconds: float) -> str:
    workers = max((r.get("workers", 1) for r in all_results), default=1)
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']}, Python {info['python']}; "
        f"{info['date']}; load average at the start {info['load']}.",
        f"`.venv/bin/python bench/load_bench.py --seconds {seconds:.0f}"
        f"{f' --workers {workers}' if workers > 1 else ''}`: {workers} daphne process"
        f"{'es (clients and the fan-out pages spread round robin)' if workers > 1 else ''}, "
        "`DJANGO_DEBUG=0`, "
        "multi-user; PostgreSQL with the Redis channel layer and cache"
        f"{', SQLite too' if workers > 1 else ''}.",
        "",
        "| backend | clients | list p50 / p95 | page p50 / p95 | filter p50 / p95 | search p50 / p95 | "
        "deep link p50 / p95 | requests | errors | RSS before → after → rested | PG connections after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    checks = []
    for result in all_results:
        for load in result["load"]:
            kinds = load["kinds"]

            def cell(kind: str, kinds: dict[str, Any] = kinds) -> str:
                k = kinds.get(kind)
                return f"{k['p50'] * 1000:.0f} / {k['p95'] * 1000:.0f} ms" if k else "—"

            total = sum(k["n"] for k in kinds.values())
            errors = sum(load["errors"].values())
            rss = f"{load['rss_before']:.0f} → {load['rss_after']:.0f} → {load['rss_rest']:.0f} MB"
            connections = load["connections_after"]
            lines.append(
                f"| {result['backend']} | {load['clients']} | {cell('list')} | {cell('page')} | "
                f"{cell('filter')} | {cell('search')} | {cell('deep link')} | {total:,} | {errors} | {rss} | "
                f"{'—' if connections is None else connections} |"
            )
            name = f"{result['backend']} {load['clients']} clients"
            checks.append((f"{name}: 0 errors", errors == 0, f"{errors}"))
            if load["clients"] == 20:
                for kind in ("list", "page"):
                    p95 = kinds.get(kind, {}).get("p95", float("inf"))
                    checks.append((f"{name}: {kind} p95 < 1 s", p95 < 1.0, f"{p95:.2f} s"))
            growth = load["rss_rest"] / load["rss_before"] - 1 if load["rss_before"] else 0
            checks.append((f"{name}: RSS back within 20 %", growth <= 0.2, f"{growth:+.0%}"))
            if connections is not None:
                # Each worker's pool keeps its connections for reuse until they are idle for its max_idle.
                pools = POOL_SIZE * result.get("workers", 1)
                checks.append(
                    (f"{name}: connections within the pools", connections <= pools, str(connections))
                )
        rested = result.get("connections_rested")
        if rested is not None:
            checks.append(
                (
                    f"{result['backend']}: 0 connections left after rest",
                    rested == 0,
                    f"{rested} after {result['rest_seconds']:.0f} s",
                )
            )
    lines += [
        "",
        "| backend | sockets | label saves | refetches | refetch size | every page refetched after a save "
        "(p50 / max) | list p95 meanwhile | errors |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for result in all_results:
        fan = result["fan_out"]
        lines.append(
            f"| {result['backend']} | {fan['sockets']} | {fan['saves']} | {fan['refetches']:,} | "
            f"{fan['refetch_kb']:.0f} KB | "
            f"{fan['all_refetched_p50']:.2f} / {fan['all_refetched_max']:.2f} s | "
            f"{fan['list_p95'] * 1000:.0f} ms | {fan['refetch_errors'] + fan['list_errors']} |"
        )
        list_p95 = fan["list_p95"]
        checks.append((f"{result['backend']} fan-out: list p95 < 1 s", list_p95 < 1.0, f"{list_p95:.2f} s"))
    kill_rows = [(r["backend"], k) for r in all_results for k in r.get("kill", [])]
    if kill_rows:
        lines += [
            "",
            "| backend | kill -9 after | killed mid-import | export byte-identical | entries / in the file |",
            "|---|---|---|---|---|",
        ]
        for backend, kill in kill_rows:
            lines.append(
                f"| {backend} | {kill['delay']:.0f} s | {'yes' if kill['killed'] else 'no (already done)'} | "
                f"{'yes' if kill['identical'] else '**no**'} | "
                f"{kill['entries']:,} / {kill['file_entries']:,} |"
            )
            checks.append(
                (
                    f"{backend} kill -9 at {kill['delay']:.0f} s: nothing lost or duplicated",
                    kill["identical"] and kill["entries"] == kill["file_entries"],
                    f"{kill['entries']:,}",
                )
            )
    tracebacks = sum(r["tracebacks"] for r in all_results)
    checks.append(("no traceback in daphne's log", tracebacks == 0, str(tracebacks)))
    lines += ["", targets_line(checks)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", default="20,50")
    parser.add_argument("--kill-at", default="2,5,9", help="seconds into the import; empty: skip")
    parser.add_argument(
        "--workers", type=int, default=1, help="daphne processes (as `./arbor serve --workers N`; >1: Redis)"
    )
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args(argv)
    random.seed(1)
    info = machine_info()
    info["load"] = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    kill_delays = [float(x) for x in args.kill_at.split(",") if x.strip()]
    clients = [int(x) for x in args.clients.split(",") if x.strip()]
    results = []
    for backend in args.backends.split(","):
        results.append(run_backend(backend, args.seconds, clients, kill_delays, args.workers))
        # Kept as they come: a later failure does not lose a long run's figures.
        (ROOT / "bench" / "out" / f"load-{backend}.json").write_text(json.dumps(results[-1], indent=2))
    if args.json:
        print(json.dumps(results, indent=2))
    table = render(results, info, args.seconds)
    print(table)
    if args.record:
        replace_block(BENCHMARKS, BEGIN, END, table, "Load and faults (issue 11)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
