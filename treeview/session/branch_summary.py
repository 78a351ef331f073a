"""Branch summaries for tree navigation (spec §13.4).

When the user leaves a branch of the conversation tree, the abandoned part can be summarized so its
context is not lost. This module holds the pure parts of that job, ported from omp v15
``session/compaction/branch-summarization.ts``:

* :func:`prepare_branch_entries` turns session entries into agent messages under a token budget and
  tracks file operations (:mod:`treeview.session.file_operations`);
* :func:`build_branch_summary_prompt` builds the exact prompt v15 sends
  (:mod:`treeview.session.branch_summary_prompt`);
* :func:`finalize_summary` renders the stored summary text (Arbor's clean format, see below);
* :func:`generate_branch_summary` drives a :class:`Summarizer` (the real LLM client lives elsewhere).

The names of the two helper modules are re-exported here, so ``from treeview.session.branch_summary
import ...`` reaches all of them.

Stored-text decision (spec §21 item 9): Arbor writes the *clean* pi-mono layout (preamble, a blank line,
the model text, then ``<read-files>`` / ``<modified-files>`` blocks with one file per line) instead of
omp's glued preamble and literal-backslash-n file lists. Readers accept both.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from . import js
from .branch_summary_prompt import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TOOL_RESULT_MAX_CHARS,
    assistant_blocks,
    build_branch_summary_prompt,
    field_text,
    serialize_conversation,
)
from .context import branch_summary_message, compaction_summary_message, entry_to_message
from .file_operations import (
    FILE_OPERATION_SUMMARY_LIMIT,
    FileOperations,
    compute_file_lists,
    extract_file_ops_from_message,
    format_file_operations,
    strip_file_operation_tags,
)

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

#: Stored as the summary when the branch holds nothing that becomes a message (v15 literal).
NO_CONTENT_SUMMARY = "No content to summarize"
#: Stored when the model returned no text at all.
NO_SUMMARY_GENERATED = "No summary generated"

DEFAULT_CONTEXT_WINDOW = 128000
DEFAULT_RESERVE_TOKENS = 16384
#: ``maxTokens`` of the summarization request.
SUMMARY_MAX_TOKENS = 2048
#: Fixed charge for an inline image: images have no tokenizer representation.
IMAGE_TOKEN_ESTIMATE = 1200

Message = dict[str, Any]
Entry = Mapping[str, Any]
#: Counts the tokens of a list of text fragments (v15 uses the native cl100k_base ``countTokens``).
TokenCounter = Callable[[Sequence[str]], int]


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
# Stored text
# ---------------------------------------------------------------------------------------------------------


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
    return math.ceil(sum(js.utf16_len(fragment) for fragment in fragments) / 4)


def _add_text_content(content: Any, fragments: list[str]) -> int:
    """Add string ``content``, or its non-empty text blocks, to ``fragments``; return its image count."""
    images = 0
    if isinstance(content, str):
        fragments.append(content)
    elif isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                fragments.append(str(block["text"]))
            elif block.get("type") == "image":
                images += 1
    return images


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
        _add_text_content(content, fragments)  # user images are not counted (v15)
    elif role == "assistant":
        for kind, text, block in assistant_blocks(content):
            fragments.append(text)
            if kind == "toolCall" and "arguments" in block:
                fragments.append(js.stringify(block["arguments"]))
    elif role in ("hookMessage", "toolResult"):
        extra += IMAGE_TOKEN_ESTIMATE * _add_text_content(content, fragments)
    elif role == "bashExecution":
        fragments.append(field_text(message.get("command")))
        fragments.append(field_text(message.get("output")))
    elif role in ("branchSummary", "compactionSummary"):
        fragments.append(field_text(message.get("summary")))
    else:
        return 0
    if not fragments:
        return extra
    return extra + counter(fragments)


# ---------------------------------------------------------------------------------------------------------
# Entries to messages
# ---------------------------------------------------------------------------------------------------------


def message_from_entry(entry: Entry) -> Message | None:
    """Turn a session entry into the agent message the summarizer sees, or None.

    ``message`` entries give their message except tool results (their gist is in the assistant's call);
    ``custom_message`` gives a ``custom`` message; ``branch_summary`` and ``compaction`` give summary
    messages; every other entry type contributes nothing. The messages are built as the context builds
    them (:mod:`treeview.session.context`), as v15 uses the same ``create*Message`` functions for both.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, dict) and message.get("role") == "toolResult":
            return None
    elif kind == "branch_summary":
        # Unlike the context (which skips an empty summary), v15 converts every branch summary here.
        return branch_summary_message(entry)
    elif kind == "compaction":
        # The context puts the compaction summary first instead; here it is a message in place.
        return compaction_summary_message(entry)
    return entry_to_message(entry)


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
