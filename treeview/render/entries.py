"""One view model per session entry, for the conversation pane's templates.

`render_entry(entry, tool_calls)` turns a parsed entry dict (as `SessionManager` holds it) into an
`EntryView`: a `kind` from `KINDS`, plain-text metadata, and a list of blocks (see `treeview.render.blocks`
for the HTML-vs-text conventions). Tool results are described with the call they answer, looked up in
`tool_calls` (build it with `build_tool_call_map` over the path, or let `render_entries` do it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from treeview.render.blocks import Field, NoticeBlock, json_block, markdown_block, plain_block
from treeview.render.entry_view import KINDS, MARKER_KINDS, EntryView, UsageView, new_view, usage_view
from treeview.render.messages import content_blocks, custom_message_view, message_view, summary_card
from treeview.render.text import as_text, one_line, opt_text
from treeview.render.tools import ToolCallMap, build_tool_call_map

__all__ = [
    "KINDS",
    "MARKER_KINDS",
    "EntryView",
    "UsageView",
    "full_block_text",
    "render_entries",
    "render_entry",
]

logger = logging.getLogger(__name__)


def _scalar_fields(data: Any, limit: int = 12) -> list[Field] | None:
    """A flat dict of scalars as fields; None when `data` is anything richer (show it as JSON instead)."""
    if not isinstance(data, dict) or len(data) > limit:
        return None
    if any(isinstance(value, dict | list) for value in data.values()):
        return None
    return [Field(as_text(key), one_line(as_text(value), 300)) for key, value in data.items()]


def _model_change(entry: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "model_change", "Model")
    model = entry.get("model")
    if model is None and (entry.get("provider") is not None or entry.get("modelId") is not None):
        model = f"{as_text(entry.get('provider'))}/{as_text(entry.get('modelId'))}"  # pi-mono / v1 shape
    view.model = opt_text(model)
    role = opt_text(entry.get("role"))
    view.summary = f"model: {view.model or '?'}" + (f" ({role})" if role and role != "default" else "")
    if entry.get("resolvedModelIsFallback") is True:
        view.summary += " (fallback)"
    return view


def _thinking_change(entry: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "thinking_change", "Thinking level")
    level = entry.get("thinkingLevel")
    view.summary = f"thinking: {as_text(level) if level is not None else 'off'}"  # null means off
    configured = opt_text(entry.get("configured"))
    if configured:
        view.summary += f" (configured: {configured})"
    return view


def _mode_change(entry: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "mode_change", "Mode")
    view.summary = f"mode: {as_text(entry.get('mode')) or 'none'}"
    data = entry.get("data")
    if data is not None:
        fields = _scalar_fields(data)
        if fields is None:
            view.blocks.append(json_block("data", data))
        else:
            view.fields = fields
    return view


def _label(entry: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "label", "Label")
    view.target_id = as_text(entry.get("targetId"))
    label = as_text(entry.get("label"))
    view.label = label or None  # an absent or empty label clears it
    if view.label:
        view.summary = f"label “{one_line(label)}” on {view.target_id}"
    else:
        view.summary = f"label cleared on {view.target_id}"
    return view


def _custom(entry: Mapping[str, Any]) -> EntryView:
    custom_type = as_text(entry.get("customType"))
    view = new_view(entry, "custom", custom_type or "Custom")
    view.custom_type = custom_type
    view.summary = f"extension state: {custom_type}" if custom_type else "extension state"
    if "data" in entry:
        view.blocks.append(json_block("data", entry.get("data")))
    return view


def _session_init(entry: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "session_init", "Subagent session")
    task = as_text(entry.get("task"))
    view.summary = one_line(task)
    if task.strip():
        view.blocks.append(markdown_block(task, 0))
    prompt = entry.get("systemPrompt")
    if isinstance(prompt, list):
        prompt = "\n\n".join(as_text(part) for part in prompt)
    if prompt is not None:
        view.blocks.append(plain_block("system prompt", prompt))
    tools = entry.get("tools")
    if isinstance(tools, list):
        view.fields.append(Field("tools", one_line(", ".join(as_text(tool) for tool in tools), 1000)))
    if entry.get("outputSchema") is not None:
        view.blocks.append(json_block("output schema", entry.get("outputSchema")))
    return view


def _names(value: Any) -> str:
    if isinstance(value, list):
        return one_line(", ".join(as_text(item) for item in value), 300)
    return one_line(as_text(value), 300)


def _state(entry: Mapping[str, Any]) -> EntryView:
    """Bookkeeping entries that only change state: a one-line marker each."""
    kind = entry.get("type")
    view = new_view(entry, "state", as_text(kind))
    if kind == "service_tier_change":
        tier = entry.get("serviceTier")
        view.summary = f"service tier: {_names(tier) if tier is not None else 'none'}"
    elif kind == "ttsr_injection":
        view.summary = f"rules injected: {_names(entry.get('injectedRules'))}"
    elif kind == "mcp_tool_selection":
        names = entry.get("selectedToolNames")
        count = len(names) if isinstance(names, list) else 0
        view.summary = f"MCP tools selected: {count}"
        view.fields.append(Field("tools", _names(names)))
    elif kind == "session_info":
        view.summary = f"session name: {one_line(as_text(entry.get('name')))}"
    elif kind == "title_change":
        view.summary = f"title: {one_line(as_text(entry.get('title')))}"
        for key in ("previousTitle", "source", "trigger"):
            if entry.get(key) is not None:
                view.fields.append(Field(key, one_line(as_text(entry.get(key)))))
    elif kind == "credential_pin":
        view.summary = f"credential pinned for {one_line(as_text(entry.get('provider')))}"
    elif kind == "reset_boundary":
        view.summary = "context cleared (/clear)"
    elif kind == "archive":
        view.target_id = as_text(entry.get("targetId"))
        archived = entry.get("archived") is True
        view.summary = f"{'archived' if archived else 'unarchived'} {view.target_id}"
    elif kind == "model_usage":
        view.model = opt_text(entry.get("model"))
        view.provider = opt_text(entry.get("provider"))
        view.api = opt_text(entry.get("api"))
        view.usage = usage_view(entry.get("usage"))
        view.stop_reason = opt_text(entry.get("stopReason"))
        view.error = opt_text(entry.get("errorMessage"))
        purpose = one_line(as_text(entry.get("purpose")))
        view.summary = f"side call: {purpose} ({view.model or '?'})"
    elif kind == "usage":
        # pi 1.6: tokens spent outside the conversation (a title, a summary); counted in the session totals.
        view.model = opt_text(entry.get("model"))
        view.provider = opt_text(entry.get("provider"))
        view.usage = usage_view(entry.get("usage"))
        note = one_line(as_text(entry.get("note") or entry.get("kind")))
        view.summary = f"usage: {note} ({view.model or '?'})"
    elif kind == "context_edit":
        # pi 1.6: what the model sees of the target from now on (its content replaced, or left out).
        view.target_id = as_text(entry.get("targetId"))
        replacement = entry.get("replacement")
        if replacement is None:
            view.summary = f"context edit: {view.target_id} left out of the context"
        else:
            view.summary = f"context edit: {view.target_id} replaced in the context"
            content = replacement.get("content") if isinstance(replacement, dict) else None
            view.blocks.extend(content_blocks(content))
    return view


_STATE_TYPES = frozenset(
    {
        "service_tier_change",
        "ttsr_injection",
        "mcp_tool_selection",
        "session_info",
        "title_change",
        "credential_pin",
        "reset_boundary",
        "archive",
        "model_usage",
        "usage",
        "context_edit",
    }
)

# Keys every entry has: left out of an unknown entry's JSON, which shows the rest.
_BASE_KEYS = frozenset({"type", "id", "parentId", "timestamp"})


def _unknown(entry: Mapping[str, Any]) -> EntryView:
    kind = as_text(entry.get("type"))
    view = new_view(entry, "unknown", kind or "Unknown entry")
    message = entry.get("message")
    if kind == "message" and isinstance(message, dict):
        view.role = as_text(message.get("role"))
        view.summary = f"[message: {one_line(view.role, 80)}]"
    else:
        view.summary = f"[{one_line(kind, 80)}]"
    view.blocks.append(
        json_block("entry", {key: value for key, value in entry.items() if key not in _BASE_KEYS})
    )
    return view


def _render(entry: Mapping[str, Any], tool_calls: ToolCallMap | None) -> EntryView:
    kind = entry.get("type")
    if kind == "message":
        return message_view(entry, tool_calls) or _unknown(entry)
    if kind in ("compaction", "branch_summary"):
        return summary_card(entry, entry, kind)
    if kind == "custom_message":
        return custom_message_view(entry, entry)
    if kind == "model_change":
        return _model_change(entry)
    if kind == "thinking_level_change":
        return _thinking_change(entry)
    if kind == "mode_change":
        return _mode_change(entry)
    if kind == "label":
        return _label(entry)
    if kind == "custom":
        return _custom(entry)
    if kind == "session_init":
        return _session_init(entry)
    if kind in _STATE_TYPES:
        return _state(entry)
    return _unknown(entry)


def render_entry(entry: Mapping[str, Any], tool_calls: ToolCallMap | None = None) -> EntryView:
    """The view model of one entry; `tool_calls` (id → (name, arguments)) describes tool results' calls.

    A bug here must not take the whole conversation down: an entry that fails to render is shown as an
    unknown entry with a notice, and the error is logged.
    """
    if not isinstance(entry, Mapping):
        entry = {"type": "", "value": entry}
    try:
        return _render(entry, tool_calls)
    except Exception:
        logger.exception("could not render entry %r", as_text(entry.get("id")))
        view = new_view(entry, "unknown", as_text(entry.get("type")) or "Unknown entry")
        view.blocks.append(NoticeBlock("This entry could not be rendered.", "error"))
        return view


def render_entries(
    entries: Iterable[Mapping[str, Any]], tool_calls: ToolCallMap | None = None
) -> list[EntryView]:
    """Render a sequence of entries (a path, root first); tool calls are collected from them if not given."""
    entries = list(entries)
    if tool_calls is None:
        tool_calls = build_tool_call_map(entries)
    return [render_entry(entry, tool_calls) for entry in entries]


def full_block_text(entry: Mapping[str, Any], index: int) -> str | None:
    """The whole text behind the block at `index` of an entry (a block's `index`), for "show all"; else None.

    Text, thinking and output blocks are cut for the first render; this returns their full source text.
    """
    kind = entry.get("type")
    source: Any = entry
    if kind == "message":
        source = entry.get("message")
        if not isinstance(source, dict):
            return None
        role = source.get("role")
        if role in ("bashExecution", "pythonExecution"):
            return as_text(source.get("output")) if index == 0 else None
        if role in ("compactionSummary", "branchSummary"):
            return as_text(source.get("summary")) if index == 0 else None
    elif kind in ("compaction", "branch_summary"):
        return as_text(entry.get("summary")) if index == 0 else None
    elif kind == "session_init":
        return as_text(entry.get("task")) if index == 0 else None
    elif kind != "custom_message":
        return None
    content = source.get("content")
    if isinstance(content, str):
        return as_text(content) if index == 0 else None
    if not isinstance(content, list) or not 0 <= index < len(content):
        return None
    block = content[index]
    if not isinstance(block, dict):
        return None
    if block.get("type") == "text":
        return as_text(block.get("text"))
    if block.get("type") == "thinking":
        return as_text(block.get("thinking"))
    return None
