"""The shared branch: its path from the root to the link's leaf, and its entries as stored, by chunk."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from treeview import explorer
from treeview.models import AgentSession, ShareLink
from treeview.services.share.tokens import IN_CHUNK
from treeview.session.jsonl import loads
from treeview.session.selector import FILTER_MODES

# -- the branch --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BranchEntry:
    """One entry of a shared branch: its row's order and exact text, and the parsed entry."""

    seq: int
    entry_id: str
    raw: str
    entry: dict[str, Any]


def _parents(session: AgentSession, below_seq: int | None) -> dict[str, str | None]:
    """entry id → parent id of the session's entries (of those stored before ``below_seq``)."""
    rows = session.entries.exclude(type="session")
    if below_seq is not None:
        rows = rows.filter(seq__lt=below_seq)
    parents: dict[str, str | None] = {}
    for entry_id, parent_id in rows.order_by("seq").values_list("entry_id", "parent_id"):
        parents[entry_id] = parent_id  # a later row with the same id wins, as in the tree
    return parents


def branch_path(session: AgentSession, leaf_id: str, below_seq: int | None = None) -> list[str]:
    """The ids root → ``leaf_id`` through parent links (empty when the leaf is not there); stops at a missing
    parent or a repeated id, so a cycle cannot hang it."""
    parents = _parents(session, below_seq)
    path: list[str] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while current is not None and current in parents and current not in seen:
        seen.add(current)
        path.append(current)
        current = parents[current]
    path.reverse()
    return path


def chunks(items: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size``: one ``IN (...)`` query each, never past a backend's limit."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _load(session: AgentSession, ids: Sequence[str], below_seq: int | None) -> list[BranchEntry]:
    found: dict[str, BranchEntry] = {}
    for chunk in chunks(ids):
        rows = session.entries.filter(entry_id__in=chunk).exclude(type="session")
        if below_seq is not None:
            rows = rows.filter(seq__lt=below_seq)
        for seq, entry_id, raw in sorted(rows.values_list("seq", "entry_id", "raw")):
            previous = found.get(entry_id)
            if previous is not None and previous.seq > seq:
                continue  # the later row of a repeated id wins, as in the tree
            try:
                parsed = loads(raw)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                parsed = {"type": "", "id": entry_id}
            found[entry_id] = BranchEntry(seq, entry_id, raw, parsed)
    return [found[i] for i in ids if i in found]


load_rows = _load


def link_path(link: ShareLink) -> tuple[str, list[str]]:
    """The leaf a link shows now and the ids root → it, from the session's cached explorer tree (no entry is
    read): frozen, the link's leaf; following, the session's current leaf when it descends from it."""
    session = link.session
    stored = explorer.explorer_tree(session, session.leaf_id)
    leaf = link.leaf_id
    if link.follows and session.leaf_id and leaf in set(stored.path_ids(session.leaf_id)):
        leaf = session.leaf_id
    if leaf not in stored.flat.by_id:
        return leaf, []
    return leaf, stored.path_ids(leaf)


def shown_ids(link: ShareLink, leaf: str, path: Sequence[str]) -> list[str]:
    """The ids of ``path`` (root → ``leaf``) the tree selector shows under the link's filter and search, from
    the explorer's tree drawn for ``leaf`` (cached, its flags computed at import: no entry is parsed)."""
    mode = link.filter_mode if link.filter_mode in FILTER_MODES else "default"
    tree = explorer.explorer_tree(link.session, leaf)
    on_path = set(path)
    visible = tree.visible(mode, link.query, agent=link.session.rules.agent)  # type: ignore[arg-type]
    return [i for n in visible.nodes if (i := n.node.entry.get("id")) in on_path]


def load_entries(link: ShareLink, ids: Sequence[str]) -> list[BranchEntry]:
    """These entries of the link's session, in the order given (frozen: only those stored before the link)."""
    return _load(link.session, ids, None if link.follows else link.frozen_seq)
