"""The counts and totals the session list shows: recomputed, or brought up to date after an append."""

from __future__ import annotations

from typing import Any

import orjson
from django.db.models import Count, Max, Min, Q, Sum

from treeview.models import AgentSession


def _totals_of(entries: Any) -> dict[str, Any]:
    """Every count and total of the session list over ``entries``, in one pass over the rows."""
    return entries.aggregate(
        count=Count("id"),
        first=Min("ts"),
        last=Max("ts"),
        input=Sum("input_tokens"),
        output=Sum("output_tokens"),
        cost=Sum("cost"),
        messages=Count("id", filter=Q(type="message")),
        tool_results=Count("id", filter=Q(role="toolResult")),
    )


def update_totals(session: AgentSession, *, move_leaf: bool = True) -> None:
    """Recompute the counts, totals, title fallback, leaf and dates the session list shows."""
    entries = session.entries.all()
    # One pass over the rows for every count and total: each pass reads the whole table, raw lines included
    # (on SQLite 0.1-0.2 s per 100k entries).
    totals = _totals_of(entries)
    session.entry_count = totals["count"] or 0
    session.first_timestamp = totals["first"]
    session.last_timestamp = totals["last"]
    session.input_tokens = int(totals["input"] or 0)
    session.output_tokens = int(totals["output"] or 0)
    session.cost = float(totals["cost"] or 0)
    session.message_count = totals["messages"] or 0
    session.tool_call_count = totals["tool_results"] or 0
    session.branch_point_count = (
        entries.exclude(parent_id=None).values("parent_id").annotate(n=Count("id")).filter(n__gt=1).count()
    )
    session.models_used = sorted(set(entries.exclude(model="").values_list("model", flat=True).distinct()))
    if move_leaf or session.leaf_id is None:
        # Like the agent on reload: the leaf is the last entry (a leaf moved in Arbor stays until the file
        # grows: then the agent has moved on).
        last = entries.exclude(entry_id="").exclude(type="session").order_by("-seq").values_list("entry_id")
        row = last.first()
        session.leaf_id = row[0] if row else None
    if not session.title:
        names = entries.filter(type="session_info").order_by("-seq").values_list("raw", flat=True)
        for raw in names[:50]:
            name = orjson.loads(raw).get("name")
            if isinstance(name, str) and name.strip():
                session.title = name.strip()[:500]
                break
    if not session.title and session.parent_session and session.subagent_kind in ("", "clone"):
        # A fork (`/branch`, a /tan clone) shares its original's first prompt: its own title tells them apart
        # (a subagent's first prompt is its own task: that is its title).
        parent = session.parent()
        if parent is not None:
            session.title = f"Fork of {parent.display_title}"[:500]
    session.next_seq = max(session.next_seq, entries.max_seq() + 1)


def add_to_totals(session: AgentSession, first_new_seq: int) -> None:
    """Bring the totals :func:`update_totals` keeps up to date after entries from ``first_new_seq`` on were
    appended (and none removed): the same figures, reading only the new rows and their parents' children."""
    entries = session.entries.all()
    new = entries.filter(seq__gte=first_new_seq)
    totals = _totals_of(new)
    if not totals["count"]:
        return
    session.entry_count += totals["count"]
    if totals["first"] is not None:
        first = session.first_timestamp
        session.first_timestamp = totals["first"] if first is None else min(first, totals["first"])
    if totals["last"] is not None:
        last = session.last_timestamp
        session.last_timestamp = totals["last"] if last is None else max(last, totals["last"])
    session.input_tokens += int(totals["input"] or 0)
    session.output_tokens += int(totals["output"] or 0)
    session.cost += float(totals["cost"] or 0)
    session.message_count += totals["messages"] or 0
    session.tool_call_count += totals["tool_results"] or 0
    # A parent becomes a branch point when it has a second child and the first was already stored.
    parents = sorted(set(new.exclude(parent_id=None).values_list("parent_id", flat=True)))
    for start in range(0, len(parents), 500):
        chunk = parents[start : start + 500]
        now: dict[str, int] = {}
        before: dict[str, int] = {}
        for parent_id, seq in entries.filter(parent_id__in=chunk).values_list("parent_id", "seq"):
            now[parent_id] = now.get(parent_id, 0) + 1
            if seq < first_new_seq:
                before[parent_id] = before.get(parent_id, 0) + 1
        session.branch_point_count += sum(n > 1 for n in now.values()) - sum(n > 1 for n in before.values())
    models_new = set(new.exclude(model="").values_list("model", flat=True).distinct())
    if not models_new <= set(session.models_used):
        session.models_used = sorted(set(session.models_used) | models_new)
    last_id = new.exclude(entry_id="").exclude(type="session").order_by("-seq").values_list("entry_id")
    row = last_id.first()
    if row is not None:
        session.leaf_id = row[0]
    if not session.title:
        names = new.filter(type="session_info").order_by("-seq").values_list("raw", flat=True)
        for raw in names[:50]:
            name = orjson.loads(raw).get("name")
            if isinstance(name, str) and name.strip():
                session.title = name.strip()[:500]
                break
    session.next_seq = max(session.next_seq, entries.max_seq() + 1)
