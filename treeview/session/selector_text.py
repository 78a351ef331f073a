"""The text of a tree-selector row, per entry type (spec §17.4), and the text search matches (§17.6).

Ported from v15 ``tree-selector.ts`` (``getEntryDisplayText``, ``formatToolCall``,
``getSearchableText``). The one deliberate difference: entry types that v15 draws as an *empty* row
(``mode_change``, ``ttsr_injection``, ``service_tier_change``, ``session_init`` and every type v15 does
not know) get the text v18 gives them (``[mode: plan]``, ``[service tier: …]``, ``[ttsr injection]``
…). Search terms stay v15's. The text is built with template literals, ``||``, ``??`` and UTF-16
lengths; :mod:`treeview.session.js` reproduces them so odd entries render exactly like the original.

Pure Python, no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
from treeview.session.selector_tree import TreeNodeLike

__all__ = ["display_text", "has_text_content", "searchable_text"]

_MAX_EXTRACT: Final = 200  # message text is cut to 200 UTF-16 units before display and search
_NEWLINE_TAB: Final = re.compile("[\n\t]")


def _normalize(text: str) -> str:
    return js.trim(_NEWLINE_TAB.sub(" ", text))


def _shorten_path(path: str, home: str | None) -> str:
    return f"~{path[len(home) :]}" if home and path.startswith(home) else path


def _extract_content(content: Any) -> str:
    """The first 200 UTF-16 units of a message's text (a string, or the text blocks concatenated)."""
    if isinstance(content, str):
        return js.utf16_slice(content, _MAX_EXTRACT)
    if isinstance(content, list):
        result = ""
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                result += js.to_string(block.get("text", UNDEFINED))
                if js.utf16_len(result) >= _MAX_EXTRACT:
                    return js.utf16_slice(result, _MAX_EXTRACT)
        return result
    return ""


def has_text_content(content: Any) -> bool:
    """Whether message content holds non-blank text (a string, or any text block); v15 ``hasTextContent``."""
    if isinstance(content, str):
        return js.trim(content) != ""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and js.trim(text):
                    return True
    return False


def _field(obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    """``${obj[key]}`` in a template literal, or ``${obj[key] ?? default}`` when a default is given."""
    value = obj.get(key, UNDEFINED)
    if default is not None and js.is_nullish(value):
        return default
    return js.to_string(value)


def read_range(fields: Mapping[str, Any]) -> str:
    """A read call's ``:start-end`` line range as the agents draw it ("" without offset and limit)."""
    offset = fields.get("offset", UNDEFINED)
    limit = fields.get("limit", UNDEFINED)
    if offset is UNDEFINED and limit is UNDEFINED:
        return ""
    start: Any = 1 if js.is_nullish(offset) else offset
    end: Any = ""
    if limit is not UNDEFINED:
        if isinstance(start, str) or isinstance(limit, str):
            # JavaScript's "+" concatenates when either side is a string.
            end = js.to_number(js.to_string(start) + js.to_string(limit)) - 1
        else:
            end = js.to_number(start) + js.to_number(limit) - 1
        if isinstance(end, float) and end.is_integer() and abs(end) < 2**53:
            end = int(end)
    return f":{js.to_string(start)}" + (f"-{js.to_string(end)}" if js.truthy(end) else "")


def _format_tool_call(name: Any, args: Any, home: str | None) -> str:
    """The label of a tool result, built from its tool call (v15's ``formatToolCall``)."""
    fields = args if isinstance(args, dict) else {}

    def pick(*keys: str, default: str) -> str:
        for key in keys:
            value = fields.get(key, UNDEFINED)
            if js.truthy(value):
                return js.to_string(value)
        return default

    if name in ("read", "write", "edit"):
        path = _shorten_path(pick("path", "file_path", default=""), home)
        if name != "read":
            return f"[{name}: {path}]"
        return f"[read: {path}{read_range(fields)}]"
    if name == "bash":
        raw = pick("command", default="")
        command = js.utf16_slice(_normalize(raw), 50)
        return f"[bash: {command}{'...' if js.utf16_len(raw) > 50 else ''}]"
    if name == "search":
        pattern = pick("pattern", default="")
        paths = fields.get("paths")
        scope = js.join(paths, ", ") if isinstance(paths, list) else pick("path", default=".")
        return f"[search: /{pattern}/ in {_shorten_path(scope, home)}]"
    if name == "find":
        paths = fields.get("paths")
        scope = js.join(paths, ", ") if isinstance(paths, list) else pick("pattern", default=".")
        return f"[find: {_shorten_path(scope, home)}]"
    if name == "ls":
        return f"[ls: {_shorten_path(pick('path', default='.'), home)}]"
    encoded = js.stringify({} if args is UNDEFINED else args)
    more = "..." if js.utf16_len(encoded) > 40 else ""
    return f"[{js.to_string(name)}: {js.utf16_slice(encoded, 40)}{more}]"


def _service_tier_text(tier: Any) -> str:
    # v18 prints a per-family map as "family:tier" pairs and null as "(default)". v15 files store a
    # plain string, which v18 would spell out character by character; print the string instead.
    if not js.truthy(tier):
        return "(default)"
    if isinstance(tier, dict):
        return " ".join(f"{js.to_string(family)}:{js.to_string(value)}" for family, value in tier.items())
    return js.to_string(tier)


def display_text(
    entry: Mapping[str, Any], tool_calls: Mapping[str, tuple[Any, Any]] | None = None, home: str | None = None
) -> str:
    """The content text of an entry's row (without label), as v15 draws it (spec §17.4).

    ``tool_calls`` labels tool results (``FlatTree.tool_calls``); ``home`` is shortened to ``~`` in
    tool paths, like the original does with the user's home directory (``None``: no shortening).
    Types v15 leaves blank get v18's text.
    """
    kind = entry.get("type", UNDEFINED)
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        role = msg.get("role", UNDEFINED)
        if role in ("user", "developer"):
            return f"{role}: {_normalize(_extract_content(msg.get('content')))}"
        if role == "assistant":
            text = _normalize(_extract_content(msg.get("content")))
            if text:
                return f"assistant: {text}"
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            error = msg.get("errorMessage", UNDEFINED)
            if js.truthy(error):
                return f"assistant: {js.utf16_slice(_normalize(js.to_string(error)), 80)}"
            return "assistant: (no content)"
        if role == "toolResult":
            call_id = msg.get("toolCallId")
            call = tool_calls.get(call_id) if tool_calls and isinstance(call_id, str) and call_id else None
            if call is not None:
                return _format_tool_call(call[0], call[1], home)
            return f"[{_field(msg, 'toolName', 'tool')}]"
        if role == "bashExecution":
            return f"[bash]: {_normalize(_field(msg, 'command', ''))}"
        return f"[{js.to_string(role)}]"
    if kind == "custom_message":
        content = entry.get("content")
        if isinstance(content, list):
            content = js.join(
                [
                    b.get("text", UNDEFINED)
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "text"
                ],
                "",
            )
        text = content if isinstance(content, str) else ""
        return f"[{_field(entry, 'customType')}]: {_normalize(text)}"
    if kind == "compaction":
        tokens = js.to_number(entry.get("tokensBefore", UNDEFINED)) / 1000
        rounded = float(math.floor(tokens + 0.5)) if math.isfinite(tokens) else tokens  # JS Math.round
        return f"[compaction: {js.to_string(rounded)}k tokens]"
    if kind == "branch_summary":
        summary = entry.get("summary")
        return f"[branch summary]: {_normalize(summary if isinstance(summary, str) else '')}"
    if kind == "model_change":
        return f"[model: {_field(entry, 'model')}]"
    if kind == "thinking_level_change":
        return f"[thinking: {_field(entry, 'thinkingLevel', 'off')}]"
    if kind == "custom":
        return f"[custom: {_field(entry, 'customType')}]"
    if kind == "label":
        return f"[label: {_field(entry, 'label', '(cleared)')}]"
    # From here v15 draws an empty row; Arbor uses v18's text (see the module docstring).
    if kind == "service_tier_change":
        return f"[service tier: {_service_tier_text(entry.get('serviceTier'))}]"
    if kind == "mode_change":
        return f"[mode: {_field(entry, 'mode')}]"
    if kind == "title_change":
        return f"[title: {_normalize(_field(entry, 'title'))}]"
    if kind == "credential_pin":
        return f"[credential pin: {_field(entry, 'provider')}]"
    return f"[{js.to_string(kind).replace('_', ' ')}]"


def searchable_text(node: TreeNodeLike, agent: str = "omp15") -> str:
    """The text a search query is matched against (not lowercased; spec §17.6).

    ``agent`` picks whose terms: v15's (``omp15``), oh-my-pi 18's (message text cut to 200 characters, and
    words for every bookkeeping row) or pi 1.6's (session names, ``modelId``, context edits).
    """
    entry = node.entry
    parts: list[Any] = []
    if node.label:
        parts.append(node.label)
    kind = entry.get("type")
    omp = agent == "omp"
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        parts.append(msg.get("role"))
        content = msg.get("content")
        if js.truthy(content):
            text = _extract_content(content)
            parts.append(js.utf16_slice(text, 200) if omp else text)
        if msg.get("role") == "bashExecution" and js.truthy(msg.get("command")):
            parts.append(msg["command"])
    elif kind == "custom_message":
        content = entry.get("content")
        text = content if isinstance(content, str) else _extract_content(content)
        if omp:
            parts.append(entry.get("customType"))
            if text:
                parts.append(js.utf16_slice(text, 200))
        else:
            parts += [entry.get("customType"), text]
    elif kind == "compaction":
        parts.append("compaction")
    elif kind == "branch_summary":
        parts += ["branch summary", entry.get("summary")]
    elif kind == "model_change":
        parts += ["model", entry.get("modelId") if agent == "pi" else entry.get("model")]
    elif kind == "thinking_level_change":
        level = entry.get("thinkingLevel")
        parts += ["thinking", "off" if level is None and agent != "pi" else level]
    elif kind == "custom":
        parts += ["custom", entry.get("customType")]
    elif kind == "label":
        label = entry.get("label")
        parts += ["label", "" if label is None else label]
    elif agent == "pi":
        if kind == "session_info":
            parts.append("title")
            if js.truthy(entry.get("name")):
                parts.append(entry["name"])
        elif kind == "context_edit":
            replace = "omit" if entry.get("replacement") is None else "replace"
            parts += ["context edit", replace, entry.get("targetId")]
    elif omp:
        parts += _omp_bookkeeping_terms(entry, kind)
    return js.join(parts, " ")


def _omp_bookkeeping_terms(entry: Mapping[str, Any], kind: Any) -> list[Any]:
    if kind == "service_tier_change":
        terms: list[Any] = ["service tier"]
        tier = entry.get("serviceTier")
        if isinstance(tier, dict):
            for family, value in tier.items():
                if js.truthy(value):
                    terms += [family, value]
        return terms
    if kind == "model_usage":
        return ["model usage", *(_clean(entry.get(k)) for k in ("purpose", "role", "provider", "model"))]
    if kind == "title_change":
        return ["title", entry.get("title")]
    if kind == "mode_change":
        return ["mode", entry.get("mode")]
    if kind == "credential_pin":
        return ["credential pin", entry.get("provider")]
    if kind == "ttsr_injection":
        rules = entry.get("injectedRules")
        return ["ttsr injection", *(rules if isinstance(rules, list) else [])]
    if kind == "reset_boundary":
        return ["reset boundary"]
    if kind == "session_init":
        return ["session init"]
    return []


def _clean(value: Any) -> str:
    return js.to_string(value).replace("\n", " ").replace("\t", " ").strip() if isinstance(value, str) else ""
