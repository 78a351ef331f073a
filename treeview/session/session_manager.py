"""The session tree: load, index, navigate and append, with oh-my-pi v15 semantics (§8–§10).

Entries are plain dicts exactly as parsed (key order kept). Every entry loaded from a file remembers where its
exact text is, so an untouched entry is always written back byte for byte; new entries are serialized as the
original serializes them (:func:`~treeview.session.jsonl.dumps`).

Arbor never rewrites a user's file: appends go to the end of a file only when it still ends where it was read,
and a file that needed a migration is never written in place (write a migrated copy instead).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agents import Agent, AgentDecision, check_agent, detect_agent
from .context import SessionContext, context_for_path
from .context_latest import omp_context_for_path, pi_context_for_path
from .entries import base_entry, branch_summary_entry, defined, label_entry
from .headerless import headerless_session_id
from .ids import generate_id, iso_now, new_session_id
from .jsonl import (
    UNDEFINED,
    ParsedFile,
    ParsedLine,
    ParseWarning,
    SessionFileChanged,
    SessionFileError,
    dumps,
    parse_session_bytes,
    parse_session_file,
    title_slot,
)
from .migrations import CURRENT_SESSION_VERSION, IdMaker, migrate_to_current_version, stable_id_maker
from .tree import build_forest, cycle_message, duplicate_message

__all__ = [
    "EntryNotFound",
    "SessionFileChanged",
    "SessionManager",
    "TreeNode",
    "UsageStatistics",
    "session_file_name",
]

Entry = dict[str, Any]

# buildSessionContext by agent: oh-my-pi 18.3.4, pi 1.6.0 (and v15's, for the v15 reference tests).
_CONTEXT_BUILDERS = {"omp": omp_context_for_path, "pi": pi_context_for_path, "omp15": context_for_path}


class EntryNotFound(KeyError):
    """An id that is not in the session. ``str()`` is the original's message: ``Entry <id> not found``."""

    def __init__(self, entry_id: object) -> None:
        super().__init__(entry_id)
        self.entry_id = entry_id

    def __str__(self) -> str:
        return f"Entry {self.entry_id} not found"


@dataclass(slots=True)
class TreeNode:
    """A node of :meth:`SessionManager.get_tree`: the live entry, its sorted children, its label."""

    entry: Entry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


@dataclass(slots=True)
class UsageStatistics:
    """Token and cost totals (see :meth:`SessionManager.usage_statistics`)."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    premium_requests: float = 0
    cost: float = 0

    def add(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.input += _number(usage.get("input"))
        self.output += _number(usage.get("output"))
        self.cache_read += _number(usage.get("cacheRead"))
        self.cache_write += _number(usage.get("cacheWrite"))
        self.premium_requests += _number(usage.get("premiumRequests"))
        cost = usage.get("cost")
        self.cost += _number(cost.get("total")) if isinstance(cost, dict) else 0


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<timestamp with : and . replaced by ->_<id>.jsonl`` (§1.2)."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


class SessionManager:
    """One session: its header, entries in file order, the id index, resolved labels and the leaf."""

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

    # ------------------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def create(
        cls, cwd: str, session_dir: str | None = None, parent_session: str | None = None
    ) -> SessionManager:
        """A new, empty session, written under ``session_dir`` (if given) once it has an assistant message."""
        manager = cls(cwd, session_dir, persist=session_dir is not None)
        manager.new_session(parent_session)
        return manager

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, persist: bool = False, agent: Agent | None = None
    ) -> SessionManager:
        """Load a session file. ``persist=True`` appends new entries to it (only while it is unchanged).

        ``agent`` picks whose rules apply (default: detected from the file). A file whose first object is not
        a header is read with a made-up one (its id from the file's name or path; a warning) and never
        appended to: the agents do not open it (treeview/session/headerless.py).
        """
        file_path = Path(path).resolve()
        with _gc_paused():
            parsed = parse_session_file(file_path, headerless_session_id(file_path))
            if parsed.header_line is None:
                persist = False
            manager = cls(persist=persist, agent=agent)
            manager._load(parsed, str(file_path))
        manager._file_size = parsed.size
        return manager

    @classmethod
    def from_text(cls, text: str, path: str | None = None, *, agent: Agent | None = None) -> SessionManager:
        """Load a session from its text (nothing is ever written)."""
        return cls.from_bytes(text.encode("utf-8", errors="surrogatepass"), path=path, agent=agent)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        path: str | None = None,
        *,
        persist: bool = False,
        make_id: IdMaker | None = None,
        agent: Agent | None = None,
        headerless_id: str | None = None,
    ) -> SessionManager:
        """Load a session from a file's bytes. Raises ``SessionFileError`` when there is no valid header,
        unless ``headerless_id`` is given (the id of a header-less file, treeview/session/headerless.py)."""
        with _gc_paused():
            parsed = parse_session_bytes(data, headerless_id)
            if parsed.header_line is None:
                persist = False
            manager = cls(persist=persist, agent=agent)
            manager._load(parsed, path, make_id)
        return manager

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

    # ------------------------------------------------------------------------------------------------------
    # Reading

    @property
    def session_id(self) -> str:
        value = self.header.get("id")
        return value if isinstance(value, str) else ""

    @property
    def version(self) -> Any:
        """The format version after migration (3 for every file Arbor has read)."""
        return self.header.get("version")

    @property
    def source_version(self) -> Any:
        """The format version the file was written in (1 when its header has none)."""
        return self._source_version()

    @property
    def session_name(self) -> str | None:
        """The title: the title slot, else the header ``title``, else the last ``session_info`` name."""
        if self.title_slot is not None:
            title = self.title_slot.get("title")
            return title or None
        title = self.header.get("title")
        if isinstance(title, str) and title:
            return title
        name = None
        for entry in self.entries:
            if entry.get("type") == "session_info" and isinstance(entry.get("name"), str):
                name = entry["name"].strip() or name
        return name

    def get_leaf_id(self) -> str | None:
        return self.leaf_id

    def get_leaf_entry(self) -> Entry | None:
        return self.by_id.get(self.leaf_id) if self.leaf_id else None

    def get_entry(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def get_children(self, parent_id: str) -> list[Entry]:
        """Every entry whose parent is ``parent_id``, in index (file) order, unsorted (§10.3)."""
        return [entry for entry in self.by_id.values() if entry.get("parentId") == parent_id]

    def get_label(self, entry_id: str) -> str | None:
        return self.labels.get(entry_id)

    def get_branch(self, from_id: str | None = None) -> list[Entry]:
        """The path from the root to ``from_id`` (default: the leaf), root first; ``[]`` for an unknown id."""
        start = from_id if from_id is not None else self.leaf_id
        position = self._pos.get(start, -1) if start else -1
        if position < 0:
            return []
        entries = self.entries
        return [entries[p] for p in reversed(self._path_positions(position))]

    def path_ids(self, entry_id: str) -> list[str]:
        """The ids of :meth:`get_branch` (``entry_id``'s path, root first)."""
        return [entry["id"] for entry in self.get_branch(entry_id)]

    def get_entries(self, entry_ids: Sequence[str]) -> list[Entry]:
        """The entries with these ids, in that order (unknown ids are left out)."""
        by_id = self.by_id
        return [by_id[entry_id] for entry_id in entry_ids if entry_id in by_id]

    def get_last_model_change_role(self) -> str | None:
        for entry in reversed(self.get_branch()):
            if entry.get("type") == "model_change":
                role = entry.get("role")
                return "default" if role is None else role
        return None

    def get_tree(self) -> list[TreeNode]:
        """The whole session as a forest (§10.6): roots in file order, children oldest first.

        Orphans and self-parented entries become roots. Entries caught in a parent cycle (which the original
        silently drops) are kept: the first of each cycle in file order becomes a root.
        """
        with _gc_paused():
            return self._build_tree()

    def _build_tree(self) -> list[TreeNode]:
        nodes = {
            entry_id: TreeNode(entry, [], self.labels.get(entry_id)) for entry_id, entry in self.by_id.items()
        }
        roots, cycle_ids = build_forest(nodes)
        for entry_id in cycle_ids:
            message = cycle_message(entry_id)
            if not any(w.message == message for w in self.warnings):
                self.warnings.append(ParseWarning(0, message))
        return roots

    def _empty_context(self) -> SessionContext:
        """The context of an empty path, as the builder of this file's rules would leave it (the newest
        agents' builders record each message's origin: none here)."""
        return SessionContext() if self.agent == "omp15" else SessionContext(origins=[])

    def build_session_context(self, leaf_id: str | None | Any = UNDEFINED) -> SessionContext:
        """The context at ``leaf_id`` (default: the current leaf)."""
        leaf = self.leaf_id if leaf_id is UNDEFINED else leaf_id
        if leaf is None:
            return self._empty_context()
        position = self._pos.get(leaf, -1) if isinstance(leaf, str) and leaf else -1
        if position < 0:
            # An unknown leaf falls back to the last entry, as in the original.
            kinds = self._types
            position = next((i for i in range(len(kinds) - 1, -1, -1) if kinds[i] != "session"), -1)
            if position < 0:
                return self._empty_context()
        positions = self._path_positions(position)
        positions.reverse()
        entries, kinds = self.entries, self._types
        path = [entries[p] for p in positions]

        def find(entry_id: Any, stop: int) -> int:
            target = self._pos.get(entry_id) if isinstance(entry_id, str) else None
            if target is not None:
                try:
                    found = positions.index(target, 0, stop)
                except ValueError:
                    pass
                else:
                    return found
            # Not where the index says (a duplicate id, say): look for it the slow way, like the original.
            return next((i for i in range(stop) if path[i].get("id") == entry_id), stop)

        builder = _CONTEXT_BUILDERS[self.agent]
        return builder(path, [kinds[p] for p in positions], find)

    def llm_messages(self, messages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """What the model receives for ``messages`` (default: the leaf's context), by this agent's rules."""
        from .messages import convert_to_llm

        if messages is None:
            messages = self.build_session_context().messages
        return convert_to_llm(messages, self.agent)

    def label_timestamp(self, entry_id: str) -> str | None:
        """When the current label of ``entry_id`` was set (the timestamp of its label entry)."""
        return self.label_times.get(entry_id)

    def usage_statistics(self) -> UsageStatistics:
        """Token and cost totals over the whole file, as the agent's ``/session`` adds them up.

        Both count every assistant message. oh-my-pi adds a ``task`` tool result's subagent usage and its
        ``model_usage`` side calls; pi adds its ``usage`` entries and the usage recorded on compactions,
        branch summaries and tool results.
        """
        stats = UsageStatistics()
        pi = self.agent == "pi"
        for entry in self.entries:
            kind = entry.get("type")
            if kind != "message":
                if (pi and kind in ("usage", "compaction", "branch_summary")) or (
                    not pi and kind == "model_usage"
                ):
                    stats.add(entry.get("usage"))
                continue
            message = entry.get("message")
            if not isinstance(message, dict):
                continue
            if message.get("role") == "assistant":
                stats.add(message.get("usage"))
            elif message.get("role") == "toolResult":
                if pi:
                    stats.add(message.get("usage"))
                elif message.get("toolName") == "task":
                    details = message.get("details")
                    if isinstance(details, dict):
                        stats.add(details.get("usage"))
        return stats

    # ------------------------------------------------------------------------------------------------------
    # Moving the leaf (nothing is written)

    def branch(self, entry_id: str) -> None:
        if entry_id not in self.by_id:
            raise EntryNotFound(entry_id)
        self.leaf_id = entry_id

    def reset_leaf(self) -> None:
        self.leaf_id = None

    # ------------------------------------------------------------------------------------------------------
    # Appending (§9.1): parentId = current leaf, a fresh id, timestamp now; the leaf moves to the new entry.

    def _base(self, kind: str) -> Entry:
        return base_entry(kind, self.leaf_id, self.by_id)

    def _append(self, entry: Entry) -> str:
        index = len(self.entries)
        self.entries.append(entry)
        self._lines.append(None)
        entry_id: str = entry["id"]
        self.by_id[entry_id] = entry
        self._pos[entry_id] = index
        self._types.append(entry.get("type"))
        self._parent.append(self._resolve_parent(index, entry))
        for orphan in self._dangling.pop(entry_id, ()):
            self._parent[orphan] = index
        self.leaf_id = entry_id
        self._persist()
        return entry_id

    def append_message(self, message: dict[str, Any]) -> str:
        entry = self._base("message")
        entry["message"] = message
        return self._append(entry)

    def append_thinking_level_change(self, thinking_level: str | None = None) -> str:
        entry = self._base("thinking_level_change")
        entry["thinkingLevel"] = thinking_level
        return self._append(entry)

    def append_service_tier_change(self, service_tier: Any) -> str:
        entry = self._base("service_tier_change")
        entry["serviceTier"] = service_tier
        return self._append(entry)

    def append_mode_change(self, mode: str, data: Any = UNDEFINED) -> str:
        entry = self._base("mode_change")
        entry.update(mode=mode, data=data)
        return self._append(defined(entry))

    def append_model_change(self, model: str, role: Any = UNDEFINED) -> str:
        entry = self._base("model_change")
        entry.update(model=model, role=role)
        return self._append(defined(entry))

    def append_session_init(
        self, system_prompt: Any, task: str, tools: list[str], output_schema: Any = UNDEFINED
    ) -> str:
        entry = self._base("session_init")
        entry.update(systemPrompt=system_prompt, task=task, tools=tools, outputSchema=output_schema)
        return self._append(defined(entry))

    def append_compaction(
        self,
        summary: str,
        short_summary: Any,
        first_kept_entry_id: str,
        tokens_before: float,
        details: Any = UNDEFINED,
        from_extension: Any = UNDEFINED,
        preserve_data: Any = UNDEFINED,
    ) -> str:
        entry = self._base("compaction")
        entry.update(
            summary=summary,
            shortSummary=short_summary,
            firstKeptEntryId=first_kept_entry_id,
            tokensBefore=tokens_before,
            details=details,
            fromExtension=from_extension,
            preserveData=preserve_data,
        )
        return self._append(defined(entry))

    def append_custom_entry(self, custom_type: str, data: Any = UNDEFINED) -> str:
        # The two "custom" types put their payload keys before the base keys (§5).
        entry: Entry = {"type": "custom", "customType": custom_type, "data": data}
        entry.update(self._base("custom"))
        return self._append(defined(entry))

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: Any,
        display: bool,
        details: Any = UNDEFINED,
        attribution: str = "agent",
    ) -> str:
        entry: Entry = {
            "type": "custom_message",
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
            "attribution": attribution,
        }
        entry.update(self._base("custom_message"))
        return self._append(defined(entry))

    def append_mcp_tool_selection(self, selected_tool_names: list[str]) -> str:
        entry = self._base("mcp_tool_selection")
        entry["selectedToolNames"] = list(selected_tool_names)
        return self._append(entry)

    def append_ttsr_injection(self, rule_names: list[str]) -> str:
        entry = self._base("ttsr_injection")
        entry["injectedRules"] = rule_names
        return self._append(entry)

    def append_reset_boundary(self) -> str:
        """oh-my-pi's ``/clear``: the context starts after this entry (the history stays in the file)."""
        return self._append(self._base("reset_boundary"))

    def append_context_edit(self, target_id: str, replacement: dict[str, Any] | None) -> str:
        """pi's context edit: ``target_id``'s content as the model sees it (``None`` removes it)."""
        entry = self._base("context_edit")
        entry["targetId"] = target_id
        entry["replacement"] = replacement
        return self._append(entry)

    def append_label_change(self, target_id: str, label: str | None = None) -> str:
        """Label (``None``/empty: unlabel) an entry. The label entry is a child of the leaf (§10.9)."""
        if target_id not in self.by_id:
            raise EntryNotFound(target_id)
        entry_id = self._append(label_entry(self.leaf_id, self.by_id, target_id, label))
        self._apply_label(target_id, label, self.by_id[entry_id].get("timestamp"))
        return entry_id

    def append_session_info(self, name: str) -> str:
        """pi-mono's session name entry (§5.14)."""
        entry = self._base("session_info")
        entry["name"] = name.strip()
        return self._append(entry)

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = UNDEFINED,
        from_extension: Any = UNDEFINED,
    ) -> str:
        """Move the leaf to ``branch_from_id`` and hang a ``branch_summary`` there (§10.8)."""
        if branch_from_id is not None and branch_from_id not in self.by_id:
            raise EntryNotFound(branch_from_id)
        self.leaf_id = branch_from_id
        return self._append(
            branch_summary_entry(branch_from_id, self.by_id, summary, details, from_extension)
        )

    # ------------------------------------------------------------------------------------------------------
    # New sessions

    def _new_header(self, parent_session: str | None) -> Entry:
        header: Entry = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": new_session_id(),
            "timestamp": iso_now(),
            "cwd": self.cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        return header

    def _replace(self, header: Entry, entries: list[Entry]) -> None:
        self.header = header
        self.title_slot = None
        self._source = None
        self._header_line = None
        self._header_changed = False
        self.entries = entries
        self._lines = [None] * len(entries)
        self._changed = set()
        self.warnings = []
        self.migrated = False
        self._written = 0
        self._file_size = None
        self._on_disk = False
        if self.session_dir is not None:
            file_name = session_file_name(header["timestamp"], header["id"])
            self.session_file = str(Path(self.session_dir) / file_name)
        else:
            self.session_file = None
        self._build_index()

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (§10.11). Returns its future file path (None in memory)."""
        self._replace(self._new_header(parent_session), [])
        return self.session_file

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this session with a new one holding only the path to ``leaf_id`` (§10.10, ``/branch``).

        Label entries on the path are dropped and the labels of path entries re-created as fresh label
        entries at the end. When persisting, the new file is written at once; returns its path. What the
        newest agents add: oh-my-pi 18 starts the file with a title slot and keeps the title in the header;
        pi 1.6 re-links each kept entry to the one before it (an entry whose parent was a dropped label
        keeps its place) and gives the re-created labels their original timestamps.
        """
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFound(leaf_id)
        kept = _rechained(path) if self.agent == "pi" else [e for e in path if e.get("type") != "label"]
        header, label_entries, slot = self._branch_parts(
            {entry["id"] for entry in kept}, kept[-1]["id"] if kept else None
        )
        self._replace(header, kept + label_entries)
        self.title_slot = slot
        if self.persist and self.session_file is not None:
            # Written immediately, even without an assistant message (§10.10 step 6).
            self._write_new_file()
        return self.session_file

    def branch_export(
        self, path: Iterable[Entry], kept_ids: set[str], last_kept: str | None
    ) -> tuple[Entry, Iterator[str]]:
        """The file :meth:`create_branched_session` writes, made lazily from ``path`` (the entries root →
        leaf, read as they are needed) without loading or changing this session: (new header, its lines).
        ``kept_ids`` are the ids of the path's entries that are not labels, ``last_kept`` the last of them;
        this manager needs only its header, title slot, cwd, file and labels."""
        header, label_entries, slot = self._branch_parts(set(kept_ids), last_kept)

        def lines() -> Iterator[str]:
            if slot is not None:
                yield dumps(slot) + "\n"
            yield dumps(header) + "\n"
            if self.agent == "pi":
                kept: Iterable[Entry] = _rechain(path)
            else:
                kept = (entry for entry in path if entry.get("type") != "label")
            for entry in kept:
                yield dumps(entry) + "\n"
            for entry in label_entries:
                yield dumps(entry) + "\n"

        return header, lines()

    def _branch_parts(
        self, kept_ids: set[str], last_kept: str | None
    ) -> tuple[Entry, list[Entry], Entry | None]:
        """The /branch file's header, re-created labels and title slot (omp), for a path whose kept entries
        (labels dropped) have ``kept_ids``, the last being ``last_kept``; labels' ids are added."""
        pi = self.agent == "pi"
        labels = [(target, label) for target, label in self.labels.items() if target in kept_ids]
        label_times = dict(self.label_times)
        header = self._new_header(self.session_file)
        if self.agent == "omp":
            header = self._omp_branch_header(header)
        parent_id = last_kept
        label_entries: list[Entry] = []
        for target_id, label in labels:
            label_entry = {
                "type": "label",
                "id": generate_id(kept_ids),
                "parentId": parent_id,
                # pi keeps when the label was set; oh-my-pi stamps it with the new session's time.
                "timestamp": label_times.get(target_id, UNDEFINED) if pi else header["timestamp"],
                "targetId": target_id,
                "label": label,
            }
            kept_ids.add(label_entry["id"])
            label_entries.append(label_entry)
            parent_id = label_entry["id"]
        slot = self._branch_title_slot(header) if self.agent == "omp" else None
        return header, label_entries, slot

    def _omp_branch_header(self, header: Entry) -> Entry:
        # oh-my-pi 18 carries the title into the new header (undefined keys are left out).
        ordered: Entry = {key: header[key] for key in ("type", "version", "id", "timestamp", "cwd")}
        title = self.session_name if self.title_slot is not None else self.header.get("title")
        if isinstance(title, str):
            ordered["title"] = title
        source = self.header.get("titleSource")
        if self.title_slot is not None and isinstance(self.title_slot.get("source"), str):
            source = self.title_slot["source"]
        if isinstance(source, str):
            ordered["titleSource"] = source
        if "parentSession" in header:
            ordered["parentSession"] = header["parentSession"]
        return ordered

    @staticmethod
    def _branch_title_slot(header: Entry) -> Entry:
        title = header.get("title")
        source = header.get("titleSource")
        return title_slot(
            title if isinstance(title, str) else "",
            header["timestamp"],
            source if isinstance(source, str) else None,
        )

    # ------------------------------------------------------------------------------------------------------
    # Writing

    def raw_line(self, index: int) -> str:
        """The exact text of entry ``index`` as it is (or will be) in the file, without the newline."""
        parsed = self._lines[index]
        if parsed is not None and self._source is not None and index not in self._changed:
            return self._source.raw(parsed)
        return dumps(self.entries[index])

    def header_line(self) -> str:
        if self._header_line is not None and self._source is not None and not self._header_changed:
            return self._source.raw(self._header_line)
        return dumps(self.header)

    def iter_lines(self, *, title_slot: bool = True) -> Iterator[str]:
        """Every line of the file (title slot, header, entries), each ending in a newline."""
        source = self._source
        data = source.load_data() if source is not None else b""

        def text(parsed: ParsedLine | None, changed: bool, value: Entry) -> str:
            if parsed is None or changed or source is None:
                return dumps(value)
            return source.raw_from(data, parsed)

        if title_slot and self.title_slot is not None:
            slot_line = source.title_slot_line if source is not None else None
            yield text(slot_line, False, self.title_slot) + "\n"
        yield text(self._header_line, self._header_changed, self.header) + "\n"
        changed = self._changed
        for index, entry in enumerate(self.entries):
            yield text(self._lines[index], index in changed, entry) + "\n"

    def serialize(self, *, title_slot: bool = True) -> str:
        """The whole file: untouched lines byte for byte, migrated or new entries as omp writes them."""
        return "".join(self.iter_lines(title_slot=title_slot))

    def write_to(self, path: str | os.PathLike[str], *, title_slot: bool = True) -> None:
        """Write the whole session to a new file (refuses to overwrite an existing one)."""
        with open(path, "x", encoding="utf-8", newline="", errors="surrogatepass") as handle:
            handle.writelines(self.iter_lines(title_slot=title_slot))

    @property
    def pending_entries(self) -> list[Entry]:
        """Entries appended in memory that are not in the file yet."""
        return self.entries[self._written :]

    def ensure_on_disk(self) -> None:
        """Write a new session now instead of waiting for its first assistant message (§9.2)."""
        if self.session_file is None:
            raise ValueError("this session has no file")
        if not self._on_disk:
            self._write_new_file()
        else:
            self.flush()

    def _persist(self) -> None:
        if not self.persist or self.session_file is None:
            return
        if self._on_disk:
            self.flush()
        elif any(_is_assistant(entry) for entry in self.entries):
            self._write_new_file()

    def _write_new_file(self) -> None:
        assert self.session_file is not None
        Path(self.session_file).parent.mkdir(parents=True, exist_ok=True)
        data = "".join(self.iter_lines()).encode("utf-8", errors="surrogatepass")
        with open(self.session_file, "xb") as handle:
            handle.write(data)
        self._on_disk = True
        self._written = len(self.entries)
        self._file_size = len(data)

    def flush(self) -> None:
        """Append the pending entries to the file, only if it still ends exactly where it was read."""
        if self.session_file is None or self._written >= len(self.entries):
            return
        if self.migrated:
            raise SessionFileChanged(
                f"{self.session_file} is in an older format (version {self._source_version()}); Arbor "
                "does not rewrite it in place. Write a migrated copy instead."
            )
        data = "".join(self.raw_line(i) + "\n" for i in range(self._written, len(self.entries))).encode(
            "utf-8", errors="surrogatepass"
        )
        with open(self.session_file, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if self._file_size is not None and size != self._file_size:
                raise SessionFileChanged(
                    f"{self.session_file} changed on disk ({self._file_size} bytes when read, {size} now); "
                    "re-read it before appending"
                )
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    raise SessionFileChanged(
                        f"{self.session_file} does not end with a newline (a write may be in progress); "
                        "re-read it before appending"
                    )
            handle.write(data)
        self._written = len(self.entries)
        self._file_size = (self._file_size or 0) + len(data)

    def _source_version(self) -> Any:
        if not self.migrated:
            return self.header.get("version", 1)
        return self._original_version


def _rechained(path: list[Entry]) -> list[Entry]:
    """pi's /branch: the path without its label entries, each entry re-linked to the kept one before it (a
    compaction whose first kept entry was a dropped label points at the entry that took its place)."""
    return list(_rechain(path))


def _rechain(path: Iterable[Entry]) -> Iterator[Entry]:
    """:func:`_rechained`, one entry at a time (a streamed /branch download)."""
    replacement: dict[Any, Any] = {}
    pending: list[Any] = []
    parent_id: Any = None
    for entry in path:
        if entry.get("type") == "label":
            pending.append(entry.get("id"))
            continue
        for label_id in pending:
            replacement[label_id] = entry.get("id")
        pending.clear()
        copy = {**entry, "parentId": parent_id}
        if entry.get("type") == "compaction":
            first = entry.get("firstKeptEntryId")
            if first != entry.get("id"):
                copy["firstKeptEntryId"] = replacement.get(first, first)
        yield copy
        parent_id = entry.get("id")


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


def _is_assistant(entry: Entry) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"
