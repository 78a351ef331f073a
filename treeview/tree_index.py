"""A session's tree built from the database columns, for the tree selector (§17) of the web pages.

No line is parsed again: each node carries the row text, search text and "has text" fact computed once at
import (``Entry.text``, ``search_text``, ``has_text``), so the core's own flattening, filtering, search and
selection rules run unchanged on it (``treeview.session.selector``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from treeview.models import AgentSession
from treeview.session.selector import FilterMode, FlatTree, Row, RowFacts, flatten_tree, visible_rows
from treeview.session.tree import build_forest

__all__ = ["DbNode", "flatten_session", "load_forest", "select_rows"]

_COLUMNS = (
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "stop_reason",
    "text",
    "search_text",
    "has_text",
)


@dataclass(slots=True)
class DbNode:
    """A tree node made from an ``Entry`` row (the shape ``SessionManager.get_tree`` returns, plus facts)."""

    entry: dict[str, Any]
    facts: RowFacts
    label: str | None = None
    children: list[DbNode] = field(default_factory=list)


def load_forest(session: AgentSession) -> list[DbNode]:
    """The session as a forest (§10.6), from its rows in file order."""
    labels = session.resolved_labels()
    nodes: dict[str, DbNode] = {}
    rows = session.entries.exclude(type="session").exclude(entry_id="").order_by("seq").values_list(*_COLUMNS)
    for entry_id, parent_id, kind, role, timestamp, stop_reason, text, search_text, has_text in rows.iterator(
        chunk_size=5000
    ):
        entry: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
        if kind == "message":
            entry["message"] = {"role": role or None, "stopReason": stop_reason}
        # A later row with the same id replaces the earlier one and keeps its place, like the agent's map.
        nodes[entry_id] = DbNode(entry, RowFacts(text, search_text, has_text), labels.get(entry_id))
    roots, _ = build_forest(nodes)
    return roots


def flatten_session(session: AgentSession, leaf_id: str | None = None) -> FlatTree:
    """The flattened tree with the active branch first (``leaf_id`` defaults to the session's leaf)."""
    return flatten_tree(load_forest(session), session.leaf_id if leaf_id is None else leaf_id)


def select_rows(session: AgentSession, mode: FilterMode = "default", query: str = "") -> list[Row]:
    """The rows of the tree selector for a filter mode and search query, in display order."""
    return visible_rows(flatten_session(session), mode, query)
