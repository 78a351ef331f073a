"""A thread-safe least-recently-used cache, bounded by count and, optionally, by an estimate of the bytes its
values hold.

A count alone does not bound memory: one flattened 1,000,000-entry tree costs what 10,000 small ones do. A
cache given ``max_bytes`` weighs each value when it is stored (``weigh``, an estimate from the value's size,
calibrated against tracemalloc) and drops the least recently used values until the total fits. The value just
stored is always kept, even when it alone is over the budget: the request that made it is using it, and
dropping it would only make the next request of the same page do all the work again. It goes as soon as
anything else is stored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """A mapping that keeps the ``size`` most recently used values (and, with ``max_bytes``, no more than
    that many bytes of them by ``weigh``). ``on_evict(key, value)`` hears of every value dropped to make
    room (not of those replaced under the same key or cleared)."""

    def __init__(
        self,
        size: int,
        *,
        max_bytes: int | None = None,
        weigh: Callable[[V], int] | None = None,
        on_evict: Callable[[K, V], None] | None = None,
    ) -> None:
        if max_bytes is not None and weigh is None:
            raise ValueError("a cache bounded by bytes needs a weigh function")
        self.size = size
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._on_evict = on_evict
        self._items: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            self._items.move_to_end(key)
            return item[0]

    def put(self, key: K, value: V) -> None:
        """Store ``value`` (again: a value that grew in place is weighed anew)."""
        weight = self._weigh(value) if self._weigh is not None and self.max_bytes is not None else 0
        evicted: list[tuple[K, V]] = []
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[key] = (value, weight)
            self._bytes += weight
            while len(self._items) > 1 and (
                len(self._items) > self.size or (self.max_bytes is not None and self._bytes > self.max_bytes)
            ):
                dropped_key, (dropped, dropped_weight) = self._items.popitem(last=False)
                self._bytes -= dropped_weight
                evicted.append((dropped_key, dropped))
        # Outside the lock: a callback may use other caches.
        if self._on_evict is not None:
            for dropped_key, dropped in evicted:
                self._on_evict(dropped_key, dropped)

    def discard_where(self, predicate: Callable[[K, V], bool]) -> None:
        """Forget every value for which ``predicate(key, value)`` holds."""
        with self._lock:
            for key in [key for key, (value, _) in self._items.items() if predicate(key, value)]:
                self._bytes -= self._items.pop(key)[1]

    def items(self) -> list[tuple[K, V]]:
        """A snapshot, the most recently used last."""
        with self._lock:
            return [(key, value) for key, (value, _) in self._items.items()]

    @property
    def bytes(self) -> int:
        """The estimated bytes held (0 for a cache bounded by count only)."""
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._items)
