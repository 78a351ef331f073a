"""The notice under a tool's output: truncation, result limits and LSP diagnostics.

Ported from oh-my-pi v15 ``tools/output-meta.ts`` (``formatOutputNotice``) with ``formatBytes`` from
pi-utils and ``formatGroupedDiagnosticMessages`` from ``lsp/utils.ts``. ``!``/``$`` executions carry
such a ``meta`` object, and their user-message text (``messages.bash_execution_to_text``) ends with it.

Pure Python, no Django.
"""

from __future__ import annotations

import re
from typing import Any, Final

from treeview.session import js

__all__ = ["format_bytes", "format_output_notice"]


def format_bytes(value: Any) -> str:
    """``formatBytes`` from pi-utils: ``512B``, ``1.5KB``, ``2.3MB``, ``1.2GB`` (toFixed(1) rounding)."""
    number = js.to_number(value)
    if number < 1024:
        return f"{js.to_string(value)}B"
    if number < 1024 * 1024:
        return f"{js.to_fixed(number / 1024, 1)}KB"
    if number < 1024 * 1024 * 1024:
        return f"{js.to_fixed(number / (1024 * 1024), 1)}MB"
    return f"{js.to_fixed(number / (1024 * 1024 * 1024), 1)}GB"


def _format_truncation_notice(truncation: Any) -> str:
    shown = js.get(truncation, "shownRange")
    if js.truthy(shown) and js.greater_or_equal(js.get(shown, "end"), js.get(shown, "start")):
        notice = (
            f"Showing lines {js.to_string(js.get(shown, 'start'))}-{js.to_string(js.get(shown, 'end'))}"
            f" of {js.to_string(js.get(truncation, 'totalLines'))}"
        )
    else:
        notice = (
            f"Showing {js.to_string(js.get(truncation, 'outputLines'))}"
            f" of {js.to_string(js.get(truncation, 'totalLines'))} lines"
        )
    if js.get(truncation, "truncatedBy") == "bytes":
        max_bytes = js.get(truncation, "maxBytes")
        if js.is_nullish(max_bytes):
            max_bytes = js.get(truncation, "outputBytes")
        notice += f" ({format_bytes(max_bytes)} limit)"
    next_offset = js.get(truncation, "nextOffset")
    if not js.is_nullish(next_offset):
        notice += f". Use :{js.to_string(next_offset)} to continue"
    artifact_id = js.get(truncation, "artifactId")
    if not js.is_nullish(artifact_id):
        notice += f". Read artifact://{js.to_string(artifact_id)} for full output"
    return notice


_DIAG_PATH: Final = re.compile(rf"({js.RE_DOT}+?):([0-9]+:[0-9]+{js.RE_SPACE}+{js.RE_DOT}*)")


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
        match = _DIAG_PATH.fullmatch(js.to_string(message))
        if match is None:
            ungrouped.append(message)
            continue
        file_path = match.group(1).replace("\\", "/")
        by_file.setdefault(file_path, []).append(match.group(2))
    if not by_file:
        return js.join(ungrouped, "\n")

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
        lines.extend("" if js.is_nullish(item) else js.to_string(item) for item in ungrouped)
    return "\n".join(lines)


def format_output_notice(meta: Any) -> str:
    """``formatOutputNotice``: the ``\\n\\n[...]`` truncation/limit notice (+ LSP diagnostics) for ``meta``.

    Returns ``""`` when ``meta`` is missing or carries nothing to report.
    """
    if not js.truthy(meta):
        return ""
    parts: list[str] = []
    truncation = js.get(meta, "truncation")
    if js.truthy(truncation):
        parts.append(_format_truncation_notice(truncation))
    limits = js.get(meta, "limits")
    match_limit = js.get(limits, "matchLimit")
    if js.truthy(match_limit):
        parts.append(
            f"{js.to_string(js.get(match_limit, 'reached'))} matches limit reached. "
            f"Use limit={js.to_string(js.get(match_limit, 'suggestion'))} for more"
        )
    for key in ("resultLimit", "headLimit"):
        limit = js.get(limits, key)
        if js.truthy(limit):
            parts.append(
                f"{js.to_string(js.get(limit, 'reached'))} results limit reached. "
                f"Use limit={js.to_string(js.get(limit, 'suggestion'))} for more"
            )
    column = js.get(limits, "columnTruncated")
    if js.truthy(column):
        parts.append(f"Some lines truncated to {js.to_string(js.get(column, 'maxColumn'))} chars")

    diagnostics_notice = ""
    diagnostics = js.get(meta, "diagnostics")
    messages = js.get(diagnostics, "messages")
    if js.truthy(diagnostics) and isinstance(messages, list) and len(messages) > 0:
        diagnostics_notice = (
            f"\n\nLSP Diagnostics ({js.to_string(js.get(diagnostics, 'summary'))}):\n"
            f"{_format_grouped_diagnostic_messages(messages)}"
        )

    notice = f"\n\n[{'. '.join(parts)}]" if parts else ""
    return notice + diagnostics_notice
