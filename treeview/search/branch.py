"""The branch of a hit: where to open the session page so that the hit is on the selected branch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treeview.session.selector import FlatTree


@dataclass(frozen=True)
class BranchTarget:
    """Where the session page should open to show an entry: ``leaf_id`` ``None`` keeps the session's leaf."""

    target_id: str
    leaf_id: str | None


def branch_target(flat: FlatTree, entry_id: str, memo: dict[str, str] | None = None) -> BranchTarget | None:
    """The branch holding ``entry_id``: the active one when the entry is on it (an ancestor of the leaf, or
    the leaf); else the branch of the newest continuation below it (always the last child in the tree's
    order: newest timestamp, then file order). ``None`` when the tree has no such entry.

    ``memo`` (entry id → leaf found below it) may be shared by the calls for one tree.
    """
    flat_node = flat.by_id.get(entry_id)
    if flat_node is None:
        return None
    if entry_id in flat.active_ids:
        return BranchTarget(entry_id, None)
    memo = {} if memo is None else memo
    walked: list[str] = []
    node: Any = flat_node.node
    leaf: str | None = None
    while True:
        node_id = node.entry.get("id")
        if node_id in memo:
            leaf = memo[node_id]
            break
        walked.append(node_id)
        if not node.children:
            leaf = node_id
            break
        node = node.children[-1]
    for node_id in walked:
        memo[node_id] = leaf
    return BranchTarget(entry_id, leaf)
