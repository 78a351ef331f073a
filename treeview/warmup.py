"""What a server process loads before its first request, so that the first page a person opens after a restart
does not pay for it: the URLconf with every view, Pygments' lexer table, the template engine with its tag
libraries and every template of the site compiled (the cached loader keeps them), and the Markdown renderer.

Called once per process from ``sessions_site/asgi.py`` (daphne imports it before it listens). Then
:func:`prewarm_sessions` reads the most recently opened big sessions into the explorer's caches in a thread
(``ARBOR_PREWARM_SESSIONS``), from their snapshots, and derives what their first page shows (the default
filter's rows around the leaf, the branch on screen, the conversation's last page): a page of such a session
that arrives meanwhile waits for that work (the session's lock) instead of doing it again. ``asgi.py`` can
wait for those pages (not for the search haystacks made after them) up to ``ARBOR_PREWARM_WAIT`` seconds
before daphne listens (default 0: it listens at once, and the prewarm runs beside daphne's own start, which
brings the first page sooner counted from the start); a slow prewarm (a huge session, a busy machine) never
holds the start longer than that. Once the pages are ready, a
snapshot that holds only rows (as the import writes it) is written again as the forest and its tree
(``explorer.keep_snapshot``), so that the next start neither builds nodes row by row nor links nor flattens.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.template import TemplateDoesNotExist, TemplateSyntaxError
from django.template.loader import get_template
from django.urls import resolve, reverse

if TYPE_CHECKING:
    from treeview.explorer import ExplorerTree
    from treeview.models import AgentSession
    from treeview.session.agents import Agent

logger = logging.getLogger(__name__)

__all__ = ["prepare_first_page", "prewarm_sessions", "warm_up"]


_COMMON_LANGUAGES = (
    "python",
    "javascript",
    "typescript",
    "json",
    "bash",
    "diff",
    "markdown",
    "yaml",
    "toml",
    "rust",
)


def _template_names() -> list[str]:
    names: list[str] = []
    for config in settings.TEMPLATES:
        for directory in config.get("DIRS", []):
            root = Path(directory)
            names.extend(str(path.relative_to(root)) for path in sorted(root.rglob("*.html")))
    return names


def warm_up() -> None:
    """Load and compile what the first requests need; a failure only loses the head start (and is logged)."""
    from treeview.render.highlight import lexer_for_filename, lexer_for_language
    from treeview.render.markdown import render_markdown

    resolve("/")
    # The resolver's reverse tables (a page reverses dozens of addresses; the first reverse builds them).
    reverse("treeview:session_detail", kwargs={"session_id": "warm"})
    lexer_for_filename("warm.py")
    # The lexers a conversation uses most (each one's module and regular expressions load on first use).
    for language in _COMMON_LANGUAGES:
        lexer_for_language(language)
    for name in _template_names():
        try:
            get_template(name)
        except (TemplateDoesNotExist, TemplateSyntaxError):
            logger.warning("could not compile the template %s ahead of time", name, exc_info=True)
    # markdown-it's rule chains and a highlighted fence (Pygments' formatter and the Python lexer).
    render_markdown("*warm* `up`\n\n```python\nx = 1\n```\n")


def prepare_first_page(session: AgentSession, tree: ExplorerTree, agent: Agent) -> None:
    """What the session page without parameters derives from the tree, kept with it: the default filter's
    rows (``ExplorerTree.visible``) and the selection, the leaf's path, the branch on screen with its totals,
    the conversation's page at the selection (its entries rendered into the explorer's cache)."""
    from treeview import conversation, explorer

    window = explorer.tree_window(tree, "default", "", None, None, agent=agent)
    selected = window.selected_id
    conversation.branch_on_screen(tree, selected, agent)
    conversation.conversation_page(session, tree, selected, None)


#: Seconds the thread that keeps the snapshot waits first: the first requests (a person who came as the server
#: started listening) go before it.
KEEP_DELAY = 1.0


def _keep_snapshots(trees: list[tuple[AgentSession, ExplorerTree]]) -> None:
    from treeview import explorer

    if any(tree.forest is not None and not tree.forest.snapshot_full for _, tree in trees):
        time.sleep(KEEP_DELAY)
    for session, tree in trees:
        try:
            if tree.forest is not None and not tree.forest.snapshot_full:
                explorer.pause_for_requests(tree.forest)  # work ahead of time: requests go first
                explorer.keep_snapshot(session, tree)
        except Exception:  # only the next start's head start is lost
            logger.warning("could not keep the snapshot of %s", session.session_id, exc_info=True)


def _prewarm(limit: int, pages_ready: threading.Event) -> None:
    from django.db import close_old_connections, connections

    from treeview.explorer import explorer_tree, prepare_search
    from treeview.tree_index import snapshot_sessions

    try:
        trees = []
        for session in snapshot_sessions(limit):
            rules = session.rules  # the detected rules (stored on disk), as the page asks
            tree = explorer_tree(session, session.leaf_id)
            try:
                prepare_first_page(session, tree, rules.agent)
            except Exception:  # the page makes it then; the tree is ready
                logger.warning("could not prepare the first page of %s", session.session_id, exc_info=True)
            trees.append((session, tree, rules.agent))
        pages_ready.set()
        # A snapshot of rows only (after an import) kept as the forest and this tree, for the next start: in
        # a thread that is no daemon, so that a server stopped right away still finishes writing it.
        keeper = threading.Thread(
            target=_keep_snapshots,
            args=([(s, t) for s, t, _ in trees],),
            name="keep-snapshot",
            daemon=False,  # not inherited from this daemon thread
        )
        keeper.start()
        for _, tree, agent in trees:
            # What the first search reads (oh-my-pi's normalized haystacks).
            prepare_search(tree, agent, wait=True)
    except Exception:  # only a head start is lost
        logger.warning("could not prewarm the session caches", exc_info=True)
    finally:
        pages_ready.set()
        close_old_connections()
        connections.close_all()


def prewarm_sessions(limit: int | None = None, wait: float = 0.0) -> threading.Thread | None:
    """Read up to ``limit`` (default ``ARBOR_PREWARM_SESSIONS``) big sessions with a snapshot into the caches,
    with their first pages, in a daemon thread; returns it (``None``: nothing to do). ``wait``: seconds to
    wait here for those pages (at most; the search haystacks are made afterwards, in that thread)."""
    count = settings.ARBOR_PREWARM_SESSIONS if limit is None else limit
    if count <= 0:
        return None
    pages_ready = threading.Event()
    thread = threading.Thread(
        target=_prewarm, args=(count, pages_ready), name="prewarm-sessions", daemon=True
    )
    started = time.monotonic()
    thread.start()
    if wait > 0:
        done = pages_ready.wait(wait)
        logger.info(
            "prewarmed the first pages in %.2f s%s",
            time.monotonic() - started,
            "" if done else " (still going)",
        )
    return thread
