"""The text of a tree-selector row as the newest agents draw it: oh-my-pi 18.3.4 and pi 1.6.0.

:mod:`treeview.session.selector_text` keeps v15's text (with v18's words for the types v15 left blank), which
the web tree and the v15 reference answers use. The newest agents differ in small ways, each measured against
their answers (``tests/reference_latest.py``):

* oh-my-pi 18: an aborted or failed assistant turn with no text shows its error ("Operation aborted", the
  provider's message); a recovered retry shows its note; ``developer`` messages; custom messages drop one
  ``<system-…>`` wrapper and are not cut to 200 characters; advisor notes; ``model_usage`` spelled out;
  a service tier is ``Object.entries`` of whatever is stored (a plain string comes out character by
  character: ``0:f 1:l 2:e 3:x``); tool calls know ``grep``/``glob`` (and no longer ``search``/``find``).
* pi 1.6: ``model_change`` reads ``modelId`` (``[model: undefined]`` on an oh-my-pi file),
  ``thinking_level_change`` prints the level as it is, ``session_info`` is ``[title: …]``, ``context_edit``
  is ``[context omit: id]``, and a type pi does not know draws nothing (a bare ``•`` row).

Pure Python, no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
from treeview.session.selector_text import read_range

__all__ = ["omp_display_text", "pi_display_text", "omp_has_text", "format_label_time"]

_MAX_EXTRACT: Final = 200
_NEWLINE_TAB: Final = re.compile("[\n\t]")
_WHITESPACE: Final = re.compile(f"{js.RE_SPACE}+")
# Control characters (C0, DEL, C1) and ANSI escape sequences, which oh-my-pi strips from metadata fields.
_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROL: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SILENT_ABORT: Final = "__omp.silent_abort__"
_USER_INTERRUPT: Final = "Interrupted by user"
_GENERIC_ABORT: Final = "Request was aborted"
_SYSTEM_TAG: Final = re.compile(r"^<(system-[\w-]+)", re.IGNORECASE)


def _normalize(text: str) -> str:
    return js.trim(_NEWLINE_TAB.sub(" ", text))


def _join_text(content: Any, *, strict: bool) -> str:
    """Text blocks concatenated (a string as it is). ``strict`` (oh-my-pi): only string ``text`` values;
    otherwise (pi) each text block's ``text`` is added as JavaScript's ``+=`` would (``undefined`` too)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "text":
            text = block.get("text", UNDEFINED)
            if isinstance(text, str):
                parts.append(text)
            elif not strict:
                parts.append(js.to_string(text))
    return "".join(parts)


def _extract(content: Any, *, strict: bool) -> str:
    return js.utf16_slice(_join_text(content, strict=strict), _MAX_EXTRACT)


def _compaction(entry: Mapping[str, Any]) -> str:
    tokens = js.to_number(entry.get("tokensBefore", UNDEFINED)) / 1000
    rounded = float(math.floor(tokens + 0.5)) if math.isfinite(tokens) else tokens  # JS Math.round
    return f"[compaction: {js.to_string(rounded)}k tokens]"


def _summary(entry: Mapping[str, Any]) -> str:
    summary = entry.get("summary")
    return f"[branch summary]: {_normalize(summary if isinstance(summary, str) else js.to_string(summary))}"


def _field(obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = obj.get(key, UNDEFINED)
    if default is not None and js.is_nullish(value):
        return default
    return js.to_string(value)


def _shorten(path: str, home: str | None) -> str:
    if home and path.startswith(home):
        suffix = path[len(home) :]
        if suffix == "" or suffix.startswith(("/", "\\")):
            return "~" + suffix.replace("\\", "/")
    return path


# ---------------------------------------------------------------------------------------------------------
# oh-my-pi 18


def omp_has_text(content: Any) -> bool:
    """oh-my-pi's test for an assistant turn worth a row: some text beyond dots, ellipses and blanks."""
    if isinstance(content, str):
        return bool(_canonical(content))
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and _canonical(text):
                    return True
    return False


def _canonical(text: str) -> str:
    trimmed = js.trim(text)
    return trimmed if trimmed.strip(".\u2026 \t\n\r") else ""


def _sanitize(value: Any) -> str:
    text = value if isinstance(value, str) else ""
    text = _CONTROL.sub(lambda m: m.group() if m.group() in "\n\t" else "", _ANSI.sub("", text))
    return js.trim(_NEWLINE_TAB.sub(" ", text))


def _error_text(message: Mapping[str, Any]) -> tuple[str, str] | None:
    """oh-my-pi's presentation of a turn-ending error: ``("recovered", note)``, ``("full", text)`` or None."""
    recovery = message.get("retryRecovery")
    status = recovery.get("status") if isinstance(recovery, dict) else None
    if status == "superseded":
        return None
    if status == "recovered":
        assert isinstance(recovery, dict)
        note = recovery.get("note")
        text = js.trim(_WHITESPACE.sub(" ", js.to_string(note).replace("\t", "   "))) or "retried"
        return "recovered", _truncate(text, 80)
    error = message.get("errorMessage", UNDEFINED)
    quiet = error in (_SILENT_ABORT, _USER_INTERRUPT)
    stop = message.get("stopReason")
    if stop == "aborted":
        if quiet:
            return None
        generic = not js.truthy(error) or error == _GENERIC_ABORT
        return "full", "Operation aborted" if generic else js.to_string(error)
    if stop == "error":
        return "full", js.to_string(error) if js.truthy(error) else "Error"
    if js.truthy(error) and not quiet:
        return "full", js.to_string(error)
    return None


def _truncate(text: str, width: int) -> str:
    from treeview.session.selector import truncate_to_width

    return truncate_to_width(text, width)


def _strip_system_wrapper(content: str) -> str:
    """One ``<system-…>…</system-…>`` envelope around a custom message, removed (nested ones stay)."""
    trimmed = js.trim(content)
    opening = _SYSTEM_TAG.match(trimmed)
    if not opening:
        return content
    start = opening.end()
    first = trimmed[start : start + 1]
    if first != ">" and not (first and first.isspace()):
        return content
    quote = ""
    end = -1
    for index in range(start, len(trimmed)):
        char = trimmed[index]
        if quote:
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "<":
            return content
        elif char == ">":
            end = index
            break
    if end == -1 or quote:
        return content
    closing = f"</{opening.group(1)}>"
    closing_start = len(trimmed) - len(closing)
    if closing_start <= end or trimmed[closing_start:].lower() != closing.lower():
        return content
    return js.trim(trimmed[end + 1 : closing_start])


def _advisor(details: Any) -> tuple[str, str]:
    if not isinstance(details, dict) or not isinstance(details.get("notes"), list):
        return "", ""
    notes: list[str] = []
    advisors: list[str] = []
    severities: list[str] = []
    for note in details["notes"]:
        if not isinstance(note, dict):
            continue
        if isinstance(note.get("note"), str):
            notes.append(note["note"])
        if isinstance(note.get("advisor"), str):
            name = _sanitize(note["advisor"])
            if name and name != "default" and name not in advisors:
                advisors.append(name)
        if isinstance(note.get("severity"), str):
            severity = _sanitize(note["severity"])
            if severity and severity not in severities:
                severities.append(severity)
    return ", ".join(advisors + severities), " ".join(notes)


def _path_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        stripped = js.trim(value)
        if stripped.startswith("[") and stripped.endswith("]"):
            import json

            try:
                parsed = json.loads(stripped)
            except ValueError:
                parsed = None
            if isinstance(parsed, list) and all(isinstance(item, str) for item in parsed):
                return parsed
        return [value]
    return value if isinstance(value, list) else []


def _pick(args: Mapping[str, Any], *keys: str, default: str) -> str:
    for key in keys:
        value = args.get(key, UNDEFINED)
        if js.truthy(value):
            return js.to_string(value)
    return default


def _default_call(name: Any, args: Any) -> str:
    encoded = js.stringify({} if args is UNDEFINED else args)
    more = "..." if js.utf16_len(encoded) > 40 else ""
    return f"[{js.to_string(name)}: {js.utf16_slice(encoded, 40)}{more}]"


def _bash_call(args: Mapping[str, Any]) -> str:
    raw = _pick(args, "command", default="")
    return f"[bash: {js.utf16_slice(_normalize(raw), 50)}{'...' if js.utf16_len(raw) > 50 else ''}]"


def _omp_tool_call(name: Any, args: Any, home: str | None) -> str:
    fields: Mapping[str, Any] = args if isinstance(args, dict) else {}
    if name in ("read", "write", "edit"):
        path = _shorten(_pick(fields, "path", "file_path", default=""), home)
        if name == "read":
            path += read_range(fields)
        return f"[{name}: {path}]"
    if name == "bash":
        return _bash_call(fields)
    if name in ("grep", "glob"):
        paths_arg = fields.get("paths")
        path_arg = fields.get("path")
        if name == "grep":
            chosen = (
                paths_arg
                if isinstance(paths_arg, (str, list))
                else path_arg
                if isinstance(path_arg, str)
                else None
            )
        else:
            chosen = (
                path_arg
                if isinstance(path_arg, str)
                else paths_arg
                if isinstance(paths_arg, (str, list))
                else None
            )
        paths = _path_list(chosen)
        scope = _shorten(js.join(paths, ", ") if paths else ".", home)
        if name == "grep":
            return f"[grep: /{_pick(fields, 'pattern', default='')}/ in {scope}]"
        return f"[glob: {scope}]"
    if name == "ls":
        return f"[ls: {_shorten(_pick(fields, 'path', default='.'), home)}]"
    return _default_call(name, args)


def _tool_result(
    msg: Mapping[str, Any], tool_calls: Mapping[str, tuple[Any, Any]] | None, format_call: Any
) -> str:
    call_id = msg.get("toolCallId")
    call = tool_calls.get(call_id) if tool_calls and isinstance(call_id, str) and call_id else None
    if call is not None:
        return str(format_call(call[0], call[1]))
    return f"[{_field(msg, 'toolName', 'tool')}]"


def _service_tiers(tier: Any) -> str:
    if not js.truthy(tier):
        return "(default)"
    pairs: list[tuple[Any, Any]] = []
    if isinstance(tier, dict):
        pairs = list(tier.items())
    elif isinstance(tier, (str, list)):
        pairs = list(enumerate(tier))  # Object.entries of a string or an array: index:value
    return " ".join(f"{js.to_string(key)}:{js.to_string(value)}" for key, value in pairs)


def omp_display_text(
    entry: Mapping[str, Any], tool_calls: Mapping[str, tuple[Any, Any]] | None = None, home: str | None = None
) -> str:
    """The row text of an entry (without label) as oh-my-pi 18.3.4's ``/tree`` draws it."""
    kind = entry.get("type", UNDEFINED)
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        role = msg.get("role", UNDEFINED)
        if role in ("user", "developer"):
            return f"{role}: {_normalize(_extract(msg.get('content'), strict=True))}"
        if role == "assistant":
            presentation = _error_text(msg)
            if presentation is not None and presentation[0] == "recovered":
                return f"assistant: {presentation[1]}"
            text = _normalize(_extract(msg.get("content"), strict=True))
            if text:
                return f"assistant: {text}"
            if presentation is not None:
                return f"assistant: {js.utf16_slice(_normalize(presentation[1]), 80)}"
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            return "assistant: (no content)"
        if role == "toolResult":
            return _tool_result(msg, tool_calls, lambda name, args: _omp_tool_call(name, args, home))
        if role == "bashExecution":
            return f"[bash]: {_normalize(_field(msg, 'command', ''))}"
        return f"[{js.to_string(role)}]"
    if kind == "custom_message":
        if entry.get("customType") == "advisor":
            qualifier, text = _advisor(entry.get("details"))
            return (f"advisor ({qualifier}): " if qualifier else "advisor: ") + _normalize(text)
        content = _strip_system_wrapper(_join_text(entry.get("content"), strict=True))
        return f"[{_field(entry, 'customType')}]: {_normalize(content)}"
    if kind == "compaction":
        return _compaction(entry)
    if kind == "branch_summary":
        return _summary(entry)
    if kind == "model_change":
        return f"[model: {_field(entry, 'model')}]"
    if kind == "model_usage":
        purpose, role, provider, model = (
            _sanitize(entry.get(k)) for k in ("purpose", "role", "provider", "model")
        )
        return f"[model usage: {purpose} {f'{role} ' if role else ''}{provider}/{model}]"
    if kind == "thinking_level_change":
        return f"[thinking: {_field(entry, 'thinkingLevel', 'off')}]"
    if kind == "custom":
        return f"[custom: {_field(entry, 'customType')}]"
    if kind == "label":
        return f"[label: {_field(entry, 'label', '(cleared)')}]"
    if kind == "service_tier_change":
        return f"[service tier: {_service_tiers(entry.get('serviceTier'))}]"
    if kind == "title_change":
        return f"[title: {_normalize(_field(entry, 'title'))}]"
    if kind == "mode_change":
        return f"[mode: {_field(entry, 'mode')}]"
    if kind == "credential_pin":
        return f"[credential pin: {_field(entry, 'provider')}]"
    return f"[{js.to_string(kind).replace('_', ' ')}]"


# ---------------------------------------------------------------------------------------------------------
# pi 1.6


def _pi_shorten(path: str, home: str | None) -> str:
    if not home or not path.startswith("/"):
        return path
    base = home.rstrip("/")
    if path == base:
        return "~"
    if path.startswith(base + "/"):
        return "~/" + path[len(base) + 1 :].rstrip("/")
    return path


def _line_number(value: Any) -> float | None:
    if isinstance(value, str) and js.trim(value) != "":
        value = js.to_number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _read_range(offset: Any, limit: Any) -> str:
    if js.is_nullish(offset) and js.is_nullish(limit):
        return ""
    start = 1 if js.is_nullish(offset) else _line_number(offset)
    if start is None:
        return ""
    if js.is_nullish(limit):
        return f":{js.to_string(start)}"
    count = _line_number(limit)
    if count is None:
        return ""
    end = start + count - 1
    return f":{js.to_string(start)}" + (f"-{js.to_string(end)}" if end else "")


def _pi_tool_call(name: Any, args: Any, home: str | None) -> str:
    fields: Mapping[str, Any] = args if isinstance(args, dict) else {}
    if name in ("read", "write", "edit"):
        path = _pi_shorten(_pick(fields, "path", "file_path", default=""), home)
        if name == "read":
            path += _read_range(fields.get("offset", UNDEFINED), fields.get("limit", UNDEFINED))
        return f"[{name}: {path}]"
    if name == "bash":
        return _bash_call(fields)
    if name in ("grep", "find"):
        pattern = _pick(fields, "pattern", default="")
        path = _pi_shorten(_pick(fields, "path", default="."), home)
        return f"[grep: /{pattern}/ in {path}]" if name == "grep" else f"[find: {pattern} in {path}]"
    if name == "ls":
        return f"[ls: {_pi_shorten(_pick(fields, 'path', default='.'), home)}]"
    return _default_call(name, args)


def pi_display_text(
    entry: Mapping[str, Any], tool_calls: Mapping[str, tuple[Any, Any]] | None = None, home: str | None = None
) -> str:
    """The row text of an entry (without label) as pi 1.6.0's ``/tree`` draws it (``""`` for a type it
    does not know)."""
    kind = entry.get("type", UNDEFINED)
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        role = msg.get("role", UNDEFINED)
        if role == "user":
            return f"user: {_normalize(_extract(msg.get('content'), strict=False))}"
        if role == "assistant":
            text = _normalize(_extract(msg.get("content"), strict=False))
            if text:
                return f"assistant: {text}"
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            error = msg.get("errorMessage", UNDEFINED)
            if js.truthy(error):
                return f"assistant: {js.utf16_slice(_normalize(js.to_string(error)), 80)}"
            return "assistant: (no content)"
        if role == "toolResult":
            return _tool_result(msg, tool_calls, lambda name, args: _pi_tool_call(name, args, home))
        if role == "bashExecution":
            return f"[bash]: {_normalize(_field(msg, 'command', ''))}"
        return f"[{js.to_string(role)}]"
    if kind == "custom_message":
        content = entry.get("content")
        if not isinstance(content, str):
            texts = [
                b.get("text", UNDEFINED)
                for b in content or []
                if isinstance(b, dict) and b.get("type") == "text"
            ]
            content = js.join(texts, "")
        return f"[{_field(entry, 'customType')}]: {_normalize(content)}"
    if kind == "compaction":
        return _compaction(entry)
    if kind == "branch_summary":
        return _summary(entry)
    if kind == "model_change":
        return f"[model: {_field(entry, 'modelId')}]"
    if kind == "thinking_level_change":
        return f"[thinking: {_field(entry, 'thinkingLevel')}]"
    if kind == "custom":
        return f"[custom: {_field(entry, 'customType')}]"
    if kind == "context_edit":
        action = "omit" if entry.get("replacement", UNDEFINED) is None else "replace"
        return f"[context {action}: {_field(entry, 'targetId')}]"
    if kind == "label":
        return f"[label: {_field(entry, 'label', '(cleared)')}]"
    if kind == "session_info":
        name = entry.get("name", UNDEFINED)
        return f"[title: {js.to_string(name) if js.truthy(name) else 'empty'}]"
    return ""


def format_label_time(timestamp: str, now: Any = None) -> str:
    """pi's label time (Shift+T): ``HH:MM`` today, ``M/D HH:MM`` this year, else ``YY/M/D HH:MM``, in local
    time (``now``: a timezone-aware ``datetime`` to compare with, default the current local time)."""
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return "NaN:NaN"  # new Date("garbage") prints as NaN
    if moment.tzinfo is not None:
        moment = moment.astimezone()
    current = now.astimezone() if now is not None else datetime.now().astimezone()
    time = f"{moment.hour:02}:{moment.minute:02}"
    if moment.date() == current.date():
        return time
    if moment.year == current.year:
        return f"{moment.month}/{moment.day} {time}"
    return f"{moment.year % 100:02}/{moment.month}/{moment.day} {time}"
