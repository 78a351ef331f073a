"""Benchmark the pure-Python session core on large synthetic sessions.

Run from the repository root::

    .venv/bin/python bench/run.py                        # 1k, 10k and 100k entries, 3 runs each
    .venv/bin/python bench/run.py --sizes 100000 --keep  # keep the generated file in bench/out/ for next time
    .venv/bin/python bench/run.py --record               # also write the results into BENCHMARKS.md
    .venv/bin/python bench/run.py --sizes 100000 --profile  # cProfile one run, print the hot functions

Every measurement runs in a fresh child process (this same script with ``--child``), so the peak resident
set size (``ru_maxrss``) belongs to one size only and nothing is warm from a previous run. The child times
``SessionManager.open`` (read, parse and index), ``get_tree()``, ``get_branch()`` of the leaf and
``build_session_context()``.

Generated sessions go to ``bench/out/`` (gitignored), named after the size, the seed and a hash of the
generator source, so a changed generator never reuses a stale file. With ``--keep`` they stay there and later
runs reuse them; without it every file this run used is deleted at the end.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from report import replace_block, targets_line

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
BENCHMARKS = ROOT / "BENCHMARKS.md"
GENERATOR = ROOT / "treeview" / "session" / "generate"
BEGIN = "<!-- bench:results:begin -->"
END = "<!-- bench:results:end -->"

# Targets for the 100k-entry (~250 MB) session.
TARGET_TOTAL_S = 3.0
TARGET_BRANCH_MS = 50.0
TARGET_CONTEXT_MS = 50.0
TARGET_PEAK_MB = 900.0

# omp v15 (TypeScript on Bun) on the same 100k-entry session, as measured for the original.
TS_REFERENCE = {
    "open_s": 6.5,
    "tree_s": 0.15,
    "branch_s": 0.22,
    "context_s": 0.25,
    "total_s": 7.1,
    "peak_mb": 1.8 * 1024,
}

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


# ---------------------------------------------------------------------------------------------------------
# Child: one measurement in a fresh interpreter


def _rss_mb() -> float:
    """Current resident set size in MB (Linux /proc; falls back to the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return _peak_mb()


def _peak_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def child(path: str, profile: bool) -> dict[str, Any]:
    """Measure one pass over ``path``; returns timings (seconds), counts and memory (MB)."""
    from treeview.session.session_manager import SessionManager

    result: dict[str, Any] = {"rss_start_mb": _rss_mb()}
    # Time spent in the cyclic garbage collector, which is a large share of loading millions of objects.
    gc_time = [0.0, 0.0]  # [total, start of the running collection]

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_time[1] = time.perf_counter()
        else:
            gc_time[0] += time.perf_counter() - gc_time[1]

    gc.callbacks.append(on_gc)
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0 = time.perf_counter()
    manager = SessionManager.open(path)
    t1 = time.perf_counter()
    gc1 = gc_time[0]
    result["rss_after_open_mb"] = _rss_mb()
    tree = manager.get_tree()
    t2 = time.perf_counter()
    gc2 = gc_time[0]
    result["rss_after_tree_mb"] = _rss_mb()
    branch = manager.get_branch(manager.get_leaf_id())
    t3 = time.perf_counter()
    gc3 = gc_time[0]
    context = manager.build_session_context()
    t4 = time.perf_counter()
    gc.callbacks.remove(on_gc)
    result.update(gc_open_s=gc1, gc_tree_s=gc2 - gc1, gc_branch_s=gc3 - gc2, gc_context_s=gc_time[0] - gc3)
    if profiler is not None:
        profiler.disable()
        import pstats

        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(25)
    result.update(
        entries=len(manager.entries),
        roots=len(tree),
        depth=len(branch),
        messages=len(context.messages),
        warnings=len(manager.warnings),
        open_s=t1 - t0,
        tree_s=t2 - t1,
        branch_s=t3 - t2,
        context_s=t4 - t3,
        total_s=t4 - t0,
        rss_end_mb=_rss_mb(),
        peak_mb=_peak_mb(),
    )
    return result


# ---------------------------------------------------------------------------------------------------------
# Parent: generate, run children, report


def _fingerprint() -> str:
    digest = hashlib.sha256()
    for module in sorted(GENERATOR.glob("*.py")):
        digest.update(module.read_bytes())
    return digest.hexdigest()[:10]


def ensure_session(entries: int, seed: int) -> tuple[Path, float | None]:
    """The cached session file for ``entries``; generated (timed) if missing."""
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"session-{entries}-s{seed}-{_fingerprint()}.jsonl"
    if path.exists():
        return path, None
    from treeview.session.generate import write_session

    t0 = time.perf_counter()
    write_session(path, entries, seed)
    return path, time.perf_counter() - t0


def run_child(path: Path, profile: bool = False) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", str(path)]
    if profile:
        cmd.append("--profile")
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=None, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(run[key] for run in runs))


def _fmt_s(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms" if seconds < 0.1 else f"{seconds * 1000:.0f} ms"
    return f"{seconds:.2f} s"


def _fmt_mb(mb: float) -> str:
    return f"{mb / 1024:.2f} GB" if mb >= 1024 else f"{mb:.0f} MB"


def machine_info() -> dict[str, str]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = "?"
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    memory = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                    break
    except OSError:
        pass
    return {
        "date": dt.date.today().isoformat(),
        # What `nproc` prints: the CPUs this process may run on.
        "cpus": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "cpu": cpu,
        "memory": memory,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def render(rows: list[dict[str, Any]], info: dict[str, str], repeat: int, seed: int) -> str:
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}, "
        f"{info['platform']}; {info['date']}. Median of {repeat} fresh-process run(s) per size, seed {seed}.",
        "",
        "| entries | file | path depth | open (parse+index) | get_tree | get_branch | context | total "
        "| peak RSS |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['entries']:,} | {row['file_mb']:.3g} MB | {row['depth']:,} "
            f"| {_fmt_s(row['open_s'])} | {_fmt_s(row['tree_s'])} | {_fmt_s(row['branch_s'])} "
            f"| {_fmt_s(row['context_s'])} | **{_fmt_s(row['total_s'])}** | {_fmt_mb(row['peak_mb'])} |"
        )
    ts = TS_REFERENCE
    lines.append(
        f"| 100,000 (omp v15 TypeScript, reference) | ~250 MB | | {_fmt_s(ts['open_s'])} "
        f"| {_fmt_s(ts['tree_s'])} | {_fmt_s(ts['branch_s'])} | {_fmt_s(ts['context_s'])} "
        f"| **{_fmt_s(ts['total_s'])}** | {_fmt_mb(ts['peak_mb'])} |"
    )
    big = [row for row in rows if row["entries"] >= 100_000]
    if big:
        row = big[-1]
        checks = [
            ("whole pass", row["total_s"] <= TARGET_TOTAL_S, f"≤ {TARGET_TOTAL_S:g} s"),
            ("get_branch", row["branch_s"] * 1000 < TARGET_BRANCH_MS, f"< {TARGET_BRANCH_MS:g} ms"),
            ("context", row["context_s"] * 1000 < TARGET_CONTEXT_MS, f"< {TARGET_CONTEXT_MS:g} ms"),
            ("peak RSS", row["peak_mb"] < TARGET_PEAK_MB, f"< {TARGET_PEAK_MB:g} MB"),
        ]
        lines.append("")
        lines.append(targets_line(checks))
    return "\n".join(lines)


def record(table: str) -> None:
    replace_block(BENCHMARKS, BEGIN, END, table, "Latest results")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated entry counts")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="fresh-process runs per size (median reported)")
    parser.add_argument("--keep", action="store_true", help="keep generated sessions in bench/out/ for reuse")
    parser.add_argument("--record", action="store_true", help="write the results table into BENCHMARKS.md")
    parser.add_argument("--profile", action="store_true", help="one extra cProfile run per size (to stderr)")
    parser.add_argument("--child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(args.child, args.profile)))
        return 0

    sizes = [int(size.replace("_", "")) for size in args.sizes.split(",") if size.strip()]
    used: list[Path] = []
    rows: list[dict[str, Any]] = []
    try:
        for size in sizes:
            path, gen_s = ensure_session(size, args.seed)
            used.append(path)
            file_mb = path.stat().st_size / 1e6
            note = f"generated in {gen_s:.1f} s" if gen_s is not None else "cached"
            print(f"# {size:,} entries: {path.name} ({file_mb:.1f} MB, {note})", file=sys.stderr)
            runs = []
            for attempt in range(args.repeat):
                run = run_child(path)
                runs.append(run)
                print(
                    f"  run {attempt + 1}: open {run['open_s']:.3f}s tree {run['tree_s']:.3f}s "
                    f"branch {run['branch_s'] * 1000:.1f}ms context {run['context_s'] * 1000:.1f}ms "
                    f"total {run['total_s']:.3f}s peak {run['peak_mb']:.0f}MB "
                    f"(rss start {run['rss_start_mb']:.0f}, after open {run['rss_after_open_mb']:.0f}, "
                    f"after tree {run['rss_after_tree_mb']:.0f}); in gc: open {run['gc_open_s']:.3f}s "
                    f"tree {run['gc_tree_s']:.3f}s branch {run['gc_branch_s'] * 1000:.1f}ms "
                    f"context {run['gc_context_s'] * 1000:.1f}ms",
                    file=sys.stderr,
                )
            if args.profile:
                run_child(path, profile=True)
            row: dict[str, Any] = {
                "entries": runs[0]["entries"],
                "depth": runs[0]["depth"],
                "file_mb": file_mb,
            }
            for key in ("open_s", "tree_s", "branch_s", "context_s", "total_s", "peak_mb"):
                row[key] = _median(runs, key)
            rows.append(row)
    finally:
        if not args.keep:
            for path in used:
                path.unlink(missing_ok=True)

    table = render(rows, machine_info(), args.repeat, args.seed)
    print(table)
    if args.record:
        record(table)
        print(f"\nrecorded in {BENCHMARKS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
