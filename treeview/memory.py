"""Memory a server process gives back: glibc's allocator arenas limited, and freed memory returned when idle.

A daphne worker answers requests on a pool of threads. glibc gives each thread that allocates concurrently an
arena of its own (up to eight per CPU), and memory freed in one arena is neither reused by the others nor
returned to the system while any small block in it is still alive: after a burst of concurrent requests for
big pages the process kept ~20 % more resident memory for good (bench/load_bench.py, BENCHMARKS.md), although
Python had freed it. Two arenas make the threads share what they free (the GIL serialises them anyway), and a
``malloc_trim`` once the process has been idle for a moment hands the free pages at the top of the heap and
inside it back to the system.

Both are no-ops where the C library is not glibc (macOS, musl): nothing to tune there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["available", "limit_arenas", "trim", "trim_when_idle"]

log = logging.getLogger(__name__)

#: mallopt's parameter number for the maximum count of arenas (glibc's malloc.h).
M_ARENA_MAX = -8


def _glibc() -> Any | None:
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not all(hasattr(libc, name) for name in ("mallopt", "malloc_trim", "gnu_get_libc_version")):
        return None
    return libc


_LIBC = _glibc()


def available() -> bool:
    """Whether this process runs on glibc (where both knobs exist)."""
    return _LIBC is not None


def limit_arenas(count: int) -> bool:
    """At most ``count`` allocator arenas from now on (threads started later share them); ``0`` leaves
    glibc's default. True when the limit was set."""
    if count <= 0 or _LIBC is None:
        return False
    done = bool(_LIBC.mallopt(M_ARENA_MAX, count))
    if not done:
        log.warning("mallopt(M_ARENA_MAX, %d) was refused", count)
    return done


def trim() -> bool:
    """Return the allocator's free memory to the system now; True when some was returned."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))


class _IdleTrimmer:
    """Calls :func:`trim` once the process has been idle for ``delay`` seconds after some work: one thread,
    started on first use, that sleeps until then (a request ending costs a lock and an event, no thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._worked = False  # a request ran since the last trim
        self._idle_since = 0.0
        self._delay = 0.0
        self._still_idle: Callable[[], bool] = lambda: True
        #: Trims done so far (each after an idle moment that followed some work).
        self.trims = 0

    def busy(self) -> None:
        """A request started: the next idle moment trims."""
        self._worked = True

    def idle(self, delay: float, still_idle: Callable[[], bool]) -> None:
        """The last request in flight ended: trim ``delay`` seconds from now if ``still_idle()`` then and
        no request ended in between (each one moves the moment on)."""
        if delay <= 0 or _LIBC is None or not self._worked:
            return
        with self._lock:
            self._idle_since = time.monotonic()
            self._delay = delay
            self._still_idle = still_idle
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="arbor-idle-trim", daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    wait = self._idle_since + self._delay - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                    continue
                with self._lock:
                    if not self._worked or not self._still_idle():
                        break  # busy again: the next request to end wakes this thread
                    self._worked = False
                    self.trims += 1
                trim()
                break


trim_when_idle = _IdleTrimmer()
