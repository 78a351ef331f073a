"""A readable Markdown transcript of a branch: messages as sections, tool calls and outputs as code blocks.

Pure Python over parsed entries (no Django). The text is what the entries hold, so callers pass the entries
they mean to publish (redacted ones, for a share link). Fences are made longer than any run of backticks in
what they hold, so no content can close its block early.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

__all__ = ["fence", "transcript", "transcript_pieces"]

_BACKTICKS = re.compile(r"`+")


def fence(text: str, language: str = "") -> str:
    """``text`` as a fenced code block whose fence no backtick run inside it can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    marks = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{marks}{language}\n{body}{marks}"


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, indent=2)


def _content_parts(content: Any) -> list[tuple[str, str]]:
    """(kind, text) of a message's content: ``text``, ``thinking``, ``tool_call`` (name and JSON arguments),
    ``image`` or ``other``."""
    if isinstance(content, str):
        return [("text", content)]
    if not isinstance(content, list):
        return []
    parts: list[tuple[str, str]] = []
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(("text", _text(block.get("text"))))
        elif kind == "thinking":
            parts.append(("thinking", _text(block.get("thinking"))))
        elif kind == "redactedThinking" or kind == "redacted_thinking":
            parts.append(("other", "(redacted thinking)"))
        elif kind == "toolCall":
            name = _text(block.get("name")) or "tool"
            intent = block.get("intent")
            purpose = " ".join(intent.split()) if isinstance(intent, str) else ""
            parts.append(("tool_call", f"{name}\n{purpose}\n{_text(block.get('arguments'))}"))
        elif kind == "image":
            parts.append(("image", f"[image: {_text(block.get('mimeType')) or 'image'}]"))
        else:
            parts.append(("other", fence(_text(dict(block)), "json")))
    return parts


def _quoted(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines()) or ">"


def _message(message: Mapping[str, Any]) -> tuple[str, list[str]]:
    role = _text(message.get("role"))
    content = message.get("content")
    body: list[str] = []
    if role == "user":
        title = "User"
    elif role == "assistant":
        model = _text(message.get("model"))
        title = f"Assistant ({model})" if model else "Assistant"
    elif role == "toolResult":
        name = _text(message.get("toolName")) or "tool"
        error = " (error)" if message.get("isError") is True else ""
        title = f"Tool result: {name}{error}"
        output = "\n".join(text for kind, text in _content_parts(content) if kind in ("text", "image"))
        return title, [fence(output)] if output else []
    elif role == "bashExecution":
        title = "Bash"
        body.append(fence("$ " + _text(message.get("command")), "sh"))
        output = _text(message.get("output"))
        if output:
            body.append(fence(output))
        return title, body
    elif role in ("custom", "hookMessage"):
        custom = _text(message.get("customType"))
        title = f"Message ({custom})" if custom else "Message"
    elif role in ("branchSummary", "compactionSummary"):
        title = "Branch summary" if role == "branchSummary" else "Compaction summary"
        return title, [_text(message.get("summary"))]
    else:
        title = role or "Message"
    for kind, text in _content_parts(content):
        if kind == "thinking":
            if text.strip():
                body.append("**Thinking**\n\n" + _quoted(text))
        elif kind == "tool_call":
            name, _, rest = text.partition("\n")
            intent, _, arguments = rest.partition("\n")
            heading = f"**Tool call: {name}**" + (f" ({intent})" if intent else "")
            body.append(f"{heading}\n\n" + fence(arguments, "json"))
        elif text.strip():
            body.append(text)
    return title, body


def _entry(entry: Mapping[str, Any]) -> tuple[str, list[str]] | None:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _message(message) if isinstance(message, Mapping) else None
    if kind == "compaction":
        return "Compaction summary", [_text(entry.get("summary"))]
    if kind == "branch_summary":
        return "Branch summary", [_text(entry.get("summary"))]
    if kind == "custom_message":
        custom = _text(entry.get("customType"))
        parts = [text for _, text in _content_parts(entry.get("content"))]
        return (f"Message ({custom})" if custom else "Message"), parts
    if kind == "model_change":
        model = entry.get("model")
        if model is None and entry.get("modelId") is not None:
            model = f"{_text(entry.get('provider'))}/{_text(entry.get('modelId'))}"
        return None if model is None else ("", [f"*Model: {_text(model)}*"])
    if kind == "thinking_level_change":
        return "", [f"*Thinking level: {_text(entry.get('thinkingLevel')) or 'off'}*"]
    if kind == "label":
        label = _text(entry.get("label"))
        return "", [f"*Label “{label}” on {_text(entry.get('targetId'))}*" if label else "*Label cleared*"]
    return None


def transcript(entries: Iterable[Mapping[str, Any]], *, title: str = "", note: str = "") -> str:
    """The branch ``entries`` (root first) as Markdown: a heading per message, settings changes in italics,
    tool calls and outputs fenced; entries of other kinds (extension state) are left out."""
    return "".join(transcript_pieces(entries, title=title, note=note))


def transcript_pieces(
    entries: Iterable[Mapping[str, Any]], *, title: str = "", note: str = ""
) -> Iterator[str]:
    """:func:`transcript` a piece at a time (a download streams it: a branch can be hundreds of MB)."""
    first = True

    def piece(text: str) -> str:
        nonlocal first
        if first:
            first = False
            return text
        return "\n\n" + text

    if title:
        yield piece("# " + " ".join(title.split()))
    if note:
        yield piece(_quoted(note))
    for entry in entries:
        rendered = _entry(entry)
        if rendered is None:
            continue
        heading, body = rendered
        stamp = _text(entry.get("timestamp"))
        if heading:
            yield piece(f"## {heading}" + (f" · {stamp}" if stamp else ""))
        for part in body:
            if part.strip():
                yield piece(part)
    yield "\n"
