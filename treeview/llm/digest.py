"""The offline "digest" summarizer: a branch summary without a model.

It reads the conversation that :func:`~treeview.session.branch_summary.build_branch_summary_prompt`
serialized into the user prompt (``[User]: …``, ``[Assistant]: …``, ``[Assistant tool calls]: …``,
``[Tool result]: …``) and fills in the structure the summary prompt asks the model for (``## Goal``,
``## Constraints & Preferences``, ``## Progress`` with ``### Done`` / ``### In Progress`` /
``### Blocked``, ``## Key Decisions``, ``## Next Steps``) with what it can pick out by rule: the first
request, the user's "must"/"don't" sentences, the tool calls made, errors seen, the last words. Its text
says that it is a digest, so nobody mistakes it for a model's summary. The file lists are added later by
:func:`~treeview.session.branch_summary.finalize_summary`, as for a real summary.

It streams like the real clients (the text goes to ``on_delta`` a section at a time) and honours the
abort signal between sections. No Django, no network.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass

from treeview.session.branch_summary import BRANCH_SUMMARY_PREAMBLE, AbortSignal, SummaryResult
from treeview.session.messages import BRANCH_SUMMARY_CONTEXT_TEMPLATE, COMPACTION_SUMMARY_CONTEXT_TEMPLATE

from .base import DeltaCallback

__all__ = ["DIGEST_NOTE", "DigestSummarizer", "Part", "build_digest", "parse_conversation"]

#: The first line of every digest.
DIGEST_NOTE = "_Offline digest of the branch, picked out by rule: not an LLM summary._"

_LABELS = ("User", "Assistant thinking", "Assistant tool calls", "Assistant", "Tool result")
# A part starts at the beginning of the conversation or after the blank line that joins parts. A label
# inside a message's own text can fool this; for a digest that only shifts what is quoted.
_PART_START = re.compile(r"(?:\A|\n\n)\[(" + "|".join(re.escape(label) for label in _LABELS) + r")\]: ")
_CONVERSATION = re.compile(r"<conversation>\n(.*)\n</conversation>", re.DOTALL)
# One call in "[Assistant tool calls]: name(k=<JSON>, …); name(…)", and its first string argument.
_CALL_NAME = re.compile(r"(?:\A|; )([A-Za-z_][\w.:-]*)\(")
_FIRST_ARG = re.compile(r'[A-Za-z_]\w*=("(?:[^"\\]|\\.)*")')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_CONSTRAINT = re.compile(
    r"\b(must|mustn't|should|shouldn't|don't|do not|never|always|avoid|prefer|only|without|make sure|"
    r"keep|no more than|at most|at least)\b",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decide to|I'll use|I will use|we'll use|let's use|instead of|chose|choose|switch(?:ed)? to|"
    r"going with|went with|rather than|opted)\b",
    re.IGNORECASE,
)
_PROBLEM = re.compile(
    r"\b(error|exception|traceback|failed|failure|fatal|denied|not found|cannot|can't)\b", re.I
)

# User parts that only carry an earlier summary (the context templates, up to the summary itself).
_SUMMARY_PREFIXES = tuple(
    template.split("{{summary}}")[0]
    for template in (BRANCH_SUMMARY_CONTEXT_TEMPLATE, COMPACTION_SUMMARY_CONTEXT_TEMPLATE)
)
_SUMMARY_GOAL = re.compile(r"^## Goal[ \t]*\n+\s*(\S.*)$", re.MULTILINE)
_SUMMARY_BOILERPLATE = frozenset([DIGEST_NOTE, *BRANCH_SUMMARY_PREAMBLE.splitlines()])

#: How long one quoted snippet may be, and how many items a list shows.
SNIPPET_CHARS = 240
LIST_ITEMS = 8


@dataclass(frozen=True, slots=True)
class Part:
    """One labelled part of the serialized conversation: ``label`` is e.g. ``"User"``."""

    label: str
    text: str


def parse_conversation(user_prompt: str) -> list[Part]:
    """Split the ``<conversation>`` of a branch-summary user prompt into its labelled parts."""
    match = _CONVERSATION.search(user_prompt)
    conversation = match.group(1) if match else user_prompt
    starts = list(_PART_START.finditer(conversation))
    parts = []
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(conversation)
        parts.append(Part(start.group(1), conversation[start.end() : end]))
    return parts


def _snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    """``text`` on one line, cut at ``limit`` characters.

    One line, so a quoted message cannot start a heading or a list of its own inside the digest.
    """
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _sentences(text: str) -> list[str]:
    return [
        sentence for line in text.splitlines() for sentence in _SENTENCE_END.split(line) if sentence.strip()
    ]


def _capped(items: list[str], fallback: str, prefix: str = "- ") -> list[str]:
    """Unique ``items`` as list lines, at most :data:`LIST_ITEMS`, or the one ``fallback`` line."""
    unique = list(dict.fromkeys(items))
    if not unique:
        return [fallback]
    lines = [f"{prefix}{item}" for item in unique[:LIST_ITEMS]]
    if len(unique) > LIST_ITEMS:
        lines.append(f"{prefix}… and {len(unique) - LIST_ITEMS} more")
    return lines


def _tool_calls(text: str) -> list[str]:
    """One item per call in an ``[Assistant tool calls]`` part: the tool's name and its first string
    argument (a path, a command)."""
    calls = []
    for match in _CALL_NAME.finditer(text):
        name = match.group(1)
        argument = _FIRST_ARG.match(text, match.end())
        if argument:
            try:
                value = json.loads(argument.group(1))
            except ValueError:
                value = argument.group(1)
            calls.append(f"`{name}` {_snippet(str(value), 120)}")
        else:
            calls.append(f"`{name}`")
    return calls


def _earlier_summary(text: str) -> str | None:
    """For a user part that wraps an earlier branch or compaction summary, that summary's gist."""
    if not text.startswith(_SUMMARY_PREFIXES):
        return None
    inner = text.split("<summary>\n", 1)[-1].rsplit("\n</summary>", 1)[0]
    goal = _SUMMARY_GOAL.search(inner)
    if goal:
        return _snippet(goal.group(1))
    lines = [line for line in inner.splitlines() if line.strip() and line not in _SUMMARY_BOILERPLATE]
    return _snippet(lines[0]) if lines else "(empty)"


def build_digest(user_prompt: str) -> list[str]:
    """The digest of the conversation in ``user_prompt``, as a list of sections (joined, the text)."""
    parts = parse_conversation(user_prompt)
    summaries: list[str] = []
    user_texts: list[str] = []
    for part in parts:
        if part.label == "User":
            gist = _earlier_summary(part.text)
            if gist is None:
                user_texts.append(part.text)
            else:
                summaries.append(gist)
    assistant_texts = [part.text for part in parts if part.label == "Assistant"]
    last = parts[-1] if parts else None
    last_is_request = last is not None and last.label == "User" and _earlier_summary(last.text) is None

    goal = _snippet(user_texts[0], 600) if user_texts else "(no user request in this branch)"
    goal_lines = ["## Goal", goal]
    if len(user_texts) > 1:
        goal_lines += ["", "Later requests:", *_capped([_snippet(text) for text in user_texts[1:]], "")]

    constraints = [
        _snippet(sentence)
        for text in user_texts
        for sentence in _sentences(text)
        if _CONSTRAINT.search(sentence)
    ]

    done = [f"Earlier work, summarized: {gist}" for gist in summaries]
    done += [
        call for part in parts if part.label == "Assistant tool calls" for call in _tool_calls(part.text)
    ]
    in_progress: list[str] = []
    if last_is_request and last is not None:
        in_progress.append(f"Unanswered request: {_snippet(last.text)}")
    elif last is not None and last.label in ("Assistant tool calls", "Tool result"):
        in_progress.append("The branch ended while tools were still running")

    # Problems still open at the end of the branch: those in the last reply and in tool output. Earlier
    # ones were most likely dealt with on the way.
    final_texts = [part.text for part in parts if part.label == "Tool result"] + assistant_texts[-1:]
    blocked = [
        _snippet(sentence)
        for text in final_texts
        for sentence in _sentences(text)[:40]
        if _PROBLEM.search(sentence)
    ]

    decisions = [
        _snippet(sentence)
        for text in assistant_texts
        for sentence in _sentences(text)
        if _DECISION.search(sentence)
    ]

    if last_is_request and last is not None:
        next_step = f"Answer the last request: {_snippet(last.text)}"
    elif assistant_texts:
        next_step = f"Continue from the assistant's last reply: {_snippet(assistant_texts[-1])}"
    else:
        next_step = "Pick up the goal above."

    return [
        DIGEST_NOTE + "\n\n" + "\n".join(goal_lines),
        "\n".join(["## Constraints & Preferences", *_capped(constraints, "- (none)")]),
        "\n".join(
            [
                "## Progress",
                "",
                "### Done",
                *_capped(done, "- (none)", "- [x] "),
                "",
                "### In Progress",
                *_capped(in_progress, "- (none)", "- [ ] "),
                "",
                "### Blocked",
                *_capped(blocked, "- (none)"),
            ]
        ),
        "\n".join(["## Key Decisions", *_capped(decisions, "- (none)")]),
        "\n".join(["## Next Steps", f"1. {next_step}"]),
    ]


class DigestSummarizer:
    """A :class:`~treeview.session.branch_summary.Summarizer` that writes a digest instead of asking a model.

    ``chunk_delay`` seconds pass between two streamed sections (0: just yield to the event loop).
    """

    def __init__(self, on_delta: DeltaCallback | None = None, *, chunk_delay: float = 0.0) -> None:
        self.on_delta = on_delta
        self.chunk_delay = chunk_delay

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        """Digest the conversation in ``user_prompt``, streaming it section by section.

        ``"aborted"`` (with the sections so far) when ``signal`` fires; ``"length"`` when the digest
        would pass about ``max_tokens`` tokens (four characters a token), cut there.
        """
        limit = max(max_tokens, 1) * 4
        text = ""
        for index, section in enumerate(build_digest(user_prompt)):
            if signal.aborted:
                return SummaryResult(text=text, stop_reason="aborted")
            delta = ("\n\n" if index else "") + section
            cut = len(text) + len(delta) > limit
            if cut:
                delta = delta[: limit - len(text)]
            text += delta
            if self.on_delta is not None and delta:
                await self.on_delta(delta)
            if cut:
                return SummaryResult(text=text, stop_reason="length")
            # Yield between sections so an abort (or the UI) gets a turn, as with a real stream.
            await asyncio.sleep(self.chunk_delay)
        if signal.aborted:
            return SummaryResult(text=text, stop_reason="aborted")
        return SummaryResult(text=text, stop_reason="stop")
