"""What the summarizer is sent for a branch summary (spec §13.4; v15 ``compaction/utils.ts`` and
``compaction/branch-summarization.ts``).

The v15 prompt texts, byte for byte, and the conversation serialized as labelled text
(:func:`serialize_conversation`) so the model summarizes it instead of continuing it. The way it reads
message content (:func:`assistant_blocks`, :func:`field_text`) is shared with the token estimate in
:mod:`treeview.session.branch_summary`, which picks the same text.

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from . import js
from .messages import convert_to_llm

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "TOOL_RESULT_MAX_CHARS",
    "assistant_blocks",
    "build_branch_summary_prompt",
    "field_text",
    "serialize_conversation",
]

# ---------------------------------------------------------------------------------------------------------
# Prompt texts. These are the v15 prompt files after ``prompt.render`` (which only drops the trailing
# newline for these three files); they must stay byte-identical for prompt parity.
# ---------------------------------------------------------------------------------------------------------

#: ``prompts/compaction/branch-summary-preamble.md`` (rendered).
BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:"
)

#: ``prompts/compaction/branch-summary.md`` (rendered): the default summarization instructions.
BRANCH_SUMMARY_PROMPT = """You MUST create a structured summary of the conversation branch for context when returning.

You MUST use EXACT format:

## Goal

[What user trying to accomplish in this branch?]

## Constraints & Preferences
- [Constraints, preferences, requirements mentioned]
- [(none) if none mentioned]

## Progress

### Done
- [x] [Completed tasks/changes]

### In Progress
- [ ] [Work started but not finished]

### Blocked
- [Issues preventing progress]

## Key Decisions
- **[Decision]**: [Brief rationale]

## Next Steps
1. [What should happen next to continue]

Sections MUST be kept concise. You MUST preserve exact file paths, function names, error messages."""  # noqa: E501

#: ``prompts/system/summarization-system.md`` (rendered): the system prompt of the summarization call.
SUMMARIZATION_SYSTEM_PROMPT = (
    "Summarize conversations between users and AI coding assistants. Produce structured summaries in the "
    "exact specified format.\n\n"
    "Do NOT continue the conversation. Do NOT respond to questions in the conversation. "
    "Output ONLY the structured summary."
)

#: Tool results longer than this (UTF-16 code units, like JS ``length``) are cut in the prompt.
TOOL_RESULT_MAX_CHARS = 2000


def field_text(value: Any) -> str:
    """A field that should hold a string: the string, or ``""`` (missing in hand-edited files)."""
    return value if isinstance(value, str) else ""


# The field whose text each assistant block contributes.
_ASSISTANT_BLOCK_TEXT: Final[Mapping[str, str]] = {"text": "text", "thinking": "thinking", "toolCall": "name"}


def assistant_blocks(content: Any) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """``(type, text, block)`` for each ``text`` / ``thinking`` / ``toolCall`` block of an assistant
    message's content, in order. ``text`` is the block's text, its thinking, or the tool's name."""
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if isinstance(kind, str) and kind in _ASSISTANT_BLOCK_TEXT:
            yield kind, field_text(block.get(_ASSISTANT_BLOCK_TEXT[kind])), block


def _truncate_for_summary(text: str, max_chars: int) -> str:
    length = js.utf16_len(text)
    if length <= max_chars:
        return text
    # JavaScript's slice may keep half an emoji; the prompt is sent as JSON, which escapes it.
    kept = js.utf16_slice(text, max_chars, keep_lone_surrogate=True)
    return f"{kept}\n\n[... {length - max_chars} more characters truncated]"


def _text_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        field_text(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def _tool_call_text(name: str, block: Mapping[str, Any]) -> str:
    args = block.get("arguments")
    # Non-object arguments (never written by a real provider) render as an empty call.
    pairs = args.items() if isinstance(args, dict) else ()
    return f"{name}({', '.join(f'{key}={js.stringify(value)}' for key, value in pairs)})"


def serialize_conversation(llm_messages: Sequence[Mapping[str, Any]]) -> str:
    """Flatten LLM messages into labelled text so the model summarizes instead of continuing the chat.

    ``[User]: …`` (text blocks joined with ``""``); for an assistant ``[Assistant thinking]: …``,
    ``[Assistant]: …`` (each joined with ``"\\n"``) and ``[Assistant tool calls]: name(k=<JSON>, …); …``;
    ``[Tool result]: …`` cut at 2000 characters. Empty parts are left out; parts are joined by a blank line.
    """
    parts: list[str] = []
    for message in llm_messages:
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            text = _text_blocks(content)
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            by_kind: dict[str, list[str]] = {"text": [], "thinking": [], "toolCall": []}
            for kind, text, block in assistant_blocks(content):
                by_kind[kind].append(_tool_call_text(text, block) if kind == "toolCall" else text)
            if by_kind["thinking"]:
                parts.append("[Assistant thinking]: " + "\n".join(by_kind["thinking"]))
            if by_kind["text"]:
                parts.append("[Assistant]: " + "\n".join(by_kind["text"]))
            if by_kind["toolCall"]:
                parts.append("[Assistant tool calls]: " + "; ".join(by_kind["toolCall"]))
        elif role == "toolResult":
            text = _text_blocks(content) if isinstance(content, list) else ""
            if text:
                parts.append(f"[Tool result]: {_truncate_for_summary(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


def build_branch_summary_prompt(
    messages: Sequence[dict[str, Any]], custom_instructions: str | None = None
) -> tuple[str, str]:
    """Return ``(system_prompt, user_prompt)`` for summarizing agent ``messages``.

    The messages go through ``convert_to_llm`` and :func:`serialize_conversation`; the user prompt is
    ``<conversation>\\n…\\n</conversation>\\n\\n`` followed by ``custom_instructions``, which *replace* the
    default instructions when non-empty (omp v15 behaviour).
    """
    # The summarization prompt is v15's, so is its view of the conversation.
    conversation = serialize_conversation(convert_to_llm(list(messages), "omp15"))
    instructions = custom_instructions or BRANCH_SUMMARY_PROMPT
    user_prompt = f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"
    return SUMMARIZATION_SYSTEM_PROMPT, user_prompt
