"""Bursts of refetches wait their turn before they take anything from everyone else.

One change to a session (a label, a move, a sync) makes every open page of it ask the rows endpoint for the
rows of its tree pane at once. Served together, 100 such requests each took a database connection from the
process's pool in the session middleware and shared the CPU, and another user's session list waited behind
all of them (p95 3 s). :class:`RefreshGate` lets them in ``ARBOR_ROWS_CONCURRENCY`` at a time, first in the
middleware chain, so that a waiting request holds no connection and takes no CPU; the rows endpoint costs a
few milliseconds a request, so the last page of a burst of 100 still has its rows within a second or two.

Being first, the gate also counts the requests in flight (:func:`requests_in_flight`): work that can wait,
such as preparing a big session's first search in a thread, pauses while people are being answered, and
the memory freed by a burst is returned to the system once the process has been idle for a moment
(``ARBOR_IDLE_TRIM_SECONDS``, :mod:`treeview.memory`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest
from django.urls import Resolver404, resolve

from treeview.memory import trim_when_idle

__all__ = ["RefreshGate", "requests_in_flight"]

#: The views whose requests come in bursts from every open page (url names).
GATED_VIEWS = frozenset({"session_rows"})


class RefreshGate:
    """Middleware (first in the chain): the gated views' requests pass ``ARBOR_ROWS_CONCURRENCY`` at a time;
    the others pass at once. Each process has its own gate (requests run on threads of their own)."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        global _in_flight
        with _IN_FLIGHT_LOCK:
            _in_flight += 1
        trim_when_idle.busy()
        try:
            if not _gated(request.path_info):
                return self.get_response(request)
            with _slots(settings.ARBOR_ROWS_CONCURRENCY):
                return self.get_response(request)
        finally:
            with _IN_FLIGHT_LOCK:
                _in_flight -= 1
                idle = _in_flight == 0
            if idle:
                trim_when_idle.idle(settings.ARBOR_IDLE_TRIM_SECONDS, lambda: _in_flight == 0)


# Requests of this process being answered (the gate is first in the chain: it sees them all).
_in_flight = 0
_IN_FLIGHT_LOCK = threading.Lock()


def requests_in_flight() -> int:
    """How many requests this process is answering now: work that can wait (``explorer.prepare_search``)
    pauses while there are any."""
    return _in_flight


_SLOTS: dict[int, threading.BoundedSemaphore] = {}
_SLOTS_LOCK = threading.Lock()


def _slots(count: int) -> threading.BoundedSemaphore:
    """The process's semaphore (one for every handler the process builds: the test client builds many)."""
    with _SLOTS_LOCK:
        if count not in _SLOTS:
            _SLOTS[count] = threading.BoundedSemaphore(count)
        return _SLOTS[count]


def _gated(path: str) -> bool:
    if not path.startswith("/s/"):
        return False
    try:
        return resolve(path).url_name in GATED_VIEWS
    except Resolver404:
        return False
