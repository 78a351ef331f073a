"""Branch summaries for tree navigation (spec §13.4).

When the user leaves a branch of the conversation tree, the abandoned part can be summarized so its
context is not lost. This module holds the pure parts of that job, ported from omp v15
``session/compaction/branch-summarization.ts`` and ``session/compaction/utils.ts``:

* :func:`prepare_branch_entries` turns session entries into agent messages under a token budget and
  tracks file operations;
* :func:`serialize_conversation` and :func:`build_branch_summary_prompt` build the exact prompt v15 sends;
* :func:`finalize_summary` renders the stored summary text (Arbor's clean format, see below);
* :func:`generate_branch_summary` drives a :class:`Summarizer` (the real LLM client lives elsewhere).

Stored-text decision (spec §21 item 9): Arbor writes the *clean* pi-mono layout (preamble, a blank line,
the model text, then ``<read-files>`` / ``<modified-files>`` blocks with one file per line) instead of
omp's glued preamble and literal-backslash-n file lists. Readers accept both.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .ids import parse_timestamp_ms
from .jsonl import UNDEFINED, dumps

__all__ = [
    "BRANCH_SUMMARY_PREAMBLE",
    "BRANCH_SUMMARY_PROMPT",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_RESERVE_TOKENS",
    "FILE_OPERATION_SUMMARY_LIMIT",
    "IMAGE_TOKEN_ESTIMATE",
    "NO_CONTENT_SUMMARY",
    "NO_SUMMARY_GENERATED",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "SUMMARY_MAX_TOKENS",
    "TOOL_RESULT_MAX_CHARS",
    "AbortController",
    "AbortSignal",
    "BranchPreparation",
    "BranchSummaryResult",
    "FileOperations",
    "SummaryResult",
    "Summarizer",
    "TokenCounter",
    "approximate_token_count",
    "build_branch_summary_prompt",
    "compute_file_lists",
    "estimate_tokens",
    "extract_file_ops_from_message",
    "finalize_summary",
    "format_file_operations",
    "generate_branch_summary",
    "message_from_entry",
    "prepare_branch",
    "prepare_branch_entries",
    "serialize_conversation",
    "strip_file_operation_tags",
    "token_budget",
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

#: Stored as the summary when the branch holds nothing that becomes a message (v15 literal).
NO_CONTENT_SUMMARY = "No content to summarize"
#: Stored when the model returned no text at all.
NO_SUMMARY_GENERATED = "No summary generated"

DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_RESERVE_TOKENS = 16384
#: ``maxTokens`` of the summarization request.
SUMMARY_MAX_TOKENS = 2048
#: Tool results longer than this (UTF-16 code units, like JS ``length``) are cut in the prompt.
TOOL_RESULT_MAX_CHARS = 2000
#: File lists longer than this are cut, with a final "… (N more files omitted)" item.
FILE_OPERATION_SUMMARY_LIMIT = 20
#: Fixed charge for an inline image: images have no tokenizer representation.
IMAGE_TOKEN_ESTIMATE = 1200

Message = dict[str, Any]
Entry = Mapping[str, Any]
#: Counts the tokens of a list of text fragments (v15 uses the native cl100k_base ``countTokens``).
TokenCounter = Callable[[Sequence[str]], int]


# ---------------------------------------------------------------------------------------------------------
# JavaScript string semantics. Lengths and slices in the original are UTF-16 code units; Python counts
# code points, so astral characters (emoji) would shift the 2000-char cut without these helpers.
# ---------------------------------------------------------------------------------------------------------


def _js_len(text: str) -> int:
    """Return ``text.length`` as JavaScript computes it (UTF-16 code units)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _js_slice_prefix(text: str, units: int) -> str:
    """Return ``text.slice(0, units)`` with JavaScript (UTF-16) semantics; may end in a lone surrogate."""
    if text.isascii():
        return text[:units]
    return text.encode("utf-16-le", "surrogatepass")[: units * 2].decode("utf-16-le", "surrogatepass")


# ``String.prototype.trimEnd`` strips exactly the ECMAScript WhiteSpace and LineTerminator characters,
# which is not the same set as ``str.rstrip()`` (Python also strips \x1c-\x1f and \x85).
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


def _js_json(value: Any) -> str:
    """``JSON.stringify(value)`` via the project's byte-exact serializer."""
    return dumps(value)


# ---------------------------------------------------------------------------------------------------------
# Abort signalling (the Python stand-in for the DOM AbortController the original passes around).
# ---------------------------------------------------------------------------------------------------------


class AbortSignal:
    """A one-shot cancellation flag that coroutines can await.

    Mirrors the DOM ``AbortSignal``: ``aborted`` turns true once and stays true. Create it (or its
    :class:`AbortController`) inside the event loop that will await it, and abort from that loop's thread.
    """

    __slots__ = ("_event", "_reason")

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._reason: object = None

    @property
    def aborted(self) -> bool:
        """True once :meth:`abort` has been called."""
        return self._event.is_set()

    @property
    def reason(self) -> object:
        """The value given to :meth:`abort`, or None."""
        return self._reason

    def abort(self, reason: object = None) -> None:
        """Mark the signal aborted and wake every waiter (later calls are ignored)."""
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    async def wait(self) -> None:
        """Return once the signal is aborted."""
        await self._event.wait()


class AbortController:
    """Owns an :class:`AbortSignal`; ``abort()`` is what the UI's Esc key calls."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = None) -> None:
        """Abort the owned signal."""
        self.signal.abort(reason)


# ---------------------------------------------------------------------------------------------------------
# Summarizer interface
# ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SummaryResult:
    """What a summarization call returned.

    ``text`` is the model's text blocks joined with ``"\\n"``. ``stop_reason`` follows the pi-ai values
    (``"stop"``, ``"length"``, ``"aborted"``, ``"error"``, ...); ``error_message`` accompanies ``"error"``.
    """

    text: str = ""
    stop_reason: str = "stop"
    error_message: str | None = None


class Summarizer(Protocol):
    """A model that can summarize: the session's current model behind some client."""

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        """Send one user message under ``system_prompt`` and return the reply; honour ``signal``."""
        ...


@dataclass(slots=True)
class BranchSummaryResult:
    """Outcome of :func:`generate_branch_summary` (v15 ``BranchSummaryResult``)."""

    summary: str | None = None
    read_files: list[str] = field(default_factory=list)
    modified_files: list[str] = field(default_factory=list)
    aborted: bool = False
    error: str | None = None


# ---------------------------------------------------------------------------------------------------------
# File operations
# ---------------------------------------------------------------------------------------------------------


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


def _js_sorted(items: Iterable[str]) -> list[str]:
    """``Array.prototype.sort()`` order: by UTF-16 code units, which differs from code points above BMP."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def compute_file_lists(file_ops: FileOperations) -> tuple[list[str], list[str]]:
    """Return ``(read_files, modified_files)``: modified = edited ∪ written, read-only = read − modified."""
    modified = dict.fromkeys([*file_ops.edited, *file_ops.written])
    read_only = _js_sorted(f for f in file_ops.read if f not in modified)
    return read_only, _js_sorted(modified)


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
    return _js_trim_end(_MODIFIED_FILES_BLOCK.sub("", without_read))


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


def finalize_summary(llm_text: str, read_files: Sequence[str], modified_files: Sequence[str]) -> str:
    """Build the stored branch-summary text from the model's reply.

    Clean format: ``preamble + "\\n\\n" + text``, then ``"\\n\\n"`` and the file blocks when there are
    files. File blocks the model echoed are removed first (v15 ``upsertFileOperations``). An empty reply
    gives the literal ``No summary generated``.
    """
    body = strip_file_operation_tags(llm_text)
    if not body.strip():
        return NO_SUMMARY_GENERATED
    summary = f"{BRANCH_SUMMARY_PREAMBLE}\n\n{body}"
    file_operations = format_file_operations(read_files, modified_files)
    if file_operations:
        summary = f"{summary}\n\n{file_operations}"
    return summary


# ---------------------------------------------------------------------------------------------------------
# Token estimation (v15 ``estimateTokens`` in compaction.ts)
# ---------------------------------------------------------------------------------------------------------


def approximate_token_count(fragments: Sequence[str]) -> int:
    """Default :data:`TokenCounter`: about four UTF-16 units per token, rounded up.

    v15 counts with the native cl100k_base tokenizer, which needs a tokenizer package Arbor does not
    ship; the estimate only decides where a very long branch is cut. Pass an exact counter to
    :func:`prepare_branch_entries` for token-exact cuts.
    """
    return math.ceil(sum(_js_len(fragment) for fragment in fragments) / 4)


def estimate_tokens(message: Mapping[str, Any], count_tokens: TokenCounter | None = None) -> int:
    """Estimate the tokens of one agent message, choosing fragments exactly as v15 ``estimateTokens``.

    user: string content or non-empty text blocks; assistant: text, thinking, and for tool calls the
    name plus ``JSON.stringify(arguments)``; hookMessage/toolResult: text blocks, +1200 per image;
    bashExecution: command and output; branchSummary/compactionSummary: the summary. Any other role
    (custom, pythonExecution, fileMention, ...) counts 0, as in v15.
    """
    counter = count_tokens or approximate_token_count
    fragments: list[str] = []
    extra = 0
    role = message.get("role")
    content = message.get("content")
    if role == "user":
        if isinstance(content, str):
            fragments.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "text" and block.get("text"):
                    fragments.append(str(block["text"]))
    elif role == "assistant":
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                fragments.append(_as_text(block.get("text")))
            elif kind == "thinking":
                fragments.append(_as_text(block.get("thinking")))
            elif kind == "toolCall":
                fragments.append(_as_text(block.get("name")))
                if "arguments" in block:
                    fragments.append(_js_json(block["arguments"]))
    elif role in ("hookMessage", "toolResult"):
        if isinstance(content, str):
            fragments.append(content)
        elif isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and block.get("text"):
                    fragments.append(str(block["text"]))
                elif block.get("type") == "image":
                    extra += IMAGE_TOKEN_ESTIMATE
    elif role == "bashExecution":
        fragments.append(_as_text(message.get("command")))
        fragments.append(_as_text(message.get("output")))
    elif role in ("branchSummary", "compactionSummary"):
        fragments.append(_as_text(message.get("summary")))
    else:
        return 0
    if not fragments:
        return extra
    return extra + counter(fragments)


def _as_text(value: Any) -> str:
    # Fields that should be strings but are missing in hand-edited files count as empty.
    return value if isinstance(value, str) else ""


# ---------------------------------------------------------------------------------------------------------
# Entries to messages
# ---------------------------------------------------------------------------------------------------------


def _timestamp_ms(timestamp: Any) -> int | float | None:
    """``new Date(timestamp).getTime()`` (None where JavaScript gives NaN), as ``context.py`` renders it."""
    value = parse_timestamp_ms(timestamp)
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def message_from_entry(entry: Entry) -> Message | None:
    """Turn a session entry into the agent message the summarizer sees, or None.

    ``message`` entries give their message except tool results (their gist is in the assistant's call);
    ``custom_message`` gives a ``custom`` message; ``branch_summary`` and ``compaction`` give summary
    messages; every other entry type contributes nothing.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict) or message.get("role") == "toolResult":
            return None
        return message
    if kind == "custom_message":
        return {
            "role": "custom",
            "customType": entry.get("customType", UNDEFINED),
            "content": entry.get("content", UNDEFINED),
            "display": entry.get("display", UNDEFINED),
            "details": entry.get("details", UNDEFINED),
            "attribution": entry.get("attribution", UNDEFINED),
            "timestamp": _timestamp_ms(entry.get("timestamp")),
        }
    if kind == "branch_summary":
        return {
            "role": "branchSummary",
            "summary": entry.get("summary", UNDEFINED),
            "fromId": entry.get("fromId", UNDEFINED),
            "timestamp": _timestamp_ms(entry.get("timestamp")),
        }
    if kind == "compaction":
        return {
            "role": "compactionSummary",
            "summary": entry.get("summary", UNDEFINED),
            "shortSummary": entry.get("shortSummary", UNDEFINED),
            "tokensBefore": entry.get("tokensBefore", UNDEFINED),
            "timestamp": _timestamp_ms(entry.get("timestamp")),
        }
    return None


@dataclass(slots=True)
class BranchPreparation:
    """Messages chosen for the summary (chronological), file operations, and their token estimate."""

    messages: list[Message]
    file_ops: FileOperations
    total_tokens: int


def prepare_branch_entries(
    entries: Sequence[Entry], token_budget: int = 0, *, count_tokens: TokenCounter | None = None
) -> tuple[list[Message], FileOperations]:
    """Choose the messages of ``entries`` (chronological) that fit ``token_budget``; collect file ops.

    See :func:`prepare_branch` for the details; this returns only ``(messages, file_ops)``.
    """
    preparation = prepare_branch(entries, token_budget, count_tokens=count_tokens)
    return preparation.messages, preparation.file_ops


def prepare_branch(
    entries: Sequence[Entry], token_budget: int = 0, *, count_tokens: TokenCounter | None = None
) -> BranchPreparation:
    """v15 ``prepareBranchEntries``.

    1. File operations from **all** pi-generated branch summaries (``details.readFiles`` → read,
       ``details.modifiedFiles`` → edited), even those that will not fit the budget.
    2. Newest to oldest: convert each entry (:func:`message_from_entry`), record its tool-call file
       operations, estimate its tokens; when it would pass the budget, a compaction or branch summary
       is still taken if the total is below 90% of the budget, and the walk stops. A budget of 0 (or
       less) means no limit.
    """
    file_ops = FileOperations()
    for entry in entries:
        if entry.get("type") == "branch_summary" and not entry.get("fromExtension") and entry.get("details"):
            details = entry["details"]
            if not isinstance(details, dict):
                continue
            read_files = details.get("readFiles")
            if isinstance(read_files, list):
                for path in read_files:
                    if isinstance(path, str):
                        file_ops.read[path] = None
            modified_files = details.get("modifiedFiles")
            if isinstance(modified_files, list):
                for path in modified_files:
                    if isinstance(path, str):
                        file_ops.edited[path] = None

    newest_first: list[Message] = []
    total_tokens = 0
    for entry in reversed(entries):
        message = message_from_entry(entry)
        if message is None:
            continue
        extract_file_ops_from_message(message, file_ops)
        tokens = estimate_tokens(message, count_tokens)
        if token_budget > 0 and total_tokens + tokens > token_budget:
            # Summaries condense a lot of history: keep one even past the budget while there is room.
            if entry.get("type") in ("compaction", "branch_summary") and total_tokens < token_budget * 0.9:
                newest_first.append(message)
                total_tokens += tokens
            break
        newest_first.append(message)
        total_tokens += tokens
    newest_first.reverse()
    return BranchPreparation(messages=newest_first, file_ops=file_ops, total_tokens=total_tokens)


def token_budget(context_window: int | None, reserve_tokens: int = DEFAULT_RESERVE_TOKENS) -> int:
    """``(context_window or 128000) - reserve_tokens``: the room left for the summarized conversation."""
    return (context_window or DEFAULT_CONTEXT_WINDOW) - reserve_tokens


# ---------------------------------------------------------------------------------------------------------
# Prompt
# ---------------------------------------------------------------------------------------------------------


def _truncate_for_summary(text: str, max_chars: int) -> str:
    length = _js_len(text)
    if length <= max_chars:
        return text
    return f"{_js_slice_prefix(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _text_blocks(content: Any, separator: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        _as_text(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


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
            text = _text_blocks(content, "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            text_parts: list[str] = []
            thinking_parts: list[str] = []
            tool_calls: list[str] = []
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                kind = block.get("type")
                if kind == "text":
                    text_parts.append(_as_text(block.get("text")))
                elif kind == "thinking":
                    thinking_parts.append(_as_text(block.get("thinking")))
                elif kind == "toolCall":
                    args = block.get("arguments")
                    # Non-object arguments (never written by a real provider) render as an empty call.
                    pairs = args.items() if isinstance(args, dict) else ()
                    args_text = ", ".join(f"{key}={_js_json(value)}" for key, value in pairs)
                    tool_calls.append(f"{_as_text(block.get('name'))}({args_text})")
            if thinking_parts:
                parts.append("[Assistant thinking]: " + "\n".join(thinking_parts))
            if text_parts:
                parts.append("[Assistant]: " + "\n".join(text_parts))
            if tool_calls:
                parts.append("[Assistant tool calls]: " + "; ".join(tool_calls))
        elif role == "toolResult":
            text = _text_blocks(content, "") if isinstance(content, list) else ""
            if text:
                parts.append(f"[Tool result]: {_truncate_for_summary(text, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


def build_branch_summary_prompt(
    messages: Sequence[Message], custom_instructions: str | None = None
) -> tuple[str, str]:
    """Return ``(system_prompt, user_prompt)`` for summarizing agent ``messages``.

    The messages go through ``convert_to_llm`` and :func:`serialize_conversation`; the user prompt is
    ``<conversation>\\n…\\n</conversation>\\n\\n`` followed by ``custom_instructions``, which *replace* the
    default instructions when non-empty (omp v15 behaviour).
    """
    from treeview.session.messages import convert_to_llm

    conversation = serialize_conversation(convert_to_llm(list(messages)))
    instructions = custom_instructions or BRANCH_SUMMARY_PROMPT
    user_prompt = f"<conversation>\n{conversation}\n</conversation>\n\n{instructions}"
    return SUMMARIZATION_SYSTEM_PROMPT, user_prompt


# ---------------------------------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------------------------------


async def _summarize_or_abort(
    summarizer: Summarizer, system_prompt: str, user_prompt: str, signal: AbortSignal
) -> SummaryResult | None:
    """Run the summarizer, returning None as soon as ``signal`` aborts (the call is cancelled)."""
    call = asyncio.ensure_future(
        summarizer.summarize(
            system_prompt=system_prompt, user_prompt=user_prompt, max_tokens=SUMMARY_MAX_TOKENS, signal=signal
        )
    )
    aborted = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({call, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        if not call.done():
            call.cancel()
    if not call.done() or call.cancelled():
        # Reap the cancelled call so no "exception was never retrieved" noise remains.
        with contextlib.suppress(asyncio.CancelledError):
            await call
        return None
    return call.result()


async def generate_branch_summary(
    entries: Sequence[Entry],
    summarizer: Summarizer,
    *,
    context_window: int | None = None,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    count_tokens: TokenCounter | None = None,
) -> BranchSummaryResult:
    """Summarize abandoned branch ``entries`` (chronological): v15 ``generateBranchSummary``.

    Returns ``aborted=True`` when ``signal`` fires before the model answers (or the model reports
    ``stop_reason="aborted"``), ``error=...`` when it reports an error; otherwise the stored summary text
    (:func:`finalize_summary`) and the sorted file lists. A branch with nothing to summarize gives the
    literal ``No content to summarize`` without calling the model.
    """
    signal = signal or AbortSignal()
    budget = token_budget(context_window, reserve_tokens)
    messages, file_ops = prepare_branch_entries(entries, budget, count_tokens=count_tokens)
    if not messages:
        return BranchSummaryResult(summary=NO_CONTENT_SUMMARY)
    if signal.aborted:
        return BranchSummaryResult(aborted=True)

    system_prompt, user_prompt = build_branch_summary_prompt(messages, custom_instructions)
    response = await _summarize_or_abort(summarizer, system_prompt, user_prompt, signal)
    if response is None or response.stop_reason == "aborted":
        return BranchSummaryResult(aborted=True)
    if response.stop_reason == "error":
        return BranchSummaryResult(error=response.error_message or "Summarization failed")

    read_files, modified_files = compute_file_lists(file_ops)
    return BranchSummaryResult(
        summary=finalize_summary(response.text, read_files, modified_files),
        read_files=read_files,
        modified_files=modified_files,
    )
