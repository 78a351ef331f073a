"""The first page of the generated 100,000-entry session as a person meets it: right after its import, and
after each restart of the server (issue 12: targets < 1.5 s and < 1 s).

    .venv/bin/python bench/restart_bench.py                          # SQLite, 5 restarts
    .venv/bin/python bench/restart_bench.py --backends sqlite postgres --repeat 3
    .venv/bin/python bench/restart_bench.py --prewarm 0              # without the start-up prewarm
    .venv/bin/python bench/restart_bench.py --delay 2                # the person comes 2 s after the start
    .venv/bin/python bench/restart_bench.py --port 8102 --data-dir /tmp/x --pg-database test_x

For each database: a fresh database and ``ARBOR_DATA_DIR`` (as ``bench/import_bench.py`` makes them), the
session imported with ``manage.py import_sessions`` (timed), then daphne started and, as soon as it accepts a
connection (a bare TCP connect: no HTTP request comes before the page), the session page asked for
(``/s/<id>/``, timed from sending the request to the last byte: the server's time as ``curl`` sees it),
then once more (warm). ``start``: from starting daphne until it accepts a connection (the prewarm's first
pages are waited for there, up to ``ARBOR_PREWARM_WAIT``); ``start_to_page``: ``start`` plus the first page,
the restart as a person waiting for the page meets it. "after import" is the first start after the import;
"after restart" each start after that. ``--prewarm N`` sets ``ARBOR_PREWARM_SESSIONS`` for daphne,
``--prewarm-wait S`` ``ARBOR_PREWARM_WAIT`` (default: the settings' defaults). On a shared machine:
``--port``, ``--data-dir`` (the scratch data directories go there) and ``--pg-database`` (the name of the
PostgreSQL database made, and dropped at the end).
``--browser``: the first request is Chromium's instead (Playwright, ``/usr/bin/chromium``, 1440x900): its
navigation timing (``server``: request start to response start; ``response``: to the last byte; ``dcl``:
DOMContentLoaded; ``load``: the load event; all from the navigation's start) besides the time seen here.
Prints JSON: every time, medians, the load average before and after. Settings are the defaults (``DEBUG``
on). Nothing is written to BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.import_bench import fresh_database  # noqa: E402
from bench.run import ensure_session  # noqa: E402
from tests.browser import ASGI_APP, free_port  # noqa: E402


def _session_id(path: Path) -> str:
    with path.open("rb") as handle:
        header = json.loads(handle.readline())
    return str(header["id"])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float) -> float:
    started = time.monotonic()
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return time.monotonic() - started
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("daphne did not start")


def _get(url: str) -> tuple[float, int, int]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
        status = response.status
    return time.perf_counter() - started, status, len(body)


NAVIGATION = """() => {
  const n = performance.getEntriesByType('navigation')[0];
  return {server: n.responseStart - n.requestStart, response: n.responseEnd, dcl: n.domContentLoadedEventEnd,
          load: n.loadEventEnd};
}"""


def _browse(browser: Any, url: str) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        started = time.perf_counter()
        page.goto(url, wait_until="load", timeout=120_000)
        seen = time.perf_counter() - started
        timing = page.evaluate(NAVIGATION)
    finally:
        context.close()
    return {"seen": round(seen, 3), **{key: round(value / 1000, 3) for key, value in timing.items()}}


def first_page(
    env: dict[str, str], session_id: str, log: Path, delay: float, browser: Any = None, port: int = 0
) -> dict[str, Any]:
    """Start daphne (on ``port``, default: a free one), ask for the session page as its first request
    (``browser``: Chromium's), then again (warm, without the browser); stop daphne."""
    port = port or free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), ASGI_APP],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            start = _wait_for_port(port, process, time.monotonic() + 120)
            if delay:
                time.sleep(delay)
            url = f"http://127.0.0.1:{port}/s/{session_id}/"
            chromium = None
            if browser is not None:
                chromium = _browse(browser, url)
                first, status, size = chromium["seen"], 200, 0
            else:
                first, status, size = _get(url)
            warm, status, size = _get(url)
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    if status != 200:
        raise RuntimeError(f"the session page answered {status}")
    result = {
        "start": round(start, 3),
        "first": round(first, 3),
        "start_to_page": round(start + first, 3),
        "warm": round(warm, 3),
        "bytes": size,
    }
    if chromium is not None:
        result["chromium"] = chromium
    return result


def run_backend(
    backend: str, path: Path, args: argparse.Namespace, work: Path, browser: Any = None
) -> dict[str, Any]:
    data_root = Path(args.data_dir) if args.data_dir else None
    with fresh_database(backend, data_root=data_root, pg_name=args.pg_database) as env:
        env = {**env, "ARBOR_WRITE_BACK": "0", "ARBOR_SESSION_DIRS": str(work / "none")}
        if args.prewarm is not None:
            env["ARBOR_PREWARM_SESSIONS"] = str(args.prewarm)
        if args.prewarm_wait is not None:
            env["ARBOR_PREWARM_WAIT"] = str(args.prewarm_wait)
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "import_sessions", "-q", str(path)], cwd=ROOT, env=env, check=True
        )
        imported = time.perf_counter() - started
        session_id = _session_id(path)
        log = work / f"daphne-{backend}.log"
        after_import = first_page(env, session_id, log, args.delay, browser, args.port)
        restarts = [
            first_page(env, session_id, log, args.delay, browser, args.port) for _ in range(args.repeat)
        ]
    return {
        "import_s": round(imported, 2),
        "after_import": after_import,
        "after_restart": restarts,
        "after_restart_median": round(statistics.median(r["first"] for r in restarts), 3),
        "start_to_page_median": round(statistics.median(r["start_to_page"] for r in restarts), 3),
        "warm_median": round(statistics.median(r["warm"] for r in restarts), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", nargs="+", default=["sqlite"], choices=["sqlite", "postgres"])
    parser.add_argument("--repeat", type=int, default=5, help="restarts timed after the first start")
    parser.add_argument("--prewarm", type=int, default=None, help="ARBOR_PREWARM_SESSIONS for daphne")
    parser.add_argument("--prewarm-wait", type=float, default=None, help="ARBOR_PREWARM_WAIT for daphne")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between the start and the request")
    parser.add_argument("--browser", action="store_true", help="the first request made by Chromium")
    parser.add_argument("--port", type=int, default=0, help="daphne's port (default: a free one)")
    parser.add_argument(
        "--data-dir", default="", help="where the scratch ARBOR_DATA_DIR goes (default: TMPDIR)"
    )
    parser.add_argument(
        "--pg-database", default=None, help="PostgreSQL database name (made again; default: a unique one)"
    )
    args = parser.parse_args()
    path, _ = ensure_session(args.entries, args.seed)
    work = Path(args.data_dir or os.environ.get("TMPDIR", "/tmp")) / f"arbor-restart-bench-{os.getpid()}"
    (work / "none").mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"session": path.name, "load_before": os.getloadavg()[0]}
    if args.browser:
        from playwright.sync_api import sync_playwright

        from tests.browser import CHROMIUM, CHROMIUM_ARGS

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                for backend in args.backends:
                    result[backend] = run_backend(backend, path, args, work, browser)
            finally:
                browser.close()
    else:
        for backend in args.backends:
            result[backend] = run_backend(backend, path, args, work)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
