"""A session's tree built from the database columns, for the tree selector (§17) of the web pages.

No line is parsed again: each node carries the row text, search text and "has text" fact computed once at
import (``Entry.text``, ``search_text``, ``has_text``), so the core's own flattening, filtering, search and
selection rules run unchanged on it (``treeview.session.selector``). The stored row text is v15's wording;
the newest agents' wording of the rows a page shows is read from their lines once (:meth:`Forest.row_texts`).

A :class:`Forest` is the per-session structure the web pages keep in memory: it is read once (one query over
the indexed columns, never ``raw``) and then kept current by reading only the rows appended since
(:meth:`Forest.refresh`): a label, an entry Arbor appended, the lines a sync added. Anything else (a rewrite
that deleted rows, an entry that would move existing nodes) makes it read everything again. A big session's
rows are also kept on disk (a snapshot under ``ARBOR_DATA_DIR/cache/forests``), so that after a restart the
server reads that file and only the rows added since, not the whole table. The import writes the rows; the
first server process that has the forest in memory (``warmup``'s prewarm) writes the forest itself instead
(its nodes as columns, its links, and its tree flattened for the session's leaf): later starts make the
nodes with a few comprehensions and neither link, sort nor flatten; the flattened tree is used only while the
forest is exactly the snapshot's (no row added, the same leaf).
"""

from __future__ import annotations

import gc
import hashlib
import logging
import os
import threading
import time
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import orjson
from django.conf import settings
from django.db import connections, router
from django.db.models import Q

from treeview.models import AgentSession, Entry
from treeview.session.agents import Agent
from treeview.session.selector import _HIDDEN_TYPES as HIDDEN_TYPES
from treeview.session.selector import FilterMode, FlatTree, Row, RowFacts, flatten_tree, visible_rows
from treeview.session.selector_text import searchable_text
from treeview.session.selector_text_latest import omp_display_text, pi_display_text
from treeview.session.selector_tree import flat_from_columns, flat_to_columns, register_tool_calls
from treeview.session.tree import build_forest, sort_children

__all__ = [
    "HIDDEN_ASSISTANT",
    "OMP_SETTINGS",
    "PI_SETTINGS",
    "PI_USAGE",
    "SETTINGS",
    "TOOL_RESULT",
    "USER",
    "AgentTexts",
    "DbNode",
    "Forest",
    "flatten_session",
    "gc_paused",
    "load_forest",
    "prepare_snapshot",
    "row_texts_of",
    "select_rows",
]

_COLUMNS = (
    "seq",
    "entry_id",
    "parent_id",
    "type",
    "role",
    "timestamp",
    "stop_reason",
    "text",
    "search_text",
    "has_text",
    "label_target",
    "label_text",
    "input_tokens",
    "output_tokens",
    "cost",
)

# What the tree filters test of a node, as bit flags computed once per row (``DbNode.flags``); the explorer's
# filter combines them per mode (it gives the same rows as ``selector.filter_nodes``, which tests pass).
#: An assistant message with no text that neither failed nor was aborted: hidden unless it is the leaf.
HIDDEN_ASSISTANT = 1
#: A user message (the user-only mode).
USER = 2
#: A bookkeeping entry the default and no-tools modes hide (label, custom, model and thinking changes).
SETTINGS = 4
#: A tool result (hidden by no-tools).
TOOL_RESULT = 8
#: A bookkeeping entry oh-my-pi 18's default and no-tools modes hide (v15's and its newer types).
OMP_SETTINGS = 16
#: A bookkeeping entry pi 1.6's default and no-tools modes hide (v15's, ``context_edit``, ``session_info``).
PI_SETTINGS = 32
#: A pi ``usage`` record: pi never shows it, in any mode.
PI_USAGE = 64

logger = logging.getLogger(__name__)

_SETTINGS_TYPES = HIDDEN_TYPES["omp15"]
_OMP_SETTINGS_TYPES = HIDDEN_TYPES["omp"]
_PI_SETTINGS_TYPES = HIDDEN_TYPES["pi"]
# Entry types whose search text differs between the rules (the stored ``search_text`` is v15's): read from
# their lines when a session is searched by oh-my-pi 18's or pi 1.6's rules. Messages, labels, compactions,
# branch summaries and ``custom`` rows read alike under every rule set.
_AGENT_TEXT_EXCLUDED = ("message", "label", "compaction", "branch_summary", "custom", "session")
# Appended nodes remembered for deriving flattened trees incrementally (older trees are flattened again).
_LOG_LIMIT = 2000


@dataclass(slots=True)
class DbNode:
    """A tree node made from an ``Entry`` row (the shape ``SessionManager.get_tree`` returns, plus facts)."""

    entry: dict[str, Any]
    facts: RowFacts
    label: str | None = None
    children: list[DbNode] = field(default_factory=list)
    #: The node's place in file order: the seq of the first row with its id.
    seq: int = 0
    flags: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    #: When the label was set (its label entry's timestamp): pi's label time, shown by Shift+T.
    label_time: str | None = None


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
        # index, as explorer._load_entries says): sorted here.
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


_gc_lock = threading.Lock()
_gc_pauses = 0


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a forest or a flattened tree is built.

    Both are hundreds of thousands of small acyclic objects that live on in a cache; the collector would scan
    them again and again while they are made (more than half of the load time), and then in every collection
    after (a full one takes 0.15–0.45 s with a 100,000-entry forest cached, and parsing a few thousand entries
    triggers one). So ``freeze`` moves every tracked object out of the collector's sight for good: the cached
    trees are acyclic and reference counting still frees them when the cache drops them; the price is that
    a reference cycle that is alive at that moment and dies later is never collected (one request's worth at
    most, per tree built). Counted, so that builds in concurrent threads nest.
    """
    global _gc_pauses
    with _gc_lock:
        if _gc_pauses == 0 and not gc.isenabled():
            # Someone else turned it off: leave it as it is.
            yield
            return
        _gc_pauses += 1
        gc.disable()
    try:
        yield
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.freeze()
                gc.enable()


# The message part of a node's entry: one shared dict per (role, stop reason), as nodes never change it and a
# hundred thousand messages have a handful of pairs. Bounded, in case a file invents many stop reasons.
_MESSAGES: dict[tuple[Any, Any], dict[str, Any]] = {}
_MESSAGES_LIMIT = 512


def _message(role: Any, stop_reason: Any) -> dict[str, Any]:
    key = (role, stop_reason)
    message = _MESSAGES.get(key)
    if message is None:
        message = {"role": role or None, "stopReason": stop_reason}
        if len(_MESSAGES) < _MESSAGES_LIMIT:
            _MESSAGES[key] = message
    return message


def _node(row: Sequence[Any]) -> DbNode:
    """The node of one row in ``_COLUMNS`` order."""
    (
        seq,
        entry_id,
        parent_id,
        kind,
        role,
        timestamp,
        stop_reason,
        text,
        search_text,
        has_text,
        _,
        _,
        i,
        o,
        c,
    ) = row
    entry: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
    flags = 0
    if kind == "message":
        entry["message"] = _message(role, stop_reason)
        if role == "assistant":
            # selector._passes: errors and aborts stay, tool-call-only turns go (unless at the leaf).
            if not has_text and (not stop_reason or stop_reason in ("stop", "toolUse")):
                flags = HIDDEN_ASSISTANT
        elif role == "user":
            flags = USER
        elif role == "toolResult":
            flags = TOOL_RESULT
    else:
        if kind in _SETTINGS_TYPES:
            flags |= SETTINGS
        if kind in _OMP_SETTINGS_TYPES:
            flags |= OMP_SETTINGS
        if kind in _PI_SETTINGS_TYPES:
            flags |= PI_SETTINGS
        elif kind == "usage":
            flags |= PI_USAGE
    return DbNode(
        entry, RowFacts(text, search_text, bool(has_text)), None, [], seq, flags, i or 0, o or 0, c or 0.0
    )


def _rows(session_pk: int, start: int, stop: int | None) -> Iterator[tuple[Any, ...]]:
    """The rows with ``start <= seq < stop`` in ``_COLUMNS`` order, as the driver returns them (Django's value
    converters cost more than the query for 100,000 rows: ``has_text`` comes as 0/1 on SQLite)."""
    rows = Entry.objects.filter(session_id=session_pk, seq__gte=start)
    if stop is not None:
        rows = rows.filter(seq__lt=stop)
    query = rows.order_by("seq").values_list(*_COLUMNS)
    sql, params = query.query.sql_with_params()
    with connections[router.db_for_read(Entry)].cursor() as cursor:
        cursor.execute(sql, params)
        while batch := cursor.fetchmany(5000):
            yield from batch


class Forest:
    """A session's forest (§10.6) as of the rows with ``seq < next_seq``, with the resolved labels.

    Nodes are only ever added; a label change sets ``DbNode.label`` in place. A node's ``children`` list and
    ``roots`` are replaced, never changed in place, so a thread walking the forest while another appends sees
    the old lists whole. The caller serializes :meth:`refresh` calls (``explorer`` holds a lock per session).
    """

    def __init__(self, session_pk: int) -> None:
        self.session_pk = session_pk
        # The version the file was written in: lines of older ones are read as the import migrated them.
        self.format_version = 3
        self.nodes: dict[str, DbNode] = {}
        self.roots: list[DbNode] = []
        self.labels: dict[str, str] = {}
        self.label_times: dict[str, str] = {}
        self.next_seq = 0
        self.row_count = 0  # every row with seq < next_seq, the header and id-less lines included
        self.cycles = False  # build_forest broke a parent cycle: incremental updates are not attempted
        self.dangling: set[str] = set()  # parent ids of orphan roots: an entry with such an id re-links them
        self.generation = 0  # counts full loads
        self.log: list[DbNode] = []  # nodes appended since the last full load, in seq order
        self.log_start = 0  # the log holds every node with seq >= log_start
        # Per rule set, what it reads differently from the stored columns (made on first use, see
        # agent_texts); replaced, never changed in place, and dropped when rows it depends on arrive.
        self._agent_texts: dict[str, AgentTexts] = {}
        # Per rule set, the row text of each entry read so far by that set's wording (row_texts); a row's
        # text never changes while the forest holds it (a replaced row makes the forest load again).
        self._row_texts: dict[str, dict[str, str]] = {}
        # Entry id -> a message's search text as written (``Entry.fuzzy_text``, only where oh-my-pi's search
        # splits its words by case), as of the rows with seq < _case_seq (case_texts; grown on use).
        self._case_texts: dict[str, str] = {}
        self._case_seq = 0
        # Node id -> (text, label, normalized haystack, its fuzzy.char_mask) for oh-my-pi's fuzzy search
        # (treeview/tree_filter.py); an entry whose text or label changed is made again there.
        self.fuzzy_texts: dict[Any, tuple[str, str | None, str, int]] = {}
        # The haystacks and masks of a flattened tree's nodes by index, for its next search (tree_filter).
        self.fuzzy_flat: list[tuple[Any, Any, tuple[int, int, int], Any]] = []
        # A big session's snapshot key (its fuzzy_texts are kept on disk too, see save_fuzzy), and whether
        # that file was read already.
        self.snapshot_key: str | None = None
        # The flattened tree the snapshot kept (its leaf's, as of its rows), until the first tree is made
        # (take_flat): with the generation it was read with, as plain lists.
        self._kept_flat: tuple[int, dict[str, Any]] | None = None
        # The snapshot on disk holds the forest itself (columns), not only rows: nothing to keep again.
        self.snapshot_full = False
        self._fuzzy_restored = False
        self.fuzzy_chars = 0  # the characters of the normalized haystacks in fuzzy_texts (fuzzy_bytes)
        # Held while oh-my-pi's haystacks are made (tree_filter._omp_texts), and while the texts a rule set
        # reads are loaded: a search waits for the same work done ahead of it (tree_filter.prepare_search).
        self.fuzzy_lock = threading.Lock()
        self.fuzzy_waiters = 0  # searches waiting for fuzzy_lock (counted under waiters_lock)
        self.waiters_lock = threading.Lock()
        self._texts_lock = threading.Lock()

    @classmethod
    def load(cls, session: AgentSession) -> Forest:
        """Read the whole session: from its snapshot (then only the rows added since), else from the table
        (one query over the indexed columns)."""
        forest = cls(session.pk)
        forest.format_version = session.format_version
        if not forest._restore(session):
            forest.reload(session)
        return forest

    def reload(self, session: AgentSession) -> None:
        """Read everything again, up to the session's ``next_seq``; a big session's rows are saved as its
        snapshot for the next start of the server."""
        stop = session.next_seq
        with gc_paused():  # a hundred thousand row tuples: no collection while they pile up
            rows = list(_rows(self.session_pk, 0, stop))
            self._build(rows, stop)
        if len(rows) >= SNAPSHOT_MIN_ROWS:
            self.snapshot_key = _snapshot_key(session)
            self.snapshot_full = False
            _save_snapshot(self.snapshot_key, stop, rows)

    def _build(self, rows: Sequence[Sequence[Any]], stop: int, links: dict[str, Any] | None = None) -> None:
        """Make the forest of these rows (``_COLUMNS``, seq order), every row with ``seq < stop``; ``links``:
        the roots and children :meth:`links` gave for the forest of these rows (no sorting, no cycle check),
        not used unless they fit the nodes."""
        nodes: dict[str, DbNode] = {}
        labels: dict[str, str] = {}
        times: dict[str, str] = {}
        with gc_paused():
            for row in rows:
                kind = row[3]
                if kind == "label":
                    _resolve_label(labels, row[10], row[11])
                    _resolve_label(times, row[10], row[5] if row[11] else "")
                entry_id = row[1]
                if kind == "session" or not entry_id:
                    continue
                node = _node(row)
                previous = nodes.get(entry_id)
                if previous is not None:
                    # A later row with the same id replaces the earlier one and keeps its place, like the
                    # agent's map: its seq stays the place (siblings are ordered by it).
                    node.seq = previous.seq
                nodes[entry_id] = node
            self._finish(nodes, labels, times, stop, len(rows), links)

    def _finish(
        self,
        nodes: dict[str, DbNode],
        labels: dict[str, str],
        times: dict[str, str],
        stop: int,
        row_count: int,
        links: dict[str, Any] | None,
    ) -> None:
        """The forest of these nodes (unlinked, file order) and resolved labels: labels set, nodes linked."""
        with gc_paused():
            for target, text in labels.items():
                if (labeled := nodes.get(target)) is not None:
                    labeled.label = text
                    labeled.label_time = times.get(target)
            linked = _linked(nodes, links) if links is not None else None
            roots, cycle_ids = linked if linked is not None else build_forest(nodes)
        self.nodes = nodes
        self.roots = roots
        self.labels = labels
        self.label_times = times
        self.next_seq = stop
        self.row_count = row_count
        self.cycles = bool(cycle_ids)
        self.dangling = {
            parent
            for root in roots
            if isinstance(parent := root.entry.get("parentId"), str) and parent != root.entry.get("id")
        }
        self.generation += 1
        self.log = []
        self.log_start = self.next_seq
        self._agent_texts = {}
        self._row_texts = {}
        self._case_texts = {}
        self._case_seq = 0
        self._kept_flat = None

    def columns(self) -> dict[str, Any]:
        """The forest's nodes (file order) and resolved labels as plain lists, for the snapshot: what
        :meth:`_build_columns` makes the same forest from without a step per row of the table (ids made
        unique, labels resolved, bookkeeping rows left out, row kinds and flags computed)."""
        order = list(self.nodes.values())
        messages: dict[tuple[Any, Any], int] = {}
        codes = []
        for node in order:
            message = node.entry.get("message")
            if message is None:
                codes.append(-1)
            else:
                codes.append(messages.setdefault((message["role"], message["stopReason"]), len(messages)))
        kinds: dict[Any, int] = {}
        kind = [kinds.setdefault(node.entry["type"], len(kinds)) for node in order]
        return {
            "row_count": self.row_count,
            "kinds": list(kinds),
            "messages": [list(pair) for pair in messages],
            "kind": kind,
            "id": [node.entry["id"] for node in order],
            "parent": [node.entry["parentId"] for node in order],
            "timestamp": [node.entry["timestamp"] for node in order],
            "message": codes,
            "text": [node.facts.text for node in order],
            "search": [node.facts.search_text for node in order],
            "has_text": [node.facts.has_text for node in order],
            "seq": [node.seq for node in order],
            "flags": [node.flags for node in order],
            "input": [node.input_tokens for node in order],
            "output": [node.output_tokens for node in order],
            "cost": [node.cost for node in order],
            "labels": self.labels,
            "label_times": self.label_times,
        }

    def _build_columns(self, columns: dict[str, Any], stop: int, links: dict[str, Any] | None) -> None:
        """The forest :meth:`columns` kept (then linked as ``links`` says, else by ``build_forest``). Raises
        ``KeyError``, ``TypeError``, ``ValueError`` or ``IndexError`` for columns of another shape."""
        count = len(columns["id"])
        for name in _NODE_COLUMNS:
            if not isinstance(columns[name], list) or len(columns[name]) != count:
                raise ValueError(f"the column {name} does not fit")
        kinds = columns["kinds"]
        if columns["kind"] and (min(columns["kind"]) < 0 or max(columns["kind"]) >= len(kinds)):
            raise ValueError("an unknown kind")
        # -1 (no message) is the last item: None.
        messages: list[dict[str, Any] | None] = [
            _message(role, reason) for role, reason in columns["messages"]
        ]
        messages.append(None)
        codes = columns["message"]
        if codes and (min(codes) < -1 or max(codes) >= len(messages) - 1):
            raise ValueError("an unknown message kind")
        labels, times = columns["labels"], columns["label_times"]
        if not isinstance(labels, dict) or not isinstance(times, dict):
            raise TypeError("labels")
        with gc_paused():
            entries = [
                {"type": kinds[kind], "id": entry_id, "parentId": parent, "timestamp": timestamp}
                if message is None
                else {
                    "type": kinds[kind],
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": timestamp,
                    "message": message,
                }
                for kind, entry_id, parent, timestamp, message in zip(
                    columns["kind"],
                    columns["id"],
                    columns["parent"],
                    columns["timestamp"],
                    [messages[code] for code in codes],
                    strict=True,
                )
            ]
            facts = list(map(RowFacts, columns["text"], columns["search"], columns["has_text"]))
            nodes = {
                entry["id"]: DbNode(entry, fact, None, [], seq, flags, i, o, c)
                for entry, fact, seq, flags, i, o, c in zip(
                    entries,
                    facts,
                    columns["seq"],
                    columns["flags"],
                    columns["input"],
                    columns["output"],
                    columns["cost"],
                    strict=True,
                )
            }
            if len(nodes) != len(entries):
                raise ValueError("an id twice")
            self._finish(nodes, labels, times, stop, columns["row_count"], links)

    def links(self) -> dict[str, Any] | None:
        """The roots and children of this forest as places in ``nodes`` (plain lists, for the snapshot), so
        that :meth:`_build` of the same rows can skip linking and sorting; ``None`` when it broke a cycle."""
        if self.cycles:
            return None
        order = list(self.nodes.values())
        place = {id(node): i for i, node in enumerate(order)}
        return {
            "count": len(order),
            "roots": [place[id(root)] for root in self.roots],
            "children": [[place[id(child)] for child in node.children] for node in order],
        }

    def leaf_path(self, leaf_id: str | None) -> list[DbNode] | None:
        """The nodes root → ``leaf_id`` from the parent links (``None`` with a cycle or an unknown leaf): with
        no cycle every parent that exists is the forest parent."""
        nodes = self.nodes
        if self.cycles or leaf_id is None or leaf_id not in nodes:
            return None
        node = nodes[leaf_id]
        path = [node]
        while (parent := nodes.get(node.entry["parentId"])) is not None and parent is not node:
            path.append(parent)
            node = parent
        path.reverse()
        return path

    def snapshot_parts(self, flat: FlatTree | None, leaf_index: int | None) -> dict[str, Any]:
        """What a snapshot keeps besides rows, for this forest as it is: its nodes as columns (``columns``),
        its links (``links``) and ``flat``, its tree flattened for a leaf at ``leaf_index`` (made from this
        forest in this state; ``None``: not kept). The caller holds the session's lock (nothing changes the
        forest meanwhile); writing is :meth:`save_snapshot_parts`, without it."""
        kept: dict[str, Any] | None = None
        if flat is not None and leaf_index is not None and not self.cycles:
            place = {id(node): i for i, node in enumerate(self.nodes.values())}
            kept = flat_to_columns(flat, place)
            if kept is not None:
                kept["leaf_index"] = leaf_index
        return {"next_seq": self.next_seq, "columns": self.columns(), "links": self.links(), "flat": kept}

    def save_snapshot_parts(self, parts: dict[str, Any]) -> None:
        """Write the snapshot :meth:`snapshot_parts` made (here, in the caller's thread): the next server
        start then neither reads rows one by one, links nor (for that leaf) flattens."""
        if self.snapshot_key is None:
            return
        _write_snapshot(
            self.snapshot_key, parts["next_seq"], None, parts["links"], parts["flat"], parts["columns"]
        )
        self.snapshot_full = True

    def take_flat(self, leaf_id: str | None) -> tuple[FlatTree, int] | None:
        """The flattened tree the snapshot kept, with its leaf's place, when it is the one for ``leaf_id`` of
        this forest as it is now (read from that snapshot, no row added since: a label, an appended entry or
        a moved leaf mean flattening again). Given once; ``None`` otherwise."""
        kept, self._kept_flat = self._kept_flat, None
        if kept is None or self.cycles:
            return None
        generation, data = kept
        if generation != self.generation or data.get("next_seq") != self.next_seq:
            return None
        if data.get("leaf_id") != leaf_id or leaf_id is None:
            return None
        try:
            with gc_paused():
                flat = flat_from_columns(data, list(self.nodes.values()))
            leaf_index = data["leaf_index"]
        except (KeyError, TypeError, ValueError):
            logger.warning("the flattened tree of the snapshot does not fit its forest", exc_info=True)
            return None
        if not isinstance(leaf_index, int) or not 0 <= leaf_index < len(flat.nodes):
            return None
        if flat.nodes[leaf_index].node.entry.get("id") != leaf_id:
            return None
        return flat, leaf_index

    def _restore(self, session: AgentSession) -> bool:
        """Build from the session's snapshot, then bring it up to the session; ``False`` when there is no
        usable snapshot (none, another session's, newer than the session, or too far behind it)."""
        if session.next_seq < SNAPSHOT_MIN_ROWS:
            return False
        key = _snapshot_key(session)
        try:
            with gc_paused():
                data = orjson.loads(_snapshot_path(key).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return False
        if not isinstance(data, dict) or data.get("version") not in (1, SNAPSHOT_VERSION):
            return False
        if data.get("key") != key:
            return False
        stop, rows, columns = data.get("next_seq"), data.get("rows"), data.get("columns")
        if not isinstance(columns, dict):
            columns = None
        if not isinstance(stop, int) or stop > session.next_seq:
            return False
        if columns is not None:
            count = columns.get("row_count")
        else:
            count = len(rows) if isinstance(rows, list) else None
        if not isinstance(count, int):
            return False
        if session.next_seq - stop > max(SNAPSHOT_MIN_ROWS // 4, count // 5):
            return False  # reading the table (and saving a new snapshot) is about as fast
        links = data.get("forest")
        links = links if isinstance(links, dict) else None
        if columns is not None:
            try:
                self._build_columns(columns, stop, links)
            except (KeyError, TypeError, ValueError, IndexError):
                logger.warning("the forest snapshot %s does not fit its session", key, exc_info=True)
                return False
        else:
            self._build(cast(list[Sequence[Any]], rows), stop, links)
        with suppress(OSError):
            os.utime(_snapshot_path(key))  # the most recently opened first (prewarm_sessions, pruning)
        self.snapshot_key = key
        flat = data.get("flat")
        if isinstance(flat, dict):
            self._kept_flat = (self.generation, {**flat, "next_seq": stop})
        self.snapshot_full = columns is not None
        # Only the rows added since are read; a deletion since (a rewritten file) reads everything.
        self.refresh(session)
        return True

    def refresh(self, session: AgentSession) -> bool:
        """Bring the forest up to ``session`` (its ``next_seq`` and ``entry_count``). Returns whether that was
        done by appending the new rows; otherwise (rows were deleted, or a new row would move existing
        nodes) everything was read again."""
        stop = session.next_seq
        if stop < self.next_seq:
            return True  # an older view of the session: this forest is newer
        if stop == self.next_seq:
            if session.entry_count == self.row_count:
                return True
            self.reload(session)
            return False
        rows = list(_rows(self.session_pk, self.next_seq, stop))
        # Rows are never updated, only appended or (a rewritten file) deleted: the count tells a deletion.
        if self.cycles or self.row_count + len(rows) != session.entry_count or not self._append(rows, stop):
            self.reload(session)
            return False
        return True

    def _append(self, rows: list[tuple[Any, ...]], stop: int) -> bool:
        """Add these rows (seq order) if each only adds a node below a known parent, or a new root; checks
        all of them before changing anything."""
        nodes = self.nodes
        new: dict[str, DbNode] = {}
        dangling: set[str] = set()
        for row in rows:
            entry_id, parent_id, kind = row[1], row[2], row[3]
            if kind == "session" or not entry_id:
                continue
            if entry_id in nodes or entry_id in new or entry_id in self.dangling or entry_id in dangling:
                return False  # a duplicate id replaces a node; a missing parent arriving re-links orphans
            new[entry_id] = _node(row)
            orphan = parent_id not in nodes and parent_id not in new
            if isinstance(parent_id, str) and parent_id != entry_id and orphan:
                dangling.add(parent_id)
        labels = self.labels
        times = self.label_times
        touched: set[str] = set()
        for row in rows:
            if row[3] == "label":
                _resolve_label(labels, row[10], row[11])
                _resolve_label(times, row[10], row[5] if row[11] else "")
                touched.add(row[10])
        roots = self.roots
        for entry_id, node in new.items():
            node.label = labels.get(entry_id)
            node.label_time = times.get(entry_id)
            nodes[entry_id] = node
            parent_id = node.entry["parentId"]
            parent = nodes.get(parent_id) if isinstance(parent_id, str) and parent_id != entry_id else None
            if parent is None:
                roots = [*roots, node]
            elif not parent.children:
                parent.children = [node]
            else:
                # Siblings sorted by timestamp, stable in file order: as build_forest would, from file order.
                children = sorted(parent.children, key=_seq)
                children.append(node)
                sort_children(children)
                parent.children = children
            self.log.append(node)
        for target in touched:
            if (labeled := nodes.get(target)) is not None:
                labeled.label = labels.get(target)
                labeled.label_time = times.get(target)
        self.roots = roots
        self.dangling |= dangling
        if any(row[3] not in _AGENT_TEXT_EXCLUDED for row in rows):
            self._agent_texts = {}  # a row the rule sets read differently: read them again on next use
        self.row_count += len(rows)
        self.next_seq = stop
        if len(self.log) > _LOG_LIMIT:
            del self.log[: len(self.log) - _LOG_LIMIT // 2]
            self.log_start = self.log[0].seq
        return True

    def agent_texts(self, agent: Agent) -> AgentTexts:
        """What ``agent``'s rules read differently from the stored columns (made once per state of the
        forest; a thread may make it while another appends: the older answer is then not kept)."""
        found = self._agent_texts.get(agent)
        if found is not None:
            return found
        with self._texts_lock:
            cached = self._agent_texts
            found = cached.get(agent)
            if found is None:
                found = _load_agent_texts(self.session_pk, self.next_seq, agent)
                if self._agent_texts is cached:
                    self._agent_texts = {**cached, agent: found}
        return found

    def case_texts(self) -> dict[str, str]:
        """Entry id → the search text as written of the messages whose words oh-my-pi's search splits by case
        (the stored ``search_text`` is lowercased); read once, then only the rows appended since."""
        stop = self.next_seq
        if self._case_seq >= stop:
            return self._case_texts
        with self._texts_lock:
            if self._case_seq >= stop:
                return self._case_texts
            rows = (
                Entry.objects.filter(session_id=self.session_pk, seq__gte=self._case_seq, seq__lt=stop)
                .exclude(fuzzy_text="")
                .order_by("seq")
                .values_list("entry_id", "fuzzy_text")
            )
            found = dict(rows)
            if found:
                self._case_texts = {**self._case_texts, **found}
            self._case_seq = stop
        return self._case_texts

    def restore_fuzzy(self) -> None:
        """Fill ``fuzzy_texts`` from the file :meth:`save_fuzzy` wrote for this session (once per forest; the
        entries made meanwhile win). A file of another session, version or import, or one whose rows do not
        hash to its digest, is ignored; an entry whose text or label differs from the node's now is made
        again by its user (``tree_filter._omp_texts`` compares both)."""
        if self._fuzzy_restored or self.snapshot_key is None:
            return
        self._fuzzy_restored = True
        found = _read_fuzzy(self.snapshot_key)
        if found:
            self.fuzzy_texts = {**found, **self.fuzzy_texts}
            self.fuzzy_chars = sum(len(item[2]) for item in self.fuzzy_texts.values())

    def save_fuzzy(self) -> None:
        """Write ``fuzzy_texts`` to disk next to the snapshot (in a thread; a big session only), so that the
        first search after a restart need not normalize every node again."""
        if self.snapshot_key is None:
            return
        self._fuzzy_restored = True  # what the file holds is in memory now
        items = list(self.fuzzy_texts.items())
        threading.Thread(target=_write_fuzzy, args=(self.snapshot_key, items), name="forest-fuzzy").start()

    def fuzzy_bytes(self) -> int:
        """Estimated bytes held by ``fuzzy_texts`` and ``fuzzy_flat`` with its word indexes (text counted
        once a character: the normalized haystacks are ASCII mostly; the texts and labels are the nodes' own
        strings)."""
        total = len(self.fuzzy_texts) * FUZZY_ENTRY_BYTES + self.fuzzy_chars
        for _, _, _, (folded, _, joined) in self.fuzzy_flat:
            total += len(folded) * FUZZY_FLAT_ROW_BYTES + len(joined.text)
            if joined.words is not None:
                total += joined.words.bytes()
        return total

    def row_texts(self, agent: Agent, ids: Sequence[str]) -> dict[str, str]:
        """The row text (without label) of each of ``ids`` as ``agent``'s selector words it. The stored
        ``Entry.text`` is v15's wording; for the newest rule sets the lines of the rows asked for (a window
        of the tree pane) are read once and their texts kept with the forest: no later view reads them."""
        if agent == "omp15":
            return {i: node.facts.text for i in ids if (node := self.nodes.get(i)) is not None}
        known = self._row_texts.get(agent)
        if known is None:
            known = self._row_texts.setdefault(agent, {})
        missing = [i for i in ids if i not in known and i in self.nodes]
        if missing:
            known.update(_load_row_texts(self, agent, missing))
        return {i: known[i] for i in ids if i in known}

    def appended_since(self, seq: int) -> list[DbNode] | None:
        """The nodes appended with ``seq`` or later (seq order); ``None`` when the log does not reach back."""
        if seq < self.log_start:
            return None
        return self.log[bisect_left(self.log, seq, key=_seq) :]


# -- snapshots: a big session's rows on disk, so that a server start need not read them from the table -------

#: Sessions with at least this many rows keep a snapshot (smaller ones load from the table in a blink).
SNAPSHOT_MIN_ROWS = 20_000
#: 2: the rows, or (kept by a server process that has the forest: Forest.snapshot_parts) the forest they make
#: as columns, with its links and its tree flattened for the session's leaf (1, rows only, is still read).
SNAPSHOT_VERSION = 2
#: Snapshot files kept (the most recently written); each is about 360 bytes a row.
SNAPSHOTS_KEPT = 12


def snapshot_dir() -> Path:
    return Path(settings.ARBOR_DATA_DIR) / "cache" / "forests"


def _snapshot_key(session: AgentSession) -> str:
    """Names one session of one database: rows with ``seq < next_seq`` never change, so a snapshot stays
    true for it (rows deleted since show in the count, see :meth:`Forest.refresh`)."""
    database = connections[router.db_for_read(Entry)].settings_dict.get("NAME")
    stamp = session.imported_at.isoformat() if session.imported_at is not None else ""
    return f"{database}|{session.pk}|{stamp}|{session.session_id}"


def _snapshot_path(key: str) -> Path:
    pk = key.split("|")[1]
    return snapshot_dir() / f"{pk}-{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}.json"


def _write_snapshot(
    key: str,
    stop: int,
    rows: Sequence[Sequence[Any]] | None,
    links: dict[str, Any] | None = None,
    flat: dict[str, Any] | None = None,
    columns: dict[str, Any] | None = None,
) -> None:
    """Write the snapshot (atomically: readers see the old file or the new one); a failure is only logged.
    The rows with ``seq < stop``, or instead the forest they make as ``columns`` (``Forest.columns``: read
    without a step per row); ``links``: the forest's roots and children (``Forest.links``), ``flat``: its
    tree flattened for the session's leaf (``Forest.snapshot_parts``): a start then neither links nor
    flattens."""
    path = _snapshot_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = orjson.dumps(
            {
                "version": SNAPSHOT_VERSION,
                "key": key,
                "next_seq": stop,
                "rows": rows,
                "columns": columns,
                "forest": links,
                "flat": flat,
            }
        )
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        _prune_snapshots(path)
    except (OSError, TypeError, orjson.JSONEncodeError):
        logger.warning("could not save the forest snapshot %s", path, exc_info=True)


def _save_snapshot(key: str, stop: int, rows: list[tuple[Any, ...]]) -> None:
    """Write the snapshot in a thread of its own (the request does not wait)."""
    # Not a daemon: a process that ends meanwhile finishes writing first.
    threading.Thread(target=_write_snapshot, args=(key, stop, rows), name="forest-snapshot").start()


def prepare_snapshot(session: AgentSession, *, rewritten: bool, added: int) -> bool:
    """After an import: write a big session's snapshot now, so that the first page of it (in any server
    process) reads that file instead of the table, when the snapshot it may have would not do (a new or
    rewritten file, or more rows appended than a restore reads from the table). Returns whether it wrote."""
    if session.next_seq < SNAPSHOT_MIN_ROWS:
        return False
    if not rewritten and added <= SNAPSHOT_MIN_ROWS // 4:
        return False  # the snapshot it has (if any) is brought up to date from the table when it is read
    stop = session.next_seq
    with gc_paused():
        rows = list(_rows(session.pk, 0, stop))
    # The rows only: the first server process that opens it keeps the forest itself (Forest.snapshot_parts).
    _write_snapshot(_snapshot_key(session), stop, rows)
    return True


def snapshot_sessions(limit: int) -> list[AgentSession]:
    """Up to ``limit`` sessions of this database whose snapshot fits them, the most recently opened first."""
    try:
        files = sorted(snapshot_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    found: list[AgentSession] = []
    for path in files:
        if len(found) >= limit:
            break
        pk = path.name.split("-")[0]
        session = AgentSession.objects.filter(pk=int(pk)).first() if pk.isdigit() else None
        # Another database's session of that number, or an older import of it: not worth reading.
        if session is not None and _snapshot_path(_snapshot_key(session)) == path:
            found.append(session)
    return found


def _prune_snapshots(kept: Path) -> None:
    """Drop older snapshots of the same session id number and all but the newest ``SNAPSHOTS_KEPT``."""
    prefix = kept.name.split("-")[0] + "-"
    files = sorted(snapshot_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for number, path in enumerate(files):
        if path != kept and (number >= SNAPSHOTS_KEPT or path.name.startswith(prefix)):
            path.unlink(missing_ok=True)
            path.with_suffix(".fuzzy").unlink(missing_ok=True)
    for tmp in snapshot_dir().glob("*.tmp"):
        if time.time() - tmp.stat().st_mtime > 3600:
            tmp.unlink(missing_ok=True)


# -- oh-my-pi's normalized search haystacks of a big session's nodes, kept next to its snapshot ------------

FUZZY_VERSION = 1
#: Seconds the thread that writes them waits first: the search that made them is answered before.
FUZZY_SAVE_DELAY = 1.0
#: Estimated bytes of one ``Forest.fuzzy_texts`` entry besides its normalized text's characters (dict slot,
#: tuple, string and int headers), and of one row of a flattened tree's kept haystacks (list slots, a mask,
#: a start offset): tracemalloc on the 100,000-entry session measured 75 MB for both, these give 74.
FUZZY_ENTRY_BYTES = 320
FUZZY_FLAT_ROW_BYTES = 160


def _fuzzy_path(key: str) -> Path:
    return _snapshot_path(key).with_suffix(".fuzzy")


def _write_fuzzy(key: str, items: list[tuple[Any, tuple[str, str | None, str, int]]]) -> None:
    """One header line (version, snapshot key, the rows' digest), then the rows by column: ids, texts, labels,
    normalized texts, masks (read back by C-level zips); written atomically, a failure only logged."""
    path = _fuzzy_path(key)
    time.sleep(FUZZY_SAVE_DELAY)
    try:
        ids = [node_id for node_id, _ in items]
        columns = [list(column) for column in zip(*(item for _, item in items), strict=True)] or [[]] * 4
        rows = orjson.dumps([ids, *columns])
        digest = hashlib.blake2b(rows, digest_size=16).hexdigest()
        header = orjson.dumps({"version": FUZZY_VERSION, "key": key, "digest": digest})
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(header + b"\n" + rows)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError, orjson.JSONEncodeError):
        logger.warning("could not save the search texts %s", path, exc_info=True)


def _read_fuzzy(key: str) -> dict[Any, tuple[str, str | None, str, int]]:
    """What :func:`_write_fuzzy` wrote for ``key``; empty when there is no such file, or it is another
    session's or version's, or damaged (its rows do not hash to the digest, or are not of that shape)."""
    try:
        header, _, rows = _fuzzy_path(key).read_bytes().partition(b"\n")
        meta = orjson.loads(header)
        if not isinstance(meta, dict) or meta.get("version") != FUZZY_VERSION or meta.get("key") != key:
            return {}
        if hashlib.blake2b(rows, digest_size=16).hexdigest() != meta.get("digest"):
            return {}
        data = orjson.loads(rows)
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, list) or len(data) != 5 or not all(isinstance(column, list) for column in data):
        return {}
    ids, texts, labels, normals, masks = data
    if len({len(column) for column in data}) != 1:
        return {}
    # Checked by type, a column at a time (in C): the digest tells damage, this a file of other shape.
    if not (
        set(map(type, ids)) <= {str}
        and set(map(type, texts)) <= {str}
        and set(map(type, labels)) <= {str, type(None)}
        and set(map(type, normals)) <= {str}
        and set(map(type, masks)) <= {int}
    ):
        return {}
    return dict(zip(ids, zip(texts, labels, normals, masks, strict=True), strict=True))


#: The per-node columns of ``Forest.columns``.
_NODE_COLUMNS = (
    "kind",
    "id",
    "parent",
    "timestamp",
    "message",
    "text",
    "search",
    "has_text",
    "seq",
    "flags",
    "input",
    "output",
    "cost",
)


def _seq(node: DbNode) -> int:
    return node.seq


def _linked(nodes: dict[str, DbNode], links: dict[str, Any]) -> tuple[list[DbNode], list[str]] | None:
    """``build_forest(nodes)`` from the roots and children ``Forest.links`` gave for the same rows; ``None``
    when they do not fit ``nodes`` (then the caller links them itself). The nodes' children are set only
    once everything was checked."""
    try:
        children = links["children"]
        roots = links["roots"]
        if links["count"] != len(nodes) or len(children) != len(nodes) or not isinstance(roots, list):
            return None
        order = list(nodes.values())
        count = len(order)
        kids = [[order[i] for i in places] if places else None for places in children]
        # Every node below exactly one parent or a root: the places are a permutation of the nodes.
        flat_places = [i for places in children for i in places]
        if sorted(flat_places + roots) != list(range(count)):
            return None
        top = [order[i] for i in roots]
    except (KeyError, TypeError, IndexError):
        return None
    for node, below in zip(order, kids, strict=True):
        if below is not None:
            node.children = below
    return top, []


def _resolve_label(labels: dict[str, str], target: str, text: str) -> None:
    """One label entry applied to target → label (§5.9, JS Map semantics: a set keeps its place, an empty
    label clears), as ``AgentSession.resolved_labels`` does."""
    if not target:
        return
    if text:
        labels[target] = text
    else:
        labels.pop(target, None)


def load_forest(session: AgentSession) -> list[DbNode]:
    """The session as a forest (§10.6), from its rows in file order."""
    return Forest.load(session).roots


def flatten_session(session: AgentSession, leaf_id: str | None = None) -> FlatTree:
    """The flattened tree with the active branch first (``leaf_id`` defaults to the session's leaf)."""
    return flatten_tree(load_forest(session), session.leaf_id if leaf_id is None else leaf_id)


def select_rows(
    session: AgentSession, mode: FilterMode = "default", query: str = "", agent: Agent | None = None
) -> list[Row]:
    """The core tree selector's rows over the stored nodes for a filter mode and search query, by ``agent``'s
    rules (default: the session's), in display order. The explorer's own filter (``explorer.ExplorerTree``)
    also reads what the rules search differently from the stored text; this one searches the stored text."""
    rules = session.rules.agent if agent is None else agent
    return visible_rows(flatten_session(session), mode, query, agent=rules)
