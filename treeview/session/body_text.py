"""The full text of an entry that the search across sessions indexes (its "body").

The tree selector's search text (§17.6) holds only the first 200 characters of a message; the search across
sessions should find a word anywhere a user would look for it. The body of an entry is, by type:

* a user, developer or assistant message: its text (a string, or the text blocks one per line). Not the
  assistant's thinking (the model's scratch work, often longer than the answer and not what a user quotes)
  nor its tool calls (a tool call shows as the label of its result, below);
* a tool result: the row text of the tree (the call that produced it: ``[read: src/app.py]``,
  ``[bash: make test]``), then the start of the output;
* a ``bashExecution`` / ``pythonExecution`` message (``!`` commands): the command or code, then the start of
  the output;
* a custom message (the entry, or a message with role ``custom``): ``[customType]``, then the text;
* a branch summary: the summary; a compaction: the summary, then the short summary;
* a ``fileMention`` message: the paths of the files (not their contents).

Every other entry (settings, labels, custom state, an assistant turn with no text) has an empty body: it is
not indexed. Images are never indexed.

The body is cut at :data:`MAX_BODY` characters, and the output of a tool or command in it at
:data:`MAX_TOOL_OUTPUT`: a 5 MB tool output must not make the index grow by 5 MB, the start of an output is
what tells it apart (the rest is mostly more of the same: file contents, logs), and tool output is most of a
session's text. In a generated 100,000-entry session (``bench/import_bench.py``) it is 105 of 120 million
characters when cut at 32 KiB, 44 of 59 million when cut at 2,000. Indexing it to 32 KiB tripled the
database server's work in a PostgreSQL import (to 2,000: less than doubled it) and added a third to the CPU
time of a SQLite import (to 2,000: about a fifth). Parts are kept in order, so a tool result's label and a
command are always there.

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["MAX_BODY", "MAX_TOOL_OUTPUT", "SEARCHED_TYPES", "body_text"]

#: At most this many characters of an entry are indexed (32 KiB of text for ASCII, at most 128 KiB of UTF-8).
MAX_BODY: Final = 32 * 1024
#: At most this many characters of a tool's or command's output (a tool result's content, a ``!`` command's
#: output) are indexed.
MAX_TOOL_OUTPUT: Final = 2000

#: The entry types that may have a body; every other type's body is empty.
SEARCHED_TYPES: Final = frozenset({"message", "custom_message", "branch_summary", "compaction"})

_CONTENT_ROLES: Final = frozenset({"user", "developer", "assistant"})
_CUSTOM_ROLES: Final = frozenset({"custom", "hookMessage"})


class _Parts:
    """Pieces of text joined by newlines, cut once ``limit`` characters are reached."""

    __slots__ = ("left", "parts")

    def __init__(self, limit: int) -> None:
        self.parts: list[str] = []
        self.left = limit

    def add(self, text: Any) -> None:
        if not isinstance(text, str) or not text or self.left <= 0:
            return
        if self.parts:
            self.left -= 1  # the newline before it
            if self.left <= 0:
                return
        if len(text) > self.left:
            text = text[: self.left]
        self.parts.append(text)
        self.left -= len(text)

    def add_content(self, content: Any, cap: int | None = None) -> None:
        """A message's content: a string, or its text blocks (images and other blocks are skipped); at most
        ``cap`` characters of it (newlines between blocks included)."""
        held = 0
        if cap is not None:
            cap += 1 if self.parts else 0  # the newline before the content is not part of it
            if cap < self.left:
                held, self.left = self.left - cap, cap
        if isinstance(content, str):
            self.add(content)
        elif isinstance(content, list):
            for block in content:
                if self.left <= 0:
                    break
                if isinstance(block, dict) and block.get("type") == "text":
                    self.add(block.get("text"))
        self.left += held

    def text(self) -> str:
        body = "\n".join(self.parts)
        return "" if not body or body.isspace() else body


def _message_body(message: Mapping[str, Any], row_text: str, parts: _Parts) -> None:
    role = message.get("role")
    content = message.get("content")
    if role in _CONTENT_ROLES:
        parts.add_content(content)
    elif role == "toolResult":
        parts.add(row_text)
        parts.add_content(content, MAX_TOOL_OUTPUT)
    elif role == "bashExecution":
        parts.add(message.get("command"))
        parts.add_content(message.get("output"), MAX_TOOL_OUTPUT)
    elif role == "pythonExecution":
        parts.add(message.get("code"))
        parts.add_content(message.get("output"), MAX_TOOL_OUTPUT)
    elif role in _CUSTOM_ROLES:
        custom_type = message.get("customType")
        parts.add(f"[{custom_type}]" if isinstance(custom_type, str) and custom_type else None)
        parts.add_content(content)
    elif role == "fileMention":
        files = message.get("files")
        for file in files if isinstance(files, list) else ():
            if isinstance(file, dict):
                parts.add(file.get("path"))
    else:
        # A role this reader does not know: its text, if it has any in the usual shape.
        parts.add_content(content)


def body_text(entry: Mapping[str, Any], row_text: str = "", limit: int = MAX_BODY) -> str:
    """The text the search across sessions indexes for ``entry`` (see the module docstring): at most
    ``limit`` characters, ``""`` for an entry that is not searched.

    ``row_text`` is the entry's row text in the tree (:func:`~treeview.session.selector_text.display_text`,
    which labels a tool result with its call); only a tool result uses it. The text is not case-folded nor
    otherwise changed, so that search results can quote it.
    """
    parts = _Parts(limit)
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict):
            _message_body(message, row_text, parts)
    elif kind == "custom_message":
        custom_type = entry.get("customType")
        parts.add(f"[{custom_type}]" if isinstance(custom_type, str) and custom_type else None)
        parts.add_content(entry.get("content"))
    elif kind == "branch_summary":
        parts.add(entry.get("summary"))
    elif kind == "compaction":
        parts.add(entry.get("summary"))
        parts.add(entry.get("shortSummary"))
    return parts.text()
