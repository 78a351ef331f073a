"""Appending to a session: labels, the leaf marker for the agent, and any entry the core builds.

One transaction per action, with the session row locked, so two processes appending to one session are
serialized and neither loses nor duplicates an entry. With ``ARBOR_WRITE_BACK`` on, the entry is also
appended to the agent's own file, under a file lock, and only if the file still ends where Arbor last read it;
otherwise the whole action is refused (sync first). A user's file is never rewritten or truncated.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import os
import stat
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

from treeview.models import AgentSession, Entry
from treeview.services.columns import entry_facts
from treeview.services.events import publish_session_changed
from treeview.services.sync import is_archive, line_digest, window_hashes
from treeview.session import entries as builders
from treeview.session.jsonl import dumps

__all__ = ["UnknownEntry", "WriteBackRefused", "append_entry", "move_leaf", "persist_position", "set_label"]

EntryMaker = Callable[[str | None, "_SessionIds"], dict[str, Any]]


class WriteBackRefused(RuntimeError):
    """The source file changed since Arbor read it (or cannot take an append): nothing was written."""


class UnknownEntry(LookupError):
    """No entry with that id in the session (the original's ``Entry <id> not found``)."""

    def __init__(self, entry_id: str) -> None:
        super().__init__(f"Entry {entry_id} not found")


class _SessionIds:
    """``id in ids`` asks the database: new ids must not collide with any entry of the session."""

    def __init__(self, session: AgentSession) -> None:
        self.session = session

    def __contains__(self, entry_id: object) -> bool:
        return Entry.objects.filter(session=self.session, entry_id=entry_id).exists()


def _has_entry(session: AgentSession, entry_id: str) -> bool:
    return Entry.objects.filter(session=session, entry_id=entry_id).exclude(type="session").exists()


def append_entry(session: AgentSession, make: EntryMaker, reason: str = "append") -> Entry:
    """Append the entry ``make(leaf_id, existing_ids)`` builds, as a child of the current leaf; the leaf moves
    to it (§9.1). Returns the stored row."""
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        entry = make(locked.leaf_id, _SessionIds(locked))
        raw = dumps(entry)
        if settings.ARBOR_WRITE_BACK and _only_in_arbor(locked, entry.get("parentId")):
            raise WriteBackRefused(
                f"the entry would hang under {entry.get('parentId')}, which Arbor added while write-back "
                "was off and is not in the agent's file; the agent could not follow it. Move the leaf to "
                "an entry of the file first."
            )
        before = locked.tail_raw or "\n"
        written = _write_back(locked, raw)
        facts = entry_facts(entry, {})
        row = Entry.objects.create(
            session=locked,
            seq=locked.next_seq,
            line=locked.line_count if written else None,
            origin=Entry.Origin.ARBOR,
            in_file=written,
            before=before if written else "",
            digest=line_digest(before, raw) if written else "",
            raw=raw,
            **facts.columns(),
        )
        locked.next_seq += 1
        locked.entry_count += 1
        locked.leaf_id = facts.entry_id
        if facts.ts is not None and (locked.last_timestamp is None or facts.ts > locked.last_timestamp):
            locked.last_timestamp = facts.ts
        locked.save()
        # The new entry is the leaf now (§9.1).
        publish_session_changed(
            locked.pk, locked.session_id, reason, entry=facts.entry_id, leaf=locked.leaf_id
        )
    session.refresh_from_db()
    return row


def _only_in_arbor(session: AgentSession, entry_id: Any) -> bool:
    return isinstance(entry_id, str) and (
        Entry.objects.filter(session=session, entry_id=entry_id, in_file=False).exists()
    )


def _write_back(session: AgentSession, raw: str) -> bool:
    """Append ``raw`` to the source file if write-back is on. Raises :class:`WriteBackRefused`."""
    if not settings.ARBOR_WRITE_BACK or not session.source_path or is_archive(session.source_path):
        # (an archived session is never written: what Arbor adds to it stays in Arbor)
        return False
    if not session.header_raw:
        # A file without a session header (treeview/session/headerless.py): the agents do not open it, and
        # appending to it would not change that. What Arbor adds stays in Arbor, as for an archive.
        return False
    path = session.source_path
    if session.format_version < 3:
        raise WriteBackRefused(
            f"{path} is in format version {session.format_version}; the agent migrates it when it opens it. "
            "Arbor does not append to it (it would mix formats)."
        )
    data = (raw + "\n").encode("utf-8")
    handle = _open_no_links(path)
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            size = handle.seek(0, os.SEEK_END)
            if session.pending_raw or size != session.source_size:
                raise WriteBackRefused(
                    f"{path} changed since Arbor last read it ({session.source_size} bytes then, "
                    f"{size} now); sync it first, then try again"
                )
            unchanged = os.fstat(handle.fileno()).st_mtime_ns == session.source_mtime_ns
            if not unchanged or window_hashes(handle, size) != (session.head_hash, session.tail_hash):
                # omp rewrites its title slot in place (same size): the mtime and the first bytes tell.
                raise WriteBackRefused(f"{path} was rewritten since Arbor last read it; sync it first")
            handle.seek(size)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            written = os.fstat(handle.fileno())
            session.source_size = size + len(data)
            session.head_hash, session.tail_hash = window_hashes(handle, session.source_size)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    session.source_hash = hashlib.sha256(session.source_hash.encode() + data).hexdigest()
    session.source_mtime_ns = written.st_mtime_ns
    session.line_count += 1
    session.tail_raw = "\n"
    return True


def _open_no_links(path: str) -> Any:
    """Open the session file to append, never through a symbolic link: the stored path was resolved when the
    file was read, so a link in it now (the file or a directory swapped for one) means it is not that file."""
    if os.path.realpath(path) != path:
        raise WriteBackRefused(
            f"{path} is now reached through a symbolic link; Arbor does not write through one"
        )
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise WriteBackRefused(
                f"{path} is a symbolic link now; Arbor does not write through one"
            ) from None
        raise WriteBackRefused(f"cannot open {path} to append: {error.strerror or error}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise WriteBackRefused(f"{path} is not a regular file")
    return os.fdopen(descriptor, "r+b")


def set_label(session: AgentSession, target_id: str, label: str | None) -> Entry:
    """Label an entry (``None`` or blank clears it): a new label entry, as Shift+L does (§17.7)."""
    if not _has_entry(session, target_id):
        raise UnknownEntry(target_id)
    text = (label or "").strip() or None
    return append_entry(
        session, lambda leaf, ids: builders.label_entry(leaf, ids, target_id, text), reason="label"
    )


def move_leaf(session: AgentSession, entry_id: str | None) -> None:
    """Move Arbor's leaf (nothing is appended; the agent will not see it: see :func:`persist_position`)."""
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        if entry_id is not None and not _has_entry(locked, entry_id):
            raise UnknownEntry(entry_id)
        locked.leaf_id = entry_id
        locked.save(update_fields=["leaf_id"])
        publish_session_changed(locked.pk, locked.session_id, "leaf", entry=entry_id, leaf=entry_id)
    session.refresh_from_db()


def persist_position(session: AgentSession) -> Entry:
    """Append the marker omp v18 uses so the agent resumes at Arbor's leaf (§20.3): an empty branch summary
    at the leaf (empty summaries never reach the LLM)."""
    last = Entry.objects.filter(session=session, in_file=True).exclude(entry_id="").order_by("-seq").first()
    discarded = last.entry_id if last is not None and last.entry_id != session.leaf_id else None
    return append_entry(
        session, lambda leaf, ids: builders.position_marker(leaf, ids, discarded), reason="position"
    )
