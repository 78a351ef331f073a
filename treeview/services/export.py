"""Sessions back out of the database: the file as it was read (plus Arbor's entries), or one branch."""

from __future__ import annotations

from collections.abc import Iterator

from treeview.models import AgentSession, Entry
from treeview.session.migrations import stable_id_maker
from treeview.session.session_manager import SessionManager, session_file_name

__all__ = ["export_branch", "export_lines", "export_text", "load_manager"]

# Rows per query: a stalled download holds one batch (and one chunk) at most.
_BATCH = 200


def _rows(session: AgentSession, *, in_file: bool) -> Iterator[tuple[str, str]]:
    """(before, raw) of the session's rows in order, fetched in batches (a session can be 250 MB)."""
    last = -1
    while True:
        batch = list(
            Entry.objects.filter(session=session, in_file=in_file, seq__gt=last)
            .order_by("seq")
            .values_list("seq", "before", "raw")[:_BATCH]
        )
        if not batch:
            return
        for seq, before, raw in batch:
            last = seq
            yield before, raw


def export_lines(session: AgentSession) -> Iterator[str]:
    """The session file, piece by piece: for an untouched import, exactly the bytes that were read (title
    slot, blank and broken lines, a half-written last line included); then the entries Arbor appended that are
    not in the source file, one per line."""
    yield session.prefix_raw
    yield session.header_raw
    for before, raw in _rows(session, in_file=True):
        yield before + raw
    yield session.tail_raw
    yield session.pending_raw
    ends_with_newline = (session.pending_raw or session.tail_raw or "\n").endswith("\n")
    for _, raw in _rows(session, in_file=False):
        if not ends_with_newline:
            # The file stops mid-line: start Arbor's entries on a line of their own.
            yield "\n"
            ends_with_newline = True
        yield raw + "\n"


def export_text(session: AgentSession) -> str:
    return "".join(export_lines(session))


def load_manager(session: AgentSession) -> SessionManager:
    """The session as the core's ``SessionManager`` (same ids as in the database), leaf as stored."""
    data = export_text(session).encode("utf-8", errors="surrogatepass")
    # Read by the rules of the agent that wrote it, detected from the content (as the core does for a file).
    manager = SessionManager.from_bytes(
        data, path=session.source_path or None, make_id=stable_id_maker(session.session_id)
    )
    if session.leaf_id is None:
        manager.reset_leaf()
    elif session.leaf_id in manager.by_id:
        manager.branch(session.leaf_id)
    return manager


def export_branch(session: AgentSession, entry_id: str) -> tuple[str, str]:
    """The new session file ``/branch`` writes for the path root → ``entry_id`` (§10.10): (file name, text).

    Raises ``EntryNotFound`` for an id that is not in the session.
    """
    manager = load_manager(session)
    manager.create_branched_session(entry_id)
    return session_file_name(manager.header["timestamp"], manager.session_id), manager.serialize()
