"""Benchmark the session page on the generated 100,000-entry session: server time per request, and Chromium.

Run from the repository root (PostgreSQL: a local server on 127.0.0.1:5432, user postgres, trust auth)::

    .venv/bin/python bench/explorer_bench.py                    # SQLite and PostgreSQL, server and browser
    .venv/bin/python bench/explorer_bench.py --backends sqlite --no-browser
    .venv/bin/python bench/explorer_bench.py --record           # also write the results into BENCHMARKS.md
    .venv/bin/python bench/explorer_bench.py --backends sqlite --no-browser --profile label
                                                                # cProfile of the warm label saves, to stderr

For each database the parent makes a fresh database (as ``bench/import_bench.py`` does: a new
``ARBOR_DATA_DIR``; for PostgreSQL also a new database ``arbor_bench_…``, dropped at the end), imports the
generated session (``bench/out/session-100000-s1-….jsonl``, shared with the other benchmarks) with
``manage.py import_sessions``, then:

* **cold**: for each request, a fresh process (this script with ``--child``) whose first request it is, made
  with Django's test client: the forest is read (from its snapshot on disk, as after a server restart; once
  also with no snapshot, as the first time a session is opened) and flattened, templates compiled;
* **warm**: one more process that makes every request once, then ``--repeat`` times each (median and max);
  label saves each append a label entry (the session changes), the page is asked again after each;
* **browser**: daphne on the same database and Chromium (Playwright, ``/usr/bin/chromium``): the first page
  and the deep link, each right after a server start (cold) and again (warm): navigation timing, when htmx
  has initialised the page, how many DOM elements and tree rows it holds.

The requests: the session page; a filter switch (htmx, target ``tree``, each time another mode); a search
(htmx, each time another query); a label save (htmx POST of the label form); the page deep-linked to the
entry 40,000 entries down the current path (``?targetId=``), as a full page and by htmx; the Context tab at
that entry.
Settings are the defaults (``DEBUG`` on, as a local install runs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report import replace_block, targets_line

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.import_bench import _server_versions, fresh_database  # noqa: E402
from bench.run import _fmt_s, ensure_session, machine_info  # noqa: E402

BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:explorer:begin -->"
END = "<!-- bench:explorer:end -->"
ENTRIES = 100_000
DEEP = 40_000
CHROMIUM = "/usr/bin/chromium"

# Targets (100k entries).
TARGET_WARM_MS = 150.0
TARGET_COLD_S = 1.0
TARGET_TTI_S = 1.0

REQUESTS = ("page", "filter", "search", "label", "deep", "deep_htmx", "context")
LABELS = {
    "page": "session page",
    "filter": "filter switch (htmx)",
    "search": "search (htmx)",
    "label": "label save (htmx POST)",
    "page_after_label": "session page after a label save",
    "deep": f"deep link, {DEEP:,} entries down (page)",
    "deep_htmx": f"deep link, {DEEP:,} entries down (htmx)",
    "context": "Context tab at that entry (htmx)",
}
MODES = ("no-tools", "user-only", "labeled-only", "all", "default")
QUERIES = ("read", "schema", "test fail", "café", "tree node", "zzz-nothing", "config", "lsp", "plan", "über")


# ---------------------------------------------------------------------------------------------------------
# Child: requests through Django's test client, in this process


class Requests:
    """The benchmark's requests on one session; ``make(name, i)`` makes the i-th request of a kind."""

    def __init__(self, info: dict[str, Any]) -> None:
        from django.test import Client

        self.client = Client(HTTP_HOST="localhost")
        self.base = f"/s/{info['session_id']}/"
        self.deep = info["deep_id"]
        self.targets: list[str] = info["label_targets"]
        self.htmx = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "tree"}

    def make(self, name: str, i: int) -> Any:
        client, base = self.client, self.base
        if name in ("page", "page_after_label"):
            return client.get(base)
        if name == "filter":
            return client.get(base, {"filter": MODES[i % len(MODES)]}, **self.htmx)
        if name == "search":
            return client.get(base, {"q": f"{QUERIES[i % len(QUERIES)]}"}, **self.htmx)
        if name == "label":
            target = self.targets[i % len(self.targets)]
            return client.post(base + "label/", {"target_id": target, "label": f"bench {i}"}, **self.htmx)
        if name == "deep":
            return client.get(base, {"targetId": self.deep})
        if name == "deep_htmx":
            return client.get(base, {"targetId": self.deep}, **self.htmx)
        if name == "context":
            return client.get(
                base + "context/", {"targetId": self.deep}, HTTP_HX_REQUEST="true", HTTP_HX_TARGET="context"
            )
        raise ValueError(name)

    def timed(self, name: str, i: int) -> tuple[float, int]:
        t0 = time.perf_counter()
        response = self.make(name, i)
        elapsed = time.perf_counter() - t0
        if response.status_code != 200:
            raise SystemExit(f"{name}: HTTP {response.status_code}")
        return elapsed, len(response.content)


def _peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessions_site.settings")
    import django

    django.setup()
    from django.db import connection

    connection.ensure_connection()  # connecting is not what is measured


def child_info() -> dict[str, Any]:
    """The session's id, the entry DEEP entries down its current path, entries to label, the path depth."""
    _setup()
    from treeview import explorer
    from treeview.models import AgentSession

    session = AgentSession.objects.get()
    tree = explorer.explorer_tree(session, session.leaf_id)
    path = explorer.path_ids(tree.flat, session.leaf_id)
    return {
        "session_id": session.session_id,
        "deep_id": path[DEEP],
        "depth": len(path),
        "entries": session.entry_count,
        "label_targets": [path[i] for i in range(DEEP, DEEP + 2000, 97)],
    }


def child_cold(info: dict[str, Any], name: str) -> dict[str, Any]:
    """The first request of this process: nothing cached, as right after a server restart."""
    _setup()
    requests = Requests(info)
    cpu = time.process_time()
    elapsed, size = requests.timed(name, 0)
    # CPU time of this process too: on a shared machine the wall time also counts waiting for a CPU.
    return {"seconds": elapsed, "cpu": time.process_time() - cpu, "bytes": size, "peak_mb": _peak_mb()}


def child_warm(info: dict[str, Any], repeat: int, profile: str) -> dict[str, Any]:
    """Every request once to warm up, then ``repeat`` times each; label saves each followed by the page."""
    _setup()
    requests = Requests(info)
    for name in REQUESTS:
        if name != "label":
            requests.timed(name, 0)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
    results: dict[str, Any] = {}
    for name in REQUESTS:
        if name == "label":
            continue
        times, size = [], 0
        for i in range(1, repeat + 1):
            if profiler is not None and name == profile:
                profiler.enable()
            elapsed, size = requests.timed(name, i)
            if profiler is not None:
                profiler.disable()
            times.append(elapsed)
        results[name] = {"median": statistics.median(times), "max": max(times), "bytes": size}
    # Label saves change the session: the forest grows by one row, the tree by one node.
    saves, pages, size, page_size = [], [], 0, 0
    for i in range(1, repeat + 1):
        if profiler is not None and profile == "label":
            profiler.enable()
        elapsed, size = requests.timed("label", i)
        if profiler is not None:
            profiler.disable()
        saves.append(elapsed)
        elapsed, page_size = requests.timed("page_after_label", i)
        pages.append(elapsed)
    results["label"] = {"median": statistics.median(saves), "max": max(saves), "bytes": size}
    results["page_after_label"] = {"median": statistics.median(pages), "max": max(pages), "bytes": page_size}
    results["peak_mb"] = _peak_mb()
    if profiler is not None:
        import pstats

        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(40)
    return results


# ---------------------------------------------------------------------------------------------------------
# Parent: database, children, daphne and Chromium, report


def run_child(env: dict[str, str], *args: str) -> Any:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=None, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Recorded in the page before its own scripts run: when the DOM was ready and when htmx had processed <body>.
_PROBE = """
document.addEventListener("DOMContentLoaded", () => { window.__benchDcl = performance.now(); });
document.addEventListener("htmx:load", (event) => {
  if (event.target === document.body && window.__benchHtmx === undefined) {
    window.__benchHtmx = performance.now();
  }
});
"""
_MEASURE = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  return {
    response_start: nav.responseStart,
    response_end: nav.responseEnd,
    dom_interactive: nav.domInteractive,
    dcl: nav.domContentLoadedEventEnd,
    load: nav.loadEventEnd,
    htmx: window.__benchHtmx ?? null,
    bytes: nav.encodedBodySize,
    elements: document.getElementsByTagName("*").length,
    rows: document.querySelectorAll("#tree [role=treeitem]").length,
    selected: document.querySelector('#tree [role=treeitem][aria-selected="true"]')?.dataset.entryId ?? null,
  };
}"""


def browse(browser: Any, url: str, expect_selected: str | None) -> dict[str, Any]:
    """Load ``url`` in a new context; navigation timing (ms from the start of navigation), DOM counts, and
    a check that the page answers the keyboard (ArrowUp moves the tree's selection)."""
    context = browser.new_context()
    context.add_init_script(_PROBE)
    page = context.new_page()
    try:
        page.goto(url, wait_until="load", timeout=120_000)
        page.wait_for_function("window.__benchHtmx !== undefined", timeout=30_000)
        got: dict[str, Any] = page.evaluate(_MEASURE)
        got["tti"] = max(got["dcl"], got["htmx"] or 0)
        if expect_selected is not None and got["selected"] != expect_selected:
            raise SystemExit(f"{url}: selected {got['selected']!r}, expected {expect_selected!r}")
        selected = page.locator('#tree [role=treeitem][aria-selected="true"] a').first
        selected.focus()
        page.keyboard.press("ArrowUp")
        page.wait_for_function(
            "(id) => document.querySelector('#tree [role=treeitem][aria-selected=\"true\"]')?.dataset.entryId"
            " !== id",
            arg=got["selected"],
            timeout=10_000,
        )
        return got
    finally:
        context.close()


def browser_round(env: dict[str, str], info: dict[str, Any], work: Path, repeat: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM_ARGS, daphne

    page_path = f"/s/{info['session_id']}/"
    deep_path = f"{page_path}?targetId={info['deep_id']}"
    results: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for name, path, selected in (("page", page_path, None), ("deep", deep_path, info["deep_id"])):
                # Cold: the first request to a server just started. Warm: the same page again.
                with daphne(env, work / "daphne.log", timeout=60) as url:
                    cold = browse(browser, url + path, selected)
                    warm = [browse(browser, url + path, selected) for _ in range(repeat)]
                results[name] = {"cold": cold, "warm": _median_dict(warm)}
        finally:
            browser.close()
    return results


def _median_dict(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in runs[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = statistics.median(run[key] for run in runs)
        else:
            out[key] = value
    return out


def one_backend(
    backend: str, source: Path, repeat: int, browser_repeat: int, browser: bool, profile: str
) -> dict[str, Any]:
    with fresh_database(backend) as env, tempfile.TemporaryDirectory(prefix="arbor-bench-explorer-") as tmp:
        work = Path(tmp)
        env = {
            **env,
            "ARBOR_SESSION_DIRS": str(work / "no-agent-dirs"),
            "ARBOR_WRITE_BACK": "0",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("REDIS_URL", None)
        env.pop("ARBOR_REDIS_URL", None)
        copy = work / source.name
        shutil.copyfile(source, copy)
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "manage.py", "import_sessions", "-q", str(copy)], cwd=ROOT, env=env, check=True
        )
        import_s = time.perf_counter() - t0
        info = run_child(env, "info")
        print(
            f"  {backend}: imported in {import_s:.1f} s; path {info['depth']:,} deep; "
            f"deep entry {info['deep_id']}",
            file=sys.stderr,
        )
        arg = json.dumps(info)
        # The first page ever, with no snapshot of the forest on disk yet (the info child wrote one).
        shutil.rmtree(Path(env["ARBOR_DATA_DIR"]) / "cache", ignore_errors=True)
        cold = {"first_page": run_child(env, "cold", arg, "page")}
        for name in REQUESTS:
            cold[name] = run_child(env, "cold", arg, name)
        for name, got in cold.items():
            print(
                f"  {backend} cold {name}: {_fmt_s(got['seconds'])} (CPU {_fmt_s(got['cpu'])})",
                file=sys.stderr,
            )
        warm = run_child(env, "warm", arg, str(repeat), profile)
        peak = warm.pop("peak_mb")
        print(f"  {backend} warm: peak RSS {peak:.0f} MB", file=sys.stderr)
        for name, got in warm.items():
            print(
                f"  {backend} warm {name}: median {_fmt_s(got['median'])}, max {_fmt_s(got['max'])}, "
                f"{got['bytes'] / 1e6:.2f} MB",
                file=sys.stderr,
            )
        result: dict[str, Any] = {
            "backend": backend,
            "info": info,
            "cold": cold,
            "warm": warm,
            "peak_mb": peak,
        }
        if browser:
            # After the label saves above the session has a few more entries; the deep entry is unchanged.
            result["browser"] = browser_round(env, info, work, browser_repeat)
            for name, got in result["browser"].items():
                print(
                    f"  {backend} browser {name}: cold TTI {got['cold']['tti']:.0f} ms, "
                    f"warm TTI {got['warm']['tti']:.0f} ms, {got['warm']['elements']} elements, "
                    f"{got['warm']['rows']} rows",
                    file=sys.stderr,
                )
        return result


def _ms(seconds: float) -> str:
    return _fmt_s(seconds)


def render(
    results: list[dict[str, Any]], info: dict[str, str], repeat: int, versions: str, load: tuple[float, float]
) -> str:
    first = results[0]["info"]
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}, "
        f"{info['platform']}; {info['date']}; load average {load[0]:.1f} at the start, {load[1]:.1f} at the "
        f"end (the machine is shared). {versions}"
        f"Session: the generated {first['entries']:,}-entry session (seed 1), current path "
        f"{first['depth']:,} entries deep. Server times: Django's test client in the server's process, "
        f"`DEBUG` on; cold = the first request of a fresh process, as after a server restart (the forest "
        'read from its snapshot on disk; "first ever": no snapshot yet, the whole table read), warm = '
        f"median (and max) of {repeat} requests.",
        "",
        "| database | request | cold (its CPU time) | warm median | warm max | response |",
        "|---|---|---:|---:|---:|---:|",
    ]
    checks: list[tuple[str, bool, str]] = []
    for result in results:
        name = {"sqlite": "SQLite", "postgres": "PostgreSQL"}[result["backend"]]
        warm, cold = result["warm"], result["cold"]
        first = cold["first_page"]
        lines.append(
            f"| {name} | session page, first ever (no snapshot yet) | {_ms(first['seconds'])} "
            f"({_ms(first['cpu'])}) | | | |"
        )
        for key in (*REQUESTS[:4], "page_after_label", *REQUESTS[4:]):
            got = warm[key]
            cold_s = f"{_ms(cold[key]['seconds'])} ({_ms(cold[key]['cpu'])})" if key in cold else "–"
            lines.append(
                f"| {name} | {LABELS[key]} | {cold_s} | **{_ms(got['median'])}** | {_ms(got['max'])} "
                f"| {got['bytes'] / 1e6:.2f} MB |"
            )
        worst = max(warm.values(), key=lambda got: got["median"])
        checks.append(
            (
                f"{name} every response warm",
                worst["median"] * 1000 < TARGET_WARM_MS,
                f"< {TARGET_WARM_MS:g} ms",
            )
        )
        checks.append(
            (
                f"{name} first page cold after a restart",
                cold["page"]["seconds"] < TARGET_COLD_S,
                f"< {TARGET_COLD_S:g} s",
            )
        )
    memory = ", ".join(
        f"{ {'sqlite': 'SQLite', 'postgres': 'PostgreSQL'}[r['backend']] } "
        f"{r['cold']['page']['peak_mb']:.0f} MB after the first page, "
        f"{r['peak_mb']:.0f} MB after the warm run"
        for r in results
    )
    lines += ["", f"Peak RSS of the server process (Python and Django included): {memory}."]
    if any("browser" in result for result in results):
        lines += [
            "",
            "Chromium (headless, Playwright), each page in a new browser context; ms from the start of "
            "navigation; cold = the first request after daphne started, warm = median of the next ones. "
            "Interactive = DOMContentLoaded and htmx done with `<body>` (the later of the two); the check "
            "then presses ArrowUp in the tree and waits for the selection to move.",
            "",
            "| database | page | server (first byte) | DOMContentLoaded | load | interactive | HTML "
            "| DOM elements | tree rows |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for result in results:
            if "browser" not in result:
                continue
            name = {"sqlite": "SQLite", "postgres": "PostgreSQL"}[result["backend"]]
            for key, label in (("page", "session page"), ("deep", f"deep link ({DEEP:,} down)")):
                for state in ("cold", "warm"):
                    got = result["browser"][key][state]
                    lines.append(
                        f"| {name} | {label}, {state} | {got['response_start']:.0f} ms | {got['dcl']:.0f} ms "
                        f"| {got['load']:.0f} ms | **{got['tti']:.0f} ms** | {got['bytes'] / 1e6:.2f} MB "
                        f"| {got['elements']:,} | {got['rows']} |"
                    )
            # Judged with the server warm; right after a restart the server's cold time comes on top.
            worst_tti = max(result["browser"][key]["warm"]["tti"] for key in ("page", "deep"))
            checks.append(
                (
                    f"{name} time to interactive (server warm)",
                    worst_tti < TARGET_TTI_S * 1000,
                    f"< {TARGET_TTI_S:g} s",
                )
            )
    lines.append("")
    lines.append(targets_line(checks))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backends", default="sqlite,postgres", help="sqlite, postgres or both")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=10, help="warm requests of each kind")
    parser.add_argument("--browser-repeat", type=int, default=3, help="warm page loads in Chromium")
    parser.add_argument("--no-browser", action="store_true", help="server times only")
    parser.add_argument("--keep", action="store_true", help="keep a session file this run generated")
    parser.add_argument("--record", action="store_true", help="write the results table into BENCHMARKS.md")
    parser.add_argument(
        "--profile", choices=["", *REQUESTS], default="", help="cProfile the warm requests of one kind"
    )
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        kind, *rest = args.child
        handlers: dict[str, Callable[[], Any]] = {
            "info": child_info,
            "cold": lambda: child_cold(json.loads(rest[0]), rest[1]),
            "warm": lambda: child_warm(json.loads(rest[0]), int(rest[1]), rest[2] if len(rest) > 2 else ""),
        }
        print(json.dumps(handlers[kind]()))
        return 0

    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    for name in backends:
        if name not in ("sqlite", "postgres"):
            parser.error(f"unknown backend {name!r}")
    source, gen_s = ensure_session(ENTRIES, args.seed)
    note = f"generated in {gen_s:.1f} s" if gen_s is not None else "cached"
    print(
        f"# {ENTRIES:,} entries: {source.name} ({source.stat().st_size / 1e6:.0f} MB, {note})",
        file=sys.stderr,
    )
    results = []
    load_start = os.getloadavg()[0]
    try:
        for backend in backends:
            results.append(
                one_backend(
                    backend, source, args.repeat, args.browser_repeat, not args.no_browser, args.profile
                )
            )
    finally:
        if gen_s is not None and not args.keep:
            source.unlink(missing_ok=True)
    load = (load_start, os.getloadavg()[0])
    table = render(results, machine_info(), args.repeat, _server_versions(backends), load)
    print(table)
    if args.record:
        replace_block(BENCHMARKS, BEGIN, END, table, "Explorer (issue 4)")
        print(f"\nrecorded in {BENCHMARKS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
