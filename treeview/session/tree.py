"""The session forest (§10.6), for any kind of node: the core's ``TreeNode`` or a database-backed one.

Roots come in the order of the nodes given (file order); children are sorted oldest first by timestamp,
stably. Orphans and self-parented entries are roots. Entries caught in a parent cycle, which the original
silently drops, are kept: the first of each cycle becomes a root. Iterative throughout (paths can be tens of
thousands deep).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableSequence
from typing import Any, Protocol, TypeVar

from .ids import parse_timestamp_ms

__all__ = [
    "ForestNode",
    "build_forest",
    "cycle_message",
    "cycle_roots",
    "duplicate_message",
    "link_problems",
    "sort_children",
]


def duplicate_message(entry_id: str) -> str:
    """The warning for an entry whose id an earlier entry already has."""
    return f"duplicate id {entry_id!r}: the later entry replaces the earlier one"


def cycle_message(entry_id: str) -> str:
    """The warning for an entry made a root to break a parent cycle."""
    return f"parent links of {entry_id!r} form a cycle; shown as a root"


class ForestNode(Protocol):
    @property
    def entry(self) -> Mapping[str, Any]: ...

    @property
    def children(self) -> MutableSequence[Any]: ...


N = TypeVar("N", bound=ForestNode)


def sort_children(children: MutableSequence[N]) -> None:
    """Oldest first by ``Date.parse(timestamp)``, stable; an invalid timestamp keeps its file-order place."""
    keys: list[float] = []
    last = float("-inf")
    for child in children:
        value = parse_timestamp_ms(child.entry.get("timestamp"))
        if value is not None:
            last = value
        keys.append(last)
    order = sorted(range(len(children)), key=keys.__getitem__)
    children[:] = [children[i] for i in order]


def build_forest(nodes: Mapping[str, N]) -> tuple[list[N], list[str]]:
    """Link ``nodes`` (id → node with empty children, in file order) into a forest.

    Returns the roots and the ids that were made roots to break a parent cycle.
    """
    roots: list[N] = []
    for entry_id, node in nodes.items():
        parent_id = node.entry.get("parentId")
        parent = nodes.get(parent_id) if isinstance(parent_id, str) and parent_id != entry_id else None
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    reached = _sort_and_count(roots)
    cycle_ids: list[str] = []
    if reached < len(nodes):
        cycle_ids = _break_cycles(nodes, roots)
    return roots, cycle_ids


def _sort_and_count(roots: list[N]) -> int:
    count = 0
    stack = list(roots)
    while stack:
        node = stack.pop()
        count += 1
        if len(node.children) > 1:
            sort_children(node.children)
        stack.extend(node.children)
    return count


def _break_cycles(nodes: Mapping[str, N], roots: list[N]) -> list[str]:
    reachable: set[int] = set()
    stack: list[N] = list(roots)
    while stack:
        node = stack.pop()
        reachable.add(id(node))
        stack.extend(node.children)
    promoted: list[str] = []
    for entry_id, node in nodes.items():
        if id(node) in reachable:
            continue
        # Detach it from its parent inside the cycle: everything below it is reachable from it now.
        parent = nodes[node.entry["parentId"]]
        parent.children[:] = [child for child in parent.children if child is not node]
        roots.append(node)
        promoted.append(entry_id)
        stack = [node]
        while stack:
            current = stack.pop()
            reachable.add(id(current))
            stack.extend(current.children)
    return promoted


def cycle_roots(parents: Mapping[str, Any]) -> list[str]:
    """The ids :func:`build_forest` makes roots to break parent cycles, from ``parents`` (id → parentId, in
    file order, a later duplicate's parent winning) alone: no nodes built, nothing sorted."""
    children: dict[str, list[str]] = {}
    roots: list[str] = []
    for entry_id, parent_id in parents.items():
        if isinstance(parent_id, str) and parent_id != entry_id and parent_id in parents:
            children.setdefault(parent_id, []).append(entry_id)
        else:
            roots.append(entry_id)
    reached: set[str] = set()

    def reach(start: list[str]) -> None:
        stack = start
        while stack:
            current = stack.pop()
            if current in reached:
                continue
            reached.add(current)
            stack.extend(children.get(current, ()))

    reach(list(roots))
    promoted: list[str] = []
    if len(reached) == len(parents):
        return promoted
    for entry_id in parents:
        if entry_id not in reached:
            promoted.append(entry_id)
            reach([entry_id])
    return promoted


def link_problems(entries: Iterable[tuple[Any, Any, int]]) -> tuple[list[tuple[str, int]], list[str]]:
    """Duplicate ids and parent cycles among ``entries`` (id, parentId, line) in file order, as the core's
    ``SessionManager`` reports them: ``([(duplicate id, line of the later entry)], [ids made roots])``."""
    parents: dict[str, Any] = {}
    duplicates: list[tuple[str, int]] = []
    for entry_id, parent_id, line in entries:
        if not isinstance(entry_id, str):
            continue
        if entry_id in parents:
            duplicates.append((entry_id, line))
        parents[entry_id] = parent_id
    return duplicates, cycle_roots(parents)
