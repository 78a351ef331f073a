"""Prompt rendering as oh-my-pi v15 does it (``packages/utils/src/prompt.ts``).

:func:`render_prompt` is ``prompt.render``: a Handlebars subset (plain ``{{path}}`` substitutions,
``noEscape``) followed by the post-render pass of the prompt formatter, :func:`format_prompt_output`
(``prompt.format``), which trims line ends, collapses blank lines and compacts Markdown tables. The
summary wrappers of :mod:`treeview.session.messages` go through it, so its rules decide the exact bytes
the LLM receives.

Pure Python, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from treeview.session import js

__all__ = ["format_prompt_output", "render_prompt"]

# ---------------------------------------------------------------------------------------------------------
# Prompt formatter (packages/utils/src/prompt.ts ``format``)
# ---------------------------------------------------------------------------------------------------------

_CLOSING_XML: Final = re.compile(r"</([a-z_-]+)>")
_CLOSING_HBS: Final = re.compile(r"\{\{/")
_TABLE_ROW: Final = re.compile(rf"\|{js.RE_DOT}*\|")
_TABLE_SEP: Final = re.compile(rf"\|[-:{js.RE_SPACE_CHARS}|]+\|")
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
    return "|".join(js.trim(cell) for cell in line.split("|"))


def _compact_table_sep(line: str) -> str:
    normalized: list[str] = []
    for cell in line.split("|"):
        trimmed = js.trim(cell)
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
    while result and js.trim(result[-1]) == "":
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
        line = js.trim_end(lines[index])
        trimmed_start = js.trim_start(line)
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
        trimmed_start = js.trim_start(line)
        trimmed = js.trim(line)

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
            next_line = js.trim(lines[index + 1]) if index + 1 < count else ""
            if next_line == "":
                _pop_trailing_blank(result)
                while index + 1 < count and js.trim(lines[index + 1]) == "":
                    index += 1
                index += 1
                continue
            previous = js.trim(result[-1]) if result else ""
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
        value = js.get(value, part)
        if js.is_nullish(value):
            return value
    return value


def _handlebars_value(value: Any) -> str:
    # noEscape output appends the raw value unless it is null/undefined (then nothing is appended).
    if js.is_nullish(value):
        return ""
    return js.to_string(value)


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
