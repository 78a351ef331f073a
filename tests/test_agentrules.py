"""The web explorer reads a session by its agent's rules (oh-my-pi 18 or pi 1.6), as the core does for the
file: the tree's filters, search and row texts, and the rules a user picks for a session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.reference import DATA
from treeview import explorer
from treeview.services.sync import sync_file
from treeview.session.selector import FILTER_MODES, flatten_tree, make_row, visible_rows
from treeview.session.session_manager import SessionManager

pytestmark = pytest.mark.django_db

LATEST = DATA / "latest"
# Words of the fixtures' texts, bookkeeping rows' terms (omp finds them, v15 does not), camel-case and
# fuzzy forms (omp's matcher), and a token that matches nothing.
QUERIES = [
    "",
    "user",
    "read",
    "reset boundary",
    "credential",
    "title",
    "model",
    "thinking",
    "context edit",
    "service tier",
    "mode",
    "skill",
    "ttsr",
    "compaction",
    "summary",
    "rdfl",
    "zzz-nothing",
]


def _import(name: str, tmp_path: Path):
    path = tmp_path / name
    shutil.copyfile(LATEST / name, path)
    return path, sync_file(path).session


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("omp18w_features_200.jsonl", "omp"),
        ("omp18w_features_200-branched.jsonl", "omp"),
        ("omp18w_small_50.jsonl", "omp"),
        ("pi16w_features_200.jsonl", "pi"),
        ("pi16w_features_200-branched.jsonl", "pi"),
        ("pi16w_small_50.jsonl", "pi"),
    ],
)
def test_the_web_tree_shows_the_rows_the_core_shows_by_the_sessions_agent(
    name: str, agent: str, tmp_path: Path
) -> None:
    path, session = _import(name, tmp_path)
    assert session.rules.agent == agent
    manager = SessionManager.open(path, agent=agent)
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert [n.id for n in tree.flat.nodes] == [n.id for n in core_flat.nodes]
    differs = False
    for mode in FILTER_MODES:
        for query in QUERIES:
            core = visible_rows(core_flat, mode, query, agent=agent)  # type: ignore[arg-type]
            ours = [make_row(n, tree.flat) for n in tree.visible(mode, query, agent=agent).nodes]
            assert [(r.id, r.text) for r in ours] == [(r.id, r.text) for r in core], (mode, query)
            v15 = [n.id for n in tree.visible(mode, query, agent="omp15").nodes]
            differs = differs or v15 != [r.id for r in ours]
            window = explorer.tree_window(tree, mode, query, None, None, agent=agent)
            assert window.shown == len(core)
    # The fixtures hold what the rules read differently: reading them by v15's rules would not do.
    assert differs
