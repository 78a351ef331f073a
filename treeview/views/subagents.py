"""Subagent transcripts in the views: nested under their session in the list, opened from the task call that
spawned them, and a breadcrumb back (treeview/session/subagents.py says which files they are)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.db.models import Q, QuerySet

from treeview.access import sees_everything, visible_sessions
from treeview.models import AgentSession, Entry, SubagentKind
from treeview.session.subagents import task_call_names, task_result_agent_ids
from treeview.views.common import SessionLinks, session_links, shared_ids

#: How deep the list follows subagents of subagents (omp nests them; a loop in bad data must end).
MAX_DEPTH = 8


def top_level(sessions: QuerySet[AgentSession], user: Any) -> QuerySet[AgentSession]:
    """The sessions the list shows as rows: not a subagent of a session ``user`` sees (a subagent whose
    session is not imported, or not visible to them, stands on its own)."""
    if sees_everything(user):
        # (a subagent's parent row exists: deleting it empties subagent_of)
        return sessions.filter(subagent_of__isnull=True)
    visible_parents = visible_sessions(user).values("pk")
    return sessions.filter(Q(subagent_of__isnull=True) | ~Q(subagent_of__in=visible_parents))


@dataclass(frozen=True)
class SubagentNode:
    session: AgentSession
    links: SessionLinks
    children: list[SubagentNode] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.session.agent_key or self.session.session_id

    @property
    def total(self) -> int:
        """This transcript and every one below it."""
        return 1 + sum(child.total for child in self.children)


def subagent_trees(
    parents: Iterable[AgentSession], user: Any, *, with_rules: bool = False
) -> dict[int, list[SubagentNode]]:
    """parent pk → its subagents (visible to ``user``) with theirs nested, by agent id; one query a level.
    ``with_rules``: with the fields their rules are decided from (``AgentSession.rules``: no query each)."""
    deferred = ("prefix_raw", "tail_raw", "pending_raw", "warnings")
    if not with_rules:
        deferred = ("header_raw", "title_slot_raw", *deferred)
    found: dict[int, list[AgentSession]] = {}
    level = [p.pk for p in parents]
    seen = set(level)
    for _ in range(MAX_DEPTH):
        if not level:
            break
        rows = list(
            visible_sessions(user)
            .filter(subagent_of__in=level)
            .exclude(pk__in=seen)
            .defer(*deferred)
            .with_first_prompt()
            .order_by("created_at", "agent_key", "pk")
        )
        for row in rows:
            assert row.subagent_of_id is not None
            found.setdefault(row.subagent_of_id, []).append(row)
        level = [row.pk for row in rows]
        seen.update(level)
    everyone = [row for rows in found.values() for row in rows]
    shared = shared_ids((row.session_id for row in everyone), user) if everyone else set()

    def nodes(pk: int) -> list[SubagentNode]:
        return [
            SubagentNode(row, session_links(row, pick_copy=row.session_id in shared), nodes(row.pk))
            for row in found.get(pk, [])
        ]

    return {parent.pk: nodes(parent.pk) for parent in parents}


# -- the session page ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Crumb:
    session: AgentSession
    url: str | None  # the session page; for the spawning session, at the task call that spawned the next one
    call_url: str | None = None  # the task call's entry on that page


def _detail(session: AgentSession) -> str | None:
    return session_links(session, pick_copy=False).detail


def spawning_entry(parent: AgentSession, agent_id: str) -> str | None:
    """The entry id of the task tool result in ``parent`` that names ``agent_id`` (its spawn), if any."""
    needle = orjson.dumps(agent_id).decode()
    candidates = parent.entries.filter(type="message", role="toolResult", raw__contains=needle)
    candidates = candidates.order_by("seq")
    for entry_id, raw in candidates.values_list("entry_id", "raw"):
        try:
            message = orjson.loads(raw).get("message", {})
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if isinstance(message, dict) and agent_id in task_result_agent_ids(message):
            return entry_id
    return None


def breadcrumb(session: AgentSession, user: Any) -> list[Crumb]:
    """The sessions above a subagent transcript, outermost first, each with the task call that spawned the
    next one; empty for a session of its own. Stops at a session ``user`` may not see."""
    crumbs: list[Crumb] = []
    child = session
    visible = visible_sessions(user)
    for _ in range(MAX_DEPTH):
        if child.subagent_of_id is None:
            break
        parent = visible.filter(pk=child.subagent_of_id).with_first_prompt().first()
        if parent is None:
            break
        url = _detail(parent)
        entry = spawning_entry(parent, child.agent_key) if child.agent_key else None
        call_url = f"{url}?targetId={entry}#entry-{entry}" if url and entry else None
        crumbs.insert(0, Crumb(parent, url, call_url))
        child = parent
    return crumbs


@dataclass(frozen=True)
class SubagentLink:
    label: str
    url: str | None
    title: str


def direct_links(session: AgentSession, user: Any) -> list[SubagentLink]:
    """Links to the transcripts ``session`` spawned itself (task subagents, advisors, clones), by agent id."""
    spawned = visible_sessions(user, session.subagents.all()).with_first_prompt().order_by("created_at", "pk")
    kinds = dict(SubagentKind.choices)
    return [
        SubagentLink(
            s.agent_key or s.session_id, _detail(s), f"{kinds.get(s.subagent_kind, '')}: {s.display_title}"
        )
        for s in spawned
    ]


def task_links(session: AgentSession, entry_ids: list[str], user: Any) -> dict[str, list[SubagentLink]]:
    """entry id → links to the subagent transcripts its task call spawned, for the entries on a page: the
    task tool result by the ids it names (``details.results[].id``), the assistant's task call by its
    result's ids when that is on the page, else by the names it asked for."""
    spawned = visible_sessions(user, session.subagents.all()).only("pk", "session_id", "agent_key", "title")
    children = {s.agent_key: s for s in spawned if s.agent_key}
    if not children or not entry_ids:
        return {}
    rows = Entry.objects.filter(session=session, entry_id__in=entry_ids, raw__contains='"task"').values_list(
        "entry_id", "raw"
    )
    by_call: dict[str, list[str]] = {}
    calls: dict[str, list[tuple[str, list[str]]]] = {}
    results: dict[str, list[str]] = {}
    for entry_id, raw in rows:
        try:
            message = orjson.loads(raw).get("message")
        except (orjson.JSONDecodeError, AttributeError):
            continue
        if not isinstance(message, dict):
            continue
        if message.get("role") == "toolResult" and message.get("toolName") == "task":
            ids = list(task_result_agent_ids(message))
            results[entry_id] = ids
            if isinstance(message.get("toolCallId"), str):
                by_call[message["toolCallId"]] = ids
        elif message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if not isinstance(block, dict) or block.get("type") != "toolCall":
                    continue
                if block.get("name") == "task":
                    names = list(task_call_names(block.get("arguments")))
                    calls.setdefault(entry_id, []).append((str(block.get("id", "")), names))
    found: dict[str, list[str]] = dict(results)
    for entry_id, blocks in calls.items():
        found[entry_id] = [i for call_id, names in blocks for i in by_call.get(call_id, names)]

    def link(agent_id: str) -> SubagentLink | None:
        child = children.get(agent_id)
        if child is None:
            return None
        return SubagentLink(agent_id, _detail(child), child.display_title)

    links = {}
    for entry_id, ids in found.items():
        made = [made for made in (link(i) for i in dict.fromkeys(ids)) if made is not None]
        if made:
            links[entry_id] = made
    return links
