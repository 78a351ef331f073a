"""The byte-bounded LRU cache (treeview/lru.py), and the session pages' caches built on it: bounded by
ARBOR_TREE_CACHE_MB, a dropped forest takes its trees along and its memory is released."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path
from typing import Any

import pytest

from treeview import explorer
from treeview.explorer import caches
from treeview.lru import LruCache
from treeview.models import AgentSession
from treeview.services.sync import sync_file
from treeview.session.generate import write_session


def test_the_count_bounds_a_cache_without_weights() -> None:
    cache: LruCache[str, int] = LruCache(2)
    for key in "abc":
        cache.put(key, 1)
    assert [key for key, _ in cache.items()] == ["b", "c"]
    assert cache.get("b") == 1  # used: now the most recent
    cache.put("d", 1)
    assert [key for key, _ in cache.items()] == ["b", "d"]
    assert cache.bytes == 0


def test_bytes_bound_a_cache_and_the_newest_value_stays_even_alone_over_budget() -> None:
    evicted: list[str] = []
    cache: LruCache[str, bytes] = LruCache(
        100, max_bytes=10, weigh=len, on_evict=lambda key, value: evicted.append(key)
    )
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.bytes == 8 and not evicted
    cache.put("c", b"1234")
    assert [key for key, _ in cache.items()] == ["b", "c"] and evicted == ["a"]
    cache.put("huge", b"x" * 50)
    assert [key for key, _ in cache.items()] == ["huge"] and cache.bytes == 50
    assert evicted == ["a", "b", "c"]
    cache.put("d", b"1")
    assert [key for key, _ in cache.items()] == ["d"] and cache.bytes == 1


def test_storing_a_value_again_weighs_it_anew() -> None:
    grown = bytearray(b"12")
    cache: LruCache[str, bytearray] = LruCache(10, max_bytes=100, weigh=len)
    cache.put("a", grown)
    grown.extend(b"x" * 40)
    cache.put("a", grown)
    assert cache.bytes == 42 and len(cache) == 1
    cache.discard_where(lambda key, value: key == "a")
    assert cache.bytes == 0 and len(cache) == 0


def test_a_byte_bound_needs_a_weight() -> None:
    with pytest.raises(ValueError, match="weigh"):
        LruCache(1, max_bytes=10)


# -- the session pages' caches -------------------------------------------------------------------------------


@pytest.fixture
def sessions(tmp_path: Path, db: Any) -> list[AgentSession]:
    made = []
    for seed in range(1, 6):
        path = tmp_path / f"s{seed}.jsonl"
        write_session(path, 2_000, seed)
        made.append(sync_file(path).session)
    explorer.clear_caches()
    yield made
    explorer.clear_caches()


def test_the_page_caches_hold_no_more_than_their_budget_and_release_what_they_drop(
    sessions: list[AgentSession], settings: Any
) -> None:
    settings.ARBOR_TREE_CACHE_MB = 16
    forest_budget = caches._forests.max_bytes
    assert forest_budget == int(16 * 1024 * 1024 * explorer.FOREST_SHARE)
    forests = []
    for session in sessions:
        tree = explorer.explorer_tree(session, session.leaf_id)
        forests.append(weakref.ref(tree.forest))
        del tree
        assert caches._forests.bytes <= forest_budget
        assert caches._trees.bytes <= caches._trees.max_bytes
    kept = len(caches._forests)
    assert 1 <= kept < len(sessions)
    gc.collect()
    # What was dropped is gone from memory: neither the forest cache nor a tree keeps it alive.
    alive = [ref() is not None for ref in forests]
    assert alive == [False] * (len(sessions) - kept) + [True] * kept
    assert {id(tree.forest) for _, tree in caches._trees.items()} <= {id(ref()) for ref in forests if ref()}


def test_a_session_bigger_than_the_budget_still_opens_and_is_dropped_for_the_next(
    sessions: list[AgentSession], settings: Any
) -> None:
    settings.ARBOR_TREE_CACHE_MB = 16
    caches._forests.max_bytes = 1  # every forest is over this budget
    first = explorer.explorer_tree(sessions[0], sessions[0].leaf_id)
    assert explorer.explorer_tree(sessions[0], sessions[0].leaf_id) is first  # kept while it is the latest
    explorer.explorer_tree(sessions[1], sessions[1].leaf_id)
    assert [key for key, _ in caches._forests.items()] == [explorer.session_key(sessions[1])]
