"""What the newest rule sets read from a session's lines rather than from the stored columns: their search
texts (:class:`AgentTexts`) and their wording of the rows (:func:`row_texts_of`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from django.db.models import Q

from treeview.models import AgentSession, Entry
from treeview.session.agents import Agent
from treeview.session.selector_text import searchable_text
from treeview.session.selector_text_latest import omp_display_text, pi_display_text
from treeview.session.selector_tree import register_tool_calls
from treeview.tree_index.rows import _AGENT_TEXT_EXCLUDED, DbNode

if TYPE_CHECKING:
    from treeview.tree_index.forest import Forest


@dataclass(frozen=True, slots=True)
class AgentTexts:
    """What one rule set reads differently from the stored columns (which hold v15's search text), for the
    rows of the types v15 searches otherwise (bookkeeping rows, custom messages: ``_AGENT_TEXT_EXCLUDED``).

    ``search``: entry id → the rule set's search text without the label (lowercased for pi, whose search
    compares lowercased substrings; as written for oh-my-pi, whose fuzzy match normalizes both sides).
    ``skill_prompts``: the ids of oh-my-pi's skill-prompt custom messages (its user-only mode shows them).
    """

    search: dict[str, str] = field(default_factory=dict)
    skill_prompts: frozenset[str] = frozenset()


class _Unlabeled:
    """An entry as a tree node without label, for ``searchable_text`` (the label is matched on its own)."""

    __slots__ = ("entry", "label")

    def __init__(self, entry: dict[str, Any]) -> None:
        self.entry = entry
        self.label = None


def _load_agent_texts(session_pk: int, stop: int, agent: Agent) -> AgentTexts:
    """The :class:`AgentTexts` of the rows with ``seq < stop``, read from their lines (a later line with the
    same id wins, as in the forest)."""
    if agent == "omp15":
        return AgentTexts()
    rows = (
        Entry.objects.filter(session_id=session_pk, seq__lt=stop)
        .exclude(type__in=_AGENT_TEXT_EXCLUDED)
        .exclude(entry_id="")
        .order_by("seq")
        .values_list("entry_id", "raw")
    )
    search: dict[str, str] = {}
    skill: set[str] = set()
    for entry_id, raw in rows.iterator(chunk_size=2000):
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(entry, dict):
            continue
        text = searchable_text(_Unlabeled(entry), agent)
        search[entry_id] = text.lower() if agent == "pi" else text
        if entry.get("type") == "custom_message" and entry.get("customType") == "skill-prompt":
            skill.add(entry_id)
        else:
            skill.discard(entry_id)
    return AgentTexts(search, frozenset(skill))


_ROW_TEXTS = {"omp": omp_display_text, "pi": pi_display_text}
# Ancestors searched for the assistant turn that made a tool result's call (the parent, or a few results up).
_CALL_SEARCH_DEPTH = 64
# Tool call ids looked up in one query when their call is not above their result.
_CALL_LOOKUP_BATCH = 50


def _entries_by_id(
    session_pk: int, stop: int, ids: Sequence[str], migrate_roles: bool = False
) -> dict[str, dict[str, Any]]:
    """The parsed lines of ``ids`` (rows with ``seq < stop``; a later line with the same id wins)."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(ids), 500):
        # No ORDER BY (it makes SQLite walk the session in seq order instead of using the (session, entry_id)
        # index, as explorer.conversation_pane._load_entries says): sorted here.
        rows = Entry.objects.filter(
            session_id=session_pk, seq__lt=stop, entry_id__in=ids[start : start + 500]
        ).values_list("seq", "entry_id", "raw")
        for _, entry_id, raw in sorted(rows):
            try:
                entry = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(entry, dict):
                if migrate_roles:
                    _migrate_role(entry)
                found[entry_id] = entry
    return found


def _migrate_role(entry: dict[str, Any]) -> None:
    """A stored line of a v1/v2 file as the import read it (``Migrator``: a ``hookMessage`` is ``custom``);
    the ids it synthesized are the row's columns, which the row texts do not need."""
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
        message["role"] = "custom"


def _call_ids(entry: dict[str, Any]) -> str | None:
    message = entry.get("message") if entry.get("type") == "message" else None
    if isinstance(message, dict) and message.get("role") == "toolResult":
        call_id = message.get("toolCallId")
        if isinstance(call_id, str) and call_id:
            return call_id
    return None


def _load_row_texts(forest: Forest, agent: Agent, ids: Sequence[str]) -> dict[str, str]:
    """The row texts of ``ids`` by ``agent``'s wording, from their lines; a tool result is worded by its call,
    found in the assistant turns above it (else in any assistant line that names the call's id)."""
    texts = _read_row_texts(
        forest.session_pk, forest.next_seq, forest.format_version, agent, ids, forest.nodes
    )
    for entry_id in ids:
        if entry_id not in texts and (node := forest.nodes.get(entry_id)) is not None:
            texts[entry_id] = node.facts.text
    return texts


def row_texts_of(
    session: AgentSession, agent: Agent, ids: Sequence[str], forest: Forest | None
) -> dict[str, str]:
    """The row text (without label) of each of ``ids`` that the session holds, as ``agent``'s selector words
    it, for pages that build no tree (the Review page's branch names): from ``forest`` (the session's forest
    kept by the explorer, whose texts are read once) for the entries it holds, the others from their lines
    (none for v15's rules, whose wording is the stored ``Entry.text``)."""
    texts: dict[str, str] = {}
    if forest is not None:
        texts = forest.row_texts(agent, ids)
    missing = [i for i in ids if i not in texts]
    if not missing:
        return texts
    if agent == "omp15":
        return texts  # v15's wording is the stored one: the caller has it
    texts.update(_read_row_texts(session.pk, session.next_seq, session.format_version, agent, missing, None))
    return texts


def _read_row_texts(
    session_pk: int,
    stop: int,
    format_version: int,
    agent: Agent,
    ids: Sequence[str],
    nodes: dict[str, DbNode] | None,
) -> dict[str, str]:
    """The row texts of those of ``ids`` whose lines exist (rows with ``seq < stop``), by ``agent``'s wording;
    a tool result's call is looked for in the assistant turns above it when the forest's ``nodes`` are
    given, else (and when not found there) in any assistant line that names the call's id."""
    entries = _entries_by_id(session_pk, stop, ids, format_version < 3)
    wanted = {call_id for entry in entries.values() if (call_id := _call_ids(entry)) is not None}
    calls: dict[str, tuple[Any, Any]] = {}
    if wanted:
        above: list[str] = []
        seen: set[str] = set()
        for entry_id, entry in entries.items():
            if _call_ids(entry) is None or nodes is None:
                continue
            node = nodes.get(entry_id)
            for _ in range(_CALL_SEARCH_DEPTH):
                parent = nodes.get(node.entry["parentId"]) if node is not None else None
                if parent is None or parent is node:
                    break
                node = parent
                parent_id = node.entry["id"]
                if parent_id in seen:
                    break
                seen.add(parent_id)
                message = node.entry.get("message")
                if message is not None and message.get("role") == "assistant":
                    above.append(parent_id)
                    break
        for entry in _entries_by_id(session_pk, stop, above).values():
            register_tool_calls(entry, calls)
        missing = sorted(wanted - calls.keys())
        for start in range(0, len(missing), _CALL_LOOKUP_BATCH):
            # Calls not above their results (rare): one pass over the assistant lines for a batch of them.
            named = Q()
            for call_id in missing[start : start + _CALL_LOOKUP_BATCH]:
                named |= Q(raw__contains=call_id)
            rows = Entry.objects.filter(
                named, session_id=session_pk, seq__lt=stop, type="message", role="assistant"
            ).order_by("seq")
            for raw in rows.values_list("raw", flat=True):
                try:
                    entry = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                if isinstance(entry, dict):
                    register_tool_calls(entry, calls)
    words = _ROW_TEXTS[agent]
    return {entry_id: words(entry, calls) for entry_id in ids if (entry := entries.get(entry_id)) is not None}
