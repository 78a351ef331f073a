"""The session page's Context tab: exactly what the LLM would receive at one entry.

The path root → target comes from the cached tree's parent links (no re-parse of the session); only the
``raw`` text of the path's rows is loaded, in batches, and the core builds the context from it
(by the rules of the session's agent, oh-my-pi 18 or pi 1.6: compaction replay, ``/clear``, branch summaries,
custom messages) and presents it (``convert_to_llm``). Token estimates cover every message; the page shows
only a window of the cards.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

import orjson

from treeview.explorer import ExplorerTree, path_ids
from treeview.models import AgentSession
from treeview.session import js
from treeview.session.branch_summary import estimate_tokens
from treeview.session.context import SessionContext, context_for_path, entry_to_message
from treeview.session.context_latest import omp_context_for_path, pi_context_for_path
from treeview.session.jsonl import UNDEFINED
from treeview.session.messages import convert_to_llm, message_text

__all__ = [
    "CONTEXT_PAGE",
    "ContextBlock",
    "ContextCard",
    "LlmContext",
    "llm_context",
    "load_path_entries",
    "session_rules",
]

# Message cards shown at once (the token total still covers every message).
CONTEXT_PAGE = 100
# Rows fetched per query (well under SQLite's bound-parameter limit).
LOAD_BATCH = 500
# Characters of one block's text shown in a card; the rest is cut with a notice.
BLOCK_TEXT_LIMIT = 20_000
ARGUMENTS_LIMIT = 2_000


@dataclass(frozen=True, slots=True)
class ContextBlock:
    """One part of an LLM message as shown: ``kind`` is text, thinking, tool_call or image."""

    kind: str
    text: str
    label: str = ""
    cut: int = 0  # characters left out


@dataclass(frozen=True, slots=True)
class ContextCard:
    """One LLM message with the entry it came from and its token estimate."""

    index: int  # 1-based position in the context
    entry_id: str | None
    message: dict[str, Any]
    role: str
    attribution: str
    tokens: int
    running_total: int
    text: str  # the message's whole text (``message_text``)

    @property
    def blocks(self) -> list[ContextBlock]:
        return list(_blocks(self.message))

    @property
    def tool_name(self) -> str:
        name = self.message.get("toolName")
        return name if isinstance(name, str) else ""

    @property
    def is_error(self) -> bool:
        return self.message.get("isError") is True


@dataclass(frozen=True, slots=True)
class LlmContext:
    """The context at ``target_id``: the session state and every LLM message (cards), with token totals."""

    target_id: str | None
    path_length: int
    state: SessionContext
    cards: list[ContextCard]
    total_tokens: int

    @property
    def thinking_level(self) -> str:
        return str(self.state.thinking_level)

    @property
    def models(self) -> list[tuple[str, str]]:
        return [(str(role), str(model)) for role, model in self.state.models.items()]

    @property
    def mode(self) -> str:
        mode = self.state.mode
        return "" if mode is UNDEFINED or mode is None else str(mode)

    @property
    def service_tier(self) -> str:
        tier = self.state.service_tier
        return "" if tier is UNDEFINED or tier is None else str(tier)

    @property
    def ttsr_rules(self) -> list[str]:
        return [str(rule) for rule in self.state.injected_ttsr_rules]

    @property
    def mcp_tools(self) -> list[str] | None:
        if not self.state.has_persisted_mcp_tool_selection:
            return None
        return [str(name) for name in self.state.selected_mcp_tool_names]

    def page(self, end: int | None) -> tuple[list[ContextCard], int, int]:
        """The cards ``[start, stop)`` ending at ``end`` (default: the last), with ``start`` and ``stop``."""
        stop = len(self.cards) if end is None else max(0, min(end, len(self.cards)))
        start = max(0, stop - CONTEXT_PAGE)
        return self.cards[start:stop], start, stop


def _batches(ids: Sequence[str]) -> Iterator[Sequence[str]]:
    for begin in range(0, len(ids), LOAD_BATCH):
        yield ids[begin : begin + LOAD_BATCH]


def _load_rows(session: AgentSession, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The parsed (old formats: migrated) entries of these ids; only these rows are read, in batches."""
    loaded: dict[str, tuple[int, dict[str, Any]]] = {}
    version = session.format_version
    for batch in _batches(ids):
        # No ORDER BY: the (session, entry_id) index answers the lookup; duplicates are resolved by seq below.
        rows = session.entries.filter(entry_id__in=batch).exclude(type="session")
        for seq, entry_id, parent_id, raw in rows.values_list("seq", "entry_id", "parent_id", "raw"):
            if entry_id in loaded and loaded[entry_id][0] > seq:
                continue  # a later row with the same id replaces the earlier one, as in the tree
            try:
                parsed = orjson.loads(raw)
            except orjson.JSONDecodeError:
                parsed = None
            if not isinstance(parsed, dict):
                parsed = {"type": "", "id": entry_id}
            elif version < 3:
                _migrate(session, parsed, entry_id, parent_id, version)
            loaded[entry_id] = (seq, parsed)
    return {entry_id: entry for entry_id, (_, entry) in loaded.items()}


def load_path_entries(session: AgentSession, ids: Sequence[str]) -> list[dict[str, Any]]:
    """The parsed entries of these ids, in the given order (ids without a row are left out)."""
    loaded = _load_rows(session, ids)
    return [loaded[i] for i in ids if i in loaded]


class _PathEntries(Sequence[dict[str, Any]]):
    """The path root → target as a sequence whose entries are read from the database on first use.

    ``context_for_path`` only touches the bookkeeping entries, the emitted messages and (for the default
    model) the first and last assistant message; the caller prefetches the first two in batches, anything
    else is loaded with its neighbourhood when asked for.
    """

    def __init__(self, session: AgentSession, ids: list[str], kinds: list[Any]) -> None:
        self.session = session
        self.ids = ids
        self.kinds = kinds
        self.loaded: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def prefetch(self, indices: Sequence[int]) -> None:
        """Load the entries at these path positions (those not loaded yet)."""
        missing = [i for i in indices if i not in self.loaded]
        rows = _load_rows(self.session, [self.ids[i] for i in missing])
        for i in missing:
            # A node of the tree always has its row; a vanished one reads as an entry of its type, empty.
            self.loaded[i] = rows.get(self.ids[i]) or {"type": self.kinds[i], "id": self.ids[i]}

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            positions = range(*index.indices(len(self.ids)))
            self.prefetch(positions)
            return [self.loaded[i] for i in positions]
        if index < 0:
            index += len(self.ids)
        if not 0 <= index < len(self.ids):
            raise IndexError(index)
        if index not in self.loaded:
            # Scans walk the path one position at a time: load a batch around the one asked for.
            half = LOAD_BATCH // 2
            self.prefetch(range(max(0, index - half), min(len(self.ids), index + half)))
        return self.loaded[index]


def _migrate(
    session: AgentSession, entry: dict[str, Any], entry_id: str, parent_id: str | None, version: int
) -> None:
    """Bring one raw line of an old-format file to v3, as the import did for its columns (§7): ``raw`` is the
    line as written, the migrated ids are in the row's columns."""
    if version < 2:
        entry["id"] = entry_id
        entry["parentId"] = parent_id
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index = entry.pop("firstKeptEntryIndex")
            # Counted over the parsed objects with the header at 0: the file's rows in arrival order.
            if isinstance(index, int | float) and not isinstance(index, bool) and float(index).is_integer():
                index = int(index)
            if isinstance(index, int) and not isinstance(index, bool) and index >= 1:
                kept = (
                    session.entries.filter(in_file=True)
                    .exclude(type="session")
                    .order_by("seq")
                    .values_list("entry_id", flat=True)[index - 1 : index]
                )
                found = list(kept)
                if found:
                    entry["firstKeptEntryId"] = found[0]
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
        message["role"] = "custom"


def _sources(path: _PathEntries, messages: list[dict[str, Any]]) -> list[str | None]:
    """The id of the entry each context message came from.

    Messages of ``message`` entries are the entry's own object; summaries and custom messages are new
    objects, matched forward along the path (the context keeps path order after the compaction summary).
    """
    by_object = {
        id(entry["message"]): i for i, entry in path.loaded.items() if isinstance(entry.get("message"), dict)
    }
    kinds = path.kinds
    candidates = [i for i, kind in enumerate(kinds) if kind in ("custom_message", "branch_summary")]
    compaction = max((i for i, kind in enumerate(kinds) if kind == "compaction"), default=None)
    sources: list[str | None] = []
    cursor = 0
    for position, message in enumerate(messages):
        found = by_object.get(id(message))
        if found is not None and path.loaded[found].get("message") is message:
            sources.append(path.ids[found])
            cursor = found + 1
            continue
        if position == 0 and message.get("role") == "compactionSummary" and compaction is not None:
            sources.append(path.ids[compaction])
            continue
        match = next(
            (
                i
                for i in candidates[bisect_left(candidates, cursor) :]
                if entry_to_message(path[i]) == message
            ),
            None,
        )
        if match is None:
            sources.append(None)
        else:
            sources.append(path.ids[match])
            cursor = match + 1
    return sources


def _str_id(entry: Mapping[str, Any]) -> str | None:
    value = entry.get("id")
    return value if isinstance(value, str) else None


def _tokens(message: dict[str, Any]) -> int:
    # v15 estimates AgentMessages; an LLM "developer" message is counted like a user message (its text).
    if message.get("role") == "developer":
        return estimate_tokens({**message, "role": "user"})
    return estimate_tokens(message)


def session_rules(session: AgentSession) -> str:
    """Whose rules the session is read by: the ones chosen for it, else the agent that wrote it, detected as
    the core does for a file."""
    return session.rules.agent


def llm_context(session: AgentSession, tree: ExplorerTree, target_id: str | None) -> LlmContext:
    """What the LLM receives at ``target_id``: the path's rows loaded from the database, the core's context
    and LLM presentation, one card per LLM message with its token estimate and the running total."""
    ids = path_ids(tree.flat, target_id)
    # The cached tree knows every entry's type: only the entries the context reads are loaded.
    kinds: list[Any] = [tree.flat.by_id[i].entry.get("type") for i in ids]
    position = {entry_id: i for i, entry_id in enumerate(ids)}

    def find(entry_id: Any, stop: int) -> int:
        index = position.get(entry_id, stop) if isinstance(entry_id, str) else stop
        return index if index < stop else stop

    path = _PathEntries(session, ids, kinds)
    path.prefetch([i for i, kind in enumerate(kinds) if kind != "message"])
    compaction = max((i for i, kind in enumerate(kinds) if kind == "compaction"), default=-1)
    if compaction < 0:
        path.prefetch(range(len(ids)))
    else:
        start = find(path[compaction].get("firstKeptEntryId"), compaction)
        emitted = [*range(start, compaction), *range(compaction + 1, len(ids))]
        path.prefetch([i for i in emitted if kinds[i] == "message"])
    agent = session_rules(session)
    builder = {"omp": omp_context_for_path, "pi": pi_context_for_path}.get(agent, context_for_path)
    state = builder(path, kinds, find)
    if state.origins is not None:
        sources: list[str | None] = [path.ids[i] for i in state.origins]
    else:
        sources = _sources(path, state.messages)
    cards: list[ContextCard] = []
    total = 0
    for source, message in zip(sources, state.messages, strict=True):
        # convert_to_llm maps each message on its own (to one message or none), so converting one at a
        # time keeps each LLM message tied to its entry.
        for converted in convert_to_llm([message], agent):
            tokens = _tokens(converted)
            total += tokens
            role = converted.get("role")
            attribution = converted.get("attribution")
            cards.append(
                ContextCard(
                    index=len(cards) + 1,
                    entry_id=source,
                    message=converted,
                    role=role if isinstance(role, str) else "",
                    attribution=""
                    if js.is_nullish(attribution) or attribution is UNDEFINED
                    else str(attribution),
                    tokens=tokens,
                    running_total=total,
                    text=message_text(converted),
                )
            )
    return LlmContext(target_id, len(ids), state, cards, total)


def _cut(text: str, limit: int) -> tuple[str, int]:
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def _blocks(message: Mapping[str, Any]) -> Iterator[ContextBlock]:
    content = message.get("content")
    if isinstance(content, str):
        shown, cut = _cut(content, BLOCK_TEXT_LIMIT)
        yield ContextBlock("text", shown, cut=cut)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            shown, cut = _cut(str(block.get("text") or ""), BLOCK_TEXT_LIMIT)
            yield ContextBlock("text", shown, cut=cut)
        elif kind == "thinking":
            shown, cut = _cut(str(block.get("thinking") or ""), BLOCK_TEXT_LIMIT)
            yield ContextBlock("thinking", shown, cut=cut)
        elif kind == "redactedThinking":
            yield ContextBlock("thinking", "", label="redacted thinking")
        elif kind == "toolCall":
            arguments = block.get("arguments", UNDEFINED)
            text = "" if arguments is UNDEFINED else js.stringify(arguments)
            shown, cut = _cut(text if isinstance(text, str) else "", ARGUMENTS_LIMIT)
            yield ContextBlock("tool_call", shown, label=str(block.get("name") or "(unnamed tool)"), cut=cut)
        elif kind == "image":
            yield ContextBlock("image", "", label=str(block.get("mimeType") or "image"))
