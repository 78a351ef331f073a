"""Sessions back out of the database: the file as it was read (plus Arbor's entries), or one branch."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from treeview.models import AgentSession, Entry
from treeview.session.headerless import synthesized_header
from treeview.session.jsonl import dumps, loads
from treeview.session.migrations import CURRENT_SESSION_VERSION, stable_id_maker
from treeview.session.session_manager import EntryNotFound, SessionManager, session_file_name

__all__ = [
    "export_branch",
    "export_branch_lines",
    "export_lines",
    "export_text",
    "header_line",
    "is_headerless",
    "load_manager",
]

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
        data,
        path=session.source_path or None,
        make_id=stable_id_maker(session.session_id),
        headerless_id=session.session_id if is_headerless(session) else None,
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


def _parsed(raw: str) -> dict[str, Any] | None:
    try:
        value = loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def is_headerless(session: AgentSession) -> bool:
    """Was the session read from a file without a session header (treeview/session/headerless.py)? Its
    header was made up then, and the file holds none: ``header_raw`` is empty."""
    return not session.header_raw


def header_line(session: AgentSession) -> str:
    """The session's header as the file has it, or, for a header-less file, the one it was read with (the
    same id, time and unknown working directory: what a new file of this session starts with)."""
    if not is_headerless(session):
        return session.header_raw
    return dumps(synthesized_header(session.session_id, {"timestamp": session.created_at}))


def _streamable_header(session: AgentSession) -> dict[str, Any] | None:
    """The header, when the file is read as it is written (version 3 or later: no migration rewrites its
    entries); ``None`` otherwise."""
    header = _parsed(header_line(session))
    if header is None or header.get("type") != "session":
        return None
    version = header.get("version", 1)
    if not isinstance(version, int | float) or isinstance(version, bool) or version < CURRENT_SESSION_VERSION:
        return None
    return header


def _branch_rows(session: AgentSession, entry_id: str) -> list[tuple[int, str, str]] | None:
    """(seq, id, type) of the rows root → ``entry_id``, in the order the exported file holds them (the file's
    rows, then Arbor's), linked as :class:`SessionManager` links them: the last row of an id wins, a parent
    cycle stops at its first repeat. ``None`` when a row has no usable id (the manager then decides)."""
    rows = list(
        Entry.objects.filter(session=session)
        .order_by("-in_file", "seq")
        .values_list("seq", "entry_id", "parent_id", "type")
    )
    position: dict[str, int] = {}
    for index, (_, row_id, _, kind) in enumerate(rows):
        if kind == "session":
            continue
        if not row_id:
            return None
        position[row_id] = index
    current = position.get(entry_id, -1)
    if current < 0:
        raise EntryNotFound(entry_id)
    path: list[int] = []
    seen: set[int] = set()
    while current >= 0 and current not in seen:
        seen.add(current)
        path.append(current)
        parent = rows[current][2]
        current = position.get(parent, -1) if parent else -1
    return [(rows[i][0], rows[i][1], rows[i][3]) for i in reversed(path)]


def _labelled(session: AgentSession, shell: SessionManager) -> None:
    """Replay the session's label entries onto ``shell`` as the manager resolves them when it loads."""
    labels = (
        Entry.objects.filter(session=session, type="label")
        .exclude(entry_id="")
        .order_by("-in_file", "seq")
        .values_list("raw", flat=True)
    )
    for raw in labels.iterator():
        value = _parsed(raw)
        if value is not None:
            shell._apply_label(value.get("targetId"), value.get("label"), value.get("timestamp"))


def _path_entries(session: AgentSession, seqs: Sequence[int]) -> Iterator[dict[str, Any]]:
    """The parsed entries of these rows, in this order, read a batch at a time."""
    for start in range(0, len(seqs), _BATCH):
        batch = seqs[start : start + _BATCH]
        raws = dict(Entry.objects.filter(session=session, seq__in=batch).values_list("seq", "raw"))
        for seq in batch:
            yield _parsed(raws[seq]) or {}


def export_branch_lines(session: AgentSession, entry_id: str) -> tuple[str, Iterator[str]]:
    """:func:`export_branch`, made as it is read: (file name, its lines). Only the ids of the path are held;
    the entries are read from the database a batch at a time, so a download paced by a slow reader holds
    about one batch. The bytes are those of :func:`export_branch` (the same code writes them); a file written
    before version 3 (its entries are migrated when read) is still built whole.

    Raises ``EntryNotFound`` for an id that is not in the session (before anything is read).
    """
    header = _streamable_header(session)
    path = _branch_rows(session, entry_id) if header is not None else None
    if header is None or path is None:
        name, text = export_branch(session, entry_id)
        return name, iter([text])
    shell = SessionManager(agent=session.rules.agent)
    shell.header = header
    shell.title_slot = _parsed(session.title_slot_raw) if session.title_slot_raw else None
    cwd = header.get("cwd")
    shell.cwd = cwd if isinstance(cwd, str) else ""
    shell.session_file = session.source_path or None
    _labelled(session, shell)
    kept = [row_id for _, row_id, kind in path if kind != "label"]
    seqs = [seq for seq, _, _ in path]
    new_header, lines = shell.branch_export(
        _path_entries(session, seqs), set(kept), kept[-1] if kept else None
    )
    return session_file_name(new_header["timestamp"], new_header["id"]), lines
