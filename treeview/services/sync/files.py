"""Syncing one file, the files under some paths, or an upload: errors recorded, never raised."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.db import connections, router

from treeview.models import AgentSession, Entry, ImportIssue
from treeview.services.events import publish_session_changed
from treeview.services.sync.importer import _Importer
from treeview.services.sync.paths import (
    _archive_size_hint,
    _link_out_of,
    _open_source,
    find_session_files,
    is_archive,
)
from treeview.services.sync.result import Progress, SyncResult
from treeview.session.jsonl import SessionFileError

log = logging.getLogger(__name__)

#: An import that adds at least this many entries refreshes the planner's statistics (see refresh_statistics).
ANALYZE_AFTER = 20_000


def sync_paths(paths: Iterable[str | os.PathLike[str]], progress: Progress | None = None) -> list[SyncResult]:
    """Sync every session file under ``paths``; one bad file never stops the others."""
    return [sync_file(path, progress=progress) for path in find_session_files(paths)]


def import_upload(name: str, chunks: Iterable[bytes], owner: Any = None) -> SyncResult:
    """Store an uploaded file under ``ARBOR_UPLOAD_DIR`` and import it exactly like a file on disk.

    A new session belongs to ``owner`` (a signed-in user) and starts private. The same bytes uploaded again by
    the same owner are the same session; uploaded by someone else, they are that person's own copy (never a
    link to another user's private session, and never another user's row, even when its file is gone).
    """
    upload_dir = Path(settings.ARBOR_UPLOAD_DIR)
    upload_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    temporary = upload_dir / f".upload-{os.getpid()}-{threading.get_ident()}-{id(chunks)}.part"
    try:
        with open(temporary, "wb") as handle:
            for chunk in chunks:
                digest.update(chunk)
                handle.write(chunk)
        stem = Path(name).name.removesuffix(".jsonl")[:80] or "session"
        owner_key = f"u{owner.pk}-" if owner is not None and owner.pk is not None else ""
        target = upload_dir / f"{stem}-{owner_key}{digest.hexdigest()[:12]}.jsonl"
        if target.exists():
            # The same bytes were uploaded before: keep that copy (and its mtime), so it syncs as unchanged.
            temporary.unlink()
        else:
            os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    result = sync_file(target, owner=owner, visibility=AgentSession.Visibility.PRIVATE)
    if result.status == "failed":
        # The error goes back to the uploader; a file that is not a session is not kept.
        target.unlink(missing_ok=True)
        ImportIssue.objects.filter(source_path=result.path).delete()
    return result


def sync_file(
    path: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    owner: Any = None,
    visibility: str | None = None,
    within: Iterable[str | os.PathLike[str]] | None = None,
    headerless_id: str | None = None,
) -> SyncResult:
    """Bring the database up to date with one session file. Never writes to the file.

    ``headerless_id``: the id a file without a session header is read with (default: from its own name or
    path, treeview/session/headerless.py); a pushed copy, stored under a name of the server's, keeps the id
    the client's file gives.

    ``owner`` and ``visibility`` apply only to a session this sync creates: no sync ever changes the owner or
    the visibility of a session that exists. A path under one of ``within`` (default: the session
    directories) that is a symbolic link out of it is refused, not read.
    """
    spelled = Path(path).expanduser()
    roots = list(settings.ARBOR_SESSION_DIRS if within is None else within)
    left = _link_out_of(spelled, roots)
    if left is not None:
        message = f"a symbolic link leading outside the session directory {left}: not followed"
        where = os.path.abspath(spelled)
        ImportIssue.objects.update_or_create(source_path=where, defaults={"error": message})
        return SyncResult(where, "failed", error=message)
    source = str(spelled.resolve())
    new_owner = owner if owner is not None and getattr(owner, "pk", None) is not None else None
    try:
        stat = os.stat(source)
        session = AgentSession.objects.filter(source_path=source).first()
        seen: Any = stat
        if is_archive(source):
            seen = SimpleNamespace(st_size=_archive_size_hint(source), st_mtime_ns=stat.st_mtime_ns)
        if session is not None and _unchanged(session, seen):
            return SyncResult(source, "unchanged", session)
        handle, stat = _open_source(source, stat)
        with handle:
            importer = _Importer(source, handle, stat, session, progress)
            importer.owner = new_owner
            importer.visibility = visibility
            importer.headerless_id = headerless_id
            result = importer.run()
    except EOFError:
        message = "the gzip archive is cut short (truncated): nothing imported from it"
        ImportIssue.objects.update_or_create(source_path=source, defaults={"error": message})
        return SyncResult(source, "failed", error=message)
    except (OSError, SessionFileError, _Refused) as error:
        message = _describe(error)
        ImportIssue.objects.update_or_create(source_path=source, defaults={"error": message})
        return SyncResult(source, "failed", error=message)
    except Exception as error:  # one bad file must not stop an import of many
        log.exception("import of %s failed", source)
        message = f"unexpected error: {type(error).__name__}: {error}"
        ImportIssue.objects.update_or_create(source_path=source, defaults={"error": message})
        return SyncResult(source, "failed", error=message)
    ImportIssue.objects.filter(source_path=source).delete()
    if result.entries_added >= ANALYZE_AFTER:
        refresh_statistics()
    if result.session is not None and (
        result.entries_added or result.entries_removed or result.status == "new"
    ):
        session = result.session
        _prepare_first_view(result)
        publish_session_changed(session.pk, session.session_id, result.status, leaf=session.leaf_id)
    return result


def _prepare_first_view(result: SyncResult) -> None:
    """What the first page of a big session needs that the import can make ahead (``tree_index`` and
    ``rules_cache``: the forest's snapshot, the detected rules on disk), so that the page need not read the
    whole table; a failure only loses that head start."""
    from treeview.tree_index import prepare_snapshot

    assert result.session is not None
    try:
        session = AgentSession.objects.get(pk=result.session.pk)
        rewritten = result.status != "grown" or bool(result.entries_removed)
        if prepare_snapshot(session, rewritten=rewritten, added=result.entries_added):
            session.detected_rules  # noqa: B018 -- detected and kept on disk for the server's processes
    except Exception:  # the import itself is done and committed
        log.exception("could not prepare the first view of %s", result.path)


def refresh_statistics() -> None:
    """Refresh the query planner's statistics of the entry table after a big import.

    Without them (SQLite never has any until ANALYZE; PostgreSQL waits for autovacuum, which may be off) a
    lookup of a few entry ids by ``(session, entry_id)`` can turn into a walk over every row of the session.
    """
    connection = connections[router.db_for_write(Entry)]
    table = connection.ops.quote_name(Entry._meta.db_table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Only the indexed columns: a full ANALYZE of wide text columns takes seconds.
            cursor.execute(f"ANALYZE {table} (session_id, entry_id, parent_id, type, seq, label_target)")
        else:
            cursor.execute(f"ANALYZE {table}")


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError):
        return f"cannot read the file: {error.strerror or error}"
    return str(error)


class _Refused(Exception):
    """The file cannot be imported as it is (the reason is the message)."""


def _unchanged(session: AgentSession, stat: os.stat_result) -> bool:
    size = session.source_size + len(session.pending_raw.encode("utf-8", errors="surrogateescape"))
    return stat.st_size == size and stat.st_mtime_ns == session.source_mtime_ns
