"""Benchmark ``./arbor push`` against a live server over loopback (issue 14).

Run from the repository root::

    .venv/bin/python bench/push_bench.py                    # all three parts, SQLite
    .venv/bin/python bench/push_bench.py --parts first      # one part: first, watch, concurrent
    .venv/bin/python bench/push_bench.py --record           # also write the results into BENCHMARKS.md

* ``first``: the generated 100k-entry session (~250 MB, ``bench/out``) imported locally with
  ``import_sessions`` into a fresh database, then pushed with ``arbor push`` to a fresh server (one daphne
  worker) over loopback; wall times, their ratio (target <= 1.5) and the client's peak RSS (target <= 200 MB;
  ``ru_maxrss`` of a wrapper's only child, the client).
* ``watch``: a session page open in Chromium (Playwright) on a 2,000-entry pushed session while
  ``arbor push --watch`` follows the file; 1,000 entries appended one by one (20 ms apart); for each, the time
  from its write until the page's websocket is told of a leaf at or past it. p50 / p95 (target p95 < 2 s).
* ``concurrent``: 20 ``arbor push --watch`` clients (20 users, one file each, two daphne workers) while a
  writer appends to every file for 60 s; then every file must be on the server byte for byte with as many
  entries (0 lost, 0 duplicated), and no client or server error.

Loopback only, bounded in time and count. The load average is printed with every figure: the machine is
shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.report import replace_block  # noqa: E402
from bench.run import ensure_session, machine_info  # noqa: E402
from tests.live_push import CLIENT, client_env, live, token_for  # noqa: E402
from treeview.session.jsonl import dumps  # noqa: E402
from treeview.session.session_manager import SessionManager  # noqa: E402

BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:push:begin -->"
#: How long the pushers may take, after the writer stops, to have everything on the server.
CATCH_UP = 120
END = "<!-- bench:push:end -->"


def load() -> str:
    return "{:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


def entry(entry_id: str, parent: str, text: str) -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    return dumps(
        {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-06-01T10:00:00.000Z",
            "message": message,
        }
    )


# -- first push --------------------------------------------------------------------------------------------


def first_push(work: Path) -> dict[str, Any]:
    path, _ = ensure_session(100_000, 1)
    size = path.stat().st_size
    # Local import: a fresh database, the same file, the same command ./arbor run uses.
    local = work / "local"
    env = {
        **os.environ,
        "ARBOR_DATA_DIR": str(local / "data"),
        "ARBOR_SESSION_DIRS": str(local / "none"),
        "ARBOR_DB": "sqlite",
    }
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "import_sessions", "-q", str(path)], cwd=ROOT, env=env, check=True
    )
    imported = time.perf_counter() - started
    import_load = load()
    with live(work / "server", users=("bench",)) as server:
        token = token_for(server, "bench")
        wrapper = (
            "import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
            "sys.stderr.write('MAXRSS %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "sys.exit(code)"
        )
        started = time.perf_counter()
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                wrapper,
                sys.executable,
                "-c",
                CLIENT,
                "--server",
                server.url,
                "--token",
                token,
                "--machine",
                "bench",
                str(path),
            ],
            cwd=ROOT,
            env=client_env(work),
            capture_output=True,
            text=True,
            check=True,
        )
        pushed = time.perf_counter() - started
        rss_mb = int(done.stderr.rsplit("MAXRSS", 1)[1].split()[0]) / 1024
        state = json.loads(
            server.shell(
                "import json; from treeview.models import AgentSession; s = AgentSession.objects.get(); "
                "print(json.dumps({'entries': s.entry_count, 'size': s.source_size + len(s.pending_raw)}))"
            )
        )
    return {
        "size_mb": size / 1e6,
        "import_s": imported,
        "import_load": import_load,
        "push_s": pushed,
        "push_load": load(),
        "ratio": pushed / imported,
        "client_rss_mb": rss_mb,
        "entries": state["entries"],
        "complete": state["size"] == size,
    }


# -- watch latency -----------------------------------------------------------------------------------------


def watch_latency(work: Path, appended: int = 1000, gap: float = 0.02) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS
    from treeview.session.generate import write_session

    path = work / "watched" / "watched.jsonl"
    path.parent.mkdir(parents=True)
    write_session(path, 2000, 7)
    sid = SessionManager.open(path).session_id
    parent = str(SessionManager.open(path).leaf_id)
    with live(work / "watch-server", users=("bench",), ARBOR_SINGLE_USER="1") as server:
        server.shell("from treeview.access import local_user; local_user()")
        token = token_for(server, "local")
        log = work / "watch.log"
        out = log.open("ab")
        client = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CLIENT,
                "--server",
                server.url,
                "--token",
                token,
                "--watch",
                "--machine",
                "b",
                str(path.parent),
            ],
            cwd=ROOT,
            env=client_env(work),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()
        try:
            deadline = time.monotonic() + 120
            while "sent" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            frames: list[tuple[float, str]] = []
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()

                def on_socket(socket: Any) -> None:
                    def on_frame(payload: Any) -> None:
                        try:
                            message = json.loads(payload)
                        except (TypeError, ValueError):
                            return
                        if message.get("type") == "changed" and message.get("leaf"):
                            frames.append((time.perf_counter(), message["leaf"]))

                    socket.on("framereceived", on_frame)

                page.on("websocket", on_socket)
                page.goto(f"{server.url}/s/{sid}/")
                page.wait_for_timeout(1500)
                written: dict[str, float] = {}
                order: list[str] = []
                with path.open("a") as handle:
                    for n in range(appended):
                        entry_id = f"w{n:07d}"
                        handle.write(entry(entry_id, parent, f"appended {n}") + "\n")
                        handle.flush()
                        written[entry_id] = time.perf_counter()
                        order.append(entry_id)
                        parent = entry_id
                        # Waiting through Playwright, not time.sleep: its sync API runs the frame callbacks
                        # (which take the arrival times) only while the script is inside one of its calls, so
                        # a sleep here stamped every frame with the end of the writes.
                        page.wait_for_timeout(gap * 1000)
                deadline = time.monotonic() + 60
                while (not frames or frames[-1][1] != order[-1]) and time.monotonic() < deadline:
                    page.wait_for_timeout(100)
                browser.close()
        finally:
            client.terminate()
            client.wait(timeout=30)
    position = {entry_id: i for i, entry_id in enumerate(order)}
    latencies = []
    for entry_id in order:
        seen = next((at for at, leaf in frames if position.get(leaf, -1) >= position[entry_id]), None)
        latencies.append((seen - written[entry_id]) if seen is not None else float("inf"))
    latencies.sort()
    return {
        "appended": appended,
        "p50_s": statistics.median(latencies),
        "p95_s": latencies[int(len(latencies) * 0.95) - 1],
        "max_s": latencies[-1],
        "events": len(frames),
        "load": load(),
    }


# -- concurrent pushers ------------------------------------------------------------------------------------


def concurrent(work: Path, clients: int = 20, seconds: float = 60) -> dict[str, Any]:
    from treeview.session.generate import write_session

    users = tuple(f"user{n}" for n in range(clients))
    files = []
    with live(work / "concurrent-server", workers=2, users=users) as server:
        tokens = [token_for(server, user) for user in users]
        processes = []
        for n, token in enumerate(tokens):
            folder = work / f"laptop{n}"
            folder.mkdir()
            path = folder / f"s{n}.jsonl"
            write_session(path, 300, 100 + n)
            files.append(path)
            out = (work / f"client{n}.log").open("ab")
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-c",
                        CLIENT,
                        "--server",
                        server.urls()[n % 2],
                        "--token",
                        token,
                        "--watch",
                        "--machine",
                        f"laptop{n}",
                        str(folder),
                    ],
                    cwd=ROOT,
                    env=client_env(folder),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
            out.close()
        parents = {path: str(SessionManager.open(path).leaf_id) for path in files}
        written = 0
        started = time.monotonic()
        stop = threading.Event()

        def writer() -> None:
            nonlocal written
            n = 0
            while not stop.is_set():
                for path in files:
                    entry_id = f"c{n:07d}"
                    with path.open("a") as handle:
                        handle.write(entry(entry_id, parents[path], f"concurrent {n}") + "\n")
                    parents[path] = entry_id
                    written += 1
                n += 1
                time.sleep(0.25)

        thread = threading.Thread(target=writer)
        thread.start()
        time.sleep(seconds)
        stop.set()
        thread.join()
        elapsed = time.monotonic() - started
        stopped = time.monotonic()
        run_load = load()
        # Let the clients catch up (at most CATCH_UP seconds), then stop them (SIGTERM: a clean stop).
        want = {}
        for path in files:
            manager = SessionManager.open(path)
            want[manager.session_id] = len(manager.entries)
        catch_up = None
        while time.monotonic() - stopped < CATCH_UP:
            counts = json.loads(
                server.shell(
                    "import json\nfrom treeview.models import AgentSession\n"
                    "print(json.dumps(dict(AgentSession.objects.values_list('session_id', 'entry_count'))))"
                )
            )
            if all(counts.get(sid) == n for sid, n in want.items()):
                catch_up = time.monotonic() - stopped
                break
            time.sleep(1)
        for process in processes:
            process.terminate()
        codes = [process.wait(timeout=60) for process in processes]
        state = json.loads(
            server.shell(
                "import json\nfrom treeview.models import AgentSession\n"
                "from treeview.services.export import export_text\n"
                "print(json.dumps({s.session_id: [export_text(s), s.entry_count, s.entries.count()] "
                "for s in AgentSession.objects.all()}))"
            )
        )
        server_errors = sum(
            1
            for log in server.root.glob("daphne-*.log")
            for line in log.read_text(errors="replace").splitlines()
            if '" 5' in line
        )
    lost = duplicated = mismatched = 0
    for path in files:
        manager = SessionManager.open(path)
        held = state.get(manager.session_id)
        if held is None:
            lost += len(manager.entries)
            continue
        export, count, rows = held
        mismatched += export.encode() != path.read_bytes()
        lost += max(0, len(manager.entries) - rows)
        duplicated += max(0, rows - len(manager.entries)) + (count != rows)
    client_errors = sum(
        (work / f"client{n}.log").read_text(errors="replace").count("failed") for n in range(clients)
    )
    return {
        "clients": clients,
        "seconds": round(elapsed),
        "entries_written": written,
        "lost": lost,
        "duplicated": duplicated,
        "files_differing": mismatched,
        "client_errors": client_errors,
        "server_5xx": server_errors,
        "exit_codes": sorted(set(codes)),
        "catch_up_s": None if catch_up is None else round(catch_up, 1),
        "load": run_load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--parts", nargs="+", default=["first", "watch", "concurrent"])
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="arbor-push-bench-") as work:
        for part in args.parts:
            folder = Path(work) / part
            folder.mkdir()
            function = {"first": first_push, "watch": watch_latency, "concurrent": concurrent}[part]
            results[part] = function(folder)
            print(part, json.dumps(results[part]), flush=True)
    if args.record:
        record(results)


def record(results: dict[str, Any]) -> None:
    info = machine_info()
    lines = [
        f"{time.strftime('%Y-%m-%d')}, {info.get('cpu', '?')}, `.venv/bin/python bench/push_bench.py`",
        "",
    ]
    if "first" in results:
        r = results["first"]
        lines.append(
            f"- First push of the 100k-entry session ({r['size_mb']:.0f} MB, SQLite, one worker): local "
            f"import {r['import_s']:.1f} s (load {r['import_load']}), push {r['push_s']:.1f} s "
            f"(load {r['push_load']}), "
            f"ratio **{r['ratio']:.2f}** (target <= 1.5), client peak RSS **{r['client_rss_mb']:.0f} MB** "
            f"(target <= 200); {r['entries']} entries, complete: {r['complete']}."
        )
    if "watch" in results:
        r = results["watch"]
        lines.append(
            f"- `--watch`, {r['appended']} entries appended 20 ms apart, seen on the open session page's "
            f"websocket: p50 {r['p50_s']:.2f} s, **p95 {r['p95_s']:.2f} s** (target < 2 s), max "
            f"{r['max_s']:.2f} s, {r['events']} page events (load {r['load']})."
        )
    if "concurrent" in results:
        r = results["concurrent"]
        lines.append(
            f"- {r['clients']} concurrent `--watch` pushers for {r['seconds']} s on two workers: "
            f"{r['entries_written']} entries written, **{r['lost']} lost, {r['duplicated']} duplicated**, "
            f"{r['files_differing']} files differing, {r['client_errors']} client errors, {r['server_5xx']} "
            f"server 5xx, client exit codes {r['exit_codes']}; everything on the server "
            + (
                f"{r['catch_up_s']} s after the writer stopped"
                if r.get("catch_up_s") is not None
                else f"not within {CATCH_UP} s of the writer stopping"
            )
            + f" (load {r['load']})."
        )
    replace_block(BENCHMARKS, BEGIN, END, "\n".join(lines), "Pushing sessions (`bench/push_bench.py`)")


if __name__ == "__main__":
    main()
