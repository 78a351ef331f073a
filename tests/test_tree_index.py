"""The tree selector over database rows gives exactly the core selector's answers (no line re-parsed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.reference import all_cases
from treeview.services.append import move_leaf, set_label
from treeview.services.export import load_manager
from treeview.services.sync import sync_file
from treeview.session.selector import FILTER_MODES, flatten_tree, initial_selection, visible_rows
from treeview.tree_index import flatten_session, select_rows

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
