"""The columns an ``Entry`` row derives from its line, computed once at import.

Pure functions over the parsed entry (no database): the tree row text and search text of the selector (§17),
the full text the search across sessions indexes, the label a label entry sets, token usage, and the facts the
filters need.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from treeview.session.body_text import body_text
from treeview.session.fuzzy import case_matters
from treeview.session.ids import parse_timestamp_ms
from treeview.session.selector_text import display_text, has_text_content, searchable_text

__all__ = [
    "ENTRY_FIELDS",
    "EntryFacts",
    "ToolCalls",
    "entry_body",
    "entry_facts",
    "entry_values",
    "fuzzy_text",
]

#: toolCallId → (name, arguments) of the assistant tool calls seen so far (labels tool-result rows).
ToolCalls = dict[str, tuple[Any, Any]]

_MAX_TEXT = 2000  # row and search text are short by nature; a runaway summary is cut here


@dataclass(slots=True)
class _Node:
    entry: Mapping[str, Any]
    label: str | None = None
    children: tuple[()] = ()


@dataclass(slots=True)
class EntryFacts:
    entry_id: str
    parent_id: str | None
    type: str
    role: str
    timestamp: str
    ts: datetime | None
    text: str
    search_text: str
    body_text: str
    fuzzy_text: str
    has_text: bool
    stop_reason: str
    label_target: str
    label_text: str
    model: str
    input_tokens: int
    output_tokens: int
    cost: float
    tool_calls: int

    def columns(self) -> dict[str, Any]:
        """The ``Entry`` fields these facts fill (everything but where the line is and its text)."""
        return dict(zip(ENTRY_FIELDS, entry_values(self), strict=True))


#: The ``Entry`` fields an ``EntryFacts`` fills, in the order :func:`entry_values` gives them.
ENTRY_FIELDS = (
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "ts",
    "text",
    "search_text",
    "body_text",
    "fuzzy_text",
    "has_text",
    "stop_reason",
    "label_target",
    "label_text",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
)

#: ``entry_values(facts)``: the values of ``ENTRY_FIELDS``, as a tuple (one C call per row of an import).
entry_values = attrgetter(*ENTRY_FIELDS)


def _storable(text: str) -> str:
    """Text any database stores: PostgreSQL refuses NUL, and neither takes lone surrogates."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _register(message: Mapping[str, Any], tool_calls: ToolCalls) -> int:
    content = message.get("content")
    count = 0
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                count += 1
                if isinstance(block.get("id"), str):
                    tool_calls[block["id"]] = (block.get("name"), block.get("arguments"))
    return count


def entry_body(entry: Mapping[str, Any], row_text: str) -> str:
    """The ``body_text`` column: what the search across sessions indexes (at most ``MAX_BODY`` characters of
    :func:`treeview.session.body_text.body_text`), storable. ``row_text``: the entry's uncut row text."""
    return _storable(body_text(entry, row_text))


def fuzzy_text(entry: Mapping[str, Any]) -> str:
    """The ``fuzzy_text`` column: a message's search text by oh-my-pi's rules as written (``search_text`` is
    lowercased), kept only where its matcher would split words by case after the role (``toolResult`` is
    given its case back without it): ``""`` otherwise, as for every other type."""
    if entry.get("type") != "message":
        return ""
    text = searchable_text(_Node(entry), "omp")[:_MAX_TEXT]
    message = entry.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    rest = text[len(role) :] if isinstance(role, str) and text.startswith(role) else text
    return _storable(text) if case_matters(rest) else ""


def entry_facts(entry: Mapping[str, Any], tool_calls: ToolCalls) -> EntryFacts:
    """Everything the views need about one entry. Registers assistant tool calls in ``tool_calls``; a tool
    result consumes its call (so the map only holds calls still waiting for their result)."""
    kind = entry.get("type")
    message = entry.get("message") if kind == "message" else None
    msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
    role = msg.get("role") if isinstance(msg.get("role"), str) else ""
    calls = _register(msg, tool_calls) if role == "assistant" else 0
    text = display_text(entry, tool_calls)
    if role == "toolResult" and isinstance(msg.get("toolCallId"), str):
        tool_calls.pop(msg["toolCallId"], None)
    usage = msg.get("usage") if role == "assistant" else None
    usage = usage if isinstance(usage, dict) else {}
    cost = usage.get("cost")
    millis = parse_timestamp_ms(entry.get("timestamp"))
    try:
        ts = datetime.fromtimestamp(millis / 1000, UTC) if millis is not None else None
    except (OverflowError, OSError, ValueError):
        ts = None
    label = entry.get("label") if kind == "label" else None
    provider, model = msg.get("provider"), msg.get("model")
    return EntryFacts(
        entry_id=entry["id"] if isinstance(entry.get("id"), str) else "",
        parent_id=entry["parentId"] if isinstance(entry.get("parentId"), str) else None,
        type=kind if isinstance(kind, str) else "",
        role=role,
        timestamp=entry["timestamp"] if isinstance(entry.get("timestamp"), str) else "",
        ts=ts,
        text=_storable(text[:_MAX_TEXT]),
        search_text=_storable(searchable_text(_Node(entry)).lower()[:_MAX_TEXT]),
        body_text=entry_body(entry, text),
        fuzzy_text=fuzzy_text(entry),
        has_text=role == "assistant" and has_text_content(msg.get("content")),
        stop_reason=msg.get("stopReason") if isinstance(msg.get("stopReason"), str) else "",
        label_target=entry["targetId"] if kind == "label" and isinstance(entry.get("targetId"), str) else "",
        label_text=_storable(label) if isinstance(label, str) else "",
        model=f"{provider}/{model}" if isinstance(provider, str) and isinstance(model, str) else "",
        input_tokens=int(_number(usage.get("input"))),
        output_tokens=int(_number(usage.get("output"))),
        cost=float(_number(cost.get("total"))) if isinstance(cost, dict) else 0.0,
        tool_calls=calls,
    )
