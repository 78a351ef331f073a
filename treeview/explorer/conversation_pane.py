"""The conversation pane: its pages of entries, an entry's siblings, and rendered entries (cached)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from treeview.explorer.caches import SessionKey, _views
from treeview.explorer.limits import CONVERSATION_PAGE
from treeview.models import AgentSession
from treeview.render import EntryView, render_entry
from treeview.render.text import as_text

if TYPE_CHECKING:
    from treeview.explorer.trees import ExplorerTree


# -- the conversation pane ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Sibling:
    """Where an entry stands among its parent's children, with its neighbours (for ‹ i/n ›)."""

    index: int  # 1-based
    count: int
    previous_id: str | None
    next_id: str | None


@dataclass(frozen=True, slots=True)
class ConversationEntry:
    view: EntryView
    entry_id: str
    siblings: Sibling | None


@dataclass(frozen=True, slots=True)
class ConversationPage:
    """Entries ``[start, end)`` of the path root → selected entry."""

    entries: list[ConversationEntry]
    start: int
    end: int
    length: int

    @property
    def earlier(self) -> int:
        return self.start

    @property
    def later(self) -> int:
        return self.length - self.end

    @property
    def earlier_end(self) -> int:
        return self.start

    @property
    def later_end(self) -> int:
        return min(self.length, self.end + CONVERSATION_PAGE)


def siblings_of(tree: ExplorerTree, entry_id: str) -> Sibling | None:
    """The entry's place among its parent's children in tree order; ``None`` when it has no siblings."""
    node = tree.flat.by_id.get(entry_id)
    parent = tree.flat.by_id.get(node.entry.get("parentId")) if node is not None else None
    if parent is None or len(parent.node.children) < 2:
        return None
    ordered = tree.sibling_order(parent)
    if entry_id not in ordered:
        return None
    i = ordered.index(entry_id)
    return Sibling(
        i + 1,
        len(ordered),
        ordered[i - 1] if i > 0 else None,
        ordered[i + 1] if i + 1 < len(ordered) else None,
    )


def _load_entries(session: AgentSession, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, Any]]]:
    """id → (seq, parsed entry) of these ids (the last row of an id, as in the tree)."""
    entries: dict[str, tuple[int, dict[str, Any]]] = {}
    # No ORDER BY: with it SQLite walks the whole session in seq order instead of looking the ids up in the
    # (session, entry_id) index (60 ms for 100 ids of a 100,000-entry session). Sorted here instead.
    rows = session.entries.filter(entry_id__in=ids).exclude(type="session")
    for seq, entry_id, raw in sorted(rows.values_list("seq", "entry_id", "raw")):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = {"type": "", "id": entry_id, "value": raw}
        # A later row with the same id replaces the earlier one, as in the tree.
        entries[entry_id] = (seq, parsed if isinstance(parsed, dict) else {"type": "", "id": entry_id})
    return entries


def _call_fingerprint(entry: Mapping[str, Any], tool_calls: Mapping[str, Any]) -> bytes | None:
    """What a tool result's rendering takes from the rest of the page: the call it answers (as the renderer
    looks it up), as a short digest; ``None`` for every other entry."""
    message = entry.get("message")
    if entry.get("type") != "message" or not isinstance(message, dict) or message.get("role") != "toolResult":
        return None
    call_id = as_text(message.get("toolCallId"))
    call = tool_calls.get(call_id) if call_id else None
    if call is None:
        return b""
    return hashlib.blake2b(orjson.dumps(call, option=orjson.OPT_NON_STR_KEYS), digest_size=16).digest()


def _rendered(key: SessionKey, seq: int, entry: dict[str, Any], tool_calls: dict[str, Any]) -> EntryView:
    """The entry's view, from the cache when the same row was rendered with the same call before."""
    cache_key = (key, seq, _call_fingerprint(entry, tool_calls))
    view = _views.get(cache_key)
    if view is None:
        view = render_entry(entry, tool_calls)
        _views.put(cache_key, view)
    return view
