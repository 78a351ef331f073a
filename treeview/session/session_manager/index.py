"""Loading a session into a ``SessionManager``: its state and the index of its entries."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..agents import Agent, AgentDecision, check_agent, detect_agent
from ..jsonl import ParsedFile, ParsedLine, ParseWarning, SessionFileError
from ..migrations import CURRENT_SESSION_VERSION, IdMaker, migrate_to_current_version, stable_id_maker
from ..tree import duplicate_message
from .values import Entry


class _Index:
    """A loaded session's state and its index: ids, parent positions, labels, the leaf."""

    def __init__(
        self,
        cwd: str = "",
        session_dir: str | None = None,
        *,
        persist: bool = False,
        agent: Agent | None = None,
    ) -> None:
        self.cwd = cwd
        # Whose rules apply (see agents.py): given, else detected from the file on load (omp for a new one).
        self.agent: Agent = check_agent(agent) if agent is not None else "omp"
        self.agent_decision = AgentDecision(self.agent, "given" if agent is not None else "new session")
        self._agent_given = agent is not None
        self.session_dir = session_dir
        self.persist = persist
        self.session_file: str | None = None
        self.header: Entry = {}
        self.title_slot: Entry | None = None
        self.entries: list[Entry] = []
        self.by_id: dict[str, Entry] = {}
        self.labels: dict[str, str] = {}
        # When each current label was set (its label entry's timestamp; pi's tree shows it with Shift+T).
        self.label_times: dict[str, str] = {}
        self.leaf_id: str | None = None
        self.warnings: list[ParseWarning] = []
        self.migrated = False
        self._original_version: Any = CURRENT_SESSION_VERSION
        # Where each entry's exact text is (None for an entry created in memory); entries changed in memory
        # (by a migration) are in _changed and are serialized again.
        self._source: ParsedFile | None = None
        self._header_line: ParsedLine | None = None
        self._header_changed = False
        self._lines: list[ParsedLine | None] = []
        self._changed: set[int] = set()
        # The index (see _build_index): position of each id, and per position its type and parent position.
        self._pos: dict[str, int] = {}
        self._types: list[Any] = []
        self._parent: list[int] = []
        self._dangling: dict[str, list[int]] = {}
        # Entries [0, _written) are in the file on disk, which is _file_size bytes long.
        self._written = 0
        self._file_size: int | None = None
        self._on_disk = False

    def _load(self, parsed: ParsedFile, path: str | None, make_id: IdMaker | None = None) -> None:
        assert parsed.header is not None  # (no header line: a header-less file, read with a made-up one)
        self._source = parsed
        self.session_file = path
        self.session_dir = str(Path(path).parent) if path else None
        self.header = parsed.header
        self.title_slot = parsed.title_slot
        if self._agent_given:
            if self.agent == "pi" and parsed.title_slot is not None:
                # pi 1.6 refuses a file whose first line is omp's title slot (and leaves it alone).
                raise SessionFileError("not a valid pi session: the first line is oh-my-pi's title slot")
        else:
            entries = (line.value for line in parsed.entries)
            self.agent_decision = detect_agent(
                parsed.header, entries, title_slot=parsed.title_slot is not None
            )
            self.agent = self.agent_decision.agent
        self._header_line = parsed.header_line
        self.entries = [line.value for line in parsed.entries]
        self._lines = list(parsed.entries)
        self.warnings = list(parsed.warnings)
        cwd = self.header.get("cwd")
        self.cwd = cwd if isinstance(cwd, str) else ""
        self._original_version = self.header.get("version", 1)
        objects = [self.header, *self.entries]
        if make_id is None and isinstance(self.header.get("id"), str):
            # v1 entries get ids derived from the session id, the same at every load and in the database, so
            # an id printed by one command can be used by the next (the original draws random ones).
            make_id = stable_id_maker(self.header["id"])
        changed = (
            migrate_to_current_version(objects, make_id) if make_id else migrate_to_current_version(objects)
        )
        if changed:
            self.migrated = True
            self._header_changed = 0 in changed
            self._changed = {index - 1 for index in changed if index > 0}
        self._written = len(self.entries)
        self._on_disk = path is not None
        self._build_index()

    def _build_index(self) -> None:
        self.by_id = {}
        self.labels = {}
        self.label_times = {}
        self.leaf_id = None
        self._pos = {}
        for index, entry in enumerate(self.entries):
            entry_id = entry.get("id")
            if entry.get("type") == "session":
                self._warn(index, "a second session header inside the file is ignored")
                continue
            if not isinstance(entry_id, str):
                self._warn(index, "entry without a string id is kept but cannot be part of the tree")
                continue
            if entry_id in self.by_id:
                self._warn(index, duplicate_message(entry_id))
            self.by_id[entry_id] = entry
            self._pos[entry_id] = index
            self.leaf_id = entry_id
            if entry.get("type") == "label":
                self._apply_label(entry.get("targetId"), entry.get("label"), entry.get("timestamp"))
        # Parent links as positions, resolved once: walking a 90,000-deep path over a list of ints is several
        # times faster than chasing ids through the dict (the entries are scattered over a large heap).
        self._types = [entry.get("type") for entry in self.entries]
        self._parent = []
        self._dangling = {}
        for index, entry in enumerate(self.entries):
            self._parent.append(self._resolve_parent(index, entry))

    def _resolve_parent(self, index: int, entry: Entry) -> int:
        parent_id = entry.get("parentId")
        if not parent_id or not isinstance(parent_id, str):
            return -1
        position = self._pos.get(parent_id, -1)
        if position < 0:
            # An orphan: adopt it should an entry with that id be appended later.
            self._dangling.setdefault(parent_id, []).append(index)
        return position

    def _path_positions(self, start: int) -> list[int]:
        """Positions from ``start`` up to its root (leaf first). Stops at a repeated entry (a cycle)."""
        parent = self._parent
        path = []
        position = start
        limit = len(parent)
        while position >= 0:
            path.append(position)
            position = parent[position]
            if len(path) > limit:
                # Only a parent cycle makes a path longer than the session: keep it up to the first repeat.
                return _until_repeat(path)
        return path

    def _warn(self, index: int, message: str) -> None:
        self.warnings.append(ParseWarning(self.entry_line(index) or 0, message))

    def entry_line(self, index: int) -> int | None:
        """The physical line number entry ``index`` was read from (None for an entry created in memory)."""
        parsed = self._lines[index] if index < len(self._lines) else None
        return parsed.line if parsed is not None else None

    def _apply_label(self, target_id: Any, label: Any, timestamp: Any = None) -> None:
        if not isinstance(target_id, str):
            return
        if label:
            self.labels[target_id] = label
            if isinstance(timestamp, str):
                self.label_times[target_id] = timestamp
            else:
                self.label_times.pop(target_id, None)
        else:
            self.labels.pop(target_id, None)
            self.label_times.pop(target_id, None)

    def _source_version(self) -> Any:
        if not self.migrated:
            return self.header.get("version", 1)
        return self._original_version


def _until_repeat(path: list[int]) -> list[int]:
    seen: set[int] = set()
    for count, position in enumerate(path):
        if position in seen:
            return path[:count]
        seen.add(position)
    return path


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures.

    Loading a big session allocates hundreds of thousands of dicts; the collector would rescan all of them
    again and again (half of the load time) although they hold no reference cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
