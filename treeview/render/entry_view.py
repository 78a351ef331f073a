"""The view model of one rendered entry (`EntryView`) and its token usage (`UsageView`).

Strings are plain text, to be autoescaped by templates; the HTML is in the blocks (`treeview.render.blocks`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from treeview.render.blocks import Block, Field
from treeview.render.text import as_int, as_number, as_text, opt_text

KINDS = (
    "user",  # user and developer messages
    "assistant",
    "tool_result",
    "bash",  # bashExecution (the user's `!` commands)
    "python",  # pythonExecution
    "custom_message",  # custom_message entries and custom/hookMessage messages
    "compaction",
    "branch_summary",
    "model_change",
    "thinking_change",
    "mode_change",
    "label",
    "custom",  # extension state (`custom` entries)
    "file_mention",
    "session_init",
    "state",  # bookkeeping: service tier, TTSR rules, MCP tools, title, archive, reset, side-call usage
    "unknown",  # an entry type or message role this renderer does not know
)

# Kinds drawn as a one-line marker (`summary`) rather than as a message card.
MARKER_KINDS = frozenset({"model_change", "thinking_change", "mode_change", "label", "state"})


@dataclass(slots=True)
class UsageView:
    """Token usage and cost of an assistant turn (or a side call)."""

    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost_total: float | None
    summary: str  # "1,285 tokens (in 1,200 · out 85) · $0.0049"


@dataclass(slots=True)
class EntryView:
    """Everything a template needs to draw one entry. Strings are plain text; `blocks` carry the HTML."""

    id: str
    parent_id: str | None
    type: str  # the entry's own type ("message", "compaction" ...)
    kind: str  # one of KINDS
    timestamp: str
    title: str  # a short heading: "User", "Assistant", "bash", "Compaction" ...
    summary: str = ""  # one line; for markers, all there is to show
    is_marker: bool = False
    hidden: bool = False  # a custom message with display:false (shown on demand)
    role: str | None = None
    attribution: str | None = None
    blocks: list[Block] = field(default_factory=list)
    fields: list[Field] = field(default_factory=list)
    file_lists: list[tuple[str, list[str]]] = field(default_factory=list)
    model: str | None = None
    provider: str | None = None
    api: str | None = None
    usage: UsageView | None = None
    stop_reason: str | None = None
    error: str | None = None  # the errorMessage of a failed or aborted turn
    aborted: bool = False
    is_error: bool = False  # a failed tool result or a command that exited non-zero
    exit_code: int | None = None
    tool_name: str | None = None
    tool: str = ""  # the normalized built-in tool of a tool result ("bash", "read" ...), "" for others
    tool_call_id: str | None = None
    custom_type: str | None = None
    target_id: str | None = None
    label: str | None = None


def usage_view(usage: Any) -> UsageView | None:
    """The usage record of an assistant message, or None when there is none."""
    if not isinstance(usage, dict):
        return None
    tokens_in = as_int(usage.get("input")) or 0
    tokens_out = as_int(usage.get("output")) or 0
    cache_read = as_int(usage.get("cacheRead")) or 0
    cache_write = as_int(usage.get("cacheWrite")) or 0
    total = as_int(usage.get("totalTokens"))
    if total is None:  # old files lack totalTokens
        total = tokens_in + tokens_out + cache_read + cache_write
    cost = usage.get("cost")
    cost_total = as_number(cost.get("total")) if isinstance(cost, dict) else None
    parts = [f"in {tokens_in:,}", f"out {tokens_out:,}"]
    if cache_read or cache_write:
        parts.append(f"cache {cache_read:,} read / {cache_write:,} written")
    summary = f"{total:,} tokens ({' · '.join(parts)})"
    if cost_total:
        summary += f" · ${cost_total:.4f}"
    return UsageView(tokens_in, tokens_out, cache_read, cache_write, total, cost_total, summary)


def new_view(entry: Mapping[str, Any], kind: str, title: str) -> EntryView:
    """An empty view of `entry` with its identity, kind and title filled in."""
    return EntryView(
        id=as_text(entry.get("id")),
        parent_id=opt_text(entry.get("parentId")),
        type=as_text(entry.get("type")),
        kind=kind,
        timestamp=as_text(entry.get("timestamp")),
        title=title,
        is_marker=kind in MARKER_KINDS,
    )
