"""Selection: where the selection lands when rows change, and ``TreeSelector``, the interactive state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from treeview.session.agents import Agent
from treeview.session.selector.drawing import footer, render_lines
from treeview.session.selector.filtering import visible_rows
from treeview.session.selector.modes import FilterMode, _check_mode, next_filter_mode
from treeview.session.selector.rows import Row
from treeview.session.selector_tree import (
    FlatTree,
    TreeNodeLike,
    flatten_tree,
)


def nearest_visible_index(flat: FlatTree, rows: Sequence[Row], entry_id: str | None) -> int | None:
    """Index of ``entry_id`` among ``rows``, else of its nearest visible ancestor, else the last row.

    ``None`` when there are no rows. The parent walk stops at a repeated id (v15 would loop).
    """
    if not rows:
        return None
    index_of = {row.id: i for i, row in enumerate(rows)}
    current: Any = entry_id
    seen: set[Any] = set()
    while current is not None and current not in seen:
        seen.add(current)
        if current in index_of:
            return index_of[current]
        node = flat.by_id.get(current)
        if node is None:
            break
        current = node.entry.get("parentId")
    return len(rows) - 1


def initial_selection(flat: FlatTree, rows: Sequence[Row], selected_id: str | None = None) -> int | None:
    """Where the cursor starts (spec §17.1): ``selected_id`` or the leaf, else its nearest visible
    ancestor, else the last row; ``None`` when nothing is visible."""
    return nearest_visible_index(flat, rows, selected_id if selected_id is not None else flat.leaf_id)


def follow_selection(flat: FlatTree, rows: Sequence[Row], previous_id: str | None) -> int | None:
    """The selection after a filter or search change: the same entry, else its nearest visible
    ancestor, else the last row. With no previous selection (the selector opened on an empty
    list) v15 keeps index 0, i.e. the first row."""
    if not rows:
        return None
    if previous_id is None:
        return 0
    return nearest_visible_index(flat, rows, previous_id)


class TreeSelector:
    """Interactive selector state with the original's rules (filter, search, selection, moves)."""

    def __init__(
        self,
        roots: Sequence[TreeNodeLike],
        leaf_id: str | None,
        mode: FilterMode = "default",
        query: str = "",
        selected_id: str | None = None,
        home: str | None = None,
        agent: Agent = "omp15",
        label_times: Mapping[str, str] | None = None,
    ) -> None:
        self.flat = flatten_tree(roots, leaf_id)
        self.home = home
        self.agent = agent
        #: Entry id -> when its label was set (``SessionManager.label_times``), for Shift+T.
        self.label_times = label_times
        self.show_label_times = False
        self.mode = _check_mode(mode)
        self.query = query
        self.rows = visible_rows(self.flat, self.mode, self.query, home, agent=agent)
        self.selected_index = initial_selection(self.flat, self.rows, selected_id)
        # Kept while a filter shows nothing, so the cursor comes back to the same entry.
        self._last_selected_id: str | None = self.selected_id

    @property
    def selected_id(self) -> str | None:
        """Id of the selected row (``None`` when nothing is visible)."""
        if self.selected_index is None:
            return None
        return cast("str | None", self.rows[self.selected_index].id)

    def _refilter(self) -> None:
        if self.selected_index is not None:
            self._last_selected_id = self.selected_id
        self.rows = visible_rows(self.flat, self.mode, self.query, self.home, agent=self.agent)
        self.selected_index = follow_selection(self.flat, self.rows, self._last_selected_id)
        if self.selected_index is not None:
            self._last_selected_id = self.selected_id

    def set_mode(self, mode: FilterMode) -> None:
        """Switch the filter mode (Alt+D/T/U/L/A)."""
        self.mode = _check_mode(mode)
        self._refilter()

    def cycle_mode(self, backwards: bool = False) -> None:
        """Ctrl+O / Shift+Ctrl+O."""
        self.set_mode(next_filter_mode(self.mode, backwards))

    def set_query(self, query: str) -> None:
        """Replace the search query."""
        self.query = query
        self._refilter()

    def move(self, delta: int) -> None:
        """Up (-1) / Down (+1), wrapping around."""
        if self.rows and self.selected_index is not None:
            self.selected_index = (self.selected_index + delta) % len(self.rows)

    def page(self, delta: int) -> None:
        """Left / Right: jump ``delta`` rows, clamped to the list."""
        if self.rows and self.selected_index is not None:
            self.selected_index = max(0, min(len(self.rows) - 1, self.selected_index + delta))

    def jump_turn(self, direction: Literal[-1, 1]) -> None:
        """oh-my-pi's Alt+Up (-1) / Alt+Down (+1): the nearest row above / below that is a user or assistant
        message (a turn); the selection stays when there is none (no wrapping)."""
        if self.selected_index is None:
            return
        index = self.selected_index + direction
        while 0 <= index < len(self.rows):
            if self.rows[index].role in ("user", "assistant"):
                self.selected_index = index
                self._last_selected_id = self.selected_id
                return
            index += direction

    def toggle_label_times(self) -> None:
        """pi's Shift+T: show / hide when each label was set (drawn by pi's rules, ``[+label time]``)."""
        self.show_label_times = not self.show_label_times

    def footer(self) -> str:
        """The v15 footer line for the current state (the newest agents' are in :meth:`render`)."""
        return footer(self.selected_index, len(self.rows), self.mode)

    def render(self, width: int | None = None, max_visible: int | None = None) -> list[str]:
        """The list body as the agent draws it (rows of the visible window, then the footer)."""
        return render_lines(
            self.rows,
            self.selected_index,
            self.mode,
            width,
            max_visible,
            agent=self.agent,
            tree=self.flat,
            query=self.query,
            label_times=self.label_times,
            show_label_times=self.show_label_times,
        )
