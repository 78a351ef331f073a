"""The session page's cached trees: kept current incrementally, always equal to a fresh build.

A forest read once and then grown row by row (labels, Arbor's appends, syncs of appended lines) and flattened
trees extended by a chain below the leaf must give exactly what reading and flattening everything again gives;
so must the explorer's filters, selection, paths and branch totals, computed from indexes of their own.
"""

from __future__ import annotations

import gc
import random
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import connection
from django.db.models import Q
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.reference import all_cases, import_fixture
from treeview import explorer, tree_index
from treeview.explorer import making
from treeview.models import AgentSession, Entry
from treeview.services import append
from treeview.services.sync import sync_file
from treeview.session import entries as builders
from treeview.session.generate import write_session
from treeview.session.selector import (
    ASCII_SYMBOLS,
    FILTER_MODES,
    UNICODE_SYMBOLS,
    FlatTree,
    Gutter,
    filter_nodes,
    initial_selection,
    make_row,
)
from treeview.session.selector_tree import flatten_tree
from treeview.tree_index import Forest

QUERIES = ["", "user", "read cli", "summary", "assistant tests", "zzz-nothing"]


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path: Path) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    explorer.clear_caches()


# -- what a fresh build gives ------------------------------------------------------------------------------


def fresh_flat(session: AgentSession, leaf_id: str | None) -> FlatTree:
    """Everything read and flattened again, nothing cached."""
    return flatten_tree(Forest.load(session).roots, leaf_id)


def drawing(flat: FlatTree) -> list[tuple[Any, ...]]:
    return [
        (
            node.id,
            node.indent,
            node.display_indent,
            node.show_connector,
            node.is_last,
            node.is_virtual_root_child,
            node.gutters,
            node.node.label,
            node.entry.get("parentId"),
        )
        for node in flat.nodes
    ]


def rows(flat: FlatTree, nodes: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [
        (r.id, r.text, r.active, r.is_leaf, r.connector, r.prefix())
        for r in (make_row(n, flat) for n in nodes)
    ]


def walk(flat: FlatTree, entry_id: str | None) -> list[str]:
    """The path root → entry through parentId links, as the original explorer walked it."""
    ids: list[str] = []
    seen: set[Any] = set()
    current: Any = entry_id
    while current is not None and current not in seen:
        node = flat.by_id.get(current)
        if node is None:
            break
        seen.add(current)
        ids.append(current)
        current = node.entry.get("parentId")
    return ids[::-1]


def db_totals(session: AgentSession, path: list[str]) -> tuple[Any, ...]:
    """The branch totals straight from the rows of the path (the last row of each id)."""
    latest: dict[str, Entry] = {}
    for entry in session.entries.filter(entry_id__in=path).exclude(type="session").order_by("seq"):
        latest[entry.entry_id] = entry
    chosen = [latest[i] for i in path]
    return (
        len(chosen),
        sum(e.type == "message" for e in chosen),
        sum(e.type == "message" and e.role == "toolResult" for e in chosen),
        sum(e.input_tokens for e in chosen),
        sum(e.output_tokens for e in chosen),
        pytest.approx(sum(e.cost for e in chosen)),
    )


def check_tree(session: AgentSession, leaf_id: str | None, rng: random.Random | None = None) -> None:
    """The cached tree for this leaf equals a fresh build in every way the page uses it."""
    tree = explorer.explorer_tree(session, leaf_id)
    fresh = fresh_flat(session, leaf_id)
    assert drawing(tree.flat) == drawing(fresh)
    assert tree.flat.leaf_id == fresh.leaf_id
    assert tree.flat.active_ids == fresh.active_ids
    assert tree.flat.multiple_roots == fresh.multiple_roots
    assert tree.flat.tool_calls == fresh.tool_calls
    assert {k: v.id for k, v in tree.flat.by_id.items()} == {k: v.id for k, v in fresh.by_id.items()}
    assert tree.position == {node.id: i for i, node in enumerate(fresh.nodes)}
    labels = [label for label in session.resolved_labels().values()][:2]
    for mode in FILTER_MODES:
        for query in [*QUERIES, *labels]:
            ours = tree.visible(mode, query, agent="omp15").nodes
            theirs = filter_nodes(fresh, mode, query)
            assert [n.id for n in ours] == [n.id for n in theirs], (mode, query)
            core_rows = [make_row(n, fresh) for n in theirs]
            for target in [None, *_sample(fresh, rng)]:
                assert tree.visible(mode, query, agent="omp15").select(tree, target) == initial_selection(
                    fresh, core_rows, target
                ), (mode, query, target)
    assert rows(tree.flat, tree.visible("all", "", agent="omp15").nodes) == rows(
        fresh, filter_nodes(fresh, "all", "")
    )
    for entry_id in [None, leaf_id, "no-such-id", *_sample(fresh, rng)]:
        assert explorer.path_ids(tree.flat, entry_id) == walk(fresh, entry_id), entry_id
    position = {node.id: i for i, node in enumerate(fresh.nodes)}
    for entry_id in _sample(fresh, rng, 20):
        # The original explorer ordered siblings by their place in the flattened tree.
        parent = fresh.by_id.get(fresh.by_id[entry_id].entry.get("parentId"))
        expected = None
        if parent is not None and len(parent.node.children) > 1:
            ordered = sorted((c.entry["id"] for c in parent.node.children), key=position.__getitem__)
            i = ordered.index(entry_id)
            expected = (i + 1, len(ordered), ordered[i - 1] if i else None, (ordered + [None])[i + 1])
        got = explorer.siblings_of(tree, entry_id)
        assert (got and (got.index, got.count, got.previous_id, got.next_id)) == expected, entry_id
    path = walk(fresh, leaf_id)
    totals = tree.branch_totals()
    # Grown with the tree or summed over the path: the same numbers, floats included.
    assert totals == explorer.BranchTotals().plus([fresh.by_id[i].node for i in path])
    expected = db_totals(session, path)
    got = (
        totals.entries,
        totals.messages,
        totals.tool_calls,
        totals.input_tokens,
        totals.output_tokens,
        totals.cost,
    )
    assert got == expected


def _sample(flat: FlatTree, rng: random.Random | None, count: int = 6) -> list[str]:
    ids = [node.id for node in flat.nodes]
    if not ids:
        return []
    rng = rng or random.Random(0)
    return [rng.choice(ids) for _ in range(count)]


# -- a session to change -----------------------------------------------------------------------------------


@dataclass
class Playground:
    """A small generated session, imported from a file that syncs can grow or rewrite."""

    path: Path
    session: AgentSession
    rng: random.Random
    lines: list[bytes] = field(default_factory=list)
    counter: int = 0

    def refresh(self) -> AgentSession:
        self.session.refresh_from_db()
        return self.session

    def ids(self) -> list[str]:
        return list(
            self.session.entries.exclude(type="session")
            .exclude(entry_id="")
            .values_list("entry_id", flat=True)
        )

    def new_id(self) -> str:
        self.counter += 1
        return f"t{self.counter:07x}"

    def message(self, entry_id: str, parent: str | None, role: str) -> dict[str, Any]:
        self.counter += 1
        stamp = f"2030-01-01T00:{self.counter // 60 % 60:02d}:{self.counter % 60:02d}.000Z"
        message: dict[str, Any] = {"role": role, "content": [{"type": "text", "text": f"{role} {entry_id}"}]}
        if role == "assistant":
            message.update(
                usage={"input": 100 + self.counter, "output": 7, "cost": {"total": 0.25}},
                stopReason=self.rng.choice(["stop", "toolUse", "error"]),
                content=self.rng.choice(
                    [[{"type": "text", "text": "ok"}], [{"type": "toolCall", "id": "c"}]]
                ),
            )
        elif role == "toolResult":
            message.update(toolCallId="c", toolName="read")
        return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": stamp, "message": message}

    def write(self, *entries: Mapping[str, Any]) -> None:
        with self.path.open("ab") as out:
            for entry in entries:
                out.write(orjson.dumps(entry) + b"\n")
        result = sync_file(self.path)
        assert result.status == "grown", result.error

    def rewrite_dropping_last(self, count: int) -> None:
        data = self.path.read_bytes().splitlines(keepends=True)
        self.path.write_bytes(b"".join(data[: max(2, len(data) - count)]))
        result = sync_file(self.path)
        assert result.status == "rewritten", result.error


def playground(tmp_path: Path, seed: int, entries: int = 120) -> Playground:
    path = tmp_path / f"play-{seed}.jsonl"
    write_session(path, entries, seed)
    result = sync_file(path)
    assert result.session is not None
    return Playground(path, result.session, random.Random(seed))


# The changes a session goes through; each returns nothing and leaves the session synced.
def op_label(play: Playground) -> None:
    target = play.rng.choice(play.ids())
    text = play.rng.choice([None, "", "checkpoint", f"try {play.counter}", "Ünïcode label"])
    append.set_label(play.session, target, text)


def op_append(play: Playground) -> None:
    role = play.rng.choice(["user", "assistant", "toolResult"])
    append.append_entry(play.session, lambda leaf, ids: play.message(play.new_id(), leaf, role))


def op_move_and_summarize(play: Playground) -> None:
    target = play.rng.choice(play.ids())
    append.move_leaf(play.session, target)
    append.append_entry(
        play.session, lambda leaf, ids: builders.branch_summary_entry(leaf, ids, f"summary {play.counter}")
    )


def op_move(play: Playground) -> None:
    append.move_leaf(play.session, play.rng.choice(play.ids()))


def op_persist_position(play: Playground) -> None:
    append.persist_position(play.session)


def op_sync_chain(play: Playground) -> None:
    # The agent goes on from the last line of its file (or, sometimes, from an earlier entry).
    last = play.session.entries.filter(in_file=True).exclude(entry_id="").order_by("-seq").first()
    parent = last.entry_id if last is not None and play.rng.random() < 0.7 else play.rng.choice(play.ids())
    chain = []
    for _ in range(play.rng.randint(1, 4)):
        entry_id = play.new_id()
        chain.append(play.message(entry_id, parent, play.rng.choice(["user", "assistant", "toolResult"])))
        parent = entry_id
    play.write(*chain)


def op_sync_orphans(play: Playground) -> None:
    # An orphan (its parent missing), then maybe the parent it names: the orphan moves below it.
    missing = play.new_id()
    orphan = play.message(play.new_id(), missing, "user")
    play.write(orphan)
    if play.rng.random() < 0.5:
        play.write(play.message(missing, None, "user"))


def op_sync_duplicate(play: Playground) -> None:
    # A line reusing an id: the later row replaces the node in place.
    target = play.rng.choice(play.ids())
    parent = play.session.entries.filter(entry_id=target).values_list("parent_id", flat=True).first()
    play.write(play.message(target, parent, "assistant"))


def op_rewrite(play: Playground) -> None:
    # The file loses its last lines (the agent rewrote it): the rows go, the forest must notice.
    play.rewrite_dropping_last(play.rng.randint(1, 3))


OPS: dict[str, Callable[[Playground], None]] = {
    "label": op_label,
    "append": op_append,
    "move_and_summarize": op_move_and_summarize,
    "move": op_move,
    "persist_position": op_persist_position,
    "sync_chain": op_sync_chain,
    "sync_orphans": op_sync_orphans,
    "sync_duplicate": op_sync_duplicate,
    "rewrite": op_rewrite,
}


@pytest.mark.django_db
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 10_000),
    ops=st.lists(st.sampled_from(sorted(OPS)), min_size=1, max_size=8),
)
def test_any_sequence_of_changes_keeps_the_cached_trees_equal_to_a_fresh_build(
    tmp_path_factory, seed: int, ops: list[str]
) -> None:
    explorer.clear_caches()
    play = playground(tmp_path_factory.mktemp("play"), seed)
    session = play.session
    other = play.rng.choice(play.ids())
    check_tree(session, session.leaf_id, play.rng)
    check_tree(session, other, play.rng)
    for name in ops:
        OPS[name](play)
        session = play.refresh()
        check_tree(session, session.leaf_id, play.rng)
        if other in set(play.ids()):
            check_tree(session, other, play.rng)


# -- the incremental paths are taken ------------------------------------------------------------------------


@pytest.fixture
def counted(monkeypatch) -> dict[str, int]:
    """Counts full reads of a forest and full flattenings."""
    calls = {"reload": 0, "flatten": 0}
    reload, flatten = Forest.reload, making.flatten_tree

    def counting_reload(self: Forest, session: AgentSession) -> None:
        calls["reload"] += 1
        reload(self, session)

    def counting_flatten(*args: Any) -> FlatTree:
        calls["flatten"] += 1
        return flatten(*args)

    monkeypatch.setattr(Forest, "reload", counting_reload)
    monkeypatch.setattr(making, "flatten_tree", counting_flatten)
    return calls


@pytest.mark.django_db
def test_a_label_save_splices_the_label_entry_below_the_leaf(tmp_path: Path, counted) -> None:
    play = playground(tmp_path, 3)
    session = play.session
    before = explorer.explorer_tree(session, session.leaf_id)
    assert counted == {"reload": 1, "flatten": 1}
    target = play.ids()[5]
    append.set_label(session, target, "important")
    session.refresh_from_db()
    after = explorer.explorer_tree(session, session.leaf_id)
    assert counted == {"reload": 1, "flatten": 1}  # nothing read or flattened again
    assert after is not before and len(after.flat.nodes) == len(before.flat.nodes) + 1
    # Every other row is the same object: only the label entry's was made, right below the old leaf.
    at = before.leaf_index + 1
    assert after.flat.nodes[at].id == session.leaf_id and after.leaf_index == at
    others = after.flat.nodes[:at] + after.flat.nodes[at + 1 :]
    assert all(a is b for a, b in zip(others, before.flat.nodes, strict=True))
    assert after.flat.by_id[target].node.label == "important"
    check_tree(session, session.leaf_id)


@pytest.mark.django_db
def test_appends_and_synced_turns_below_the_leaf_are_spliced_in(tmp_path: Path, counted) -> None:
    play = playground(tmp_path, 4)
    session = play.session
    explorer.explorer_tree(session, session.leaf_id)
    for _ in range(3):
        op_append(play)
        session = play.refresh()
        explorer.explorer_tree(session, session.leaf_id)
    last = session.leaf_id
    play.write(play.message("s0000001", last, "user"), play.message("s0000002", "s0000001", "assistant"))
    session = play.refresh()
    assert session.leaf_id == "s0000002"
    explorer.explorer_tree(session, session.leaf_id)
    assert counted == {"reload": 1, "flatten": 1}
    check_tree(session, session.leaf_id)


@pytest.mark.django_db
def test_a_branch_elsewhere_is_added_to_the_forest_and_flattened_again(tmp_path: Path, counted) -> None:
    play = playground(tmp_path, 5)
    session = play.session
    explorer.explorer_tree(session, session.leaf_id)
    op_move_and_summarize(play)
    session = play.refresh()
    explorer.explorer_tree(session, session.leaf_id)
    assert counted == {"reload": 1, "flatten": 2}
    check_tree(session, session.leaf_id)


@pytest.mark.django_db
@pytest.mark.parametrize("change", ["rewrite", "orphan_then_parent", "duplicate"])
def test_changes_that_move_existing_nodes_read_the_forest_again(tmp_path: Path, counted, change: str) -> None:
    play = playground(tmp_path, 6)
    session = play.session
    explorer.explorer_tree(session, session.leaf_id)
    if change == "rewrite":
        op_rewrite(play)
    elif change == "orphan_then_parent":
        play.write(play.message("o0000001", "p0000001", "user"))
        session = play.refresh()
        explorer.explorer_tree(session, session.leaf_id)
        assert counted["reload"] == 1  # an orphan root is an append
        play.write(play.message("p0000001", None, "user"))
    else:
        op_sync_duplicate(play)
    session = play.refresh()
    explorer.explorer_tree(session, session.leaf_id)
    assert counted["reload"] == 2
    check_tree(session, session.leaf_id)


@pytest.mark.django_db
def test_an_older_view_of_the_session_uses_the_newer_forest(tmp_path: Path) -> None:
    play = playground(tmp_path, 7)
    stale = AgentSession.objects.get(pk=play.session.pk)
    op_append(play)
    session = play.refresh()
    explorer.explorer_tree(session, session.leaf_id)
    tree = explorer.explorer_tree(stale, stale.leaf_id)
    # Made from the newer forest: the appended entry is there, drawn for the old leaf.
    assert session.leaf_id in tree.flat.by_id
    assert drawing(tree.flat) == drawing(fresh_flat(session, stale.leaf_id))


# -- every fixture, every filter ----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("case", all_cases(), ids=str)
def test_explorer_filters_paths_and_totals_equal_the_core_on_every_fixture(case, tmp_path: Path) -> None:
    path = tmp_path / case.path.name
    path.write_bytes(case.path.read_bytes())
    session = sync_file(path).session
    check_tree(session, session.leaf_id)
    flat = fresh_flat(session, session.leaf_id)
    for entry_id in _sample(flat, random.Random(1), 3):
        check_tree(session, entry_id)
    check_tree(session, None)


@pytest.mark.django_db
def test_a_hidden_assistant_leaf_stays_visible_and_counts(tmp_path: Path) -> None:
    play = playground(tmp_path, 8)
    # A tool-call-only assistant turn is hidden, except as the leaf.
    append.append_entry(
        play.session,
        lambda leaf, ids: {
            **play.message("h0000001", leaf, "assistant"),
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "x", "name": "read", "arguments": {}}],
                "stopReason": "toolUse",
                "usage": {"input": 5, "output": 1, "cost": {"total": 0.5}},
            },
        },
    )
    session = play.refresh()
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert tree.visible("default", "", agent="omp15").nodes[-1].id == "h0000001" or "h0000001" in {
        n.id for n in tree.visible("default", "", agent="omp15").nodes
    }
    check_tree(session, session.leaf_id)
    append.move_leaf(session, tree.flat.by_id["h0000001"].entry["parentId"])
    session = play.refresh()
    assert "h0000001" not in {
        n.id for n in explorer.explorer_tree(session, session.leaf_id).visible("all", "", agent="omp15").nodes
    }
    check_tree(session, session.leaf_id)


# -- the page -----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_page_has_the_branch_totals_of_the_displayed_leaf(client: Client, tmp_path: Path) -> None:
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    fresh = fresh_flat(session, session.leaf_id)
    response = client.get(f"/s/{session.session_id}/")
    totals = response.context["branch_totals"]
    assert (totals.entries, totals.messages, totals.tool_calls) == db_totals(
        session, walk(fresh, session.leaf_id)
    )[:3]
    other = fresh.nodes[-1].id
    response = client.get(f"/s/{session.session_id}/", {"leafId": other})
    assert response.context["branch_totals"].entries == len(walk(fresh, other))


@pytest.mark.django_db
def test_page_requests_after_a_label_read_only_the_new_rows(client: Client, tmp_path: Path) -> None:
    play = playground(tmp_path, 9, entries=300)
    session = play.session
    url = f"/s/{session.session_id}/"
    client.get(url)
    target = play.ids()[10]
    queries: list[str] = []

    def record(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        response = client.post(url + "label/", {"target_id": target, "label": "kept"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    assert "kept" in response.content.decode()
    # The forest grew by the label row: one query for rows past the cached seq, none over the whole session.
    reads = [q for q in queries if "treeview_entry" in q and q.lstrip().upper().startswith("SELECT")]
    forest_reads = [q for q in reads if '"label_target"' in q and '"search_text"' in q]
    assert len(forest_reads) == 1 and ">=" in forest_reads[0], forest_reads


# -- threads ------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_threads_asking_at_once_share_one_forest_and_one_tree(tmp_path: Path, counted) -> None:
    play = playground(tmp_path, 10, entries=200)
    pk = play.session.pk
    errors: list[BaseException] = []
    seen: list[explorer.ExplorerTree] = []

    def reader(barrier: threading.Barrier) -> None:
        try:
            session = AgentSession.objects.get(pk=pk)
            barrier.wait()
            tree = explorer.explorer_tree(session, session.leaf_id)
            tree.visible("labeled-only", "", agent="omp15")
            tree.branch_totals()
            explorer.path_ids(tree.flat, session.leaf_id)
            seen.append(tree)
        except BaseException as error:  # noqa: BLE001 -- reported by the test's thread
            errors.append(error)
        finally:
            connection.close()

    # Each round: a label is saved (SQLite's shared in-memory test database cannot write while threads
    # read), then four threads ask for the new tree at the same moment.
    for i in range(4):
        if i:
            append.set_label(play.session, play.ids()[i], f"label {i}")
        barrier = threading.Barrier(4)
        threads = [threading.Thread(target=reader, args=(barrier,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert len({id(tree) for tree in seen}) == 1  # made once, by one of them
        seen.clear()
    assert counted == {"reload": 1, "flatten": 1}
    session = play.refresh()
    check_tree(session, session.leaf_id)


# -- the pure pieces ---------------------------------------------------------------------------------------


def test_gc_pauses_nest_and_restore_the_collector() -> None:
    assert gc.isenabled()
    with tree_index.gc_paused():
        assert not gc.isenabled()
        with tree_index.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with tree_index.gc_paused():
            pass
        assert not gc.isenabled()  # someone else's pause is left alone
    finally:
        gc.enable()


def original_prefix(
    display_indent: int, by_level: Mapping[int, bool], connector: str | None, symbols: Any
) -> str:
    """selector._prefix as first written: level by level."""
    if display_indent <= 0:
        return ""
    connector_level = display_indent - 1 if connector else -1
    glyph = ""
    if connector:
        chars = list(symbols.last if connector == "last" else symbols.branch)
        glyph = (
            (chars[0] if chars else " ")
            + (chars[1] if len(chars) > 1 else symbols.horizontal)
            + (chars[2] if len(chars) > 2 else " ")
        )
    parts: list[str] = []
    for level in range(display_indent):
        show = by_level.get(level)
        if show is not None:
            parts.append((symbols.vertical if show else " ") + "  ")
        elif level == connector_level:
            parts.append(glyph)
        else:
            parts.append("   ")
    return "".join(parts)


@given(
    indent=st.integers(0, 40),
    levels=st.dictionaries(st.integers(-2, 45), st.booleans(), max_size=12),
    connector=st.sampled_from([None, "branch", "last"]),
    ascii_symbols=st.booleans(),
)
def test_prefix_fills_levels_as_the_original_did(indent, levels, connector, ascii_symbols) -> None:
    from treeview.session.selector import _prefix

    symbols = ASCII_SYMBOLS if ascii_symbols else UNICODE_SYMBOLS
    assert _prefix(indent, levels, connector, symbols) == original_prefix(indent, levels, connector, symbols)


@dataclass
class Node:
    entry: dict[str, Any]
    children: list[Node] = field(default_factory=list)
    label: str | None = None


def original_flatten(roots: Sequence[Any], leaf_id: str | None) -> list[tuple[Any, ...]]:
    """flatten_tree as first written (v15's order, indent and gutters), for comparison."""
    pre_order: list[Any] = []
    seen: set[int] = set()
    pending = list(roots)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        pre_order.append(node)
        pending.extend(node.children)
    contains: dict[int, bool] = {}
    for node in reversed(pre_order):
        has = leaf_id is not None and node.entry.get("id") == leaf_id
        if not has:
            has = any(contains.get(id(child), False) for child in node.children)
        contains[id(node)] = has

    def active_first(nodes: Sequence[Any]) -> list[Any]:
        first = [n for n in nodes if contains.get(id(n), False)]
        return first + [n for n in nodes if not contains.get(id(n), False)] if first else list(nodes)

    multiple = len(roots) > 1
    out: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, ...]] = []
    ordered = active_first(roots)
    for i in range(len(ordered) - 1, -1, -1):
        stack.append(
            (ordered[i], 1 if multiple else 0, multiple, multiple, i == len(ordered) - 1, (), multiple)
        )
    emitted: set[int] = set()
    while stack:
        node, indent, just, show, last, gutters, vrc = stack.pop()
        if id(node) in emitted:
            continue
        emitted.add(id(node))
        display = max(0, indent - 1) if multiple else indent
        out.append((node.entry.get("id"), indent, display, show, last, vrc, gutters))
        children = node.children
        many = len(children) > 1
        child_indent = indent + 1 if many or (just and indent > 0) else indent
        child_gutters = gutters
        if show and not vrc:
            child_gutters = (*gutters, Gutter(max(0, display - 1), not last))
        kids = active_first(children)
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], child_indent, many, many, i == len(kids) - 1, child_gutters, False))
    return out


@st.composite
def forests(draw: Any) -> tuple[list[Node], str | None]:
    """Random forests, sometimes with a node shared by two parents or a loop (malformed structures)."""
    count = draw(st.integers(1, 40))
    nodes = [Node({"type": "message", "id": f"n{i}"}) for i in range(count)]
    roots: list[Node] = []
    for i, node in enumerate(nodes):
        parent = draw(st.integers(-1, i - 1)) if i else -1
        (roots if parent < 0 else nodes[parent].children).append(node)
    for _ in range(draw(st.integers(0, 2))):
        a, b = draw(st.integers(0, count - 1)), draw(st.integers(0, count - 1))
        nodes[a].children.append(nodes[b])
    leaf = draw(st.one_of(st.none(), st.sampled_from([n.entry["id"] for n in nodes]), st.just("missing")))
    return roots, leaf


@settings(max_examples=300)
@given(forests())
def test_flatten_tree_draws_what_the_original_drew(forest: tuple[list[Node], str | None]) -> None:
    roots, leaf = forest
    flat = flatten_tree(roots, leaf)
    ours = [
        (n.id, n.indent, n.display_indent, n.show_connector, n.is_last, n.is_virtual_root_child, n.gutters)
        for n in flat.nodes
    ]
    assert ours == original_flatten(roots, leaf)


@pytest.mark.django_db
def test_branch_totals_of_a_tree_with_parent_cycles_walk_the_parents(tmp_path: Path) -> None:
    path = tmp_path / "cycle.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "cyc",
        "timestamp": "2030-01-01T00:00:00.000Z",
        "cwd": "/",
    }
    lines = [
        header,
        {
            "type": "message",
            "id": "a",
            "parentId": "c",
            "timestamp": "2030-01-01T00:00:01.000Z",
            "message": {"role": "user", "content": "a"},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "timestamp": "2030-01-01T00:00:02.000Z",
            "message": {"role": "user", "content": "b"},
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "b",
            "timestamp": "2030-01-01T00:00:03.000Z",
            "message": {"role": "user", "content": "c"},
        },
        {
            "type": "message",
            "id": "d",
            "parentId": "b",
            "timestamp": "2030-01-01T00:00:04.000Z",
            "message": {"role": "user", "content": "d"},
        },
    ]
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    session = sync_file(path).session
    assert session.leaf_id == "d"
    tree = explorer.explorer_tree(session, "d")
    assert not tree.simple
    check_tree(session, "d")
    assert Entry.objects.filter(Q(session=session) & ~Q(type="session")).count() == 4


@st.composite
def proper_forests(draw: Any) -> tuple[list[Node], str, list[Node]]:
    """Random proper forests (unique ids, one parent each), a leaf, and the path down to it."""
    count = draw(st.integers(1, 40))
    nodes = [Node({"type": "message", "id": f"n{i}", "parentId": None}) for i in range(count)]
    roots: list[Node] = []
    parents: dict[int, int] = {}
    for i, node in enumerate(nodes):
        parent = draw(st.integers(-1, i - 1)) if i else -1
        if parent < 0:
            # Some roots are orphans: their parent id names no node.
            node.entry["parentId"] = draw(st.sampled_from([None, "missing", node.entry["id"]]))
            roots.append(node)
        else:
            node.entry["parentId"] = nodes[parent].entry["id"]
            nodes[parent].children.append(node)
            parents[i] = parent
    leaf = draw(st.integers(0, count - 1))
    path = [nodes[leaf]]
    while leaf in parents:
        leaf = parents[leaf]
        path.append(nodes[leaf])
    return roots, path[0].entry["id"], path[::-1]


@settings(max_examples=300)
@given(proper_forests())
def test_flatten_tree_given_the_leaf_path_draws_the_same(forest: tuple[list[Node], str, list[Node]]) -> None:
    roots, leaf, path = forest
    given_path = flatten_tree(roots, leaf, path)
    found = flatten_tree(roots, leaf)
    assert drawing(given_path) == drawing(found)
    assert given_path.active_ids == found.active_ids
    assert given_path.by_id.keys() == found.by_id.keys()


@pytest.mark.django_db
def test_a_tree_keeps_what_a_view_derives_from_it(tmp_path: Path) -> None:
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    tree = explorer.explorer_tree(session, session.leaf_id)
    made: list[str] = []

    def make(key: str) -> Callable[[], str]:
        return lambda: made.append(key) or f"value {key}"

    assert tree.memo("a", make("a")) == "value a"
    assert tree.memo("a", make("a")) == "value a"
    assert tree.memo("b", make("b")) == "value b"
    assert made == ["a", "b"]
    append.set_label(session, session.leaf_id, "new state")
    session.refresh_from_db()
    # Another state of the session is another tree: nothing carried over.
    assert explorer.explorer_tree(session, session.leaf_id).memo("a", make("a")) == "value a"
    assert made == ["a", "b", "a"]


@pytest.mark.django_db
@pytest.mark.parametrize("agent", ["omp15", "omp", "pi"])
def test_a_search_narrows_the_modes_kept_rows(tmp_path: Path, monkeypatch, agent: str) -> None:
    """A search starts from the rows its mode shows without one (kept with the tree: the mode's flags are read
    once for any number of searches), and keeps the rows a search over all the nodes keeps."""
    from treeview import tree_filter

    session = playground(tmp_path, 7, 300).session
    tree = explorer.explorer_tree(session, session.leaf_id)
    nodes, leaf = tree.flat.nodes, tree.leaf_index
    for mode in [*FILTER_MODES, explorer.COMMENTED]:
        commented = frozenset(node.id for node in nodes[::7])
        every = tree_filter.filter_positions(nodes, leaf, tree.forest, mode, "", commented, agent)
        for query in QUERIES[1:]:
            narrowed = tree_filter.filter_positions(
                nodes, leaf, tree.forest, mode, query, commented, agent, shown=every
            )
            whole = tree_filter.filter_positions(nodes, leaf, tree.forest, mode, query, commented, agent)
            assert narrowed == whole, (mode, query)
    calls: list[int] = []
    keep = tree_filter._keep
    monkeypatch.setattr(
        tree_filter, "_keep", lambda *args, **kwargs: calls.append(1) or keep(*args, **kwargs)
    )
    fresh = explorer.ExplorerTree(tree.flat, forest=tree.forest, leaf_index=None)
    answers = [fresh.visible("all", query, agent=agent).positions for query in QUERIES[1:]]
    assert len(calls) == 1  # the mode's rows, once
    assert answers == [
        tree_filter.filter_positions(nodes, None, tree.forest, "all", query, None, agent)
        for query in QUERIES[1:]
    ]
    assert any(answers) and not all(answers)


@pytest.mark.django_db
def test_a_big_trees_first_search_has_its_word_index_made_in_a_thread(tmp_path: Path, monkeypatch) -> None:
    """The first search of a big tree scans the texts and starts a thread that makes the word index (giving
    way to requests); the next searches use it, with the same answers."""
    from treeview import tree_filter

    monkeypatch.setattr(tree_filter, "WORD_INDEX_MIN", 1)
    started: list[threading.Thread] = []
    start = threading.Thread.start

    def start_and_wait(self: threading.Thread) -> None:
        start(self)
        if self.name == "search-words":
            started.append(self)
            self.join()

    monkeypatch.setattr(threading.Thread, "start", start_and_wait)
    session = playground(tmp_path, 7, 300).session
    tree = explorer.explorer_tree(session, session.leaf_id)
    queries = ["read", "tool result", "fxt", "zzz"]
    scanned = [tree.visible("all", query, agent="omp").positions for query in queries]
    assert len(started) == 1
    ((_, _, _, (_, _, joined)),) = tree.forest.fuzzy_flat
    assert joined.words is not None
    tree._visible.clear()
    assert [tree.visible("all", query, agent="omp").positions for query in queries] == scanned
    assert len(started) == 1 and any(scanned) and not all(scanned)
