"""The tree pane: the window of rows drawn around the selection (:func:`tree_window`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from treeview.explorer.limits import TREE_SLICE_MAX, TREE_WINDOW, ViewMode
from treeview.session.agents import Agent
from treeview.session.selector import (
    FilterMode,
    Row,
    filter_tag,
    make_row,
    window_bounds,
)
from treeview.tree_filter import COMMENTED

if TYPE_CHECKING:
    from treeview.explorer.trees import ExplorerTree


# -- the tree pane -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TreeWindow:
    """The rows of the tree pane: a window ``[start, end)`` of the visible rows."""

    rows: list[Row]
    start: int
    end: int
    shown: int  # visible rows under the filter and search
    total: int  # all flattened nodes
    selected_id: str | None
    selected_index: int | None
    mode: ViewMode
    tag: str

    @property
    def earlier(self) -> int:
        return self.start

    @property
    def later(self) -> int:
        return self.shown - self.end

    @property
    def earlier_start(self) -> int:
        return max(0, self.start - TREE_WINDOW)


def view_tag(mode: ViewMode) -> str:
    """The tag after the row count: the core's (``" [labeled]"`` ...), or ``" [commented]"``."""
    return " [commented]" if mode == COMMENTED else filter_tag(cast(FilterMode, mode))


def tree_window(
    tree: ExplorerTree,
    mode: ViewMode,
    query: str,
    target_id: str | None,
    start: int | None,
    commented: frozenset[str] | None = None,
    count: int = TREE_WINDOW,
    *,
    agent: Agent,
) -> TreeWindow:
    """``count`` visible rows around the selection (§17.1: the target, else its nearest visible ancestor, else
    the last row), or from ``start`` when the reader scrolls to earlier or later rows, filtered and searched
    by ``agent``'s rules (the session's). ``commented``: the ids of the commented entries (the "commented"
    mode)."""
    flat = tree.flat
    visible = tree.visible(mode, query, commented, agent=agent)
    nodes = visible.nodes
    index = visible.select(tree, target_id)
    count = max(1, min(count, TREE_SLICE_MAX))
    if start is None:
        begin, end = window_bounds(index, len(nodes), count)
    else:
        begin = min(start, max(0, len(nodes) - 1))
        end = min(begin + count, len(nodes))
    rows = [make_row(node, flat) for node in nodes[begin:end]]
    if agent != "omp15" and tree.forest is not None and rows:
        # The stored row text is v15's wording: each row as the session's agent words it (read once per row).
        texts = tree.forest.row_texts(agent, [row.id for row in rows])
        rows = [replace(row, content=texts.get(row.id, row.content)) for row in rows]
    selected = None if index is None else cast("str | None", nodes[index].id)
    return TreeWindow(rows, begin, end, len(nodes), len(flat.nodes), selected, index, mode, view_tag(mode))
