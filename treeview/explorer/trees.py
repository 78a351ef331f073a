"""A flattened tree and what requests derive from it (:class:`ExplorerTree`): filters and searches, paths,
the leaf's branch and its totals."""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from treeview import tree_filter
from treeview.explorer.limits import MEMO_CACHE_SIZE, VISIBLE_CACHE_SIZE, ViewMode
from treeview.explorer.prepare import _pauser
from treeview.lru import LruCache
from treeview.session.agents import Agent
from treeview.session.selector import (
    FlatNode,
    FlatTree,
)
from treeview.tree_filter import COMMENTED, filter_positions
from treeview.tree_index import TOOL_RESULT, DbNode, Forest

V = TypeVar("V")


# -- flattened trees ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BranchTotals:
    """What the path root → leaf holds: entries, messages, tool results (counted as tool calls, like the
    session's own total), and the tokens and cost its assistant messages report. Cache reads and writes are
    not stored per entry, so there are no totals of them."""

    entries: int = 0
    messages: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0

    def plus(self, nodes: Sequence[DbNode]) -> BranchTotals:
        """These totals with ``nodes`` added, one after the other (so that totals grown by a chain are the
        same floats as totals summed over the whole path)."""
        messages, tools, inputs, outputs, cost = (
            self.messages,
            self.tool_calls,
            self.input_tokens,
            self.output_tokens,
            self.cost,
        )
        for node in nodes:
            if node.entry["type"] == "message":
                messages += 1
                if node.flags & TOOL_RESULT:
                    tools += 1
                inputs += node.input_tokens
                outputs += node.output_tokens
                cost += node.cost
        return BranchTotals(self.entries + len(nodes), messages, tools, inputs, outputs, cost)


class _IndexedFlat(FlatTree):
    """A flattened tree that knows its :class:`ExplorerTree`, so that :func:`path_ids`, given only the flat
    tree (as ``context_tab`` and ``services.navigate`` call it), uses the tree's indexes."""

    __slots__ = ("explorer",)
    explorer: weakref.ref[ExplorerTree]


class ExplorerTree:
    """A flattened tree and what requests derive from it, each computed once, on first use.

    ``simple``: the forest had no parent cycle, so the path to a node is its chain of forest parents, and the
    leaf's path is the first ``leaf_index + 1`` flat nodes (``flatten_tree`` puts the leaf's branch first at
    every level). ``forest``, ``seq`` and ``generation`` say which state of which forest it was made from.
    """

    __slots__ = (
        "__weakref__",
        "_active_index",
        "_active_path",
        "_memo",
        "_position",
        "_totals",
        "_visible",
        "flat",
        "forest",
        "generation",
        "leaf_index",
        "seq",
        "simple",
    )

    def __init__(
        self,
        flat: FlatTree,
        *,
        forest: Forest | None = None,
        seq: int = 0,
        generation: int = 0,
        simple: bool = False,
        leaf_index: int | None = None,
        totals: BranchTotals | None = None,
        active_path: list[str] | None = None,
        active_index: dict[str, int] | None = None,
    ) -> None:
        indexed = _IndexedFlat(
            flat.nodes, flat.leaf_id, flat.multiple_roots, flat.tool_calls, flat.active_ids, flat.by_id
        )
        indexed.explorer = weakref.ref(self)
        self.flat: FlatTree = indexed
        self.forest = forest
        self.seq = seq
        self.generation = generation
        self.simple = simple
        self.leaf_index = leaf_index
        self._totals = totals
        self._active_path = active_path
        self._active_index = active_index
        self._position: dict[Any, int] | None = None
        self._visible: LruCache[Hashable, Visible] = LruCache(VISIBLE_CACHE_SIZE)
        self._memo: LruCache[Hashable, Any] = LruCache(MEMO_CACHE_SIZE)

    def memo(self, key: Hashable, make: Callable[[], V]) -> V:
        """``make()``, kept with this tree under ``key`` (a few of them): for what a view derives from one
        state of the session, such as the Context tab at an entry. The tree never changes, so neither does
        anything made only from it and the session's rows."""
        found = self._memo.get(key)
        if found is None:
            found = make()
            self._memo.put(key, found)
        return cast(V, found)

    @property
    def position(self) -> dict[Any, int]:
        """Entry id → index in the flattened tree (a later duplicate id wins)."""
        position = self._position
        if position is None:
            position = self._position = {
                node.node.entry.get("id"): i for i, node in enumerate(self.flat.nodes)
            }
        return position

    def position_of(self, entry_id: Any) -> int | None:
        """The index of ``entry_id`` in the flattened tree; for the ids of the leaf's path (its first nodes)
        without mapping every node."""
        if self.simple and self.leaf_index is not None:
            index = self.active_index().get(entry_id)
            if index is not None:
                return index
        return self.position.get(entry_id)

    def visible(
        self,
        mode: ViewMode,
        query: str,
        commented: frozenset[str] | None = None,
        *,
        agent: Agent,
    ) -> Visible:
        """The nodes shown under a filter mode and search by ``agent``'s rules, in tree order
        (``selector.filter_nodes``); ``commented``: the ids of the commented entries, for the "commented" mode
        (comments are no entries, so they are part of the key)."""
        key = (agent, mode, query, commented if mode == COMMENTED else None)
        found = self._visible.get(key)
        if found is None:
            found = _filter(self, mode, query, commented, agent)
            self._visible.put(key, found)
        return found

    def path_ids(self, entry_id: str | None) -> list[str]:
        """The ids root → ``entry_id`` (as :func:`path_ids`), from the leaf's path where they share it."""
        flat = self.flat
        if not self.simple or self.leaf_index is None or entry_id is None:
            return _walk_path(flat, entry_id)
        by_id = flat.by_id
        active = self.active_index()
        below: list[str] = []
        current: Any = entry_id
        # No cycle: going up reaches the leaf's path or a root.
        while current is not None and current not in active:
            node = by_id.get(current)
            if node is None:
                break
            below.append(current)
            parent = node.node.entry.get("parentId")
            current = None if parent == current else parent  # a self-parented root
        below.reverse()
        if current is not None and current in active:
            return self.active_path()[: active[current] + 1] + below
        return below

    def active_path(self) -> list[str]:
        """The ids root → leaf of a ``simple`` tree."""
        path = self._active_path
        if path is None:
            count = 0 if self.leaf_index is None else self.leaf_index + 1
            path = self._active_path = [node.node.entry["id"] for node in self.flat.nodes[:count]]
        return path

    def active_index(self) -> dict[str, int]:
        """Id → index on the path root → leaf of a ``simple`` tree (which is also its flat index)."""
        index = self._active_index
        if index is None:
            index = self._active_index = {entry_id: i for i, entry_id in enumerate(self.active_path())}
        return index

    def branch_totals(self) -> BranchTotals:
        """Totals over the path root → leaf."""
        totals = self._totals
        if totals is None:
            by_id = self.flat.by_id
            if self.simple:
                count = 0 if self.leaf_index is None else self.leaf_index + 1
                path = [cast(DbNode, node.node) for node in self.flat.nodes[:count]]
            else:
                path = [cast(DbNode, by_id[i].node) for i in _walk_path(self.flat, self.flat.leaf_id)]
            totals = self._totals = BranchTotals().plus(path)
        return totals

    def sibling_order(self, parent: FlatNode) -> list[Any]:
        """The ids of ``parent``'s children in tree order."""
        children = parent.node.children
        if self.simple and self.leaf_index is not None:
            # flatten_tree's order: the child on the leaf's path first, the others as they are (by time).
            active = self.active_index()
            ids = [child.entry.get("id") for child in children]
            first = [i for i in ids if i in active]
            return first + [i for i in ids if i not in active] if first else ids
        position = self.position
        return sorted(
            (i for i in (child.entry.get("id") for child in children) if i in position),
            key=position.__getitem__,
        )


class Visible:
    """The visible nodes under one filter and search, and their indexes in the flattened tree (ascending)."""

    __slots__ = ("nodes", "positions")

    def __init__(self, nodes: list[FlatNode], positions: list[int]) -> None:
        self.nodes = nodes
        self.positions = positions

    def select(self, tree: ExplorerTree, selected_id: str | None) -> int | None:
        """``selector.initial_selection``: the entry (default: the leaf), else its nearest visible ancestor,
        else the last row; ``None`` when nothing is visible."""
        if not self.nodes:
            return None
        flat = tree.flat
        positions = self.positions
        on_path = tree.active_index() if tree.simple and tree.leaf_index is not None else {}
        current: Any = selected_id if selected_id is not None else flat.leaf_id
        seen: set[Any] = set()
        while current is not None and current not in seen:
            seen.add(current)
            position = on_path.get(current)
            if position is not None:
                # On the leaf's path, whose nodes come first in the tree: the nearest visible ancestor is the
                # last visible node up to this one (none: the walk would end at the root, so the last row).
                index = bisect_right(positions, position) - 1
                return index if index >= 0 else len(self.nodes) - 1
            position = tree.position_of(current)
            if position is not None:
                index = bisect_left(positions, position)
                if index < len(positions) and positions[index] == position:
                    return index
            node = flat.by_id.get(current)
            if node is None:
                break
            current = node.node.entry.get("parentId")
        return len(self.nodes) - 1


def _filter(
    tree: ExplorerTree,
    mode: ViewMode,
    query: str,
    commented: frozenset[str] | None = None,
    agent: Agent = "omp15",
) -> Visible:
    """``selector.filter_nodes`` by ``agent``'s rules over the tree's database nodes (``tree_filter``); a
    search looks only at the rows the mode shows, kept with the tree as the mode's answer without a search."""
    nodes: list[Any] = tree.flat.nodes
    shown = tree.visible(mode, "", commented, agent=agent).positions if query.strip() else None
    positions = filter_positions(
        nodes,
        tree.leaf_index,
        tree.forest,
        mode,
        query,
        commented,
        agent,
        shown=shown,
        index_later=_index_later(tree.forest) if tree.forest is not None else None,
    )
    return Visible([nodes[i] for i in positions], positions)


def _index_later(forest: Forest) -> Callable[[list[str], Any], None]:
    """Make a big tree's word index for its next searches in a daemon thread that gives way to requests
    (:func:`_pauser`), as the first search's preparation does."""

    def start(folded: list[str], joined: Any) -> None:
        threading.Thread(
            target=tree_filter.index_words,
            args=(folded, joined, _pauser(forest)),
            name="search-words",
            daemon=True,
        ).start()

    return start


def path_ids(flat: FlatTree, entry_id: str | None) -> list[str]:
    """The ids root → ``entry_id`` through parent links (stops at a missing parent or a repeated id)."""
    explorer = getattr(flat, "explorer", None)
    tree = explorer() if explorer is not None else None
    if tree is not None:
        return cast(ExplorerTree, tree).path_ids(entry_id)
    return _walk_path(flat, entry_id)


def _walk_path(flat: FlatTree, entry_id: str | None) -> list[str]:
    ids: list[str] = []
    seen: set[Any] = set()
    current: Any = entry_id
    by_id = flat.by_id
    while current is not None and current not in seen:
        node = by_id.get(current)
        if node is None:
            break
        seen.add(current)
        ids.append(cast(str, current))
        current = node.node.entry.get("parentId")
    ids.reverse()
    return ids
