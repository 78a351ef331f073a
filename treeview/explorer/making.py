"""A session's flattened tree from the cache, else made: from its forest's snapshot, by splicing what was
appended into a cached tree, or by flattening the forest; and keeping it in the snapshot."""

from __future__ import annotations

from typing import cast

from treeview.explorer.caches import _forests, _session_lock, _trees, session_key
from treeview.explorer.trees import ExplorerTree
from treeview.models import AgentSession
from treeview.session.selector import (
    FlatNode,
    FlatTree,
)
from treeview.session.selector_tree import flat_only_child, flatten_tree
from treeview.tree_index import DbNode, Forest, gc_paused


def explorer_tree(session: AgentSession, leaf_id: str | None) -> ExplorerTree:
    """The session flattened with ``leaf_id``'s branch first (``None``: no leaf), from the cache."""
    identity = session_key(session)
    key = (identity, session.next_seq, session.entry_count, leaf_id)
    tree = _trees.get(key)
    if tree is not None:
        return tree
    # One thread per session reads and flattens; the others wait for its result rather than repeat the work.
    with _session_lock(session.pk):
        tree = _trees.get(key)
        if tree is not None:
            return tree
        forest = _forests.get(identity)
        if forest is None:
            forest = Forest.load(session)
        else:
            forest.refresh(session)
        _forests.put(identity, forest)  # weighed again: it may have grown
        tree = (
            _extended_tree(forest, leaf_id) or _kept_tree(forest, leaf_id) or _flattened_tree(forest, leaf_id)
        )
        _trees.put(key, tree)
        return tree


def keep_snapshot(session: AgentSession, tree: ExplorerTree) -> bool:
    """Write the session's snapshot as its forest and this tree (``Forest.snapshot_parts``) when the one on
    disk holds only rows (as an import or a table read leaves it), so that the next server start reads them
    instead of making them again: taken under the session's lock while the tree is of the forest as it is,
    written after. Returns whether it wrote. Called by the prewarm thread, not by a request."""
    forest = tree.forest
    if forest is None or forest.snapshot_key is None or forest.snapshot_full:
        return False
    with _session_lock(session.pk):
        if tree.generation != forest.generation or tree.seq != forest.next_seq:
            return False  # the forest changed since the tree was made
        simple = tree.simple and tree.leaf_index is not None
        parts = forest.snapshot_parts(tree.flat if simple else None, tree.leaf_index if simple else None)
    forest.save_snapshot_parts(parts)
    return True


def _kept_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree | None:
    """The tree the forest's snapshot kept flattened for ``leaf_id``, when it fits the forest as it is now
    (``Forest.take_flat``): a start after an import does not flatten again."""
    kept = forest.take_flat(leaf_id)
    if kept is None:
        return None
    flat, leaf_index = kept
    return ExplorerTree(
        flat,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=not forest.cycles,
        leaf_index=leaf_index,
    )


def _flattened_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree:
    # The leaf's path from the parent links: spares flatten_tree a walk over the whole forest to find it.
    path = forest.leaf_path(leaf_id)
    # The leaf's branch comes first at every level: its path is the first nodes, the leaf last of them.
    leaf_index = None if path is None else len(path) - 1
    with gc_paused():
        flat = flatten_tree(forest.roots, leaf_id, path)
    return ExplorerTree(
        flat,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=not forest.cycles,
        leaf_index=leaf_index,
    )


def _extended_tree(forest: Forest, leaf_id: str | None) -> ExplorerTree | None:
    """The tree for ``leaf_id`` made from a cached tree of the same forest when all that was appended since is
    one chain below that tree's leaf, ending at ``leaf_id`` (a label, appended entries, the agent's next
    turns): the chain goes right below the old leaf, every other node keeps its place and drawing."""
    if forest.cycles or leaf_id is None:
        return None
    for _, base in reversed(_trees.items()):
        if base.forest is not forest or base.generation != forest.generation or base.leaf_index is None:
            continue
        chain = forest.appended_since(base.seq)
        if not chain or chain[-1].entry["id"] != leaf_id or chain[-1].children:
            continue
        links = [cast(DbNode, base.flat.nodes[base.leaf_index].node), *chain]
        # Each node has exactly the next as its only child (so the old leaf had none): nothing else moved.
        if all(len(a.children) == 1 and a.children[0] is b for a, b in zip(links, chain, strict=False)):
            return _spliced(forest, base, chain)
    return None


def _spliced(forest: Forest, base: ExplorerTree, chain: list[DbNode]) -> ExplorerTree:
    """``base`` with ``chain`` drawn below its leaf, as ``flatten_tree`` draws it (tests compare the two)."""
    flat = base.flat
    assert base.leaf_index is not None
    at = base.leaf_index + 1
    parent = flat.nodes[base.leaf_index]
    added: list[FlatNode] = []
    for node in chain:
        parent = flat_only_child(parent, node, flat.multiple_roots)
        added.append(parent)
    by_id = dict(flat.by_id)
    active_ids = set(flat.active_ids)
    for flat_node in added:
        entry_id = flat_node.node.entry["id"]
        by_id[entry_id] = flat_node
        active_ids.add(entry_id)
    nodes = flat.nodes[:at] + added + flat.nodes[at:]
    # Database nodes carry no message content, so there is no tool call to register: tool_calls stays.
    grown = FlatTree(nodes, chain[-1].entry["id"], flat.multiple_roots, flat.tool_calls, active_ids, by_id)
    # What the old tree derived along the leaf's path grows by the chain too.
    ids = [node.entry["id"] for node in chain]
    active_path = base._active_path + ids if base._active_path is not None else None
    active_index = None
    if base._active_index is not None:
        active_index = dict(base._active_index)
        active_index.update(zip(ids, range(at, at + len(ids)), strict=True))
    return ExplorerTree(
        grown,
        forest=forest,
        seq=forest.next_seq,
        generation=forest.generation,
        simple=True,
        leaf_index=base.leaf_index + len(chain),
        totals=base._totals.plus(chain) if base._totals is not None else None,
        active_path=active_path,
        active_index=active_index,
    )
