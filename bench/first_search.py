"""The first tree search on a big stored session, each time in a fresh server-like process.

    ARBOR_DATA_DIR=/tmp/fs100k .venv/bin/python bench/first_search.py [--session ID] [--rounds 3]

Uses the sessions already imported into ``ARBOR_DATA_DIR`` (default: the biggest one), searched by oh-my-pi's
rules (the web tree's fuzzy search). Each round starts one child process per scenario:

- ``cold``: the page's tree is loaded (from the forest snapshot), then a search right away: nothing was made
  ahead, the search reads what the last process left on disk (``*.fuzzy`` next to the snapshot), if anything;
- ``cold-nothing-kept``: the same after deleting those files (every haystack normalized in the search);
- ``prewarm``: what a server start does first (``warmup._prewarm``), then the page and the search;
- ``page``: the page's tree, the thread its page view starts (``explorer.prepare_search``), then the search
  ``--typing`` seconds later (a person typing).

For the first search and four more (warm) it reports the wall time and the CPU time of the searching thread
(``time.thread_time``: on a busy machine the steadier one), medians over the rounds, as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ("cold-nothing-kept", "cold", "prewarm", "page")
FIRST = "read"
WARM = ("zz", "tool call", "file", "bash")


def child(session_id: str | None, scenario: str, typing: float) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessions_site.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db.models import F

    from treeview import explorer, tree_index, warmup
    from treeview.models import AgentSession

    def session() -> AgentSession:
        if session_id:
            return AgentSession.objects.get(session_id=session_id)
        return AgentSession.objects.order_by(-F("entry_count")).first()

    if scenario == "cold-nothing-kept":
        for path in tree_index.snapshot_dir().glob("*.fuzzy"):
            path.unlink()
    out: dict[str, Any] = {"scenario": scenario}
    if scenario == "prewarm":
        started = time.perf_counter()
        warmup._prewarm(1, threading.Event())  # the start-up prewarm, waited for whole
        out["prewarm_s"] = time.perf_counter() - started
    stored = session()
    started = time.perf_counter()
    tree = explorer.explorer_tree(stored, stored.leaf_id)
    out["tree_s"] = time.perf_counter() - started
    out["nodes"] = len(tree.flat.nodes)
    if scenario == "page":
        explorer.prepare_search(tree, "omp")
        time.sleep(typing)

    def search(query: str) -> tuple[float, float, int]:
        wall, cpu = time.perf_counter(), time.thread_time()
        shown = len(tree.visible("all", query, agent="omp").nodes)
        return time.perf_counter() - wall, time.thread_time() - cpu, shown

    out["first_s"], out["first_cpu_s"], out["first_rows"] = search(FIRST)
    warm = [search(query) for query in WARM]
    out["warm_s"] = [round(wall, 3) for wall, _, _ in warm]
    out["warm_cpu_s"] = [round(cpu, 3) for _, cpu, _ in warm]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--session", help="session id (default: the biggest stored session)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--typing", type=float, default=1.5, help="seconds from page to search (page)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.session, args.child, args.typing)))
        return
    runs: dict[str, list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for scenario in args.scenarios.split(","):
            cmd = [sys.executable, __file__, "--child", scenario, "--typing", str(args.typing)]
            if args.session:
                cmd += ["--session", args.session]
            done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(result), file=sys.stderr)
            runs.setdefault(scenario, []).append(result)
    summary = {
        scenario: {
            key: round(statistics.median(run[key] for run in results), 3)
            for key in ("tree_s", "first_s", "first_cpu_s")
        }
        | {
            "warm_s_max": round(statistics.median(max(run["warm_s"]) for run in results), 3),
            "warm_cpu_s_max": round(statistics.median(max(run["warm_cpu_s"]) for run in results), 3),
            "nodes": results[0]["nodes"],
            "first_rows": results[0]["first_rows"],
        }
        for scenario, results in runs.items()
    }
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
