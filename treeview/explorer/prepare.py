"""Work ahead of time that gives way to requests: a big tree's first search, made in a thread when its page
opens (:func:`prepare_search`), and the pause such work takes while requests are answered."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from treeview import tree_filter
from treeview.gate import requests_in_flight
from treeview.session.agents import Agent
from treeview.tree_index import Forest

if TYPE_CHECKING:
    from treeview.explorer.trees import ExplorerTree

logger = logging.getLogger(__name__)


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
