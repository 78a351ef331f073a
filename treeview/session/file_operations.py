"""Files the agent read and changed, as a branch summary records them (v15 ``compaction/utils.ts``).

Tool calls of assistant messages (``read`` / ``write`` / ``edit`` with a ``path``) are collected into
:class:`FileOperations`, turned into sorted ``read`` and ``modified`` lists, and written under the summary
text as ``<read-files>`` / ``<modified-files>`` blocks (Arbor's clean layout: one file per line).

Pure Python, no Django.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import js

__all__ = [
    "FILE_OPERATION_SUMMARY_LIMIT",
    "FileOperations",
    "compute_file_lists",
    "extract_file_ops_from_message",
    "format_file_operations",
    "strip_file_operation_tags",
]

#: File lists longer than this are cut, with a final "… (N more files omitted)" item.
FILE_OPERATION_SUMMARY_LIMIT = 20


@dataclass(slots=True)
class FileOperations:
    """Paths touched by tool calls, as insertion-ordered sets (dict keys keep JS ``Set`` order)."""

    read: dict[str, None] = field(default_factory=dict)
    written: dict[str, None] = field(default_factory=dict)
    edited: dict[str, None] = field(default_factory=dict)


def extract_file_ops_from_message(message: Mapping[str, Any], file_ops: FileOperations) -> None:
    """Record ``read`` / ``write`` / ``edit`` tool calls of an assistant message in ``file_ops``.

    Only a non-empty string ``arguments.path`` counts, as in v15 ``extractFileOpsFromMessage``.
    """
    if message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        if "arguments" not in block or "name" not in block:
            continue
        args = block["arguments"]
        if not isinstance(args, dict):
            continue
        path = args.get("path")
        if not isinstance(path, str) or not path:
            continue
        name = block["name"]
        if name == "read":
            file_ops.read[path] = None
        elif name == "write":
            file_ops.written[path] = None
        elif name == "edit":
            file_ops.edited[path] = None


def compute_file_lists(file_ops: FileOperations) -> tuple[list[str], list[str]]:
    """Return ``(read_files, modified_files)``: modified = edited ∪ written, read-only = read − modified."""
    modified = dict.fromkeys([*file_ops.edited, *file_ops.written])
    read_only = js.sort_strings(f for f in file_ops.read if f not in modified)
    return read_only, js.sort_strings(modified)


def _truncate_file_list(files: Sequence[str]) -> list[str]:
    if len(files) <= FILE_OPERATION_SUMMARY_LIMIT:
        return list(files)
    omitted = len(files) - FILE_OPERATION_SUMMARY_LIMIT
    return [*files[:FILE_OPERATION_SUMMARY_LIMIT], f"\u2026 ({omitted} more files omitted)"]


_READ_FILES_BLOCK = re.compile(r"<read-files>[\s\S]*?</read-files>\s*")
_MODIFIED_FILES_BLOCK = re.compile(r"<modified-files>[\s\S]*?</modified-files>\s*")


def strip_file_operation_tags(summary: str) -> str:
    """Remove existing ``<read-files>`` / ``<modified-files>`` blocks and trailing whitespace."""
    without_read = _READ_FILES_BLOCK.sub("", summary)
    return js.trim_end(_MODIFIED_FILES_BLOCK.sub("", without_read))


def format_file_operations(read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """Render the file lists in the clean layout: one file per line, blocks separated by a blank line.

    Returns ``""`` when both lists are empty. Lists longer than 20 end with an omission item.
    """
    sections: list[str] = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(_truncate_file_list(read_files)) + "\n</read-files>")
    if modified_files:
        sections.append(
            "<modified-files>\n" + "\n".join(_truncate_file_list(modified_files)) + "\n</modified-files>"
        )
    return "\n\n".join(sections)
