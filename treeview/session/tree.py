"""The session forest (§10.6), for any kind of node: the core's ``TreeNode`` or a database-backed one.

Roots come in the order of the nodes given (file order); children are sorted oldest first by timestamp,
stably. Orphans and self-parented entries are roots. Entries caught in a parent cycle, which the original
silently drops, are kept: the first of each cycle becomes a root. Iterative throughout (paths can be tens of
thousands deep).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableSequence
from typing import Any, Protocol, TypeVar

from .ids import parse_timestamp_ms

__all__ = ["ForestNode", "build_forest", "sort_children"]


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
