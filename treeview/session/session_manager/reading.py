"""Reading a loaded session: ids, branches, the tree, the context the model sees, usage."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..context import SessionContext, context_for_path
from ..context_latest import omp_context_for_path, pi_context_for_path
from ..jsonl import UNDEFINED, ParseWarning
from ..tree import build_forest, cycle_message
from .index import _gc_paused, _Index
from .values import Entry, TreeNode, UsageStatistics

# buildSessionContext by agent: oh-my-pi 18.3.4, pi 1.6.0 (and v15's, for the v15 reference tests).
_CONTEXT_BUILDERS = {"omp": omp_context_for_path, "pi": pi_context_for_path, "omp15": context_for_path}


class _Reading(_Index):
    """Reading a session: its id and name, entries, branches, the tree, the context, usage."""

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
        from ..messages import convert_to_llm

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
