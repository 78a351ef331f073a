"""The session page's data: cached flattened trees, the window of tree rows, and a page of the conversation.

Flattening a session means reading every row's columns, so it happens once per (session, state) and is kept in
a small per-process LRU cache; a request then only filters the in-memory tree, builds the rows of one window,
and loads and renders one page of the conversation path (the ``raw`` text of at most ``CONVERSATION_PAGE``
entries).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import orjson

from treeview.models import AgentSession
from treeview.render import EntryView, build_tool_call_map, render_entry
from treeview.session.selector import (
    FilterMode,
    FlatTree,
    Row,
    filter_nodes,
    filter_tag,
    initial_selection,
    make_row,
    window_bounds,
)
from treeview.session.selector_tree import flatten_tree
from treeview.tree_index import DbNode, load_forest

# Rows drawn around the selection: about 200 before and 200 after it.
TREE_WINDOW = 400
# Entries of the conversation path rendered at once.
CONVERSATION_PAGE = 100
# Flattened trees kept per process (one per session state and leaf); forests (one per session state).
FLAT_CACHE_SIZE = 8
FOREST_CACHE_SIZE = 4

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A thread-safe mapping that keeps the ``size`` most recently used values."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The cached value, else ``make()`` (called outside the lock: two threads may both build it)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True, slots=True)
class ExplorerTree:
    """A flattened tree and each node's position in it (for tree-order sibling lists)."""

    flat: FlatTree
    position: dict[Any, int]


# next_seq grows with every stored entry (labels included), so a changed session never hits a stale tree.
_forests: LruCache[tuple[int, int], list[DbNode]] = LruCache(FOREST_CACHE_SIZE)
_trees: LruCache[tuple[int, int, str | None], ExplorerTree] = LruCache(FLAT_CACHE_SIZE)


def clear_caches() -> None:
    """Forget every cached tree (tests, or after a bulk re-import)."""
    _forests.clear()
    _trees.clear()


def explorer_tree(session: AgentSession, leaf_id: str | None) -> ExplorerTree:
    """The session flattened with ``leaf_id``'s branch first (``None``: no leaf), from the cache."""
    state = (session.pk, session.next_seq)

    def make() -> ExplorerTree:
        forest = _forests.get_or_make(state, lambda: load_forest(session))
        flat = flatten_tree(forest, leaf_id)
        return ExplorerTree(flat, {node.id: i for i, node in enumerate(flat.nodes)})

    return _trees.get_or_make((*state, leaf_id), make)


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
    mode: FilterMode
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


def tree_window(
    tree: ExplorerTree, mode: FilterMode, query: str, target_id: str | None, start: int | None
) -> TreeWindow:
    """The visible rows around the selection (§17.1: the target, else its nearest visible ancestor, else the
    last row), or from ``start`` when the reader scrolls to earlier or later rows."""
    flat = tree.flat
    nodes = filter_nodes(flat, mode, query)
    # The selection rule only reads `.id` of each row, which a FlatNode has too: no Row for every node.
    index = initial_selection(flat, cast(Sequence[Row], nodes), target_id)
    if start is None:
        begin, end = window_bounds(index, len(nodes), TREE_WINDOW)
    else:
        begin = min(start, max(0, len(nodes) - 1))
        end = min(begin + TREE_WINDOW, len(nodes))
    rows = [make_row(node, flat) for node in nodes[begin:end]]
    selected = None if index is None else cast("str | None", nodes[index].id)
    return TreeWindow(rows, begin, end, len(nodes), len(flat.nodes), selected, index, mode, filter_tag(mode))


# -- the conversation pane ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sibling:
    """Where an entry stands among its parent's children, with its neighbours (for ‹ i/n ›)."""

    index: int  # 1-based
    count: int
    previous_id: str | None
    next_id: str | None


@dataclass(frozen=True, slots=True)
class ConversationEntry:
    view: EntryView
    entry_id: str
    siblings: Sibling | None


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """Entries ``[start, end)`` of the path root → selected entry."""

    entries: list[ConversationEntry]
    start: int
    end: int
    length: int

    @property
    def earlier(self) -> int:
        return self.start

    @property
    def later(self) -> int:
        return self.length - self.end

    @property
    def earlier_end(self) -> int:
        return self.start

    @property
    def later_end(self) -> int:
        return min(self.length, self.end + CONVERSATION_PAGE)


def path_ids(flat: FlatTree, entry_id: str | None) -> list[str]:
    """The ids root → ``entry_id`` through parent links (stops at a missing parent or a repeated id)."""
    ids: list[str] = []
    seen: set[Any] = set()
    current: Any = entry_id
    while current is not None and current not in seen:
        node = flat.by_id.get(current)
        if node is None:
            break
        seen.add(current)
        ids.append(cast(str, current))
        current = node.entry.get("parentId")
    ids.reverse()
    return ids


def siblings_of(tree: ExplorerTree, entry_id: str) -> Sibling | None:
    """The entry's place among its parent's children in tree order; ``None`` when it has no siblings."""
    node = tree.flat.by_id.get(entry_id)
    parent = tree.flat.by_id.get(node.entry.get("parentId")) if node is not None else None
    if parent is None or len(parent.node.children) < 2:
        return None
    ids = [child.entry.get("id") for child in parent.node.children]
    ordered = sorted((i for i in ids if i in tree.position), key=tree.position.__getitem__)
    if entry_id not in ordered:
        return None
    i = ordered.index(entry_id)
    return Sibling(
        i + 1,
        len(ordered),
        ordered[i - 1] if i > 0 else None,
        ordered[i + 1] if i + 1 < len(ordered) else None,
    )


def _load_entries(session: AgentSession, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    rows = session.entries.filter(entry_id__in=ids).exclude(type="session").order_by("seq")
    for entry_id, raw in rows.values_list("entry_id", "raw"):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = {"type": "", "id": entry_id, "value": raw}
        # A later row with the same id replaces the earlier one, as in the tree.
        entries[entry_id] = parsed if isinstance(parsed, dict) else {"type": "", "id": entry_id}
    return entries


def conversation_page(
    session: AgentSession, tree: ExplorerTree, entry_id: str | None, end: int | None
) -> ConversationPage:
    """One page of the path root → ``entry_id``, ending at ``end`` (default: the entry itself), rendered."""
    ids = path_ids(tree.flat, entry_id)
    stop = len(ids) if end is None else max(0, min(end, len(ids)))
    begin = max(0, stop - CONVERSATION_PAGE)
    page_ids = ids[begin:stop]
    loaded = _load_entries(session, page_ids)
    present = [loaded[i] for i in page_ids if i in loaded]
    tool_calls = build_tool_call_map(present)
    entries = [
        ConversationEntry(render_entry(loaded[i], tool_calls), i, siblings_of(tree, i))
        for i in page_ids
        if i in loaded
    ]
    return ConversationPage(entries, begin, stop, len(ids))
