"""Appending entries to a session (§9.1) and moving its leaf."""

from __future__ import annotations

from typing import Any

from ..entries import base_entry, branch_summary_entry, defined, label_entry
from ..jsonl import UNDEFINED
from .values import Entry, EntryNotFound
from .writing import _Writing


class _Appending(_Writing):
    """Moving the leaf and appending entries (§9.1): a fresh id, the leaf as parent, now."""

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
