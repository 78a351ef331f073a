"""Tool calls: a readable summary for the agent's built-in tools, raw JSON arguments for every tool.

Argument shapes differ between agents and versions (pi-mono's `edit {path, oldText, newText}`, omp's
`edit {path, edits: [{old_text, new_text}]}` or patch hunks, omp's `search` for grep ...), so each summary
reads the keys it knows and ignores the rest; the full arguments are always there as JSON.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from treeview.render.blocks import CodeBlock, Field, ToolCallBlock, code_block, json_block
from treeview.render.highlight import HIGHLIGHT_MAX_CHARS, highlight_code, highlight_with, lexer_for_language
from treeview.render.text import as_int, as_text, format_size, one_line, opt_text, utf8_size

# Tool names (lower-cased) of the agents' built-in tools, mapped to the summary that fits them.
TOOL_ALIASES: dict[str, str] = {
    "bash": "bash",
    "read": "read",
    "write": "write",
    "edit": "edit",
    "grep": "grep",
    "search": "grep",
    "find": "find",
    "glob": "find",
    "ls": "ls",
}

# Old/new texts above these sizes are cut before diffing: difflib's matcher is quadratic in the worst case.
DIFF_MAX_LINES = 2_000
DIFF_MAX_CHARS = 200_000

# The id → (name, arguments) map of the tool calls seen on a path, used to describe tool results.
ToolCallMap = Mapping[str, tuple[str, Any]]

_EXIT_LINE = re.compile(r"(?:Command|Process) exited with code (-?\d+)\s*\Z")


def tool_kind(name: Any) -> str:
    """The normalized built-in tool a name refers to, or "" for any other tool."""
    return TOOL_ALIASES.get(as_text(name).strip().lower(), "") if isinstance(name, str) else ""


def build_tool_call_map(entries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, Any]]:
    """Collect the tool calls of the assistant messages among `entries`: call id → (tool name, arguments)."""
    calls: dict[str, tuple[str, Any]] = {}
    for entry in entries:
        message = entry.get("message")
        if (
            entry.get("type") != "message"
            or not isinstance(message, dict)
            or message.get("role") != "assistant"
        ):
            continue
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if (
                isinstance(block, dict)
                and block.get("type") == "toolCall"
                and isinstance(block.get("id"), str)
            ):
                calls[block["id"]] = (as_text(block.get("name")), block.get("arguments"))
    return calls


def _scalar(value: Any) -> str:
    """A short plain-text rendering of an argument value (lists joined, long values cut)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return one_line(", ".join(value), 300)
    return one_line(as_text(value), 300)


def _arg(args: Mapping[str, Any], *keys: str) -> Any:
    """The first of `keys` present in `args` (argument names differ between agents)."""
    for key in keys:
        if key in args:
            return args[key]
    return None


def _fields(args: Mapping[str, Any], skip: Iterable[str] = ()) -> list[Field]:
    """Every argument not in `skip` as a field, in the order the model wrote them."""
    skipped = set(skip)
    return [Field(as_text(key), _scalar(value)) for key, value in args.items() if key not in skipped]


def _range_text(offset: Any, limit: Any) -> str:
    start = as_int(offset)
    count = as_int(limit)
    if start is not None and count is not None:
        return f"lines {start}–{start + count - 1}"
    if start is not None:
        return f"from line {start}"
    if count is not None:
        return f"first {count} lines"
    return ""


def _diff_lines(old: str, new: str, path: str, number: int) -> tuple[list[str], bool]:
    """A unified diff of one replacement (cut texts are diffed as cut, and say so)."""
    old_lines = old[:DIFF_MAX_CHARS].split("\n")
    new_lines = new[:DIFF_MAX_CHARS].split("\n")
    truncated = (
        len(old) > DIFF_MAX_CHARS
        or len(new) > DIFF_MAX_CHARS
        or len(old_lines) > DIFF_MAX_LINES
        or len(new_lines) > DIFF_MAX_LINES
    )
    label = f"{path} (edit {number})" if number else path
    lines = list(
        difflib.unified_diff(
            old_lines[:DIFF_MAX_LINES], new_lines[:DIFF_MAX_LINES], f"a/{label}", f"b/{label}", lineterm=""
        )
    )
    if truncated:
        lines.append("… (edit too large: the diff covers only its beginning)")
    return lines, truncated


def edit_diff(args: Mapping[str, Any]) -> tuple[str, bool]:
    """The diff text of an edit call: old/new pairs diffed with difflib, patch hunks as given."""
    path = as_text(args.get("path"))
    pairs: list[tuple[Any, Any, Any]] = []
    edits = args.get("edits")
    if isinstance(edits, list):
        pairs.extend(
            (
                _arg(edit, "oldText", "old_text", "old_string"),
                _arg(edit, "newText", "new_text", "new_string"),
                _arg(edit, "diff", "patch"),
            )
            for edit in edits
            if isinstance(edit, dict)
        )
    else:
        pairs.append(
            (
                _arg(args, "oldText", "old_text", "old_string"),
                _arg(args, "newText", "new_text", "new_string"),
                _arg(args, "diff", "patch", "input"),
            )
        )
    parts: list[str] = []
    any_truncated = False
    numbered = len(pairs) > 1
    for number, (old, new, patch) in enumerate(pairs, start=1):
        if isinstance(old, str) or isinstance(new, str):
            lines, truncated = _diff_lines(as_text(old), as_text(new), path, number if numbered else 0)
            parts.append("\n".join(lines))
            any_truncated = any_truncated or truncated
        elif isinstance(patch, str):
            parts.append(as_text(patch))
    return "\n".join(part for part in parts if part), any_truncated


def _bash(args: Mapping[str, Any]) -> tuple[list[Field], CodeBlock | None]:
    code = code_block("command", highlight_code(as_text(args.get("command")), language="bash"))
    return _fields(args, ("command",)), code


def _read(args: Mapping[str, Any]) -> tuple[list[Field], CodeBlock | None]:
    return _fields(args), None


def _write(args: Mapping[str, Any]) -> tuple[list[Field], CodeBlock | None]:
    path = as_text(_arg(args, "path", "file_path"))
    content = as_text(args.get("content"))
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    fields = [Field("path", path), Field("size", f"{lines} lines, {format_size(utf8_size(content))}")]
    fields += _fields(args, ("path", "file_path", "content"))
    return fields, code_block("content", highlight_code(content, filename=path))


def _edit(args: Mapping[str, Any]) -> tuple[list[Field], CodeBlock | None]:
    fields = [Field("path", as_text(_arg(args, "path", "file_path")))]
    edits = args.get("edits")
    if isinstance(edits, list):
        fields.append(Field("edits", str(len(edits))))
    diff, truncated = edit_diff(args)
    if not diff:
        return fields + _fields(args, ("path", "file_path", "edits")), None
    code = code_block("diff", highlight_with(diff, lexer_for_language("diff"), limit=HIGHLIGHT_MAX_CHARS))
    code.truncated = code.truncated or truncated
    return fields, code


def _listed(args: Mapping[str, Any]) -> tuple[list[Field], CodeBlock | None]:
    return _fields(args), None


_DETAILS = {
    "bash": _bash,
    "read": _read,
    "write": _write,
    "edit": _edit,
    "grep": _listed,
    "find": _listed,
    "ls": _listed,
}


def call_summary(tool: str, args: Any) -> str:
    """One line describing a tool call: the command, the path and range, the pattern and place ..."""
    if not isinstance(args, dict):
        return one_line(as_text(args)) if args is not None else ""
    if tool == "bash":
        return one_line(as_text(args.get("command")))
    if tool == "read":
        path = as_text(_arg(args, "path", "file_path"))
        span = _range_text(args.get("offset"), args.get("limit"))
        return f"{path} ({span})" if span else path
    if tool in ("write", "edit"):
        return one_line(as_text(_arg(args, "path", "file_path")))
    if tool in ("grep", "find"):
        pattern = _arg(args, "pattern", "query", "regex")
        where = _arg(args, "paths", "path", "glob", "dir")
        summary = _scalar(pattern) if pattern is not None else ""
        if where is not None:
            summary = f"{summary} in {_scalar(where)}" if summary else _scalar(where)
        return summary
    if tool == "ls":
        path = _arg(args, "path", "paths", "dir")
        return _scalar(path) if path is not None else "."
    # Another tool: its first string argument usually says what it does (a URL, a query, a path).
    for key, value in args.items():
        if isinstance(value, str) and value.strip():
            return one_line(f"{as_text(key)}: {as_text(value)}")
    return ""


def describe_call(name: Any, args: Any) -> tuple[str, str, list[Field], CodeBlock | None]:
    """(normalized tool, one-line summary, fields, code) of a tool call; other tools get at most a summary."""
    tool = tool_kind(name)
    summary = call_summary(tool, args)
    if tool and isinstance(args, dict):
        fields, code = _DETAILS[tool](args)
        return tool, summary, fields, code
    return tool, summary, [], None


XD_PREFIX = "xd://"


def device_call(name: Any, args: Any) -> tuple[str, str, Any] | None:
    """oh-my-pi's ``xd://`` devices, driven through ``read`` and ``write``: (device, what, arguments) where
    ``what`` is "listing" (read ``xd://``), "docs" (read ``xd://<tool>``) or "call" (write ``xd://<tool>``,
    whose ``content`` is the tool's JSON arguments); ``None`` for any other call."""
    tool = tool_kind(name)
    if tool not in ("read", "write") or not isinstance(args, dict):
        return None
    path = _arg(args, "path", "file_path")
    if not isinstance(path, str) or not path.startswith(XD_PREFIX):
        return None
    device = path[len(XD_PREFIX) :].strip("/")
    if tool == "read":
        return device, "docs" if device else "listing", None
    content = args.get("content")
    inner: Any = content
    if isinstance(content, str):
        try:
            inner = json.loads(content)
        except ValueError:
            inner = content
    return device, "call", inner


def tool_call_block(block: Mapping[str, Any], index: int) -> ToolCallBlock:
    """A `toolCall` content block of an assistant message (an ``xd://`` device call as the device's tool)."""
    name = as_text(block.get("name"))
    args = block.get("arguments")
    device = device_call(block.get("name"), args)
    if device is not None:
        target, what, inner = device
        if what == "call":
            tool, summary, fields, code = describe_call(target, inner)
            if not tool and not summary and inner is not None and not isinstance(inner, dict):
                summary = one_line(as_text(inner))
        else:
            tool, fields, code = "", [], None
            summary = f"documentation of the {target} device" if target else "the list of devices"
        return ToolCallBlock(
            index=index,
            call_id=as_text(block.get("id")),
            name=target if what == "call" else name,
            tool=tool,
            summary=summary,
            fields=fields,
            code=code,
            arguments=json_block("arguments", args),
            intent=opt_text(block.get("intent")),
            device=target,
        )
    tool, summary, fields, code = describe_call(block.get("name"), args)
    return ToolCallBlock(
        index=index,
        call_id=as_text(block.get("id")),
        name=name,
        tool=tool,
        summary=summary,
        fields=fields,
        code=code,
        arguments=json_block("arguments", args if args is not None else {}),
        intent=opt_text(block.get("intent")),
    )


def exit_code_of(details: Any, text: str) -> int | None:
    """A bash result's exit code: `details.exitCode` when recorded, else the agent's closing "exited" line."""
    if isinstance(details, dict):
        code = as_int(details.get("exitCode"))
        if code is not None:
            return code
    match = _EXIT_LINE.search(text[-200:])
    return int(match.group(1)) if match else None
