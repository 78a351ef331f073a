"""A session's rows as tree nodes: the columns read, the filters' row flags, :class:`DbNode`, and the helpers
that read, resolve and link them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import connections, router

from treeview.models import Entry
from treeview.session.selector import _HIDDEN_TYPES as HIDDEN_TYPES
from treeview.session.selector import RowFacts

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
