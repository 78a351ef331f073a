"""Benchmark moving a stored session's leaf (issue 5): navigation, summary prompt preparation, cancel.

Run from the repository root (PostgreSQL: a local server on 127.0.0.1:5432, user postgres, trust auth)::

    .venv/bin/python bench/navigate_bench.py                         # SQLite, the 100k-entry session
    .venv/bin/python bench/navigate_bench.py --backends sqlite,postgres --record
    .venv/bin/python bench/navigate_bench.py --profile navigate      # cProfile of the moves' database work
    .venv/bin/python bench/navigate_bench.py --profile prompt        # ... of the prompt preparation
    .venv/bin/python bench/navigate_bench.py --profile cancel        # ... of the cancel round trips

For every database the parent makes a fresh, migrated database (``fresh_database`` of
``bench/import_bench.py``), imports a copy of the generated session (seed 1, shared with ``bench/run.py``
in ``bench/out/``) in a fresh process (``import_bench.py --child import``), then runs one more fresh process
(this script with ``--child``) that measures, in order:

* **summary prompt preparation** for a 5,000-entry abandoned branch (the target is the leaf's ancestor 5,000
  entries up): ``plan_navigation(..., with_entries=True)`` + ``prepare_branch_entries`` (under the default
  token budget, as ``generate_branch_summary`` does) + ``build_branch_summary_prompt``, i.e. everything
  before the model is called; the plan is also timed without entries and ``load_entries`` alone, to split it;
* **navigation without summary** to two targets picked from the imported tree: the tip of a side branch that
  leaves the current path near its middle (a move there abandons about half of the path; both ends are
  deep) and the tip of the side branch closest to the leaf. The leaf moves back and forth between the leaf
  and the target. ``navigate()`` server work warm (the session page was viewed at the current leaf before
  each move, so its explorer tree is cached) and cold (the first call after
  ``treeview.explorer.clear_caches()``: the forest is read from the database and flattened); and the
  websocket round trip, ``start`` sent to ``done`` received, through ``treeview.consumers.SessionConsumer``
  with ``channels.testing.WebsocketCommunicator`` (the page is again viewed, untimed, before each move);
* **cancel → cancelled** through the consumer with ``tests/llm_server.py`` as an OpenAI-compatible model that
  streams one token every ``--delay`` seconds: ``start`` with ``summarize`` to the 5,000-entry target, wait
  for the first streamed delta, send ``cancel``, time until ``cancelled`` arrives. Afterwards the session's
  leaf, entry count, stored rows and source file must be as before (nothing written), and every model
  stream must have been closed by the client.

Every sample also records how long full (generation 2) garbage collections ran inside it: with the session's
forest and flattened trees in memory (hundreds of thousands of objects) one takes 0.1-0.4 s, which is most
of the outliers. Settings are the defaults (``DEBUG`` on, the in-memory channel layer of one process).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from report import replace_block, targets_line

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.import_bench import _server_versions, fresh_database  # noqa: E402
from bench.import_bench import run_child as import_child  # noqa: E402
from bench.run import _fmt_s, ensure_session, machine_info  # noqa: E402

BENCHMARKS = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- bench:navigate:begin -->"
END = "<!-- bench:navigate:end -->"
SECTION = "Navigation (issue 5)"
ENTRIES = 100_000
BRANCH = 5000
TIMEOUT = 30.0

TARGET_NAVIGATE_MS = 100.0
TARGET_PROMPT_MS = 300.0
TARGET_CANCEL_MS = 100.0


# ---------------------------------------------------------------------------------------------------------
# Numbers


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


class GcWatch:
    """Records when full (generation 2) collections ran, from ``gc.callbacks``."""

    def __init__(self) -> None:
        self.pauses: list[tuple[float, float]] = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info.get("generation") != 2:
            return
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((self._start, time.perf_counter()))

    def within(self, t0: float, t1: float) -> float:
        """Seconds of full collections inside ``[t0, t1]``."""
        return sum(max(0.0, min(end, t1) - max(start, t0)) for start, end in self.pauses)


WATCH = GcWatch()


class Samples:
    """Timed samples, each with the full-collection time inside it."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.gc: list[float] = []

    def add(self, t0: float, t1: float) -> None:
        self.times.append(t1 - t0)
        self.gc.append(WATCH.within(t0, t1))

    def summary(self) -> dict[str, float]:
        values = self.times
        return {
            "n": len(values),
            "median": statistics.median(values),
            "p95": p95(values),
            "max": max(values),
            "min": min(values),
            "gc_samples": sum(1 for pause in self.gc if pause > 0),
            "gc_max": max(self.gc, default=0.0),
            # Moves alternate: even samples go leaf → target ("there"), odd ones come back.
            "there": statistics.median(values[0::2]),
            "back": statistics.median(values[1::2]) if len(values) > 1 else 0.0,
        }


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else _fmt_s(seconds)


# ---------------------------------------------------------------------------------------------------------
# Child: the measurements, in one fresh process on an imported database


@contextmanager
def _profiled(enabled: bool, label: str) -> Iterator[None]:
    if not enabled:
        yield
        return
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        yield
    finally:
        profiler.disable()
        print(f"\n===== cProfile: {label} =====", file=sys.stderr)
        stats = pstats.Stats(profiler, stream=sys.stderr)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(40)


def _is_user_input(entry: dict[str, Any]) -> bool:
    """Selecting a user or custom message moves the leaf to its parent: not a target to go back and forth."""
    message = entry.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    return entry.get("type") == "custom_message" or (entry.get("type") == "message" and role == "user")


def pick_targets(tree: Any, leaf_id: str) -> dict[str, Any]:
    """The far and near side-branch tips and the ancestor ``BRANCH`` entries above the leaf."""
    from treeview import explorer

    path = explorer.path_ids(tree.flat, leaf_id)
    on_path = {entry_id: i for i, entry_id in enumerate(path)}
    depth = len(path)
    # Flattened order has every parent before its children: the fork point (index of the deepest ancestor on
    # the leaf's path) and the depth of every off-path node in one pass.
    fork: dict[str, int] = {}
    depth_of: dict[str, int] = {}
    tips: list[tuple[str, int, int]] = []  # (id, fork index, depth)
    for flat_node in tree.flat.nodes:
        node = flat_node.node
        entry_id = node.entry["id"]
        if entry_id in on_path:
            continue
        parent = node.entry.get("parentId")
        if parent in on_path:
            fork[entry_id] = on_path[parent]
            depth_of[entry_id] = on_path[parent] + 2
        elif parent in fork:
            fork[entry_id] = fork[parent]
            depth_of[entry_id] = depth_of[parent] + 1
        else:
            continue  # another root's tree
        if not node.children and not _is_user_input(node.entry):
            tips.append((entry_id, fork[entry_id], depth_of[entry_id]))
    if not tips:
        raise SystemExit("the session has no side branch to navigate to")
    middle = depth // 2
    far = min(tips, key=lambda tip: (abs(tip[1] - middle), -tip[2]))
    near = max(tips, key=lambda tip: (tip[1], tip[2]))
    index = depth - 1 - BRANCH
    if index < 0:
        raise SystemExit(f"the leaf is only {depth} entries deep, less than {BRANCH + 1}")

    def describe(tip: tuple[str, int, int]) -> dict[str, Any]:
        entry_id, at, tip_depth = tip
        # Leaf → tip abandons the path below the fork; tip → leaf abandons the side branch.
        return {
            "id": entry_id,
            "depth": tip_depth,
            "fork_depth": at + 1,
            "abandoned_there": depth - 1 - at,
            "abandoned_back": tip_depth - 1 - at,
        }

    return {
        "leaf": leaf_id,
        "depth": depth,
        "entries": len(tree.flat.nodes),
        "far": describe(far),
        "near": describe(near),
        "branch": {"id": path[index], "depth": index + 1, "abandoned": BRANCH},
    }


def _view(session_pk: int) -> None:
    """What the session page does first: the explorer tree at the leaf and the path to it (untimed)."""
    from treeview import explorer
    from treeview.models import AgentSession

    session = AgentSession.objects.get(pk=session_pk)
    tree = explorer.explorer_tree(session, session.leaf_id)
    explorer.path_ids(tree.flat, session.leaf_id)


def _state(session_pk: int) -> dict[str, Any]:
    """What a navigation without a summary, or a cancelled one, must leave as it was."""
    from treeview.models import AgentSession, Entry

    session = AgentSession.objects.get(pk=session_pk)
    stat = os.stat(session.source_path)
    return {
        "leaf": session.leaf_id,
        "entry_count": session.entry_count,
        "rows": Entry.objects.filter(session=session).count(),
        "max_seq": Entry.objects.filter(session=session).max_seq(),
        "file": [stat.st_size, stat.st_mtime_ns],
    }


def _prompt_preparation(session_pk: int, target: str, repeat: int, profile: bool) -> dict[str, Any]:
    """Everything before the model is called, for the abandoned branch of a move to ``target``."""
    from django.conf import settings

    from treeview.models import AgentSession
    from treeview.services.navigate import load_entries, plan_navigation
    from treeview.session.branch_summary import (
        build_branch_summary_prompt,
        prepare_branch_entries,
        token_budget,
    )

    budget = token_budget(settings.ARBOR_LLM_CONTEXT_WINDOW)
    parts = {key: Samples() for key in ("total", "plan", "prepare", "build", "plan_ids", "load")}
    facts: dict[str, Any] = {}
    _view(session_pk)
    with _profiled(profile, "summary prompt preparation"):
        for _ in range(repeat):
            session = AgentSession.objects.get(pk=session_pk)
            t0 = time.perf_counter()
            plan = plan_navigation(session, target, with_entries=True)
            t1 = time.perf_counter()
            messages, _file_ops = prepare_branch_entries(plan.entries_to_summarize, budget)
            t2 = time.perf_counter()
            system_prompt, user_prompt = build_branch_summary_prompt(messages)
            t3 = time.perf_counter()
            parts["plan"].add(t0, t1)
            parts["prepare"].add(t1, t2)
            parts["build"].add(t2, t3)
            parts["total"].add(t0, t3)
            facts = {
                "abandoned": len(plan.abandoned_ids),
                "loaded": len(plan.entries_to_summarize),
                "json_mb": sum(len(json.dumps(entry)) for entry in plan.entries_to_summarize) / 1e6,
                "messages": len(messages),
                "prompt_chars": len(system_prompt) + len(user_prompt),
                "budget": budget,
            }
            del plan, messages, system_prompt, user_prompt
            # The plan split: the ids alone, and loading the entries alone.
            t0 = time.perf_counter()
            ids_only = plan_navigation(session, target, with_entries=False)
            t1 = time.perf_counter()
            load_entries(session, ids_only.abandoned_ids)
            t2 = time.perf_counter()
            parts["plan_ids"].add(t0, t1)
            parts["load"].add(t1, t2)
    return {"facts": facts, **{key: samples.summary() for key, samples in parts.items()}}


async def _navigations(session_pk: int, leaf: str, target: str, moves: int, *, cold: bool) -> Samples:
    """``navigate()`` back and forth between ``leaf`` and ``target``, ``moves`` timed calls (even)."""
    from asgiref.sync import sync_to_async

    from treeview import explorer
    from treeview.services.navigate import navigate

    samples = Samples()
    for i in range(moves):
        destination = target if i % 2 == 0 else leaf
        if cold:
            explorer.clear_caches()
        else:
            await sync_to_async(_view)(session_pk)
        t0 = time.perf_counter()
        outcome = await navigate(session_pk, destination)
        samples.add(t0, time.perf_counter())
        assert outcome.status == "done" and outcome.leaf_id == destination, outcome
    return samples


class _Socket:
    """A ``WebsocketCommunicator`` on the session's consumer, reading JSON messages."""

    def __init__(self, session_id: str) -> None:
        from channels.routing import URLRouter
        from channels.testing import WebsocketCommunicator

        from treeview.routing import websocket_urlpatterns

        self.communicator = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/s/{session_id}/")

    async def __aenter__(self) -> _Socket:
        ok, code = await self.communicator.connect(timeout=TIMEOUT)
        assert ok, code
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.communicator.disconnect()

    async def send(self, message: dict[str, Any]) -> None:
        await self.communicator.send_json_to(message)

    async def receive(self) -> dict[str, Any]:
        import orjson

        message: dict[str, Any] = orjson.loads(await self.communicator.receive_from(timeout=TIMEOUT))
        if message["type"] == "error":
            raise RuntimeError(f"the consumer answered {message}")
        return message


async def _socket_moves(session_pk: int, session_id: str, leaf: str, target: str, moves: int) -> Samples:
    """``start`` → ``done`` over the websocket, back and forth (each move also gets its ``changed`` event)."""
    from asgiref.sync import sync_to_async

    samples = Samples()
    async with _Socket(session_id) as socket:
        for i in range(moves):
            destination = target if i % 2 == 0 else leaf
            await sync_to_async(_view)(session_pk)
            t0 = time.perf_counter()
            await socket.send({"type": "start", "target": destination, "summarize": False})
            done = changed = False
            while not (done and changed):
                message = await socket.receive()
                if message["type"] == "done":
                    samples.add(t0, time.perf_counter())
                    assert message["leafId"] == destination, message
                    done = True
                elif message["type"] == "changed":
                    changed = True
    return samples


async def _cancels(
    session_pk: int, session_id: str, target: str, count: int, delay: float, profile: bool
) -> dict[str, Any]:
    """``cancel`` → ``cancelled`` while a slow local model streams the summary."""
    from asgiref.sync import sync_to_async
    from django.test import override_settings

    from tests.llm_server import LlmServer

    before = await sync_to_async(_state)(session_pk)
    cancels = Samples()
    first_delta = Samples()
    with (
        LlmServer(provider="openai", tokens=["slow "] * 5000, delay=delay) as llm,
        override_settings(ARBOR_LLM_PROVIDER="openai", ARBOR_LLM_BASE_URL=llm.base_url, ARBOR_LLM_MODEL="x"),
    ):
        async with _Socket(session_id) as socket:
            with _profiled(profile, "cancel round trips (the event loop's thread)"):
                for _ in range(count):
                    await sync_to_async(_view)(session_pk)
                    t0 = time.perf_counter()
                    await socket.send({"type": "start", "target": target, "summarize": True})
                    while "delta" not in await socket.receive():
                        pass
                    first_delta.add(t0, time.perf_counter())
                    t0 = time.perf_counter()
                    await socket.send({"type": "cancel"})
                    while (message := await socket.receive())["type"] != "cancelled":
                        pass
                    cancels.add(t0, time.perf_counter())
                    assert message["message"] == "Branch summarization cancelled", message
        streams = await sync_to_async(llm.wait_for_streams)(count, 10.0)
    after = await sync_to_async(_state)(session_pk)
    return {
        "cancel": cancels.summary(),
        "first_delta": first_delta.summary(),
        "before": before,
        "after": after,
        "unchanged": before == after,
        "stream_outcomes": sorted({stream.outcome for stream in streams}),
        "tokens_sent_max": max(stream.tokens_sent for stream in streams),
        "delay": delay,
    }


def _profile_moves(session_pk: int, leaf: str, targets: list[str], moves: int) -> None:
    """The moves again under cProfile. ``async_to_sync`` from this (main) thread runs ``navigate``'s database
    work (its ``sync_to_async`` calls) in this thread, where the profiler sees it."""
    from asgiref.sync import async_to_sync

    from treeview.services.navigate import navigate

    with _profiled(True, f"{moves} warm moves per target, database work of navigate()"):
        for target in targets:
            for i in range(moves):
                _view(session_pk)
                async_to_sync(navigate)(session_pk, target if i % 2 == 0 else leaf)


def child(options: dict[str, Any]) -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessions_site.settings")
    import django

    django.setup()
    from asgiref.sync import sync_to_async
    from django.db import connection

    from treeview import explorer
    from treeview.models import AgentSession

    gc.callbacks.append(WATCH)
    profile = options["profile"]
    session = AgentSession.objects.get()  # the fresh database holds this one session
    assert session.leaf_id is not None
    connection.ensure_connection()
    result: dict[str, Any] = {"vendor": connection.vendor, "load": [os.getloadavg()[0]]}

    # The first view of the session page: the forest read and flattened (reported, not a target).
    t0 = time.perf_counter()
    tree = explorer.explorer_tree(session, session.leaf_id)
    result["first_view_s"] = time.perf_counter() - t0
    targets = pick_targets(tree, session.leaf_id)
    del tree
    result["targets"] = targets
    leaf = targets["leaf"]
    print(f"  targets: {json.dumps(targets)}", file=sys.stderr)
    result["state_before"] = _state(session.pk)
    if options["analyze"]:
        # Planner statistics, which the import does not make (and PostgreSQL's autovacuum may be off).
        t0 = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        result["analyze_s"] = time.perf_counter() - t0

    result["prompt"] = _prompt_preparation(
        session.pk, targets["branch"]["id"], options["prompts"], profile == "prompt"
    )
    print(f"  prompt: {json.dumps(result['prompt'])}", file=sys.stderr)

    async def moves() -> None:
        for name in ("far", "near"):
            target = targets[name]["id"]
            # Untimed: the first moves make the destination's tree (a page view there) and warm the threads.
            await _navigations(session.pk, leaf, target, 2, cold=False)
            warm = await _navigations(session.pk, leaf, target, options["moves"], cold=False)
            socket = await _socket_moves(session.pk, session.session_id, leaf, target, options["moves"])
            cold = await _navigations(session.pk, leaf, target, options["cold"], cold=True)
            result[name] = {"warm": warm.summary(), "socket": socket.summary(), "cold": cold.summary()}
            print(f"  {name}: {json.dumps(result[name])}", file=sys.stderr)
        result["state_after_moves"] = await sync_to_async(_state)(session.pk)
        result["cancel"] = await _cancels(
            session.pk,
            session.session_id,
            targets["branch"]["id"],
            options["cancels"],
            options["delay"],
            profile == "cancel",
        )
        print(f"  cancel: {json.dumps(result['cancel'])}", file=sys.stderr)

    asyncio.run(moves())
    if profile == "navigate":
        _profile_moves(session.pk, leaf, [targets["far"]["id"], targets["near"]["id"]], options["moves"])
    result["gc_full"] = {"count": len(WATCH.pauses), "seconds": sum(b - a for a, b in WATCH.pauses)}
    result["load"].append(os.getloadavg()[0])
    return result


# ---------------------------------------------------------------------------------------------------------
# Parent: databases, children, report


def run_child(env: dict[str, str], options: dict[str, Any]) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(options)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=None, text=True, check=True)
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def one_database(backend: str, source: Path, options: dict[str, Any]) -> dict[str, Any]:
    """A fresh database with ``source`` imported (in its own process), then the measuring process."""
    with fresh_database(backend) as env, tempfile.TemporaryDirectory(prefix="arbor-bench-file-") as tmp:
        # One server process with the in-memory channel layer, as `./arbor serve` runs by default.
        env.pop("ARBOR_REDIS_URL", None)
        env.pop("REDIS_URL", None)
        copy = Path(tmp) / source.name
        shutil.copyfile(source, copy)
        imported = import_child("import", copy, env)
        assert imported["status"] == "new", imported
        print(
            f"  {backend}: imported {imported['entry_count']:,} entries in {imported['seconds']:.1f} s",
            file=sys.stderr,
        )
        return run_child(env, options)


def _gc_cell(got: dict[str, float]) -> str:
    if not got["gc_samples"]:
        return "–"
    return f"{got['gc_samples']:.0f} (≤ {_ms(got['gc_max'])})"


def _row(name: str, got: dict[str, float], limit: float | None = None) -> str:
    target = f"< {limit:g} ms" if limit is not None else ""
    return (
        f"| {name} | {got['n']} | **{_ms(got['median'])}** | {_ms(got['p95'])} | {_ms(got['max'])} "
        f"| {_gc_cell(got)} | {target} |"
    )


def _moves(what: str, name: str, result: dict[str, Any], kind: str = "warm") -> str:
    got = result[name][kind]
    return f"{what}, {name} target (medians: there {_ms(got['there'])}, back {_ms(got['back'])})"


def render(results: list[tuple[str, dict[str, Any]]], info: dict[str, str], server: str) -> str:
    first = results[0][1]
    targets = first["targets"]
    far, near, branch = targets["far"], targets["near"], targets["branch"]
    delay_ms = first["cancel"]["delay"] * 1000
    lines = [
        f"Machine: {info['cpus']} CPUs ({info['cpu']}), {info['memory']} RAM, Python {info['python']}, "
        f"{info['platform']}; {info['date']}. {server}"
        f"The generated {targets['entries']:,}-entry session (seed 1), its leaf "
        f"{targets['depth']:,} entries deep; each table is one fresh process on a freshly imported database. "
        f"Far target: the tip of a side branch leaving the leaf's path at depth {far['fork_depth']:,} "
        f"(the tip is {far['depth']:,} deep; going there abandons {far['abandoned_there']:,} entries, coming "
        f"back {far['abandoned_back']:,}). Near target: the side branch closest to the leaf (fork at depth "
        f"{near['fork_depth']:,}; abandons {near['abandoned_there']:,} / {near['abandoned_back']:,}). Moves "
        f"alternate leaf → target → leaf. Summary target: the leaf's ancestor {branch['abandoned']:,} "
        f"entries up. Cancel: a local OpenAI-compatible model streaming a token every {delay_ms:g} ms, "
        '`cancel` sent after the first delta. "Full GCs": samples with a generation-2 garbage collection '
        "inside, and the longest such pause.",
    ]
    checks: list[tuple[str, bool, str]] = []
    for label, result in results:
        prompt = result["prompt"]
        facts = prompt["facts"]
        cancel = result["cancel"]
        rows = [
            _row(_moves("`navigate()` warm", "far", result), result["far"]["warm"], TARGET_NAVIGATE_MS),
            _row(_moves("`navigate()` warm", "near", result), result["near"]["warm"], TARGET_NAVIGATE_MS),
            _row(
                _moves("websocket `start` → `done`", "far", result, "socket"),
                result["far"]["socket"],
                TARGET_NAVIGATE_MS,
            ),
            _row(
                _moves("websocket `start` → `done`", "near", result, "socket"),
                result["near"]["socket"],
                TARGET_NAVIGATE_MS,
            ),
            _row("`navigate()` cold (after `clear_caches()`), far target", result["far"]["cold"]),
            _row("`navigate()` cold (after `clear_caches()`), near target", result["near"]["cold"]),
            _row(
                f"summary prompt for a {facts['abandoned']:,}-entry branch, total",
                prompt["total"],
                TARGET_PROMPT_MS,
            ),
            _row("… `plan_navigation(with_entries=True)`", prompt["plan"]),
            _row("…… the plan without entries (ids only)", prompt["plan_ids"]),
            _row(
                f"…… `load_entries` of {facts['loaded']:,} entries ({facts['json_mb']:.1f} MB of JSON)",
                prompt["load"],
            ),
            _row(
                f"… `prepare_branch_entries` ({facts['messages']:,} messages fit the budget)",
                prompt["prepare"],
            ),
            _row(
                f"… `build_branch_summary_prompt` ({facts['prompt_chars'] / 1e3:,.0f} k characters)",
                prompt["build"],
            ),
            _row("`start` (summarize) → first streamed delta", cancel["first_delta"]),
            _row("`cancel` → `cancelled`", cancel["cancel"], TARGET_CANCEL_MS),
        ]
        after = cancel["after"]
        unchanged = cancel["unchanged"] and result["state_after_moves"] == result["state_before"]
        written = "nothing was written" if unchanged else "**something was written**"
        lines += [
            "",
            f"**{label}**: the first view of the session page (forest read and flattened) took "
            f"{_fmt_s(result['first_view_s'])}; load average {result['load'][0]:.1f} at the start of the "
            f"measurements, {result['load'][1]:.1f} at the end; "
            + (
                f"`ANALYZE` run after the import ({_fmt_s(result['analyze_s'])})."
                if "analyze_s" in result
                else "the database as the import leaves it (a big import refreshes the planner statistics)."
            ),
            "",
            "| measurement | n | median | p95 | max | full GCs | target |",
            "|---|---:|---:|---:|---:|---:|---|",
            *rows,
            "",
            f"After the moves and {cancel['cancel']['n']} cancels {written}: leaf {after['leaf']}, "
            f"{after['entry_count']:,} entries, {after['rows']:,} rows, the file unchanged; model streams "
            f"ended: {', '.join(cancel['stream_outcomes'])}.",
        ]
        navigation = max(result[name][kind]["p95"] for name in ("far", "near") for kind in ("warm", "socket"))
        checks += [
            (
                f"{label} navigation p95",
                navigation * 1000 < TARGET_NAVIGATE_MS,
                f"< {TARGET_NAVIGATE_MS:g} ms",
            ),
            (
                f"{label} prompt preparation p95",
                prompt["total"]["p95"] * 1000 < TARGET_PROMPT_MS,
                f"< {TARGET_PROMPT_MS:g} ms",
            ),
            (
                f"{label} cancel max",
                cancel["cancel"]["max"] * 1000 < TARGET_CANCEL_MS and unchanged,
                f"< {TARGET_CANCEL_MS:g} ms",
            ),
        ]
    lines += ["", targets_line(checks)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--backends", default="sqlite", help="sqlite, postgres or both (comma-separated)")
    parser.add_argument("--entries", type=int, default=ENTRIES)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--moves", type=int, default=40, help="timed warm moves per target (even)")
    parser.add_argument("--cold", type=int, default=4, help="timed cold moves per target (even)")
    parser.add_argument("--prompts", type=int, default=10, help="timed prompt preparations")
    parser.add_argument("--cancels", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds per streamed token")
    parser.add_argument("--keep", action="store_true", help="keep a session file this run generated")
    parser.add_argument("--record", action="store_true", help="write the results into BENCHMARKS.md")
    parser.add_argument("--profile", choices=["navigate", "prompt", "cancel"], default="")
    parser.add_argument(
        "--analyze", action="store_true", help="run ANALYZE after the import, before measuring"
    )
    parser.add_argument("--child", metavar="OPTIONS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0

    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    for name in backends:
        if name not in ("sqlite", "postgres"):
            parser.error(f"unknown backend {name!r}")
    if args.moves % 2 or args.cold % 2:
        parser.error("--moves and --cold must be even (the leaf ends where it started)")
    options = {
        "moves": args.moves,
        "cold": args.cold,
        "prompts": args.prompts,
        "cancels": args.cancels,
        "delay": args.delay,
        "profile": args.profile,
        "analyze": args.analyze,
    }
    source, gen_s = ensure_session(args.entries, args.seed)
    note = f"generated in {gen_s:.1f} s" if gen_s is not None else "cached"
    size_mb = source.stat().st_size / 1e6
    print(f"# {args.entries:,} entries: {source.name} ({size_mb:.1f} MB, {note})", file=sys.stderr)
    names = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
    results: list[tuple[str, dict[str, Any]]] = []
    try:
        for backend in backends:
            results.append((names[backend], one_database(backend, source, options)))
    finally:
        if gen_s is not None and not args.keep:
            source.unlink(missing_ok=True)

    table = render(results, machine_info(), _server_versions(backends))
    print(table)
    if args.record:
        replace_block(BENCHMARKS, BEGIN, END, table, SECTION)
        print(f"\nrecorded in {BENCHMARKS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
