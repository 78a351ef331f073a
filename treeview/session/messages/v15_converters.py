"""oh-my-pi v15's converters: one per custom message role, each to the message a provider gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
from treeview.session.messages.texts import (
    Message,
    bash_execution_to_text,
    branch_summary_context_text,
    compaction_summary_context_text,
    python_execution_to_text,
)

# ---------------------------------------------------------------------------------------------------------
# convertToLlm
# ---------------------------------------------------------------------------------------------------------


def _set(target: Message, key: str, value: Any) -> None:
    """Assign like a JS object literal/spread: an undefined value adds no visible key.

    Assigning onto an existing key keeps its position (JS property order); an undefined value on an
    existing key is stored as UNDEFINED so the position semantics stay intact.
    """
    if js.is_undefined(value):
        if key in target:
            target[key] = UNDEFINED
        return
    target[key] = value


def _literal(*pairs: tuple[str, Any]) -> Message:
    """Build a dict like a JS object literal: keys in order, undefined values omitted."""
    out: Message = {}
    for key, value in pairs:
        if not js.is_undefined(value):
            out[key] = value
    return out


def _with_default_attribution(message: Message, default: str) -> Message:
    out = dict(message)
    attribution = message.get("attribution", UNDEFINED)
    out["attribution"] = default if js.is_nullish(attribution) else attribution
    return out


def _pruned_tool_result_content(message: Message) -> Any:
    content = message.get("content", UNDEFINED)
    if js.is_undefined(message.get("prunedAt", UNDEFINED)):
        return content
    blocks = content if isinstance(content, list) else []
    texts = [js.get(block, "text") for block in blocks if js.get(block, "type") == "text"]
    text = js.join(texts, "") or "[Output truncated]"
    return [{"type": "text", "text": text}]


def _file_mention_content(message: Message) -> list[Any]:
    files = message.get("files", UNDEFINED)
    file_list = files if isinstance(files, list) else []
    rendered: list[str] = []
    for file in file_list:
        body = js.get(file, "content")
        inner = f"\n{js.to_string(body)}\n" if js.truthy(body) else "\n"
        rendered.append(f'<file path="{js.to_string(js.get(file, "path"))}">{inner}</file>')
    file_contents = "\n\n".join(rendered)
    content: list[Any] = [{"type": "text", "text": f"<system-reminder>\n{file_contents}\n</system-reminder>"}]
    for file in file_list:
        image = js.get(file, "image")
        if js.truthy(image):
            content.append(image)
    return content


def _user_message(content: Any, attribution: Any, source: Message) -> Message:
    """``{role: "user", content, attribution, timestamp: source.timestamp}``, undefined values omitted."""
    return _literal(
        ("role", "user"),
        ("content", content),
        ("attribution", attribution),
        ("timestamp", source.get("timestamp", UNDEFINED)),
    )


def _execution_converter(to_text: Callable[[Message], str]) -> Callable[[Message], Message | None]:
    """The converter of an execution role: dropped when ``excludeFromContext``, else the user's text."""

    def convert(m: Message) -> Message | None:
        if js.truthy(m.get("excludeFromContext", UNDEFINED)):
            return None
        return _user_message([{"type": "text", "text": to_text(m)}], "user", m)

    return convert


def _convert_custom(m: Message) -> Message:
    content = m.get("content", UNDEFINED)
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return _user_message(content, m.get("attribution", UNDEFINED), m)


def _convert_branch_summary(m: Message) -> Message:
    text = branch_summary_context_text(m.get("summary", UNDEFINED))
    return _user_message([{"type": "text", "text": text}], "agent", m)


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
    return _user_message(_file_mention_content(m), "user", m)


def _convert_tool_result(m: Message) -> Message:
    out = dict(m)
    _set(out, "content", _pruned_tool_result_content(m))
    attribution = m.get("attribution", UNDEFINED)
    out["attribution"] = "agent" if js.is_nullish(attribution) else attribution
    return out


_V15_CONVERTERS: Final[dict[str, Callable[[Message], Message | None]]] = {
    "bashExecution": _execution_converter(bash_execution_to_text),
    "pythonExecution": _execution_converter(python_execution_to_text),
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
