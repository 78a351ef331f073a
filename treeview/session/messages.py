"""LLM presentation of context messages (spec §12; oh-my-pi v15.0.0 ``session/messages.ts``).

This module turns the AgentMessages produced by ``build_session_context`` into the messages a
provider receives (``convert_to_llm``), renders the branch/compaction summary wrappers through a
small Handlebars subset plus the v15 post-render formatter, and formats ``!``/``$`` executions.

The produced dicts are hashed with ``JSON.stringify`` semantics elsewhere, so key order matters:
every builder below inserts keys in the order the original object literal or spread creates them.
JavaScript ``undefined`` is modelled as "key absent" (or the ``UNDEFINED`` sentinel of
``treeview.session.jsonl`` when an input already carries it); both serialize identically.

Pure Python, no Django.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, Final

from treeview.session.jsonl import UNDEFINED, format_number

__all__ = [
    "BRANCH_SUMMARY_CONTEXT_TEMPLATE",
    "COMPACTION_SUMMARY_CONTEXT_TEMPLATE",
    "bash_execution_to_text",
    "branch_summary_context_text",
    "compaction_summary_context_text",
    "convert_to_llm",
    "format_bytes",
    "format_output_notice",
    "format_prompt_output",
    "message_text",
    "python_execution_to_text",
    "render_prompt",
]

Message = dict[str, Any]

# ---------------------------------------------------------------------------------------------------------
# Templates (exact bytes of packages/coding-agent/src/prompts/compaction/*-context.md at v15.0.0, including
# the final newline the file ends with; the formatter removes it again after rendering).
# ---------------------------------------------------------------------------------------------------------

BRANCH_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "The following is a summary of a branch that this conversation came back from:\n"
    "\n"
    "<summary>\n"
    "{{summary}}\n"
    "</summary>\n"
)

COMPACTION_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. "
    "You MUST use this to build on the work that has already been done and NEVER duplicate work. "
    "Here is the summary produced by the other language model; you MUST use the information in this "
    "summary to assist with your own analysis:\n"
    "\n"
    "<summary>\n"
    "{{summary}}\n"
    "</summary>\n"
)

# ---------------------------------------------------------------------------------------------------------
# JavaScript value semantics needed for byte parity
# ---------------------------------------------------------------------------------------------------------

# String.prototype.trim and the regex class \s use the ECMAScript WhiteSpace + LineTerminator set, which is
# not Python's str.isspace set (Python adds \x1c-\x1f and \x85, and lacks \ufeff).
_JS_WHITESPACE: Final[str] = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_CLASS: Final[str] = re.escape(_JS_WHITESPACE)
# JS "." matches everything except the four line terminators.
_JS_DOT: Final[str] = "[^\n\r\u2028\u2029]"


def _js_trim(text: str) -> str:
    return text.strip(_JS_WHITESPACE)


def _js_trim_start(text: str) -> str:
    return text.lstrip(_JS_WHITESPACE)


def _js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


def _is_undefined(value: Any) -> bool:
    return value is UNDEFINED


def _is_nullish(value: Any) -> bool:
    """``value == null`` in JavaScript: null or undefined."""
    return value is None or value is UNDEFINED


def _js_truthy(value: Any) -> bool:
    """JavaScript truthiness: objects and arrays are truthy even when empty."""
    if _is_nullish(value) or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value == value and value != 0  # NaN and ±0 are falsy
    if isinstance(value, str):
        return value != ""
    return True


def _is_js_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _js_number_to_string(value: float | int) -> str:
    """``Number.prototype.toString()``: ``format_number`` plus the non-finite spellings JSON lacks."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return "NaN"
        return "Infinity" if value > 0 else "-Infinity"
    return format_number(value)


def _js_string(value: Any) -> str:
    """``String(value)`` / template-literal interpolation."""
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _js_number_to_string(value)
    if isinstance(value, list | tuple):
        return _js_join(value, ",")
    if isinstance(value, Mapping):
        return "[object Object]"
    return str(value)


def _js_join(items: list[Any] | tuple[Any, ...], separator: str) -> str:
    """``Array.prototype.join``: null and undefined elements become empty strings."""
    return separator.join("" if _is_nullish(item) else _js_string(item) for item in items)


def _js_to_number(value: Any) -> float:
    """A reduced ``ToNumber`` used only for relational comparisons on odd inputs."""
    if _is_js_number(value):
        return float(value)
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, str):
        stripped = _js_trim(value)
        if stripped == "":
            return 0.0
        try:
            return float(stripped)
        except ValueError:
            return math.nan
    return math.nan


def _js_to_fixed_1(value: float) -> str:
    """``Number.prototype.toFixed(1)``: ties on the exact binary value round away from zero."""
    if math.isnan(value):
        return "NaN"
    if abs(value) >= 1e21 or math.isinf(value):
        return _js_number_to_string(value)
    text = str(Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))
    return "0.0" if text == "-0.0" else text


def _get(obj: Any, key: str) -> Any:
    """Property read that yields UNDEFINED instead of raising (JS ``obj?.key`` on plain data)."""
    if isinstance(obj, Mapping):
        return obj.get(key, UNDEFINED)
    return UNDEFINED


# ---------------------------------------------------------------------------------------------------------
# Prompt formatter (packages/utils/src/prompt.ts ``format``)
# ---------------------------------------------------------------------------------------------------------

_CLOSING_XML: Final = re.compile(r"</([a-z_-]+)>")
_CLOSING_HBS: Final = re.compile(r"\{\{/")
_TABLE_ROW: Final = re.compile(rf"\|{_JS_DOT}*\|")
_TABLE_SEP: Final = re.compile(rf"\|[-:{_JS_WS_CLASS}|]+\|")
_RFC2119_BOLD: Final = re.compile(
    r"\*\*(MUST NOT|SHOULD NOT|RECOMMENDED|REQUIRED|OPTIONAL|SHOULD|MUST|MAY|NEVER|AVOID)\*\*"
)
# JS \b is ASCII-only, hence re.ASCII.
_MUST_NOT: Final = re.compile(r"\bMUST NOT\b", re.ASCII)
_SHOULD_NOT: Final = re.compile(r"\bSHOULD NOT\b", re.ASCII)


def _normalize_rfc2119(line: str) -> str:
    segments = line.split("`")
    for index in range(0, len(segments), 2):
        segment = _RFC2119_BOLD.sub(r"\1", segments[index])
        segment = _MUST_NOT.sub("NEVER", segment)
        segments[index] = _SHOULD_NOT.sub("AVOID", segment)
    return "`".join(segments)


def _compact_table_row(line: str) -> str:
    return "|".join(_js_trim(cell) for cell in line.split("|"))


def _compact_table_sep(line: str) -> str:
    normalized: list[str] = []
    for cell in line.split("|"):
        trimmed = _js_trim(cell)
        if not trimmed:
            continue
        left = trimmed.startswith(":")
        right = trimmed.endswith(":")
        if left and right:
            normalized.append(":---:")
        elif left:
            normalized.append(":---")
        elif right:
            normalized.append("---:")
        else:
            normalized.append("---")
    return "|" + "|".join(normalized) + "|"


def _replace_common_ascii_symbols(line: str) -> str:
    return (
        line.replace("...", "…")
        .replace("<->", "↔")
        .replace("->", "→")
        .replace("<-", "←")
        .replace("!=", "≠")
        .replace("<=", "≤")
        .replace(">=", "≥")
    )


def _pop_trailing_blank(result: list[str]) -> None:
    while result and _js_trim(result[-1]) == "":
        result.pop()


def format_prompt_output(
    text: str,
    *,
    render_phase: str = "post-render",
    replace_ascii_symbols: bool = False,
    normalize_rfc2119: bool = False,
) -> str:
    """Apply the v15 prompt formatter (``prompt.format``) to ``text``; defaults are the post-render pass.

    Rules, line by line (lines split on ``\\n``):

    * every line loses its trailing whitespace, inside fenced code blocks too;
    * a line starting (after indentation) with three backticks or three tildes toggles the code-block
      state; lines inside a block are kept verbatim otherwise;
    * outside blocks, table separator rows become ``|---|:---:|`` and table rows lose cell padding;
    * a blank line followed by another blank line removes the whole run *and* any blank lines already
      emitted before it; a single blank line is kept unless the previous emitted line is blank or there
      is none (leading blank lines vanish);
    * blank lines directly before a closing XML tag line (``</tag>``, lower-case ``[a-z_-]``) are removed;
    * trailing blank lines are removed.

    Whitespace means the ECMAScript set (``String.prototype.trim``), not Python's.
    """
    is_pre_render = render_phase == "pre-render"
    lines = text.split("\n")
    result: list[str] = []
    in_code_block = False
    # The original also tracks a stack of top-level XML tags here; it never affects the output.
    index = 0
    count = len(lines)
    while index < count:
        line = _js_trim_end(lines[index])
        trimmed_start = _js_trim_start(line)
        if trimmed_start.startswith("```") or trimmed_start.startswith("~~~"):
            in_code_block = not in_code_block
            result.append(line)
            index += 1
            continue
        if in_code_block:
            result.append(line)
            index += 1
            continue

        if replace_ascii_symbols:
            line = _replace_common_ascii_symbols(line)
        trimmed_start = _js_trim_start(line)
        trimmed = _js_trim(line)

        if _CLOSING_XML.fullmatch(trimmed_start):
            pass
        elif is_pre_render and trimmed_start.startswith("{{"):
            pass  # Handlebars markers keep their indentation before rendering
        elif _TABLE_SEP.fullmatch(trimmed_start):
            line = line[: len(line) - len(trimmed_start)] + _compact_table_sep(trimmed_start)
        elif _TABLE_ROW.fullmatch(trimmed_start):
            line = line[: len(line) - len(trimmed_start)] + _compact_table_row(trimmed_start)

        if normalize_rfc2119:
            line = _normalize_rfc2119(line)

        if trimmed == "":
            next_line = _js_trim(lines[index + 1]) if index + 1 < count else ""
            if next_line == "":
                _pop_trailing_blank(result)
                while index + 1 < count and _js_trim(lines[index + 1]) == "":
                    index += 1
                index += 1
                continue
            previous = _js_trim(result[-1]) if result else ""
            if previous == "":
                index += 1
                continue

        if _CLOSING_XML.fullmatch(trimmed) or (is_pre_render and _CLOSING_HBS.match(trimmed)):
            _pop_trailing_blank(result)

        result.append(line)
        index += 1

    _pop_trailing_blank(result)
    return "\n".join(result)


# ---------------------------------------------------------------------------------------------------------
# Handlebars subset (prompt.render = compile with noEscape, then the post-render formatter)
# ---------------------------------------------------------------------------------------------------------

_MUSTACHE: Final = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_SIMPLE_PATH: Final = re.compile(
    r"(?:this\.|\./)?[A-Za-z_$][A-Za-z0-9_$-]*(?:[./][A-Za-z_$][A-Za-z0-9_$-]*)*"
)


def _lookup(context: Mapping[str, Any], path: str) -> Any:
    if path.startswith("this."):
        path = path[5:]
    elif path.startswith("./"):
        path = path[2:]
    value: Any = context
    for part in re.split(r"[./]", path):
        value = _get(value, part)
        if _is_nullish(value):
            return value
    return value


def _handlebars_value(value: Any) -> str:
    # noEscape output appends the raw value unless it is null/undefined (then nothing is appended).
    if _is_nullish(value):
        return ""
    return _js_string(value)


def _render_handlebars(template: str, context: Mapping[str, Any]) -> str:
    """Render plain ``{{path}}`` mustaches; anything richer raises ``ValueError`` (not needed here)."""
    out: list[str] = []
    position = 0
    for match in _MUSTACHE.finditer(template):
        start = match.start()
        if start > 0 and template[start - 1] == "\\":
            raise ValueError("escaped mustaches are not supported by this Handlebars subset")
        expression = match.group(1)
        stripped = expression.strip(" \t\r\n")
        if expression.startswith("{") or not _SIMPLE_PATH.fullmatch(stripped):
            raise ValueError(f"unsupported Handlebars expression: {{{{{expression}}}}}")
        out.append(template[position:start])
        out.append(_handlebars_value(_lookup(context, stripped)))
        position = match.end()
    out.append(template[position:])
    return "".join(out)


def render_prompt(template: str, /, **variables: Any) -> str:
    """Render ``template`` like v15 ``prompt.render``: Handlebars (noEscape) then ``format_prompt_output``.

    Only simple ``{{name}}`` / ``{{a.b}}`` substitutions are supported (all the context templates use);
    null/undefined values render as nothing, other values as JavaScript ``String(value)``. Substituted
    values are not re-parsed, but the formatter runs over the whole text, values included.
    """
    return format_prompt_output(_render_handlebars(template, variables), render_phase="post-render")


def branch_summary_context_text(summary: Any) -> str:
    """The user-message text wrapping a branch summary (v15 ``branch-summary-context.md``)."""
    return render_prompt(BRANCH_SUMMARY_CONTEXT_TEMPLATE, summary=summary)


def compaction_summary_context_text(summary: Any) -> str:
    """The user-message text wrapping a compaction summary (v15.0.0 ``compaction-summary-context.md``)."""
    return render_prompt(COMPACTION_SUMMARY_CONTEXT_TEMPLATE, summary=summary)


# ---------------------------------------------------------------------------------------------------------
# Output notices (tools/output-meta.ts formatOutputNotice and helpers)
# ---------------------------------------------------------------------------------------------------------


def format_bytes(value: Any) -> str:
    """``formatBytes`` from pi-utils: ``512B``, ``1.5KB``, ``2.3MB``, ``1.2GB`` (toFixed(1) rounding)."""
    number = _js_to_number(value)
    if number < 1024:
        return f"{_js_string(value)}B"
    if number < 1024 * 1024:
        return f"{_js_to_fixed_1(number / 1024)}KB"
    if number < 1024 * 1024 * 1024:
        return f"{_js_to_fixed_1(number / (1024 * 1024))}MB"
    return f"{_js_to_fixed_1(number / (1024 * 1024 * 1024))}GB"


def _js_ge(left: Any, right: Any) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left >= right
    a = _js_to_number(left)
    b = _js_to_number(right)
    return a >= b  # NaN compares false, as in JavaScript


def _format_truncation_notice(truncation: Any) -> str:
    shown = _get(truncation, "shownRange")
    if _js_truthy(shown) and _js_ge(_get(shown, "end"), _get(shown, "start")):
        notice = (
            f"Showing lines {_js_string(_get(shown, 'start'))}-{_js_string(_get(shown, 'end'))}"
            f" of {_js_string(_get(truncation, 'totalLines'))}"
        )
    else:
        notice = (
            f"Showing {_js_string(_get(truncation, 'outputLines'))}"
            f" of {_js_string(_get(truncation, 'totalLines'))} lines"
        )
    if _get(truncation, "truncatedBy") == "bytes":
        max_bytes = _get(truncation, "maxBytes")
        if _is_nullish(max_bytes):
            max_bytes = _get(truncation, "outputBytes")
        notice += f" ({format_bytes(max_bytes)} limit)"
    next_offset = _get(truncation, "nextOffset")
    if not _is_nullish(next_offset):
        notice += f". Use :{_js_string(next_offset)} to continue"
    artifact_id = _get(truncation, "artifactId")
    if not _is_nullish(artifact_id):
        notice += f". Read artifact://{_js_string(artifact_id)} for full output"
    return notice


_DIAG_PATH: Final = re.compile(rf"({_JS_DOT}+?):([0-9]+:[0-9]+[{_JS_WS_CLASS}]+{_JS_DOT}*)")


def _node_dirname(path: str) -> str:
    """Node ``path.posix.dirname``."""
    if not path:
        return "."
    has_root = path[0] == "/"
    end = -1
    matched_slash = True
    for i in range(len(path) - 1, 0, -1):
        if path[i] == "/":
            if not matched_slash:
                end = i
                break
        else:
            matched_slash = False
    if end == -1:
        return "/" if has_root else "."
    if has_root and end == 1:
        return "//"
    return path[:end]


def _node_basename(path: str) -> str:
    """Node ``path.posix.basename`` without an extension argument."""
    start = 0
    end = -1
    matched_slash = True
    for i in range(len(path) - 1, -1, -1):
        if path[i] == "/":
            if not matched_slash:
                start = i + 1
                break
        elif end == -1:
            matched_slash = False
            end = i + 1
    if end == -1:
        return ""
    return path[start:end]


def _format_grouped_diagnostic_messages(messages: list[Any]) -> str:
    """``formatGroupedDiagnosticMessages`` (lsp/utils.ts) with ``formatGroupedFiles`` inlined."""
    by_file: dict[str, list[str]] = {}
    ungrouped: list[Any] = []
    for message in messages:
        match = _DIAG_PATH.fullmatch(_js_string(message))
        if match is None:
            ungrouped.append(message)
            continue
        file_path = match.group(1).replace("\\", "/")
        by_file.setdefault(file_path, []).append(match.group(2))
    if not by_file:
        return _js_join(ungrouped, "\n")

    by_directory: dict[str, list[str]] = {}
    for file_path in by_file:
        by_directory.setdefault(_node_dirname(file_path).replace("\\", "/"), []).append(file_path)
    lines: list[str] = []
    for directory, files in by_directory.items():
        if directory == ".":
            for file_path in files:
                if lines:
                    lines.append("")
                lines.append(f"# {_node_basename(file_path)}")
                lines.extend(f"  {rest}" for rest in by_file[file_path])
            continue
        if lines:
            lines.append("")
        lines.append(f"# {directory}/")
        for file_path in files:
            lines.append(f"## {_node_basename(file_path)}")
            lines.extend(f"  {rest}" for rest in by_file[file_path])
    if ungrouped:
        lines.append("")
        lines.extend("" if _is_nullish(item) else _js_string(item) for item in ungrouped)
    return "\n".join(lines)


def format_output_notice(meta: Any) -> str:
    """``formatOutputNotice``: the ``\\n\\n[...]`` truncation/limit notice (+ LSP diagnostics) for ``meta``.

    Returns ``""`` when ``meta`` is missing or carries nothing to report.
    """
    if not _js_truthy(meta):
        return ""
    parts: list[str] = []
    truncation = _get(meta, "truncation")
    if _js_truthy(truncation):
        parts.append(_format_truncation_notice(truncation))
    limits = _get(meta, "limits")
    match_limit = _get(limits, "matchLimit")
    if _js_truthy(match_limit):
        parts.append(
            f"{_js_string(_get(match_limit, 'reached'))} matches limit reached. "
            f"Use limit={_js_string(_get(match_limit, 'suggestion'))} for more"
        )
    for key in ("resultLimit", "headLimit"):
        limit = _get(limits, key)
        if _js_truthy(limit):
            parts.append(
                f"{_js_string(_get(limit, 'reached'))} results limit reached. "
                f"Use limit={_js_string(_get(limit, 'suggestion'))} for more"
            )
    column = _get(limits, "columnTruncated")
    if _js_truthy(column):
        parts.append(f"Some lines truncated to {_js_string(_get(column, 'maxColumn'))} chars")

    diagnostics_notice = ""
    diagnostics = _get(meta, "diagnostics")
    messages = _get(diagnostics, "messages")
    if _js_truthy(diagnostics) and isinstance(messages, list) and len(messages) > 0:
        diagnostics_notice = (
            f"\n\nLSP Diagnostics ({_js_string(_get(diagnostics, 'summary'))}):\n"
            f"{_format_grouped_diagnostic_messages(messages)}"
        )

    notice = f"\n\n[{'. '.join(parts)}]" if parts else ""
    return notice + diagnostics_notice


# ---------------------------------------------------------------------------------------------------------
# Execution messages
# ---------------------------------------------------------------------------------------------------------


def _nonzero_exit_code(exit_code: Any) -> bool:
    # exitCode !== null && exitCode !== undefined && exitCode !== 0 (strict: false and "0" are not 0).
    if _is_nullish(exit_code):
        return False
    return not (_is_js_number(exit_code) and exit_code == 0)


def bash_execution_to_text(msg: Mapping[str, Any]) -> str:
    """User-message text for a ``bashExecution`` (the ``!`` command), as v15 ``bashExecutionToText``."""
    text = f"Ran `{_js_string(msg.get('command', UNDEFINED))}`\n"
    output = msg.get("output", UNDEFINED)
    if _js_truthy(output):
        text += f"```\n{_js_string(output)}\n```"
    else:
        text += "(no output)"
    exit_code = msg.get("exitCode", UNDEFINED)
    if _js_truthy(msg.get("cancelled", UNDEFINED)):
        text += "\n\n(command cancelled)"
    elif _nonzero_exit_code(exit_code):
        text += f"\n\nCommand exited with code {_js_string(exit_code)}"
    return text + format_output_notice(msg.get("meta", UNDEFINED))


def python_execution_to_text(msg: Mapping[str, Any]) -> str:
    """User-message text for a ``pythonExecution`` (the ``$`` command), as v15 ``pythonExecutionToText``."""
    text = f"Ran Python:\n```python\n{_js_string(msg.get('code', UNDEFINED))}\n```\n"
    output = msg.get("output", UNDEFINED)
    if _js_truthy(output):
        text += f"Output:\n```\n{_js_string(output)}\n```"
    else:
        text += "(no output)"
    exit_code = msg.get("exitCode", UNDEFINED)
    if _js_truthy(msg.get("cancelled", UNDEFINED)):
        text += "\n\n(execution cancelled)"
    elif _nonzero_exit_code(exit_code):
        text += f"\n\nExecution failed with code {_js_string(exit_code)}"
    return text + format_output_notice(msg.get("meta", UNDEFINED))


# ---------------------------------------------------------------------------------------------------------
# convertToLlm
# ---------------------------------------------------------------------------------------------------------


def _set(target: Message, key: str, value: Any) -> None:
    """Assign like a JS object literal/spread: an undefined value adds no visible key.

    Assigning onto an existing key keeps its position (JS property order); an undefined value on an
    existing key is stored as UNDEFINED so the position semantics stay intact.
    """
    if _is_undefined(value):
        if key in target:
            target[key] = UNDEFINED
        return
    target[key] = value


def _literal(*pairs: tuple[str, Any]) -> Message:
    """Build a dict like a JS object literal: keys in order, undefined values omitted."""
    out: Message = {}
    for key, value in pairs:
        if not _is_undefined(value):
            out[key] = value
    return out


def _with_default_attribution(message: Message, default: str) -> Message:
    out = dict(message)
    attribution = message.get("attribution", UNDEFINED)
    out["attribution"] = default if _is_nullish(attribution) else attribution
    return out


def _pruned_tool_result_content(message: Message) -> Any:
    content = message.get("content", UNDEFINED)
    if _is_undefined(message.get("prunedAt", UNDEFINED)):
        return content
    blocks = content if isinstance(content, list) else []
    texts = [_get(block, "text") for block in blocks if _get(block, "type") == "text"]
    text = _js_join(texts, "") or "[Output truncated]"
    return [{"type": "text", "text": text}]


def _file_mention_content(message: Message) -> list[Any]:
    files = message.get("files", UNDEFINED)
    file_list = files if isinstance(files, list) else []
    rendered: list[str] = []
    for file in file_list:
        body = _get(file, "content")
        inner = f"\n{_js_string(body)}\n" if _js_truthy(body) else "\n"
        rendered.append(f'<file path="{_js_string(_get(file, "path"))}">{inner}</file>')
    file_contents = "\n\n".join(rendered)
    content: list[Any] = [{"type": "text", "text": f"<system-reminder>\n{file_contents}\n</system-reminder>"}]
    for file in file_list:
        image = _get(file, "image")
        if _js_truthy(image):
            content.append(image)
    return content


def _convert_bash(m: Message) -> Message | None:
    if _js_truthy(m.get("excludeFromContext", UNDEFINED)):
        return None
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": bash_execution_to_text(m)}]),
        ("attribution", "user"),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_python(m: Message) -> Message | None:
    if _js_truthy(m.get("excludeFromContext", UNDEFINED)):
        return None
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": python_execution_to_text(m)}]),
        ("attribution", "user"),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_custom(m: Message) -> Message:
    content = m.get("content", UNDEFINED)
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return _literal(
        ("role", "user"),
        ("content", content),
        ("attribution", m.get("attribution", UNDEFINED)),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_branch_summary(m: Message) -> Message:
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": branch_summary_context_text(m.get("summary", UNDEFINED))}]),
        ("attribution", "agent"),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_compaction_summary(m: Message) -> Message:
    text = compaction_summary_context_text(m.get("summary", UNDEFINED))
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": text}]),
        ("attribution", "agent"),
        ("providerPayload", m.get("providerPayload", UNDEFINED)),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_file_mention(m: Message) -> Message:
    return _literal(
        ("role", "user"),
        ("content", _file_mention_content(m)),
        ("attribution", "user"),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_tool_result(m: Message) -> Message:
    out = dict(m)
    _set(out, "content", _pruned_tool_result_content(m))
    attribution = m.get("attribution", UNDEFINED)
    out["attribution"] = "agent" if _is_nullish(attribution) else attribution
    return out


_CONVERTERS: Final[dict[str, Callable[[Message], Message | None]]] = {
    "bashExecution": _convert_bash,
    "pythonExecution": _convert_python,
    "custom": _convert_custom,
    "hookMessage": _convert_custom,
    "branchSummary": _convert_branch_summary,
    "compactionSummary": _convert_compaction_summary,
    "fileMention": _convert_file_mention,
    "user": lambda m: _with_default_attribution(m, "user"),
    "developer": lambda m: _with_default_attribution(m, "agent"),
    # The original returns the assistant object itself; so do we (callers must not mutate it).
    "assistant": lambda m: m,
    "toolResult": _convert_tool_result,
}


def convert_to_llm(messages: list[Message]) -> list[Message]:
    """Transform context AgentMessages into LLM messages exactly like v15 ``convertToLlm``.

    * ``user`` / ``developer``: shallow copy with ``attribution ?? "user"`` / ``?? "agent"``;
    * ``assistant``: unchanged (same object);
    * ``toolResult``: copy; when ``prunedAt`` is present (even null) the content becomes one text block
      with the text blocks concatenated (``"[Output truncated]"`` when empty); ``attribution ?? "agent"``;
    * ``bashExecution`` / ``pythonExecution``: dropped when ``excludeFromContext`` is truthy, else a user
      message with the execution text, attribution ``user``;
    * ``custom`` / ``hookMessage``: a user message, string content wrapped in one text block, the
      message's own attribution (omitted when absent);
    * ``branchSummary`` / ``compactionSummary``: a user message with the rendered context template,
      attribution ``agent`` (compaction also carries ``providerPayload`` when present);
    * ``fileMention``: a ``<system-reminder>`` user message plus the files' image blocks;
    * anything else (unknown role, non-dict item) is dropped.
    """
    out: list[Message] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        converter = _CONVERTERS.get(role) if isinstance(role, str) else None
        if converter is None:
            continue
        converted = converter(message)
        if converted is not None:
            out.append(converted)
    return out


# ---------------------------------------------------------------------------------------------------------
# Whole text of a message
# ---------------------------------------------------------------------------------------------------------


def message_text(message: Mapping[str, Any]) -> str:
    """The "whole text" of a context or LLM message.

    * string ``content``: the string itself;
    * array ``content``: the ``text`` of every text block concatenated with no separator (images,
      thinking and tool calls are ignored), the way v15 joins text blocks (pruned tool results, the
      tree selector);
    * ``branchSummary`` / ``compactionSummary``: the summary;
    * anything else (bash/python executions, file mentions, missing content): ``""``.
    """
    if not isinstance(message, Mapping):
        return ""
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return ""
