"""Pausing the cyclic garbage collector while a forest or a flattened tree is built (:func:`gc_paused`)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_gc_lock = threading.Lock()
_gc_pauses = 0


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a forest or a flattened tree is built.

    Both are hundreds of thousands of small acyclic objects that live on in a cache; the collector would scan
    them again and again while they are made (more than half of the load time), and then in every collection
    after (a full one takes 0.15–0.45 s with a 100,000-entry forest cached, and parsing a few thousand entries
    triggers one). So ``freeze`` moves every tracked object out of the collector's sight for good: the cached
    trees are acyclic and reference counting still frees them when the cache drops them; the price is that
    a reference cycle that is alive at that moment and dies later is never collected (one request's worth at
    most, per tree built). Counted, so that builds in concurrent threads nest.
    """
    global _gc_pauses
    with _gc_lock:
        if _gc_pauses == 0 and not gc.isenabled():
            # Someone else turned it off: leave it as it is.
            yield
            return
        _gc_pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.freeze()
                gc.enable()
