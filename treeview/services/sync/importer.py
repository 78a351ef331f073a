"""One sync of one file, in one transaction: ``_Importer`` reads the lines and stores the rows."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from typing import Any

import orjson
from django.db import connections, router, transaction

from treeview.models import AgentSession, Entry
from treeview.services.columns import entry_facts, entry_values
from treeview.services.sync.entry_rows import _ORIGIN_FILE, _RowWriter, insert_entry_rows
from treeview.services.sync.head import _FileHead
from treeview.services.sync.lines import _complete_end, _digest, _read_range, window_hashes
from treeview.services.sync.result import SyncResult
from treeview.services.sync.sessions import _link_family
from treeview.services.sync.totals import add_to_totals, update_totals
from treeview.session.jsonl import CHUNK_SIZE, iter_physical_lines
from treeview.session.migrations import Migrator, stable_id_maker

BATCH_SIZE = 2000


class _Importer(_FileHead):
    """One sync of one file, in one transaction."""

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
