"""Moving a stored session's leaf from the browser (``/tree``, spec §13).

The core plans the move and settles the summary (``prepare_navigation``, ``decide_summary``) over a
database-backed :class:`SessionSource`: parent links come from the cached flattened tree, entry bodies are
loaded only when a summary or an extension needs them. Then one transaction writes the result: a
``branch_summary`` entry at the destination (the leaf moves to it) or just the new leaf. A cancelled or failed
summary writes nothing.

Navigations of one session are serialized: within a process they queue on a lock per session, and across
processes the write takes the session row's lock, so neither loses an entry.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import orjson
from channels.db import database_sync_to_async
from django.conf import settings

from treeview import explorer
from treeview.extensions import hook_context, hook_runner, stored_view
from treeview.llm import make_summarizer, summarizer_status
from treeview.models import AgentSession, Entry
from treeview.services import append
from treeview.session import entries as builders
from treeview.session.branch_summary import AbortSignal
from treeview.session.hooks import SESSION_BEFORE_TREE, SESSION_TREE, SessionTreeEvent
from treeview.session.navigation import (
    NavigationError,
    NavigationPlan,
    SummaryDecision,
    decide_summary,
    prepare_navigation,
)
from treeview.session.session_manager import EntryNotFound

__all__ = [
    "NavigationFailed",
    "NavigationOutcome",
    "SessionSource",
    "load_entries",
    "navigate",
    "plan_navigation",
]

#: Entry bodies loaded per query (a 45,000-entry abandoned branch must not become one huge IN list).
LOAD_CHUNK = 2000

Progress = Callable[[dict[str, Any]], Awaitable[None]]
Delta = Callable[[str], Awaitable[None]]


class NavigationFailed(RuntimeError):
    """The move could not be made; nothing was written. ``code`` names the reason for the client."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class NavigationOutcome:
    """What a navigation did. ``status``: ``done``, ``noop`` (already there) or ``cancelled``."""

    status: str
    leaf_id: str | None
    summary_id: str | None = None
    editor_text: str | None = None
    abandoned: int = 0
    #: ``cancelled`` only: the summary was aborted (Escape), not refused by an extension.
    aborted: bool = False


class SessionSource:
    """The core's ``NavigationSource`` over a stored session: the cached tree for links, rows for bodies."""

    def __init__(self, session: AgentSession, tree: explorer.ExplorerTree) -> None:
        self.session = session
        self.tree = tree

    def get_leaf_id(self) -> str | None:
        return self.session.leaf_id

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        found = self.get_entries([entry_id])
        return found[0] if found else None

    def path_ids(self, entry_id: str) -> list[str]:
        return explorer.path_ids(self.tree.flat, entry_id)

    def get_entries(self, entry_ids: Sequence[str]) -> list[dict[str, Any]]:
        return load_entries(self.session, entry_ids)


def load_entries(session: AgentSession, entry_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The parsed entries with these ids, in that order (unknown or unreadable ones are left out)."""
    loaded: dict[str, dict[str, Any]] = {}
    for start in range(0, len(entry_ids), LOAD_CHUNK):
        rows = (
            Entry.objects.filter(session=session, entry_id__in=entry_ids[start : start + LOAD_CHUNK])
            .exclude(type="session")
            .values_list("seq", "entry_id", "raw")
        )
        # Sorted here, not with ORDER BY seq: for that order SQLite walks the (session, seq) index over the
        # whole session instead of looking the ids up in the (session, entry_id) index.
        for _seq, entry_id, raw in sorted(rows, key=itemgetter(0)):
            # A later row with the same id replaces the earlier one, as in the tree.
            parsed = _parse(raw)
            if parsed is not None:
                loaded[entry_id] = parsed
    return [loaded[entry_id] for entry_id in entry_ids if entry_id in loaded]


def _parse(raw: str) -> dict[str, Any] | None:
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


# -- planning and writing (in a worker thread: they use the ORM) ------------------------------------------


def plan_navigation(session: AgentSession, target_id: str, *, with_entries: bool) -> NavigationPlan:
    """The core's plan for moving the stored leaf to ``target_id``. Raises :class:`NavigationFailed`."""
    tree = explorer.explorer_tree(session, session.leaf_id)
    if target_id not in tree.flat.by_id:
        raise NavigationFailed("unknown-entry", f"Entry {target_id} not found")
    try:
        return prepare_navigation(SessionSource(session, tree), target_id, load_entries=with_entries)
    except EntryNotFound:
        raise NavigationFailed("unknown-entry", f"Entry {target_id} not found") from None


def _plan(session_pk: int, target_id: str, with_entries: bool) -> tuple[AgentSession, NavigationPlan]:
    session = AgentSession.objects.filter(pk=session_pk).first()
    if session is None:
        raise NavigationFailed("gone", "This session is no longer imported")
    return session, plan_navigation(session, target_id, with_entries=with_entries)


def _apply(session: AgentSession, plan: NavigationPlan, decision: SummaryDecision) -> str | None:
    """Write the move; returns the summary entry's id (if one was appended)."""
    try:
        if decision.text:
            text = decision.text

            def make(_leaf: str | None, ids: Any) -> dict[str, Any]:
                # The summary hangs at the destination, whatever the leaf is now (§13.2 step 6).
                return builders.branch_summary_entry(
                    plan.new_leaf_id, ids, text, decision.details, decision.from_extension
                )

            row = append.append_entry(session, make, reason="navigate")
            return row.entry_id
        append.move_leaf(session, plan.new_leaf_id)
        return None
    except append.WriteBackRefused as error:
        raise NavigationFailed("write-back", f"Not moved: {error}") from None
    except append.UnknownEntry as error:
        raise NavigationFailed("unknown-entry", str(error)) from None


# -- the job ---------------------------------------------------------------------------------------------

# One lock per session while a navigation of it runs in this process (weak: idle sessions keep none).
_locks: weakref.WeakValueDictionary[int, asyncio.Lock] = weakref.WeakValueDictionary()


def _lock(session_pk: int) -> asyncio.Lock:
    lock = _locks.get(session_pk)
    if lock is None:
        lock = asyncio.Lock()
        _locks[session_pk] = lock
    return lock


async def _nothing(_: Any) -> None:
    return None


async def navigate(
    session_pk: int,
    target_id: str,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    signal: AbortSignal | None = None,
    progress: Progress = _nothing,
    on_delta: Delta | None = None,
) -> NavigationOutcome:
    """Move the session's leaf to ``target_id`` as ``/tree`` does (§13), reporting progress as it goes.

    ``progress`` gets ``{"phase": "collecting", "entries": n}`` and, when summarizing,
    ``{"phase": "summarizing", ...}``; ``on_delta`` gets the summary text as the model streams it. Aborting
    ``signal`` (or cancelling the task) before the write leaves the session as it was. Raises
    :class:`NavigationFailed`.
    """
    signal = signal or AbortSignal()
    instructions = (custom_instructions or "").strip() or None
    hooks = hook_runner()
    async with _lock(session_pk):
        needs_entries = summarize or hooks.has_handlers(SESSION_BEFORE_TREE)
        session, plan = await database_sync_to_async(_plan)(session_pk, target_id, needs_entries)
        if plan.is_noop:
            return NavigationOutcome("noop", session.leaf_id)
        # What extensions may ask about the session (labels, entries), read now while the ORM is at hand.
        with_hooks = hooks.has_handlers(SESSION_BEFORE_TREE) or hooks.has_handlers(SESSION_TREE)
        labels, entries = await database_sync_to_async(stored_view)(session) if with_hooks else ({}, None)
        abandoned = len(plan.abandoned_ids)
        await progress({"phase": "collecting", "entries": abandoned})

        summarizer = None
        if summarize:
            status = summarizer_status()
            if not status.available:
                raise NavigationFailed("no-model", status.reason)
            summarizer = make_summarizer(on_delta)
            if summarizer is None:
                raise NavigationFailed("no-model", status.reason or "No model is configured for summaries")
            if plan.entries_to_summarize:
                started = {"phase": "summarizing", "entries": abandoned, "provider": status.provider}
                await progress({**started, "model": status.model})
        try:
            with hook_context(session, labels, entries=entries):
                decision = await decide_summary(
                    plan,
                    summarize=summarize,
                    custom_instructions=instructions,
                    summarizer=summarizer,
                    hooks=hooks,
                    signal=signal,
                    context_window=settings.ARBOR_LLM_CONTEXT_WINDOW,
                )
        except NavigationError as error:
            raise NavigationFailed("summary-failed", f"Summarization failed: {error}") from None
        if decision.cancelled or signal.aborted:
            return NavigationOutcome(
                "cancelled", session.leaf_id, abandoned=abandoned, aborted=decision.aborted or signal.aborted
            )
        summary_id = await database_sync_to_async(_apply)(session, plan, decision)

    if hooks.has_handlers(SESSION_TREE):
        summary_entry = None
        if summary_id is not None:
            found = await database_sync_to_async(load_entries)(session, [summary_id])
            summary_entry = found[0] if found else None
        with hook_context(session, labels, entries=entries):
            await hooks.emit(
                SessionTreeEvent(
                    new_leaf_id=session.leaf_id,
                    old_leaf_id=plan.old_leaf_id,
                    summary_entry=summary_entry,
                    from_extension=decision.from_extension if decision.text else None,
                )
            )
    return NavigationOutcome(
        "done", session.leaf_id, summary_id=summary_id, editor_text=plan.editor_text, abandoned=abandoned
    )
