"""Import and sync session files into the database, incrementally and without losing a byte.

A file is read as a stream of lines (never held whole). What is stored reproduces it exactly: each entry row
keeps its line and the text before it (the newline, blank or broken lines), the session keeps what precedes
the header (title slot) and what follows the last complete line. Re-syncing a file costs:

* unchanged (same size and mtime): one ``stat``;
* grown (the agent appended; the first and last 64 KiB imported are unchanged): only the new lines;
* rewritten (migration, title change, omp's atomic rewrite): the whole file, compared with the stored entries
  so that only what really changed is replaced; entries Arbor appended that are not in the file are kept.

A half-written last line (no newline yet) is not imported; it is kept aside and read again at the next sync.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

import orjson
from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Count, Max, Min, Q, Sum

from treeview.models import AgentSession, Entry, ImportIssue
from treeview.services.columns import ENTRY_FIELDS, ToolCalls, entry_facts, entry_values
from treeview.services.events import publish_session_changed
from treeview.session.headerless import (
    headerless_session_id,
    headerless_warning,
    is_sdk_v4,
    sdk_v4_message,
    synthesized_header,
)
from treeview.session.jsonl import (
    CHUNK_SIZE,
    ParseWarning,
    SessionFileError,
    is_title_slot,
    iter_physical_lines,
    parse_line,
)
from treeview.session.migrations import Migrator, stable_id_maker
from treeview.session.subagents import subagent_place
from treeview.session.tree import cycle_message, duplicate_message, link_problems

__all__ = [
    "SyncResult",
    "default_session_dirs",
    "find_session_files",
    "import_upload",
    "in_session_dirs",
    "sync_file",
    "sync_paths",
]

log = logging.getLogger(__name__)

#: An import that adds at least this many entries refreshes the planner's statistics (see refresh_statistics).
ANALYZE_AFTER = 20_000

HASH_WINDOW = 64 * 1024
BATCH_SIZE = 2000

Progress = Callable[[int, int], None]  # (bytes read since the last call, entries stored since the last call)


@dataclass
class SyncResult:
    """What one sync did to one file."""

    path: str
    status: str  # new, grown, unchanged, rewritten, failed
    session: AgentSession | None = None
    entries_added: int = 0
    entries_removed: int = 0
    bytes_read: int = 0
    warnings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


def default_session_dirs() -> list[Path]:
    """The session directories to import by default (settings.ARBOR_SESSION_DIRS) that exist here."""
    return [Path(directory) for directory in settings.ARBOR_SESSION_DIRS if Path(directory).is_dir()]


def _no_header_message(size: int) -> str:
    if size == 0:
        return "not a session file: the file is empty"
    return "not a session file: no JSON object in it, so no session header"


#: Session files, and oh-my-pi's gzip archives of old ones (``agent/archive/sessions``, read, never written).
SESSION_PATTERNS = ("*.jsonl", "*.jsonl.gz")


def is_archive(path: str | os.PathLike[str]) -> bool:
    """A gzip archive of a session file: read without unpacking it to disk, never written."""
    return str(path).endswith(".jsonl.gz")


def is_session_file_name(path: str) -> bool:
    return path.endswith(".jsonl") or is_archive(path)


def _archive_size_hint(path: str) -> int:
    """The uncompressed size a gzip file's trailer states (modulo 2**32; -1 when unreadable)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(-4, os.SEEK_END)
            return int.from_bytes(handle.read(4), "little")
    except OSError:
        return -1


def _open_source(source: str, stat: os.stat_result) -> tuple[IO[bytes], Any]:
    """The file to read and its stat; for an archive, the decompressed stream and its real size."""
    if not is_archive(source):
        return open(source, "rb"), stat
    handle: IO[bytes] = gzip.open(source, "rb")  # noqa: SIM115 (the caller closes it)
    try:
        size = 0
        while chunk := handle.read(CHUNK_SIZE):
            size += len(chunk)
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return handle, SimpleNamespace(st_size=size, st_mtime_ns=stat.st_mtime_ns)


def find_session_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Every ``*.jsonl`` (or archived ``*.jsonl.gz``) file named, or found (recursively, sorted) under the
    directories named.

    A symbolic link found in a directory is followed only when it leads to a file inside that directory:
    ``passwd.jsonl -> /etc/passwd`` in a session directory is skipped (and logged), never read.
    """
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            root = path.resolve()
            found_files = [p for pattern in SESSION_PATTERNS for p in path.rglob(pattern) if p.is_file()]
            for found in sorted(found_files):
                if found.is_symlink() and not _inside(found.resolve(), root):
                    log.warning("%s: a symbolic link leading outside %s is not followed", found, path)
                    continue
                yield found
        else:
            yield path


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or path.is_relative_to(directory)


def _resolved_dirs(directories: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Path]]:
    """(absolute, resolved) of each directory: a path is under a directory by its absolute spelling and
    really inside it by its resolved one."""
    pairs = []
    for directory in directories:
        absolute = Path(os.path.abspath(Path(directory).expanduser()))
        try:
            pairs.append((absolute, absolute.resolve()))
        except OSError:
            continue
    return pairs


def _link_out_of(path: Path, roots: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The directory of ``roots`` that ``path`` is spelled under but that its resolved path leaves (a symbolic
    link out of a session directory), or None."""
    absolute = Path(os.path.abspath(path))
    for spelled, real in _resolved_dirs(roots):
        if _inside(absolute, spelled):
            return None if _inside(absolute.resolve(), real) else spelled
    return None


def in_session_dirs(path: str | os.PathLike[str]) -> bool:
    """Is the (resolved) file ``path`` inside one of the agents' session directories (never inside Arbor's
    own data directory: uploads, pushed files and forks are not the agents' files)."""
    source = Path(path)
    data = Path(settings.ARBOR_DATA_DIR).resolve()
    if _inside(source, data):
        return False
    return any(_inside(source, real) for _, real in _resolved_dirs(settings.ARBOR_SESSION_DIRS))


def _in_data_dir(path: str) -> bool:
    """Is ``path`` one of Arbor's own files (its data directory, uploads included)?"""
    own = (settings.ARBOR_DATA_DIR, settings.ARBOR_UPLOAD_DIR)
    return any(_inside(Path(path), Path(directory).resolve()) for directory in own)


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


def _earlier_row(header: dict[str, Any], source: str) -> AgentSession | None:
    """The row of a file the header's ``previousSessionFiles`` lists, when that file is gone and was in a
    session directory (never an upload's or a pushed file's row), or None."""
    earlier = header.get("previousSessionFiles")
    if not isinstance(earlier, list):
        return None
    paths = [p for p in earlier if isinstance(p, str) and p and p != source]
    for path in reversed(paths):  # the latest move last
        row = AgentSession.objects.filter(source_path=path).first()
        if row is not None and in_session_dirs(row.source_path) and not os.path.exists(row.source_path):
            return AgentSession.objects.select_for_update().get(pk=row.pk)
    return None


def _link_family(session: AgentSession) -> None:
    """Tie a subagent transcript to the session that spawned it, and a session to the transcripts imported
    before it (a folder sorts after its transcripts' parent file, or not: both ways, idempotent). Only
    sessions of the same owner are tied (the agents' own files have none)."""
    parent = None
    if session.spawned_from_path:
        parent = (
            AgentSession.objects.filter(source_path=session.spawned_from_path, owner_id=session.owner_id)
            .exclude(pk=session.pk)
            .only("pk")
            .first()
        )
    session.subagent_of = parent
    if session.pk is not None and session.source_path:
        AgentSession.objects.filter(spawned_from_path=session.source_path, owner_id=session.owner_id).exclude(
            pk=session.pk
        ).exclude(subagent_of=session).update(subagent_of=session)


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


def _read_range(handle: IO[bytes], start: int, end: int) -> bytes:
    handle.seek(start)
    return handle.read(max(0, end - start))


def window_hashes(handle: IO[bytes], end: int) -> tuple[str, str]:
    head = hashlib.sha256(_read_range(handle, 0, min(end, HASH_WINDOW))).hexdigest()
    tail = hashlib.sha256(_read_range(handle, max(0, end - HASH_WINDOW), end)).hexdigest()
    return head, tail


def _complete_end(handle: IO[bytes], size: int) -> int:
    """Offset just past the last newline at or before ``size`` (0 when there is none)."""
    position = size
    while position > 0:
        start = max(0, position - CHUNK_SIZE)
        block = _read_range(handle, start, position)
        index = block.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        position = start
    return 0


def _text(data: bytes, warnings: list[ParseWarning], line: int) -> str:
    """Text for the database: bytes that are not UTF-8 cannot be stored as they are (replaced, warned)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(ParseWarning(line, "bytes that are not UTF-8 are stored as U+FFFD (export differs)"))
        text = data.decode("utf-8", errors="replace")
    if "\x00" in text:
        # Only a broken line can hold a raw NUL (JSON escapes it); no database stores one in text.
        warnings.append(ParseWarning(line, "NUL bytes are stored as U+FFFD (export differs)"))
        text = text.replace("\x00", "\ufffd")
    return text


def line_digest(before: str, raw: str) -> str:
    return hashlib.blake2b(f"{before}\x00{raw}".encode(), digest_size=16).hexdigest()


def _digest(before: str, raw: str | bytes) -> str:
    """``line_digest(before, raw)``; ``raw`` may be the text's UTF-8 bytes (hashed as they are)."""
    if isinstance(raw, str):
        return line_digest(before, raw)
    hasher = hashlib.blake2b(before.encode(), digest_size=16)
    hasher.update(b"\x00")
    hasher.update(raw)
    return hasher.hexdigest()


def guess_agent(path: str, header: dict[str, Any], slot: bool) -> str:
    """pi or oh-my-pi: by directory first (§1.1), then by what only omp writes."""
    parts = Path(path).parts
    if ".pi" in parts:
        return AgentSession.Agent.PI
    if ".omp" in parts or slot or "title" in header or "titleSource" in header:
        return AgentSession.Agent.OMP
    if header.get("version", 1) == 1 or "provider" in header:
        return AgentSession.Agent.PI
    return AgentSession.Agent.OMP


class _Importer:
    """One sync of one file, in one transaction."""

    def __init__(
        self,
        source: str,
        handle: IO[bytes],
        stat: os.stat_result,
        session: AgentSession | None,
        progress: Progress | None,
    ) -> None:
        self.source = source
        self.handle = handle
        self.stat = stat
        self.session = session
        self.progress = progress
        self.warnings: list[ParseWarning] = []
        self.rows: list[tuple[Any, ...]] = []
        self.added = 0
        self.removed = 0
        self.tool_calls: ToolCalls = {}
        self.writer: _RowWriter | None = None
        # A session this sync creates belongs to ``owner`` with ``visibility``; an existing one keeps its own.
        self.owner: Any = None
        self.visibility: str | None = None
        # (id, parentId, line) of every entry read, for the duplicate-id and parent-cycle warnings.
        self.links: list[tuple[Any, Any, int]] = []
        self.first_new_seq = 0
        # The id a header-less file is read with (None: from its name or path).
        self.headerless_id: str | None = None

    # -- deciding what to read --------------------------------------------------------------------------

    def run(self) -> SyncResult:
        end = _complete_end(self.handle, self.stat.st_size)
        session = self.session
        if session is not None and session.format_version >= 3 and self._prefix_intact(session, end):
            status, offset = "grown", session.source_size
        else:
            status, offset = ("new" if session is None else "rewritten"), 0
        with transaction.atomic():
            if session is not None:
                # Serializes with appends and other syncs of this session.
                session = AgentSession.objects.select_for_update().get(pk=session.pk)
                self.session = session
            try:
                self._read(offset, end, status)
            finally:
                if self.writer is not None:
                    # Never leave the transaction (commit or rollback) while the writer still uses it.
                    self.writer.abort()
        assert self.session is not None
        return SyncResult(
            self.source,
            status,
            self.session,
            entries_added=self.added,
            entries_removed=self.removed,
            bytes_read=end - offset,
            warnings=[w.as_dict() for w in self.warnings],
        )

    def _prefix_intact(self, session: AgentSession, end: int) -> bool:
        if end < session.source_size or not session.source_hash:
            return False
        return window_hashes(self.handle, session.source_size) == (session.head_hash, session.tail_hash)

    def _chunks(self, offset: int, end: int, hasher: Any) -> Iterator[bytes]:
        self.handle.seek(offset)
        done = 0
        while offset + done < end:
            chunk = self.handle.read(min(CHUNK_SIZE, end - offset - done))
            if not chunk:
                break
            hasher.update(chunk)
            done += len(chunk)
            if self.progress is not None:
                self.progress(len(chunk), 0)
            yield chunk

    # -- reading -----------------------------------------------------------------------------------------

    def _read(self, offset: int, end: int, status: str) -> None:
        session = self.session
        hasher = hashlib.sha256()
        if status == "grown":
            assert session is not None
            # A chain: the hash of what was imported before, then the new bytes.
            hasher.update(session.source_hash.encode())
        lines = iter_physical_lines(self._chunks(offset, end, hasher), self.warnings)
        line_base = session.line_count if status == "grown" and session is not None else 0
        objects = self._objects(lines, line_base)
        if status == "grown":
            assert session is not None
            gap = session.tail_raw
            self._preload_tool_calls(session)
            migrator = Migrator({"version": 3})
        else:
            gap, header, header_raw, prefix, slot_raw, first = self._header(objects)
            if first is not None:
                objects = itertools.chain([first], objects)  # a header-less file: its first entry
            session = self._session_for(header, header_raw, prefix, slot_raw)
            migrator = Migrator(header, stable_id_maker(session.session_id))
            migrator.migrate(header)
        self.session = session
        self.first_new_seq = session.next_seq
        # A session already in the database (re-read, or a moved file): keep what is unchanged.
        existing = self._existing_file_rows() if status != "grown" and session.entry_count else None
        matched = 0
        diverged = False
        last_line = line_base
        for value, raw, before, line in objects:
            last_line = line
            before = gap + before
            gap = ""
            if isinstance(value, str):  # text after the last object: blank or broken lines
                gap = before + value
                continue
            migrator.migrate(value)
            if value.get("type") != "session":
                self.links.append((value.get("id"), value.get("parentId"), line))
            digest = _digest(before, raw)
            if existing is not None and not diverged and matched < len(existing):
                if existing[matched][1:] == (value.get("id", ""), digest):
                    matched += 1
                    self._count_existing(value)
                    continue
                diverged = True
            self._add(value, raw, before, digest, line)
        self._flush(last=True)
        if existing is not None:
            stale = [pk for pk, _, _ in existing[matched:]]
            for start in range(0, len(stale), BATCH_SIZE):
                Entry.objects.filter(pk__in=stale[start : start + BATCH_SIZE]).delete()
            self.removed = len(stale)
        self._check_links(session, status)
        self._finish(session, end, hasher.hexdigest(), gap, last_line, status)

    def _objects(self, lines: Iterable[Any], line_base: int) -> Iterator[tuple[Any, str | bytes, str, int]]:
        """(object, its exact text, the text before it, line number) for every object, then (text, "", "", n)
        for whatever follows the last one (a str in place of the object). The exact text of a line that is
        just one object comes as its bytes (valid UTF-8): decoding it only to encode it again for the
        database and the digest cost more than parsing it."""
        gap: list[str] = []
        number = line_base
        warnings = self.warnings
        for line in lines:
            number = line_base + line.number
            data = line.data
            # parse_line's own first step, for the usual line: orjson reads it as one object (which also
            # proves it valid UTF-8), nothing to warn about. Anything else goes through parse_line.
            try:
                value = orjson.loads(data)
            except orjson.JSONDecodeError:
                value = None
            if isinstance(value, dict):
                yield value, data, "".join(gap) if gap else "", number
                gap = ["\n"]
                continue
            parsed = parse_line(line, warnings)
            text = _text(data, warnings, number)
            if not parsed:
                gap.append(text + "\n")
                continue
            position = 0
            for item in parsed:
                start, stop = item.start - line.start, item.end - line.start
                before = "".join(gap) + _text(data[position:start], warnings, number)
                gap = []
                raw = text if (start, stop) == (0, len(data)) else _text(data[start:stop], [], number)
                yield item.value, raw, before, number
                position = stop
            gap.append(_text(data[position:], warnings, number) + "\n")
        yield "".join(gap), "", "", number

    def _header(
        self, objects: Iterator[tuple[Any, str | bytes, str, int]]
    ) -> tuple[str, dict[str, Any], str, str, str, tuple[Any, str | bytes, str, int] | None]:
        """(gap, header, its exact text, what precedes it, the title slot's text, None). A file whose first
        object is an entry is read with a made-up header (treeview/session/headerless.py): its text is "" (the
        file has none: exports stay byte-exact) and that first object comes last, to be read as an entry."""
        prefix = ""
        slot_raw = ""
        for value, exact, before, line in objects:
            if isinstance(value, str):
                break
            raw = exact.decode() if isinstance(exact, bytes) else exact
            if line == 1 and not slot_raw and is_title_slot(value):
                slot_raw = raw
                prefix += before + raw
                continue
            if value.get("type") != "session" or not isinstance(value.get("id"), str):
                if is_sdk_v4(value):
                    raise SessionFileError(f"line {line}: {sdk_v4_message(value)}")
                session_id = self.headerless_id or headerless_session_id(self.source)
                self.warnings.append(ParseWarning(line, headerless_warning(session_id, value)))
                header = synthesized_header(session_id, value)
                return "", header, "", prefix, slot_raw, (value, exact, before, line)
            return "", value, raw, prefix + before, slot_raw, None
        raise SessionFileError(_no_header_message(self.stat.st_size))

    def _session_for(
        self, header: dict[str, Any], header_raw: str, prefix: str, slot_raw: str
    ) -> AgentSession:
        session_id = header["id"]
        session = self.session
        copies = AgentSession.objects.filter(session_id=session_id).exclude(source_path=self.source)
        moved = None
        if session is None and in_session_dirs(self.source):
            # omp records where a moved session was (``previousSessionFiles``): the row of that earlier file
            # is this session, whatever other copies of the id there are. The same rule as below: only rows
            # of files inside the session directories, whose file is gone.
            moved = _earlier_row(header, self.source)
        if session is None and moved is None and in_session_dirs(self.source):
            # The file moved (omp renames its directories): the same session in a new place. Only from one
            # session directory to another: the id is public (it is in every URL), so a file anywhere else
            # (an upload, a pushed file) never adopts a row, whoever's it is.
            moved = next(
                (
                    c
                    for c in copies.exclude(source_path="")
                    if in_session_dirs(c.source_path) and not os.path.exists(c.source_path)
                ),
                None,
            )
        if moved is not None:
            session = AgentSession.objects.select_for_update().get(pk=moved.pk)
            session.source_path = self.source
        elif copies.filter(owner=self.owner).exists():
            # Only copies of the same owner are mentioned, never where they are: another file's path (or that
            # someone else holds the session) is not the reader's business.
            self.warnings.append(ParseWarning(0, "the same session id is also imported from another file"))
        if session is not None and session.session_id != session_id:
            # The file now holds another session altogether: the old one stays (with its comments and
            # reviews), no longer tied to this file, and the file starts a new one.
            AgentSession.objects.filter(pk=session.pk).update(source_path="")
            session = None
        if session is None:
            session = AgentSession(session_id=session_id, source_path=self.source)
            if self.owner is not None:
                session.owner = self.owner
            if self.visibility is not None:
                session.visibility = self.visibility
        slot = orjson.loads(slot_raw) if slot_raw else None
        session.header_raw = header_raw
        session.prefix_raw = prefix
        session.title_slot_raw = slot_raw
        version = header.get("version", 1)
        session.format_version = version if isinstance(version, int) and 0 < version < 100 else 1
        session.cwd = header["cwd"] if isinstance(header.get("cwd"), str) else ""
        parent = header.get("parentSession")
        session.parent_session = parent if isinstance(parent, str) else ""
        session.created_at = header["timestamp"] if isinstance(header.get("timestamp"), str) else ""
        session.agent = guess_agent(self.source, header, slot is not None)
        # Arbor's own files (uploads, pushed files named by hash, forks) are in no artifacts folder.
        place = None if _in_data_dir(self.source) else subagent_place(self.source, header)
        session.subagent_kind = place.kind if place is not None else ""
        session.agent_key = place.agent_id[:200] if place is not None else ""
        session.spawned_from_path = place.parent_path if place is not None else ""
        title = header.get("title")
        if slot is not None:
            title = slot.get("title")
        session.title = (title if isinstance(title, str) else "")[:500]
        if session.pk is None:
            session.save()
        return session

    def _check_links(self, session: AgentSession, status: str) -> None:
        """Warn of duplicate ids and parent cycles, as the core's ``inspect`` does.

        A whole read sees every entry of the file (plus the few Arbor appended, from the database). A grown
        file is checked by its new entries: a duplicate is an id already stored; a cycle through an old entry
        needs an old entry whose parent is new (or a new entry that replaces an old one), and only then is the
        whole session read back; otherwise only the new entries can form one."""
        if status != "grown":
            appended = session.entries.filter(in_file=False).order_by("seq")
            rows = self.links + [(i, p, 0) for i, p in appended.values_list("entry_id", "parent_id")]
            self._warn_links(rows, known=set())
            return
        new_ids = [entry_id for entry_id, _, _ in self.links if isinstance(entry_id, str)]
        if not new_ids:
            return
        old = session.entries.filter(seq__lt=self.first_new_seq)
        first_new = self.first_new_seq
        stored = set()
        adopted = False
        # By id and by parent, then the old rows kept here: a `seq <` condition in the query makes SQLite walk
        # the session by seq instead of looking the ids up (130 ms instead of 1 on a 2,000-entry session).
        for start in range(0, len(new_ids), 500):
            chunk = new_ids[start : start + 500]
            found = session.entries.filter(entry_id__in=chunk).values_list("entry_id", "seq")
            stored |= {entry_id for entry_id, seq in found if seq < first_new}
            children = session.entries.filter(parent_id__in=chunk).values_list("seq", flat=True)
            adopted = adopted or any(seq < first_new for seq in children)
        known = {w["message"] for w in session.warnings}
        if stored or adopted:
            rows = list(old.order_by("seq").values_list("entry_id", "parent_id", "line"))
            self._warn_links([(i, p, line or 0) for i, p, line in rows] + self.links, known=known)
        else:
            self._warn_links(self.links, known=known)

    def _warn_links(self, rows: list[tuple[Any, Any, int]], *, known: set[str]) -> None:
        duplicates, cycles = link_problems(rows)
        found = [ParseWarning(line, duplicate_message(entry_id)) for entry_id, line in duplicates]
        found += [ParseWarning(0, cycle_message(entry_id)) for entry_id in cycles]
        self.warnings.extend(w for w in found if w.message not in known)

    def _existing_file_rows(self) -> list[tuple[int, str, str]]:
        assert self.session is not None
        rows = self.session.entries.filter(in_file=True).order_by("seq")
        return list(rows.values_list("pk", "entry_id", "digest"))

    def _preload_tool_calls(self, session: AgentSession) -> None:
        """Tool calls of the last assistant messages: their results may be among the new lines."""
        recent = session.entries.filter(type="message", role="assistant").order_by("-seq")[:20]
        for raw in reversed(list(recent.values_list("raw", flat=True))):
            try:
                entry_facts(orjson.loads(raw), self.tool_calls)
            except orjson.JSONDecodeError:
                continue

    # -- writing -----------------------------------------------------------------------------------------

    def _count_existing(self, value: dict[str, Any]) -> None:
        # An unchanged entry of a rewritten file: only its tool calls matter (for later tool results).
        entry_facts(value, self.tool_calls)

    def _add(self, value: dict[str, Any], raw: str | bytes, before: str, digest: str, line: int) -> None:
        session = self.session
        assert session is not None
        facts = entry_facts(value, self.tool_calls)
        # A plain tuple in _ENTRY_COLUMNS order: building an Entry per line (and letting bulk_create turn it
        # back into parameters) was most of the import time.
        where = (session.pk, session.next_seq, line, _ORIGIN_FILE, True, before, digest, raw)
        self.rows.append((*where, *entry_values(facts)))
        session.next_seq += 1
        if len(self.rows) >= BATCH_SIZE:
            self._flush()

    def _flush(self, *, last: bool = False) -> None:
        """Hand the rows read so far to the database: on a writer thread while more lines follow (the insert
        then overlaps with reading), directly for a sync small enough to end within one batch."""
        if self.rows:
            if self.writer is None and not last:
                self.writer = _RowWriter(connections[router.db_for_write(Entry)])
            if self.writer is not None:
                self.writer.put(self.rows)
            else:
                insert_entry_rows(self.rows)
            self.added += len(self.rows)
            if self.progress is not None:
                self.progress(0, len(self.rows))
            self.rows = []
        if last and self.writer is not None:
            self.writer.close()

    def _finish(
        self, session: AgentSession, end: int, source_hash: str, tail: str, last_line: int, status: str
    ) -> None:
        pending = _read_range(self.handle, end, self.stat.st_size)
        session.source_size = end
        session.source_mtime_ns = self.stat.st_mtime_ns
        session.source_hash = source_hash
        session.head_hash, session.tail_hash = window_hashes(self.handle, end)
        session.pending_raw = pending.decode("utf-8", errors="replace")
        session.tail_raw = tail
        session.line_count = last_line
        if status == "grown":
            session.warnings = [*session.warnings, *(w.as_dict() for w in self.warnings)]
        else:
            session.warnings = [w.as_dict() for w in self.warnings]
        if status == "grown" and self.added and not self.removed:
            # Only new lines: add them to the totals instead of reading the whole session again (a watched
            # or pushed session grows a few entries at a time; a full pass costs O(session) per sync).
            add_to_totals(session, self.first_new_seq)
        elif self.added or self.removed or status != "grown":
            update_totals(session, move_leaf=bool(self.added or self.removed))
        if status != "grown":
            _link_family(session)
        session.save()


#: The Entry fields a row of :meth:`_Importer._add` fills, in order (every column but the primary key).
_ENTRY_COLUMNS = ("session", "seq", "line", "origin", "in_file", "before", "digest", "raw", *ENTRY_FIELDS)
_TS = _ENTRY_COLUMNS.index("ts")
_RAW = _ENTRY_COLUMNS.index("raw")
_ORIGIN_FILE = Entry.Origin.FILE.value
_SQLITE_ROWS_PER_INSERT = 500


def insert_entry_rows(rows: list[tuple[Any, ...]], connection: Any = None) -> None:
    """Insert Entry rows given as tuples in ``_ENTRY_COLUMNS`` order, in the connection's transaction.

    The same rows ``Entry.objects.bulk_create`` would write, without its per-row cost: no model instances,
    multi-row INSERTs (SQLite) or one ``COPY`` (PostgreSQL) per batch, and the driver's own cursor, because
    with DEBUG on Django's cursor would keep the text of every statement, parameters included (the whole
    file, hundreds of MB). Errors are still raised as Django's database exceptions. ``raw`` may be given as
    its UTF-8 bytes; it is stored as text all the same. ``connection`` (Django's, default: the one Entry is
    written to) may be passed in from another thread (see :class:`_RowWriter`).
    """
    if connection is None:
        connection = connections[router.db_for_write(Entry)]
        connection.ensure_connection()
    meta = Entry._meta
    columns = ", ".join(connection.ops.quote_name(meta.get_field(name).column) for name in _ENTRY_COLUMNS)
    table = connection.ops.quote_name(meta.db_table)
    with connection.wrap_database_errors, closing(connection.create_cursor()) as cursor:
        if connection.vendor == "postgresql":
            # COPY is several times faster than INSERT for large text rows; psycopg adapts every value
            # (timestamptz included) exactly as it does for query parameters.
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    raw = row[_RAW]
                    if isinstance(raw, bytes):
                        row = (*row[:_RAW], raw.decode(), *row[_RAW + 1 :])
                    copy.write_row(row)
        else:
            _insert_sqlite(connection, cursor, table, columns, rows)


def _insert_sqlite(
    connection: Any, cursor: Any, table: str, columns: str, rows: list[tuple[Any, ...]]
) -> None:
    # Many rows per statement: SQLite releases the GIL while it runs one, so a whole statement's b-tree work
    # overlaps with the reading thread (executemany binds and steps row by row).
    limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    width = len(_ENTRY_COLUMNS)
    per = max(1, min(_SQLITE_ROWS_PER_INSERT, limit // width))
    # Bytes of the raw line become TEXT with the same bytes (CAST reads a blob as text in the database's
    # encoding, UTF-8 for every database Django creates): no decoding to a str to encode it back.
    utf8 = connection.connection.execute("PRAGMA encoding").fetchone()[0] == "UTF-8"
    marks = ["%s"] * width
    marks[_RAW] = "CAST(%s AS TEXT)"
    one = "(" + ", ".join(marks) + ")"
    to_text = _sqlite_datetime(connection)
    for start in range(0, len(rows), per):
        chunk = rows[start : start + per]
        params = [value for row in chunk for value in row]
        for index in range(_TS, len(params), width):
            params[index] = to_text(params[index])
        if not utf8:
            for index in range(_RAW, len(params), width):
                if isinstance(params[index], bytes):
                    params[index] = params[index].decode()
        values = ", ".join([one] * len(chunk))
        cursor.execute(f"INSERT INTO {table} ({columns}) VALUES {values}", params)


def _sqlite_datetime(connection: Any) -> Callable[[datetime | None], str | None]:
    """``connection.ops.adapt_datetimefield_value`` for SQLite, without its per-call overhead for the usual
    value: a datetime already in the connection's time zone (UTC), which only loses its tzinfo."""
    adapt: Callable[[datetime | None], str | None] = connection.ops.adapt_datetimefield_value
    zone = connection.timezone if settings.USE_TZ else None

    def to_text(value: datetime | None) -> str | None:
        if value is not None and zone is not None and value.tzinfo is zone:
            # What adapt does: make_naive(value, zone) (same wall time, as value is in zone), then str().
            return str(value.replace(tzinfo=None))
        return adapt(value)

    return to_text


class _RowWriter:
    """Inserts batches of Entry rows on a second thread, in the importing thread's transaction.

    Parsing a line and deriving its columns is Python work; inserting it is mostly the database's (SQLite
    releases the GIL while it writes, PostgreSQL works in its own process), so the two overlap. The
    importing thread must not use the connection until :meth:`close` or :meth:`abort` returned; it does
    not: while lines stream in it only reads the file. At most two batches wait in the queue.
    """

    def __init__(self, connection: Any) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                # The raw lines are TOASTed: PostgreSQL's default pglz compression made the server the
                # bottleneck of a large import (lz4: about 30 % less COPY time, 3 % more space).
                # SET LOCAL: this transaction only, and only where the server was built with lz4.
                cursor.execute(
                    "SELECT set_config('default_toast_compression', 'lz4', true) FROM pg_settings"
                    " WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
                )
        connection.ensure_connection()
        self.connection = connection
        self.error: BaseException | None = None
        self.stop = False
        self.queue: queue.Queue[list[tuple[Any, ...]] | None] = queue.Queue(maxsize=2)
        self.thread = threading.Thread(target=self._run, name="arbor-import-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (rows := self.queue.get()) is not None:
            if self.error is None and not self.stop:
                try:
                    insert_entry_rows(rows, self.connection)
                except BaseException as error:  # re-raised in the importing thread
                    self.error = error

    def put(self, rows: list[tuple[Any, ...]]) -> None:
        self._raise()
        self.queue.put(rows)

    def close(self) -> None:
        """Wait until every row is inserted; raise what the insert raised."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self._raise()

    def abort(self) -> None:
        """Skip what is still queued and wait for the thread (no error raised: one is already on its way)."""
        self.stop = True
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def _raise(self) -> None:
        if self.error is not None:
            error, self.error = self.error, None
            raise error


def _totals_of(entries: Any) -> dict[str, Any]:
    """Every count and total of the session list over ``entries``, in one pass over the rows."""
    return entries.aggregate(
        count=Count("id"),
        first=Min("ts"),
        last=Max("ts"),
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        cost=Sum("cost"),
        messages=Count("id", filter=Q(type="message")),
        tool_results=Count("id", filter=Q(role="toolResult")),
    )


def update_totals(session: AgentSession, *, move_leaf: bool = True) -> None:
    """Recompute the counts, totals, title fallback, leaf and dates the session list shows."""
    entries = session.entries.all()
    # One pass over the rows for every count and total: each pass reads the whole table, raw lines included
    # (on SQLite 0.1-0.2 s per 100k entries).
    totals = _totals_of(entries)
    session.entry_count = totals["count"] or 0
    session.first_timestamp = totals["first"]
    session.last_timestamp = totals["last"]
    session.input_tokens = int(totals["input"] or 0)
    session.output_tokens = int(totals["output"] or 0)
    session.cost = float(totals["cost"] or 0)
    session.message_count = totals["messages"] or 0
    session.tool_call_count = totals["tool_results"] or 0
    session.branch_point_count = (
        entries.exclude(parent_id=None).values("parent_id").annotate(n=Count("id")).filter(n__gt=1).count()
    )
    session.models_used = sorted(set(entries.exclude(model="").values_list("model", flat=True).distinct()))
    if move_leaf or session.leaf_id is None:
        # Like the agent on reload: the leaf is the last entry (a leaf moved in Arbor stays until the file
        # grows: then the agent has moved on).
        last = entries.exclude(entry_id="").exclude(type="session").order_by("-seq").values_list("entry_id")
        row = last.first()
        session.leaf_id = row[0] if row else None
    if not session.title:
        names = entries.filter(type="session_info").order_by("-seq").values_list("raw", flat=True)
        for raw in names[:50]:
            name = orjson.loads(raw).get("name")
            if isinstance(name, str) and name.strip():
                session.title = name.strip()[:500]
                break
    if not session.title and session.parent_session and session.subagent_kind in ("", "clone"):
        # A fork (`/branch`, a /tan clone) shares its original's first prompt: its own title tells them apart
        # (a subagent's first prompt is its own task: that is its title).
        parent = session.parent()
        if parent is not None:
            session.title = f"Fork of {parent.display_title}"[:500]
    session.next_seq = max(session.next_seq, entries.max_seq() + 1)


def add_to_totals(session: AgentSession, first_new_seq: int) -> None:
    """Bring the totals :func:`update_totals` keeps up to date after entries from ``first_new_seq`` on were
    appended (and none removed): the same figures, reading only the new rows and their parents' children."""
    entries = session.entries.all()
    new = entries.filter(seq__gte=first_new_seq)
    totals = _totals_of(new)
    if not totals["count"]:
        return
    session.entry_count += totals["count"]
    if totals["first"] is not None:
        first = session.first_timestamp
        session.first_timestamp = totals["first"] if first is None else min(first, totals["first"])
    if totals["last"] is not None:
        last = session.last_timestamp
        session.last_timestamp = totals["last"] if last is None else max(last, totals["last"])
    session.input_tokens += int(totals["input"] or 0)
    session.output_tokens += int(totals["output"] or 0)
    session.cost += float(totals["cost"] or 0)
    session.message_count += totals["messages"] or 0
    session.tool_call_count += totals["tool_results"] or 0
    # A parent becomes a branch point when it has a second child and the first was already stored.
    parents = sorted(set(new.exclude(parent_id=None).values_list("parent_id", flat=True)))
    for start in range(0, len(parents), 500):
        chunk = parents[start : start + 500]
        now: dict[str, int] = {}
        before: dict[str, int] = {}
        for parent_id, seq in entries.filter(parent_id__in=chunk).values_list("parent_id", "seq"):
            now[parent_id] = now.get(parent_id, 0) + 1
            if seq < first_new_seq:
                before[parent_id] = before.get(parent_id, 0) + 1
        session.branch_point_count += sum(n > 1 for n in now.values()) - sum(n > 1 for n in before.values())
    models_new = set(new.exclude(model="").values_list("model", flat=True).distinct())
    if not models_new <= set(session.models_used):
        session.models_used = sorted(set(session.models_used) | models_new)
    last_id = new.exclude(entry_id="").exclude(type="session").order_by("-seq").values_list("entry_id")
    row = last_id.first()
    if row is not None:
        session.leaf_id = row[0]
    if not session.title:
        names = new.filter(type="session_info").order_by("-seq").values_list("raw", flat=True)
        for raw in names[:50]:
            name = orjson.loads(raw).get("name")
            if isinstance(name, str) and name.strip():
                session.title = name.strip()[:500]
                break
    session.next_seq = max(session.next_seq, entries.max_seq() + 1)
