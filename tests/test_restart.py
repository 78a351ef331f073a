"""The first page of a big session after a server restart or right after its import: what the import and the
server keep on disk for it (the forest's snapshot, the detected rules) is used when it fits the session and
ignored when it does not (stale, another session's, corrupt); what a server loads before its first request."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from treeview import rules_cache, tree_index, warmup
from treeview.models import AgentSession, sessions
from treeview.services.sync import sync_file
from treeview.session.generate import write_session
from treeview.tree_index import building, loading

pytestmark = pytest.mark.django_db

HEADER = {"type": "session", "version": 3, "id": "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77", "cwd": "/p"}


@pytest.fixture
def data_dir(settings, tmp_path: Path, monkeypatch) -> Iterator[Path]:
    """Snapshots and stored rules for every session, into a directory of this test (the prewarm's threads
    that write there are waited for at its end)."""
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    monkeypatch.setattr(loading, "SNAPSHOT_MIN_ROWS", 1)
    monkeypatch.setattr(rules_cache, "MIN_ROWS", 1)
    monkeypatch.setattr(warmup, "KEEP_DELAY", 0.0)
    yield tmp_path / "data" / "cache"
    for thread in threading.enumerate():
        if thread.name in ("keep-snapshot", "prewarm-sessions", "forest-snapshot"):
            thread.join(30)


def _restart() -> None:
    """What a new server process does not have: the decisions kept in memory."""
    sessions._detected.clear()


def _fresh(session: AgentSession) -> AgentSession:
    _restart()
    return AgentSession.objects.get(pk=session.pk)


def _message(entry_id: str, parent: str | None, role: str, text: str, second: int) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": f"2026-05-01T10:00:{second:02d}.000Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1777629600000},
    }


def _write(path: Path, entries: list[dict[str, Any]]) -> None:
    lines = [{**HEADER, "timestamp": "2026-05-01T10:00:00.000Z"}, *entries]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _undecided_file(path: Path, count: int = 6) -> list[dict[str, Any]]:
    """A session whose rows name no agent (messages only): rules detected as "nothing agent-specific"."""
    entries: list[dict[str, Any]] = []
    parent = None
    for i in range(count):
        entry_id = f"m{i:07d}"
        entries.append(_message(entry_id, parent, "user" if i % 2 == 0 else "assistant", f"text {i}", i + 1))
        parent = entry_id
    _write(path, entries)
    return entries


class _Counting:
    """Records each scan of the session's rows for the rules (``AgentSession._detect_rules``): its start."""

    def __init__(self, monkeypatch) -> None:
        self.since: list[int] = []
        real = AgentSession._detect_rules

        def counting(session: AgentSession, since: int = 0):
            self.since.append(since)
            return real(session, since)

        monkeypatch.setattr(AgentSession, "_detect_rules", counting)


# -- right after the import ------------------------------------------------------------------------------


def test_the_import_writes_the_snapshot_and_the_rules_the_first_page_reads(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    path = tmp_path / "gen.jsonl"
    write_session(path, 120, 3)
    session = sync_file(path).session
    assert session is not None
    assert len(list((data_dir / "forests").glob("*.json"))) == 1
    assert (data_dir / "rules" / f"{session.pk}.json").exists()

    session = _fresh(session)
    scans = _Counting(monkeypatch)
    rows_read: list[int] = []
    real_rows = loading._rows

    def counting_rows(pk: int, start: int, stop: int | None):
        for row in real_rows(pk, start, stop):
            rows_read.append(row[0])
            yield row

    monkeypatch.setattr(loading, "_rows", counting_rows)
    forest = tree_index.Forest.load(session)
    decision = session.rules
    assert rows_read == []  # the forest came from the snapshot alone
    assert scans.since == []  # and the rules from their file
    assert forest.next_seq == session.next_seq and forest.row_count == session.entry_count
    monkeypatch.setattr(loading, "_rows", real_rows)
    fresh = tree_index.Forest(session.pk)
    fresh._build(list(real_rows(session.pk, 0, session.next_seq)), session.next_seq)
    assert [n.entry for n in forest.nodes.values()] == [n.entry for n in fresh.nodes.values()]
    assert (decision.agent, decision.reason) == _detected_now(session)


def _detected_now(session: AgentSession) -> tuple[str, str]:
    found = session._detect_rules()
    return found.agent, found.reason


def test_a_small_append_keeps_the_snapshot_of_the_import(tmp_path: Path, data_dir: Path, monkeypatch) -> None:
    monkeypatch.setattr(loading, "SNAPSHOT_MIN_ROWS", 40)  # an append of up to 10 rows keeps it
    path = tmp_path / "gen.jsonl"
    write_session(path, 80, 4)
    sync_file(path)
    (snapshot,) = (data_dir / "forests").glob("*.json")
    before = snapshot.read_bytes()
    with path.open("a") as handle:
        last = orjson.loads(path.read_bytes().splitlines()[-1])
        handle.write(json.dumps(_message("zz000001", last["id"], "user", "one more", 59)) + "\n")
    assert sync_file(path).status == "grown"
    assert snapshot.read_bytes() == before  # brought up to date from the table when it is read


# -- the detected rules on disk --------------------------------------------------------------------------


def test_stored_rules_are_used_after_a_restart_and_follow_appended_rows(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    path = tmp_path / "s.jsonl"
    entries = _undecided_file(path)
    session = sync_file(path).session
    assert session is not None
    scans = _Counting(monkeypatch)
    session = _fresh(session)
    assert session.rules.reason == rules_cache.UNDECIDED_REASON
    assert scans.since == []  # stored by the import
    old_next = session.next_seq

    # A row that decides arrives: only the rows appended since are scanned.
    entries.append(
        {
            "type": "usage",
            "id": "u0000001",
            "parentId": entries[-1]["id"],
            "timestamp": "2026-05-01T10:00:30.000Z",
        }
    )
    _write(path, entries)
    assert sync_file(path).status == "grown"
    session = _fresh(session)
    decision = session.rules
    assert (decision.agent, decision.reason) == ("pi", "usage entry")
    assert scans.since[-1] == old_next
    assert (decision.agent, decision.reason) == _detected_now(session)

    # Decided: more rows change nothing, and are not scanned.
    scans.since.clear()
    entries.append(_message("m9000000", "u0000001", "user", "after", 40))
    _write(path, entries)
    assert sync_file(path).status == "grown"
    session = _fresh(session)
    assert (session.rules.agent, session.rules.reason) == ("pi", "usage entry")
    assert scans.since == []
    stored = orjson.loads((data_dir / "rules" / f"{session.pk}.json").read_bytes())
    assert (stored["next_seq"], stored["entry_count"]) == (session.next_seq, session.entry_count)


@pytest.mark.parametrize("change", ["rewrite", "header", "other_session", "corrupt", "newer_than_session"])
def test_stored_rules_that_do_not_fit_are_not_used(
    tmp_path: Path, data_dir: Path, monkeypatch, change: str
) -> None:
    path = tmp_path / "s.jsonl"
    entries = _undecided_file(path)
    session = sync_file(path).session
    assert session is not None
    stored = data_dir / "rules" / f"{session.pk}.json"
    data = orjson.loads(stored.read_bytes())
    if change == "rewrite":
        # The file is rewritten: its deciding row replaces a message; the old decision must not survive.
        entries[3] = {
            "type": "context_edit",
            "id": entries[3]["id"],
            "parentId": entries[2]["id"],
            "timestamp": entries[3]["timestamp"],
        }
        _write(path, entries[:5])
        old = stored.read_bytes()
        assert sync_file(path).status == "rewritten"
        stored.write_bytes(old)  # as if the import had not written it: the count must tell
    elif change == "header":
        data["base"] = data["base"].rsplit("|", 2)[0] + "|0123|0"
        data["reason"] = "title_change entry"
        stored.write_bytes(orjson.dumps(data))
    elif change == "other_session":
        data["base"] = data["base"].replace(session.session_id, "someone-else")
        data["reason"] = "title_change entry"
        stored.write_bytes(orjson.dumps(data))
    elif change == "corrupt":
        stored.write_bytes(b'{"version": 1, "base": ')
    else:
        data["next_seq"] = session.next_seq + 10
        data["reason"] = "title_change entry"
        stored.write_bytes(orjson.dumps(data))
    scans = _Counting(monkeypatch)
    session = _fresh(session)
    decision = session.rules
    assert scans.since == [0]  # everything read again
    assert (decision.agent, decision.reason) == _detected_now(session)
    if change == "rewrite":
        assert (decision.agent, decision.reason) == ("pi", "context_edit entry")
    # ... and stored again for the next process.
    assert orjson.loads(stored.read_bytes())["reason"] == decision.reason


def test_small_sessions_store_no_rules(tmp_path: Path, settings) -> None:
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    path = tmp_path / "s.jsonl"
    _undecided_file(path)
    session = sync_file(path).session
    assert session is not None
    assert _fresh(session).rules.reason == rules_cache.UNDECIDED_REASON
    assert not (tmp_path / "data" / "cache").exists()


# -- before the first request ------------------------------------------------------------------------------


def test_warm_up_compiles_every_template_of_the_site(monkeypatch) -> None:
    compiled: list[str] = []
    real = warmup.get_template

    def recording(name: str):
        template = real(name)
        compiled.append(name)
        return template

    monkeypatch.setattr(warmup, "get_template", recording)
    warmup.warm_up()
    site = Path(__file__).resolve().parent.parent / "templates"
    assert sorted(compiled) == sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))
    assert "treeview/session_detail.html" in compiled
    from django.urls import get_resolver

    assert get_resolver()._populated  # the reverse tables the page's links use


@pytest.mark.django_db(transaction=True)
def test_a_server_start_reads_the_most_recently_opened_big_session_into_the_caches(
    tmp_path: Path, data_dir: Path
) -> None:
    from treeview import explorer
    from treeview.explorer import caches

    sessions = []
    for seed in (5, 6):
        path = tmp_path / f"gen-{seed}.jsonl"
        write_session(path, 60, seed)
        sessions.append(sync_file(path).session)
    older, newer = sessions
    tree_index.Forest.load(older)  # opened last: its snapshot is the most recent
    explorer.clear_caches()
    _restart()
    assert warmup.prewarm_sessions(0) is None
    thread = warmup.prewarm_sessions(1)
    assert thread is not None
    thread.join(60)
    key = (explorer.session_key(older), older.next_seq, older.entry_count, older.leaf_id)
    assert caches._trees.get(key) is not None
    assert caches._forests.get(explorer.session_key(newer)) is None  # one session asked for


@pytest.mark.django_db(transaction=True)
def test_the_prewarm_makes_the_first_page_and_the_start_waits_for_it(
    tmp_path: Path, data_dir: Path, client, monkeypatch
) -> None:
    """What the session page derives from the tree (the window's filter, the branch on screen, the
    conversation's page) is made by the prewarm, and ``wait`` returns once it is, before the search's
    preparation: the first request then reads no forest, flattens nothing and renders no entry."""
    from treeview import conversation, explorer
    from treeview.explorer import caches

    path = tmp_path / "gen.jsonl"
    write_session(path, 80, 7)
    session = sync_file(path).session
    assert session is not None
    explorer.clear_caches()
    _restart()
    session = AgentSession.objects.get(pk=session.pk)
    searched: list[str] = []
    release = threading.Event()

    def slow_search(tree, agent, *, wait=False):  # the prewarm's search preparation: only after the pages
        if wait:
            searched.append(agent)
            release.wait(30)

    monkeypatch.setattr(explorer, "prepare_search", slow_search)
    keepers: list[bool] = []
    real_keep = warmup._keep_snapshots

    def keeping(trees):  # in a thread that is no daemon: a server stopped right away still writes it
        keepers.append(threading.current_thread().daemon)
        real_keep(trees)

    monkeypatch.setattr(warmup, "_keep_snapshots", keeping)
    thread = warmup.prewarm_sessions(1, wait=30)
    try:
        assert thread is not None and thread.is_alive()  # still preparing the search: not waited for
        key = (explorer.session_key(session), session.next_seq, session.entry_count, session.leaf_id)
        tree = caches._trees.get(key)
        assert tree is not None
        agent = session.rules.agent
        visible_key = (agent, "default", "", None)
        assert tree._visible.get(visible_key) is not None
        window = explorer.tree_window(tree, "default", "", None, None, agent=agent)
        assert tree._memo.get(("branch-on-screen", window.selected_id, agent)) is not None
        made_before = len(tree._memo)

        def no_loading(*args, **kwargs):
            raise AssertionError("the first page read the forest again")

        monkeypatch.setattr(tree_index.Forest, "load", no_loading)
        monkeypatch.setattr(conversation, "_page", no_loading)
        response = client.get(f"/s/{session.session_id}/")
        assert response.status_code == 200
        assert window.selected_id is not None and window.selected_id.encode() in response.content
        assert len(tree._memo) == made_before  # nothing the page derives was missing
    finally:
        release.set()
        thread.join(30)
    assert searched == [session.rules.agent]
    # The import's snapshot of rows was kept again as the forest and its tree, for the next start.
    for other in threading.enumerate():
        if other.name == "keep-snapshot":
            other.join(30)
    assert keepers == [False]
    (snapshot,) = (data_dir / "forests").glob("*.json")
    kept = orjson.loads(snapshot.read_bytes())
    assert kept["columns"] is not None and kept["flat"]["leaf_id"] == session.leaf_id


# -- the forest's links and its flattened tree, kept in the snapshot -----------------------------------------


def _flat_shape(flat) -> list[tuple[Any, ...]]:
    return [
        (
            node.node.entry["id"],
            node.indent,
            node.display_indent,
            node.show_connector,
            node.is_last,
            node.is_virtual_root_child,
            node.depth,
            node.gutters,
            tuple(g.depth_position for g in node.gutters),
            node.node.label,
        )
        for node in flat.nodes
    ]


def _from_the_table(session: AgentSession):
    """The session's tree as a first ever page makes it: its rows read, linked and flattened."""
    from treeview.session.selector_tree import flatten_tree

    forest = tree_index.Forest(session.pk)
    forest._build(list(loading._rows(session.pk, 0, session.next_seq)), session.next_seq)
    return forest, flatten_tree(forest.roots, session.leaf_id, forest.leaf_path(session.leaf_id))


def _assert_same_tree(tree, session: AgentSession) -> None:
    forest, flat = _from_the_table(session)
    assert _flat_shape(tree.flat) == _flat_shape(flat)
    assert tree.flat.active_ids == flat.active_ids and tree.flat.leaf_id == flat.leaf_id == session.leaf_id
    assert tree.flat.multiple_roots == flat.multiple_roots
    assert list(tree.flat.by_id) == list(flat.by_id)
    assert (
        tree.leaf_index is not None and tree.flat.nodes[tree.leaf_index].node.entry["id"] == session.leaf_id
    )
    _assert_same_forest(tree.forest, forest)


def _node_shape(node) -> tuple[Any, ...]:
    return (
        node.entry,
        node.facts,
        node.label,
        node.label_time,
        node.seq,
        node.flags,
        node.input_tokens,
        node.output_tokens,
        node.cost,
        [c.entry["id"] for c in node.children],
    )


def _assert_same_forest(kept, forest) -> None:
    """Every node with every field, in the same order, and what the forest knows besides."""
    assert list(kept.nodes) == list(forest.nodes)
    assert [_node_shape(n) for n in kept.nodes.values()] == [_node_shape(n) for n in forest.nodes.values()]
    assert [r.entry["id"] for r in kept.roots] == [r.entry["id"] for r in forest.roots]
    assert (kept.labels, kept.label_times) == (forest.labels, forest.label_times)
    assert (kept.next_seq, kept.row_count, kept.cycles) == (forest.next_seq, forest.row_count, forest.cycles)
    assert kept.dangling == forest.dangling


def _first_start(session: AgentSession, snapshot: Path) -> AgentSession:
    """The first server start after the import: the forest made from the rows the import kept, then kept as
    the forest itself and its tree (what the prewarm does once the first page is ready)."""
    from treeview import explorer

    assert orjson.loads(snapshot.read_bytes())["columns"] is None  # the import keeps rows
    explorer.clear_caches()
    session = _fresh(session)
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert explorer.keep_snapshot(session, tree)
    assert not explorer.keep_snapshot(session, tree)  # once
    return session


def _branchy_session(tmp_path: Path, seed: int = 11, entries: int = 400) -> AgentSession:
    path = tmp_path / "gen.jsonl"
    write_session(path, entries, seed)
    session = sync_file(path).session
    assert session is not None
    (snapshot,) = (path.parent / "data" / "cache" / "forests").glob("*.json")
    return _first_start(session, snapshot)


def test_a_start_after_the_first_one_neither_links_nor_flattens(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    from treeview import explorer
    from treeview.explorer import making

    session = _branchy_session(tmp_path)
    (snapshot,) = (data_dir / "forests").glob("*.json")
    kept = orjson.loads(snapshot.read_bytes())
    assert kept["rows"] is None and kept["columns"]["row_count"] == session.entry_count
    assert kept["version"] == 2 and kept["forest"] is not None and kept["flat"]["leaf_id"] == session.leaf_id
    assert len(kept["flat"]["gutters"]) > 3  # a branchy tree: its guides are kept too
    explorer.clear_caches()
    session = _fresh(session)

    def refused(*args, **kwargs):
        raise AssertionError("linked or flattened again")

    monkeypatch.setattr(building, "build_forest", refused)
    monkeypatch.setattr(making, "flatten_tree", refused)
    tree = explorer.explorer_tree(session, session.leaf_id)
    monkeypatch.undo()
    _assert_same_tree(tree, session)


def _append_line(path: Path, entry: dict[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(entry) + "\n")


@pytest.mark.parametrize("change", ["label", "message", "leaf"])
def test_a_kept_tree_is_not_used_once_the_session_changed(
    tmp_path: Path, data_dir: Path, monkeypatch, change: str
) -> None:
    """A label, an appended entry (rows the snapshot does not hold: it is kept, as for a small append) or a
    moved leaf (no row at all): the start reads the snapshot and flattens the session as it is now."""
    from treeview import explorer
    from treeview.services.append import move_leaf

    monkeypatch.setattr(loading, "SNAPSHOT_MIN_ROWS", 100)  # an append of a row keeps the snapshot
    session = _branchy_session(tmp_path)
    path = tmp_path / "gen.jsonl"
    (snapshot,) = (data_dir / "forests").glob("*.json")
    before = snapshot.read_bytes()
    leaf = session.leaf_id
    if change == "label":
        _append_line(
            path,
            {
                "type": "label",
                "id": "lab00001",
                "parentId": leaf,
                "timestamp": "2026-06-01T10:00:00.000Z",
                "targetId": leaf,
                "label": "kept?",
            },
        )
    elif change == "message":
        _append_line(
            path, {**_message("zz000001", leaf, "user", "one more", 59), "timestamp": "2026-06-01T10:00:00Z"}
        )
    if change == "leaf":
        other = orjson.loads(before)["flat"]
        moved = next(n for n in tree_index.Forest.load(session).nodes.values() if n.entry["id"] != leaf)
        move_leaf(session, moved.entry["id"])
        assert other["leaf_id"] == leaf
    else:
        assert sync_file(path).status == "grown"
    assert snapshot.read_bytes() == before  # the snapshot (and its tree) are the import's
    explorer.clear_caches()
    session = _fresh(session)
    assert session.leaf_id != leaf or change == "label"
    tree = explorer.explorer_tree(session, session.leaf_id)
    _assert_same_tree(tree, session)
    if change == "label":
        assert tree.flat.by_id[leaf].node.label == "kept?"


@pytest.mark.parametrize(
    "damage",
    [
        "flat-node",
        "flat-gutter",
        "flat-leaf-index",
        "links-count",
        "links-twice",
        "columns-length",
        "columns-kind",
        "columns-message",
        "columns-duplicate-id",
    ],
)
def test_kept_links_or_tree_that_do_not_fit_are_not_used(tmp_path: Path, data_dir: Path, damage: str) -> None:
    from treeview import explorer

    session = _branchy_session(tmp_path)
    (snapshot,) = (data_dir / "forests").glob("*.json")
    data = orjson.loads(snapshot.read_bytes())
    flat, links = data["flat"], data["forest"]
    if damage == "flat-node":
        flat["nodes"][5] = len(flat["nodes"]) + 3
    elif damage == "flat-gutter":
        flat["gutters"][0][3] = 7  # a parent after it
    elif damage == "flat-leaf-index":
        flat["leaf_index"] = flat["leaf_index"] - 1
    elif damage == "links-count":
        links["count"] += 1
    elif damage == "columns-length":
        data["columns"]["text"].pop()
    elif damage == "columns-kind":
        data["columns"]["kind"][3] = len(data["columns"]["kinds"])
    elif damage == "columns-message":
        data["columns"]["message"][3] = -2
    elif damage == "columns-duplicate-id":
        data["columns"]["id"][3] = data["columns"]["id"][2]
    else:
        first = next(i for i, kids in enumerate(links["children"]) if kids)
        links["children"][first] = [*links["children"][first], links["children"][first][0]]
    snapshot.write_bytes(orjson.dumps(data))
    explorer.clear_caches()
    session = _fresh(session)
    tree = explorer.explorer_tree(session, session.leaf_id)
    _assert_same_tree(tree, session)


def _no_table(*args: Any) -> Any:
    raise AssertionError("the table was read: the snapshot's columns were not used")


def test_the_kept_columns_make_the_forest_of_an_unusual_file(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    """A duplicate id (the later line wins, in the earlier one's place), a label set then cleared, a label
    kept, an orphan below a missing parent, an id-less line: the snapshot's columns make the same forest as
    the rows do, and the flattened tree kept is that forest's."""
    from treeview import explorer

    entries = [
        _message("a0000001", None, "user", "first", 1),
        _message("a0000002", "a0000001", "assistant", "answer", 2),
        _message("a0000003", "a0000002", "user", "again", 3),
        _message("a0000002", "a0000001", "assistant", "answer, replaced", 4),
        {
            "type": "label",
            "id": "l0000001",
            "parentId": "a0000003",
            "timestamp": "2026-05-01T10:00:05.000Z",
            "targetId": "a0000001",
            "label": "start",
        },
        {
            "type": "label",
            "id": "l0000002",
            "parentId": "l0000001",
            "timestamp": "2026-05-01T10:00:06.000Z",
            "targetId": "a0000002",
            "label": "gone",
        },
        {
            "type": "label",
            "id": "l0000003",
            "parentId": "l0000002",
            "timestamp": "2026-05-01T10:00:07.000Z",
            "targetId": "a0000002",
        },
        _message("o0000001", "missing1", "user", "orphan", 8),
        {"type": "custom", "customType": "note", "data": {}, "timestamp": "2026-05-01T10:00:09.000Z"},
        _message("a0000004", "l0000003", "assistant", "the end", 10),
    ]
    path = tmp_path / "odd.jsonl"
    _write(path, entries)
    session = sync_file(path).session
    assert session is not None
    (snapshot,) = (data_dir / "forests").glob("*.json")
    session = _first_start(session, snapshot)
    assert orjson.loads(snapshot.read_bytes())["columns"] is not None
    explorer.clear_caches()
    session = _fresh(session)
    real_rows = loading._rows
    monkeypatch.setattr(loading, "_rows", _no_table)
    tree = explorer.explorer_tree(session, session.leaf_id)
    monkeypatch.setattr(loading, "_rows", real_rows)
    _assert_same_tree(tree, session)
    assert tree.forest.nodes["a0000001"].label == "start" and tree.forest.nodes["a0000002"].label is None
    assert tree.forest.nodes["a0000002"].facts.text.endswith("answer, replaced")
    assert "missing1" in tree.forest.dangling


def test_a_forest_with_a_parent_cycle_is_kept_as_columns_and_linked_on_start(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    """Entries whose parents form a cycle: no links and no flattened tree are kept (the start links the kept
    nodes itself, breaking the cycle as the table's rows would) and the forest is the table's."""
    from treeview import explorer

    entries = [
        _message("a0000001", None, "user", "first", 1),
        _message("a0000002", "a0000001", "assistant", "answer", 2),
        _message("c0000001", "c0000002", "user", "in a cycle", 3),
        _message("c0000002", "c0000001", "assistant", "also in it", 4),
    ]
    path = tmp_path / "cycle.jsonl"
    _write(path, entries)
    session = sync_file(path).session
    assert session is not None
    (snapshot,) = (data_dir / "forests").glob("*.json")
    session = _first_start(session, snapshot)
    kept = orjson.loads(snapshot.read_bytes())
    assert kept["columns"] is not None and kept["forest"] is None and kept["flat"] is None
    explorer.clear_caches()
    session = _fresh(session)
    real_rows = loading._rows
    monkeypatch.setattr(loading, "_rows", _no_table)
    tree = explorer.explorer_tree(session, session.leaf_id)
    monkeypatch.setattr(loading, "_rows", real_rows)
    forest, flat = _from_the_table(session)
    assert tree.forest.cycles and forest.cycles
    _assert_same_forest(tree.forest, forest)
    assert _flat_shape(tree.flat) == _flat_shape(flat)


@pytest.mark.django_db(transaction=True)
def test_a_first_page_the_prewarm_cannot_make_leaves_the_tree_and_the_search_preparation(
    tmp_path: Path, data_dir: Path, monkeypatch
) -> None:
    from treeview import explorer
    from treeview.explorer import caches

    session = _branchy_session(tmp_path, entries=60)
    explorer.clear_caches()
    _restart()
    session = AgentSession.objects.get(pk=session.pk)
    searched: list[str] = []

    def broken(*args: Any) -> None:
        raise RuntimeError("a page that cannot be made")

    monkeypatch.setattr(warmup, "prepare_first_page", broken)
    monkeypatch.setattr(explorer, "prepare_search", lambda tree, agent, *, wait=False: searched.append(agent))
    thread = warmup.prewarm_sessions(1, wait=30)
    assert thread is not None
    thread.join(30)
    key = (explorer.session_key(session), session.next_seq, session.entry_count, session.leaf_id)
    assert caches._trees.get(key) is not None
    assert searched == [session.rules.agent]
