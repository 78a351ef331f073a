"""The tree selector over database rows gives exactly the core selector's answers (no line re-parsed)."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.reference import all_cases
from treeview import tree_index
from treeview.models import AgentSession
from treeview.services.append import move_leaf, set_label
from treeview.services.export import load_manager
from treeview.services.sync import sync_file
from treeview.session.generate import write_session
from treeview.session.selector import FILTER_MODES, flatten_tree, initial_selection, visible_rows
from treeview.tree_index import flatten_session, loading, select_rows, snapshot_files

pytestmark = pytest.mark.django_db

QUERIES = ["", "user", "read cli", "summary", "assistant tests", "zzz-nothing"]


def _rows(rows):
    return [(r.id, r.text, r.display_indent, r.active, r.connector, r.is_leaf, r.gutters) for r in rows]


@pytest.mark.parametrize("case", all_cases(), ids=str)
def test_database_rows_equal_the_core_selector_in_every_mode_and_search(case, tmp_path: Path) -> None:
    path = tmp_path / case.path.name
    shutil.copyfile(case.path, path)
    session = sync_file(path).session
    manager = load_manager(session)
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    db_flat = flatten_session(session)
    assert [n.id for n in db_flat] == [n.id for n in core_flat]
    for mode in FILTER_MODES:
        for query in QUERIES:
            core = visible_rows(core_flat, mode, query)
            ours = visible_rows(db_flat, mode, query)
            assert _rows(ours) == _rows(core), (mode, query)
            assert initial_selection(db_flat, ours) == initial_selection(core_flat, core)


def test_labels_and_leaf_moves_show_up_in_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(Path(__file__).parent / "data/handmade/v3_branching_labels.jsonl", path)
    session = sync_file(path).session
    set_label(session, "b2000003", "first try")
    rows = {r.id: r for r in select_rows(session, "all")}
    assert rows["b2000003"].label == "first try"
    assert {r.id for r in select_rows(session, "labeled-only")} == {"b2000003", "b2000008"}
    assert [r.id for r in select_rows(session, "default", "first try")] == ["b2000003"]
    move_leaf(session, "b2000003")
    first = select_rows(session, "user-only")
    assert first[0].active and any(r.id == "b2000003" and r.active for r in first)


# -- the forest kept in memory, and its snapshot on disk ------------------------------------------------


def _forest_shape(forest: tree_index.Forest) -> tuple[Any, ...]:
    def walk(nodes: list[tree_index.DbNode]) -> list[Any]:
        out: list[Any] = []
        stack = [(node, 0) for node in reversed(nodes)]
        while stack:
            node, depth = stack.pop()
            out.append((depth, node.entry, node.label, node.flags, node.facts, node.input_tokens, node.cost))
            stack.extend((child, depth + 1) for child in reversed(node.children))
        return out

    return (
        walk(forest.roots),
        forest.next_seq,
        forest.row_count,
        forest.cycles,
        forest.dangling,
        forest.labels,
    )


@pytest.fixture
def snapshots(settings, tmp_path: Path, monkeypatch) -> Path:
    """Snapshots for every session, written at once, into a directory of this test."""
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    monkeypatch.setattr(loading, "SNAPSHOT_MIN_ROWS", 1)
    written: list[threading.Thread] = []
    start = threading.Thread.start

    def start_and_remember(self: threading.Thread) -> None:
        start(self)
        if self.name == "forest-snapshot":
            written.append(self)
            self.join()

    monkeypatch.setattr(threading.Thread, "start", start_and_remember)
    return tmp_path / "data" / "cache" / "forests"


def _generated(tmp_path: Path, entries: int = 150, seed: int = 2) -> tuple[Path, AgentSession]:
    path = tmp_path / f"gen-{seed}.jsonl"
    write_session(path, entries, seed)
    session = sync_file(path).session
    assert session is not None
    return path, session


def test_a_forest_read_from_its_snapshot_equals_one_read_from_the_table(
    tmp_path: Path, snapshots: Path
) -> None:
    _, session = _generated(tmp_path)
    for written in snapshots.glob("*.json"):  # the one the import wrote
        written.unlink()
    first = tree_index.Forest.load(session)  # from the table; writes the snapshot
    assert len(list(snapshots.glob("*.json"))) == 1
    set_label(session, first.roots[0].entry["id"], "from a label")
    session.refresh_from_db()
    rows_read: list[int] = []
    real_rows = loading._rows

    def counting_rows(pk: int, start: int, stop: int | None):
        for row in real_rows(pk, start, stop):
            rows_read.append(row[0])
            yield row

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loading, "_rows", counting_rows)
        restored = tree_index.Forest.load(session)
    assert rows_read == [session.next_seq - 1]  # only the label row came from the table
    assert _forest_shape(restored) == _forest_shape(tree_index.Forest.load(session))
    assert restored.roots[0].label == "from a label"


@pytest.mark.parametrize("change", ["rewrite", "other_session", "corrupt", "newer_than_session"])
def test_a_snapshot_that_does_not_fit_is_not_used(tmp_path: Path, snapshots: Path, change: str) -> None:
    path, session = _generated(tmp_path)
    tree_index.Forest.load(session)
    (snapshot,) = snapshots.glob("*.json")
    if change == "rewrite":
        # The file lost its last lines: rows were deleted, the count tells.
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(lines[:-5]))
        old = snapshot.read_bytes()
        assert sync_file(path).status == "rewritten"
        # The import wrote a new snapshot; the old one back (as if that had failed): the count must tell.
        for written in snapshots.glob("*.json"):
            written.unlink()
        snapshot.write_bytes(old)
        session.refresh_from_db()
    elif change == "other_session":
        data = orjson.loads(snapshot.read_bytes())
        data["key"] = data["key"].replace(session.session_id, "someone-else")
        snapshot.write_bytes(orjson.dumps(data))
    elif change == "corrupt":
        snapshot.write_bytes(b'{"version": 1, "key": ')
    else:
        data = orjson.loads(snapshot.read_bytes())
        data["next_seq"] = session.next_seq + 10
        snapshot.write_bytes(orjson.dumps(data))
    forest = tree_index.Forest.load(session)
    fresh = tree_index.Forest(session.pk)
    fresh._build(list(loading._rows(session.pk, 0, session.next_seq)), session.next_seq)
    assert _forest_shape(forest) == _forest_shape(fresh)


def test_small_sessions_write_no_snapshot(tmp_path: Path, settings) -> None:
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    _, session = _generated(tmp_path, 60)
    tree_index.Forest.load(session)
    assert not (tmp_path / "data" / "cache").exists()


def test_old_snapshots_are_pruned(tmp_path: Path, snapshots: Path, monkeypatch) -> None:
    monkeypatch.setattr(snapshot_files, "SNAPSHOTS_KEPT", 2)
    sessions = [_generated(tmp_path, 40, seed)[1] for seed in range(4)]
    for session in sessions:
        tree_index.Forest.load(session)
    assert len(list(snapshots.glob("*.json"))) == 2
