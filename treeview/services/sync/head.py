"""The first half of one file's import: its state, the objects of the lines, the header, the session row."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import IO, Any

import orjson

from treeview.models import AgentSession
from treeview.services.columns import ToolCalls
from treeview.services.sync.entry_rows import _RowWriter
from treeview.services.sync.lines import _text
from treeview.services.sync.paths import _in_data_dir, in_session_dirs
from treeview.services.sync.result import Progress
from treeview.services.sync.sessions import _earlier_row, _no_header_message, guess_agent
from treeview.session.headerless import (
    headerless_session_id,
    headerless_warning,
    is_sdk_v4,
    sdk_v4_message,
    synthesized_header,
)
from treeview.session.jsonl import ParseWarning, SessionFileError, is_title_slot, parse_line
from treeview.session.subagents import subagent_place
from treeview.session.tree import cycle_message, duplicate_message, link_problems


class _FileHead:
    """What ``_Importer`` reads first: the objects of the lines, the header, the session row, parent links."""

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
