"""The session page's data: cached flattened trees, the window of tree rows, and a page of the conversation.

A session's forest is read once per process and then kept current from the rows appended since
(``tree_index.Forest``); a flattened tree is made once per (session, state, leaf) and kept in a small LRU
cache. When a session grows by a chain below its leaf (a label, an appended entry, a sync of the agent's new
lines) the new flattened tree is the old one with the chain spliced in below the old leaf, not flattened
again. A request then only filters the in-memory tree (cached per filter and search), builds the rows of one
window, and loads and renders one page of the conversation path (the ``raw`` text of at most
``CONVERSATION_PAGE`` entries).

The server's threads share all of it: the caches have their own locks, a forest changes only under its
session's lock, and a flattened tree never changes once made (what it derives is computed on first use).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import weakref
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeVar, cast

import orjson
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from treeview import tree_filter
from treeview.gate import requests_in_flight
from treeview.lru import LruCache
from treeview.models import AgentSession
from treeview.render import EntryView, render_entry
from treeview.render.text import as_text
from treeview.session.agents import Agent
from treeview.session.selector import (
    FILTER_MODES,
    FilterMode,
    FlatNode,
    FlatTree,
    Row,
    filter_tag,
    make_row,
    window_bounds,
)
from treeview.session.selector_tree import flat_only_child, flatten_tree
from treeview.tree_filter import COMMENTED, filter_positions
from treeview.tree_index import TOOL_RESULT, DbNode, Forest, gc_paused

logger = logging.getLogger(__name__)

# Rows drawn around the selection: about 60 before and 60 after it, more than a tall pane shows (explorer.js
# loads the others as the pane scrolls; without JavaScript, "load earlier/later" pages by this many).
TREE_WINDOW = 120
# Most rows one request of the rows endpoint returns (the page scrolls through the tree in slices).
TREE_SLICE_MAX = 400
# Tree levels drawn before a row's text; deeper rows fold the levels above them into a depth badge ("⋯12"),
# so that every row's text starts inside the pane, at any depth (a prefix is 3 characters a level).
TREE_LEVELS = 4
# Entries of the conversation path rendered at once ("earlier entries" loads more): a rendered entry is
# about 60 elements, and the page stays under a few thousand whatever the session's size.
CONVERSATION_PAGE = 40
# Flattened trees kept per process (one per session state and leaf); forests (one per session). Both are
# also bounded by bytes: a share of settings.ARBOR_TREE_CACHE_MB each (see _budget).
FLAT_CACHE_SIZE = 8
FOREST_CACHE_SIZE = 4
# Estimated bytes a cached value holds, measured with tracemalloc on the generated 100,000-entry session:
# a forest node 1,420 bytes (row and search text included), a flattened tree's row 150 bytes, plus its
# filter and search results (a list slot and a position per visible row, a few modes at a time).
FOREST_NODE_BYTES = 1_500
FLAT_ROW_BYTES = 250
# A tree's memo holds what views derive from it (the Context tab at a few entries).
MEMO_ALLOWANCE_BYTES = 2 * 1024 * 1024
VIEW_BYTES = 2_000  # a rendered entry's own objects, on top of its HTML
# The budget's shares: forests, flattened trees, rendered entries.
FOREST_SHARE, TREE_SHARE, VIEW_SHARE = 0.6, 0.3, 0.1
# Filter and search results kept per flattened tree (search as you type asks for several).
VISIBLE_CACHE_SIZE = 8
# Values a view keeps with a tree (ExplorerTree.memo).
MEMO_CACHE_SIZE = 8
# Rendered conversation entries kept per process (a few pages: the neighbours of a selection share most).
VIEW_CACHE_SIZE = 600

# The page's filter modes: the agent's five, then Arbor's "commented" (entries with comments; the session core
# knows nothing of comments, so the mode lives here and in the page's form).
ViewMode = FilterMode | Literal["commented"]
VIEW_MODES: tuple[ViewMode, ...] = (*FILTER_MODES, COMMENTED)

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


# A session is its pk and when it was imported (SQLite may give a deleted session's pk to the next one).
SessionKey = tuple[int, Any]


# A forest per session, kept current as the session grows; a flattened tree per (session, next_seq,
# entry_count, leaf): next_seq grows with every stored entry (labels included) and a rewrite that only drops
# rows lowers entry_count, so a changed session never hits a stale tree.
def _budget(share: float) -> int:
    return int(settings.ARBOR_TREE_CACHE_MB * 1024 * 1024 * share)


def _forest_bytes(forest: Forest) -> int:
    # oh-my-pi's search keeps a normalized haystack per node and the flattened trees' joined (fuzzy_bytes).
    return len(forest.nodes) * FOREST_NODE_BYTES + forest.fuzzy_bytes()


def _tree_bytes(tree: ExplorerTree) -> int:
    return len(tree.flat.nodes) * FLAT_ROW_BYTES + MEMO_ALLOWANCE_BYTES


def _text_bytes(value: Any, depth: int = 3) -> int:
    """The characters of the strings in ``value`` (a rendered entry: its fields, blocks and their HTML,
    images' data URLs), a few levels deep."""
    if isinstance(value, str):
        return len(value)
    if depth == 0:
        return 0
    if isinstance(value, list | tuple):
        return sum(_text_bytes(item, depth - 1) for item in value)
    slots = getattr(type(value), "__slots__", ())
    return sum(_text_bytes(getattr(value, name, None), depth - 1) for name in slots)


def _view_bytes(view: EntryView) -> int:
    return VIEW_BYTES + _text_bytes(view)


def _forest_evicted(key: SessionKey, forest: Forest) -> None:
    # A tree keeps its forest alive: the forest's memory comes back only when its trees go too.
    _trees.discard_where(lambda _, tree: tree.forest is forest)


_forests: LruCache[SessionKey, Forest] = LruCache(
    FOREST_CACHE_SIZE, max_bytes=_budget(FOREST_SHARE), weigh=_forest_bytes, on_evict=_forest_evicted
)
_trees: LruCache[tuple[SessionKey, int, int, str | None], ExplorerTree] = LruCache(
    FLAT_CACHE_SIZE, max_bytes=_budget(TREE_SHARE), weigh=_tree_bytes
)
# Rendered entries per (session, row seq, the call a tool result answers): rows never change.
_views: LruCache[tuple[SessionKey, int, bytes | None], EntryView] = LruCache(
    VIEW_CACHE_SIZE, max_bytes=_budget(VIEW_SHARE), weigh=_view_bytes
)


@receiver(setting_changed)
def _resize_caches(setting: str, **kwargs: Any) -> None:
    """ARBOR_TREE_CACHE_MB changed (tests): the budgets follow from the next value stored."""
    if setting == "ARBOR_TREE_CACHE_MB":
        _forests.max_bytes = _budget(FOREST_SHARE)
        _trees.max_bytes = _budget(TREE_SHARE)
        _views.max_bytes = _budget(VIEW_SHARE)


_locks: dict[int, threading.Lock] = {}
_locks_lock = threading.Lock()


def clear_caches() -> None:
    """Forget every cached forest, tree and rendered entry (tests; a benchmark's server restart)."""
    _forests.clear()
    _trees.clear()
    _views.clear()


def session_key(session: AgentSession) -> SessionKey:
    """What tells one stored session from any other, for the caches."""
    return (session.pk, session.imported_at)


def cached_forest(session: AgentSession) -> Forest | None:
    """The session's forest if a page has read it (maybe as of fewer rows), else ``None``: nothing is read."""
    return _forests.get(session_key(session))


def _session_lock(session_pk: int) -> threading.Lock:
    with _locks_lock:
        lock = _locks.get(session_pk)
        if lock is None:
            lock = _locks[session_pk] = threading.Lock()
        return lock


def explorer_tree(session: AgentSession, leaf_id: str | None) -> ExplorerTree:
    """The session flattened with ``leaf_id``'s branch first (``None``: no leaf), from the cache."""
    identity = session_key(session)
    key = (identity, session.next_seq, session.entry_count, leaf_id)
    tree = _trees.get(key)
    if tree is not None:
        return tree
    # One thread per session reads and flattens; the others wait for its result rather than repeat the work.
    with _session_lock(session.pk):
        tree = _trees.get(key)
        if tree is not None:
            return tree
        forest = _forests.get(identity)
        if forest is None:
            forest = Forest.load(session)
        else:
            forest.refresh(session)
        _forests.put(identity, forest)  # weighed again: it may have grown
        tree = (
            _extended_tree(forest, leaf_id) or _kept_tree(forest, leaf_id) or _flattened_tree(forest, leaf_id)
        )
        _trees.put(key, tree)
        return tree


def keep_snapshot(session: AgentSession, tree: ExplorerTree) -> bool:
    """Write the session's snapshot as its forest and this tree (``Forest.snapshot_parts``) when the one on
    disk holds only rows (as an import or a table read leaves it), so that the next server start reads them
    instead of making them again: taken under the session's lock while the tree is of the forest as it is,
    written after. Returns whether it wrote. Called by the prewarm thread, not by a request."""
    forest = tree.forest
    if forest is None or forest.snapshot_key is None or forest.snapshot_full:
        return False
    with _session_lock(session.pk):
        if tree.generation != forest.generation or tree.seq != forest.next_seq:
            return False  # the forest changed since the tree was made
        simple = tree.simple and tree.leaf_index is not None
        parts = forest.snapshot_parts(tree.flat if simple else None, tree.leaf_index if simple else None)
    forest.save_snapshot_parts(parts)
    return True


#: Trees with at least this many nodes have their first search prepared in a thread when their page opens.
PREPARE_MIN_NODES = 20_000
#: Seconds that thread waits first, so that the page's own requests go before it.
PREPARE_DELAY = 0.3
#: Between its steps it waits while this process answers requests (none of them waiting for it), up to
#: this many seconds in all.
PREPARE_YIELD_MAX = 10.0
_prepared: weakref.WeakSet[ExplorerTree] = weakref.WeakSet()
_prepared_lock = threading.Lock()


def prepare_search(tree: ExplorerTree, agent: Agent, *, wait: bool = False) -> threading.Thread | None:
    """Make, once per tree (a big one), what the first search by ``agent``'s rules reads (oh-my-pi's
    normalized haystacks: seconds for 100,000 nodes), in a daemon thread that starts after a short delay
    (``wait``: here and now, as the prewarm thread does); a search typed meanwhile waits for that work rather
    than doing it again (``tree_filter._omp_texts``). Returns the thread started, if any."""
    forest = tree.forest
    if forest is None or agent == "omp15" or len(tree.flat.nodes) < PREPARE_MIN_NODES:
        return None
    with _prepared_lock:
        if tree in _prepared:
            return None
        _prepared.add(tree)
    if wait:
        tree_filter.prepare_search(tree.flat.nodes, forest, agent, _pauser(forest))
        return None
    thread = threading.Thread(
        target=_prepare_later, args=(tree, forest, agent), name="prepare-search", daemon=True
    )
    thread.start()
    return thread


def _pauser(forest: Forest) -> Callable[[], None]:
    """A pause for :func:`tree_filter.prepare_search`: while requests are being answered and no search waits
    for its work, wait (``PREPARE_YIELD_MAX`` seconds at most over all the pauses): it is work ahead of time,
    not to be done at a request's expense."""
    deadline = time.monotonic() + PREPARE_YIELD_MAX

    def pause() -> None:
        while requests_in_flight() and not forest.fuzzy_waiters and time.monotonic() < deadline:
            time.sleep(0.01)

    return pause


def pause_for_requests(forest: Forest) -> None:
    """Wait while this process answers requests (``PREPARE_YIELD_MAX`` seconds at most): for work ahead of
    time, such as keeping a snapshot."""
    _pauser(forest)()


def _prepare_later(tree: ExplorerTree, forest: Forest, agent: Agent) -> None:
    from django.db import connections

    try:
        time.sleep(PREPARE_DELAY)
        tree_filter.prepare_search(tree.flat.nodes, forest, agent, _pauser(forest))
    except Exception:  # only a head start is lost
        logger.warning("could not prepare the search of a session", exc_info=True)
    finally:
        connections.close_all()  # this thread's


def _kept_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree | None:
    """The tree the forest's snapshot kept flattened for ``leaf_id``, when it fits the forest as it is now
    (``Forest.take_flat``): a start after an import does not flatten again."""
    kept = forest.take_flat(leaf_id)
    if kept is None:
        return None
    flat, leaf_index = kept
    return ExplorerTree(
        flat,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=not forest.cycles,
        leaf_index=leaf_index,
    )


def _flattened_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree:
    # The leaf's path from the parent links: spares flatten_tree a walk over the whole forest to find it.
    path = forest.leaf_path(leaf_id)
    # The leaf's branch comes first at every level: its path is the first nodes, the leaf last of them.
    leaf_index = None if path is None else len(path) - 1
    with gc_paused():
        flat = flatten_tree(forest.roots, leaf_id, path)
    return ExplorerTree(
        flat,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=not forest.cycles,
        leaf_index=leaf_index,
    )


def _extended_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree | None:
    """The tree for ``leaf_id`` made from a cached tree of the same forest when all that was appended since is
    one chain below that tree's leaf, ending at ``leaf_id`` (a label, appended entries, the agent's next
    turns): the chain goes right below the old leaf, every other node keeps its place and drawing."""
    if forest.cycles or leaf_id is None:
        return None
    for _, base in reversed(_trees.items()):
        if base.forest is not forest or base.generation != forest.generation or base.leaf_index is None:
            continue
        chain = forest.appended_since(base.seq)
        if not chain or chain[-1].entry["id"] != leaf_id or chain[-1].children:
            continue
        links = [cast(DbNode, base.flat.nodes[base.leaf_index].node), *chain]
        # Each node has exactly the next as its only child (so the old leaf had none): nothing else moved.
        if all(len(a.children) == 1 and a.children[0] is b for a, b in zip(links, chain, strict=False)):
            return _spliced(forest, base, chain)
    return None


def _spliced(forest: Forest, base: ExplorerTree, chain: list[DbNode]) -> ExplorerTree:
    """``base`` with ``chain`` drawn below its leaf, as ``flatten_tree`` draws it (tests compare the two)."""
    flat = base.flat
    assert base.leaf_index is not None
    at = base.leaf_index + 1
    parent = flat.nodes[base.leaf_index]
    added: list[FlatNode] = []
    for node in chain:
        parent = flat_only_child(parent, node, flat.multiple_roots)
        added.append(parent)
    by_id = dict(flat.by_id)
    active_ids = set(flat.active_ids)
    for flat_node in added:
        entry_id = flat_node.node.entry["id"]
        by_id[entry_id] = flat_node
        active_ids.add(entry_id)
    nodes = flat.nodes[:at] + added + flat.nodes[at:]
    # Database nodes carry no message content, so there is no tool call to register: tool_calls stays.
    grown = FlatTree(nodes, chain[-1].entry["id"], flat.multiple_roots, flat.tool_calls, active_ids, by_id)
    # What the old tree derived along the leaf's path grows by the chain too.
    ids = [node.entry["id"] for node in chain]
    active_path = base._active_path + ids if base._active_path is not None else None
    active_index = None
    if base._active_index is not None:
        active_index = dict(base._active_index)
        active_index.update(zip(ids, range(at, at + len(ids)), strict=True))
    return ExplorerTree(
        grown,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=True,
        leaf_index=base.leaf_index + len(chain),
        totals=base._totals.plus(chain) if base._totals is not None else None,
        active_path=active_path,
        active_index=active_index,
    )


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


def siblings_of(tree: ExplorerTree, entry_id: str) -> Sibling | None:
    """The entry's place among its parent's children in tree order; ``None`` when it has no siblings."""
    node = tree.flat.by_id.get(entry_id)
    parent = tree.flat.by_id.get(node.entry.get("parentId")) if node is not None else None
    if parent is None or len(parent.node.children) < 2:
        return None
    ordered = tree.sibling_order(parent)
    if entry_id not in ordered:
        return None
    i = ordered.index(entry_id)
    return Sibling(
        i + 1,
        len(ordered),
        ordered[i - 1] if i > 0 else None,
        ordered[i + 1] if i + 1 < len(ordered) else None,
    )


def _load_entries(session: AgentSession, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, Any]]]:
    """id → (seq, parsed entry) of these ids (the last row of an id, as in the tree)."""
    entries: dict[str, tuple[int, dict[str, Any]]] = {}
    # No ORDER BY: with it SQLite walks the whole session in seq order instead of looking the ids up in the
    # (session, entry_id) index (60 ms for 100 ids of a 100,000-entry session). Sorted here instead.
    rows = session.entries.filter(entry_id__in=ids).exclude(type="session")
    for seq, entry_id, raw in sorted(rows.values_list("seq", "entry_id", "raw")):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = {"type": "", "id": entry_id, "value": raw}
        # A later row with the same id replaces the earlier one, as in the tree.
        entries[entry_id] = (seq, parsed if isinstance(parsed, dict) else {"type": "", "id": entry_id})
    return entries


def _call_fingerprint(entry: Mapping[str, Any], tool_calls: Mapping[str, Any]) -> bytes | None:
    """What a tool result's rendering takes from the rest of the page: the call it answers (as the renderer
    looks it up), as a short digest; ``None`` for every other entry."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "toolResult":
        return None
    call_id = as_text(message.get("toolCallId"))
    call = tool_calls.get(call_id) if call_id else None
    if call is None:
        return b""
    return hashlib.blake2b(orjson.dumps(call, option=orjson.OPT_NON_STR_KEYS), digest_size=16).digest()


def _rendered(key: SessionKey, seq: int, entry: dict[str, Any], tool_calls: dict[str, Any]) -> EntryView:
    """The entry's view, from the cache when the same row was rendered with the same call before."""
    cache_key = (key, seq, _call_fingerprint(entry, tool_calls))
    view = _views.get(cache_key)
    if view is None:
        view = render_entry(entry, tool_calls)
        _views.put(cache_key, view)
    return view
