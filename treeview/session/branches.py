"""Branches as a reader sees them: the leaf a click on an entry leads to, and the entry that names a branch.

A *branch* is a path from a root to a conversational leaf. Entries that are not part of the conversation
(labels, review labels, ``custom`` state, model and thinking-level changes and the other bookkeeping types)
do not start a branch of their own: when they trail a branch they belong to the branch above, whose last
conversational entry (its *anchor*) names it. A linear session is one branch however many bookkeeping
entries it ends with.

Clicking an entry shows the branch through it: the path down to the newest leaf below it, following the
newest child at every level (children are sorted oldest first, as ``getTree()`` sorts them), as pi's HTML
export does; on the branch already drawn the drawn leaf is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

__all__ = [
    "CONVERSATIONAL_TYPES",
    "branch_anchor",
    "is_conversational",
    "newest_leaf",
    "shorten",
]

#: Entry types that are part of the conversation; every other type is bookkeeping.
CONVERSATIONAL_TYPES = frozenset({"message", "custom_message", "branch_summary", "compaction"})
#: A walk up a run of bookkeeping entries stops here whatever the data (such runs are short).
_MAX_WALK = 100_000
#: No tree is deeper than this (a guard for the walk down, not a limit a real session meets).
_MAX_DEPTH = 100_000_000


class TreeNode(Protocol):
    """A node of ``getTree()``: its entry and its children, oldest first."""

    @property
    def entry(self) -> Mapping[str, Any]: ...

    @property
    def children(self) -> Sequence[Any]: ...


N = TypeVar("N", bound=TreeNode)


def is_conversational(entry_type: object) -> bool:
    """Is an entry of this type part of the conversation (and so able to end a branch)?"""
    return entry_type in CONVERSATIONAL_TYPES


def newest_leaf(node: N) -> N:
    """The newest leaf below ``node`` (``node`` itself when it has no children): the newest child, at every
    level. Iterative, so a 100,000-entry chain is no recursion; a tree has no cycles (``getTree()`` breaks
    them), and the walk stops after as many steps as a session could hold in any case."""
    current = node
    for _ in range(_MAX_DEPTH):
        children = current.children
        if not children:
            break
        current = children[-1]
    return current


def branch_anchor(entry_id: str, lookup: Callable[[str], tuple[object, str | None] | None]) -> str:
    """The entry that names the branch ending at ``entry_id``: the entry itself when it is conversational,
    else its nearest conversational ancestor. ``lookup(id)`` gives ``(type, parent id)`` or ``None`` for an id
    the session lacks. With no conversational entry above (bookkeeping up to a root, a missing parent or a
    cycle), ``entry_id`` names its branch itself."""
    current: str | None = entry_id
    seen: set[str] = set()
    while current is not None and current not in seen and len(seen) < _MAX_WALK:
        found = lookup(current)
        if found is None:
            break
        kind, parent = found
        if is_conversational(kind):
            return current
        seen.add(current)
        current = parent
    return entry_id


def shorten(text: str, limit: int = 60) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters with an ellipsis."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"
