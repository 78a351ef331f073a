"""The process's caches (forests, flattened trees, rendered entries) with their byte budgets, and a lock per
session."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

from treeview.explorer.limits import (
    FLAT_CACHE_SIZE,
    FLAT_ROW_BYTES,
    FOREST_CACHE_SIZE,
    FOREST_NODE_BYTES,
    FOREST_SHARE,
    MEMO_ALLOWANCE_BYTES,
    TREE_SHARE,
    VIEW_BYTES,
    VIEW_CACHE_SIZE,
    VIEW_SHARE,
)
from treeview.lru import LruCache
from treeview.models import AgentSession
from treeview.render import EntryView
from treeview.tree_index import Forest

if TYPE_CHECKING:
    from treeview.explorer.trees import ExplorerTree


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
