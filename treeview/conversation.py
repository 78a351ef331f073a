"""The branch on screen: what the conversation pane shows for a selection, and what the header says of it.

Selecting an entry shows the whole branch through it (``session.branches``): the path root → the drawn leaf
when the entry is on it, else root → the newest leaf below the entry. The header's totals, the review
control and "Share this branch" describe that branch, so they follow every selection and navigation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from treeview.explorer import (
    CONVERSATION_PAGE,
    BranchTotals,
    ConversationEntry,
    ConversationPage,
    ExplorerTree,
    session_key,
    siblings_of,
)
from treeview.explorer.conversation_pane import _load_entries, _rendered
from treeview.models import AgentSession
from treeview.render import build_tool_call_map
from treeview.session.agents import Agent
from treeview.session.branches import branch_anchor, newest_leaf, shorten
from treeview.tree_index import USER, DbNode

#: Entries of the branch shown after the selected one on the first page (the rest: "later entries").
AFTER_SELECTED = CONVERSATION_PAGE // 2
#: Characters of the last user prompt that name a branch.
NAME_CHARS = 60


@dataclass(frozen=True, slots=True)
class BranchOnScreen:
    """The branch the conversation pane shows: its leaf, the entry that names it (label and bookkeeping
    entries at its end skipped: the review's key), its name in words, and its totals."""

    leaf_id: str
    anchor_id: str
    name: str
    totals: BranchTotals

    @property
    def title(self) -> str:
        """The tooltip: which entry ends the branch."""
        return f"branch to entry {self.anchor_id}"


def branch_leaf(tree: ExplorerTree, selected_id: str | None) -> str | None:
    """The leaf of the branch shown for ``selected_id``: the drawn leaf when the entry is on its path, else
    the newest leaf below the entry (``None``: nothing selected, or an unknown id)."""
    flat = tree.flat
    if selected_id is None:
        return cast("str | None", flat.leaf_id)
    if flat.leaf_id is not None and selected_id in flat.active_ids:
        return cast(str, flat.leaf_id)
    node = flat.by_id.get(selected_id)
    if node is None:
        return None
    return cast(str, newest_leaf(node.node).entry["id"])


def _lookup(tree: ExplorerTree) -> Any:
    by_id = tree.flat.by_id

    def lookup(entry_id: str) -> tuple[object, str | None] | None:
        node = by_id.get(entry_id)
        if node is None:
            return None
        entry = node.node.entry
        parent = entry.get("parentId")
        return entry.get("type"), parent if isinstance(parent, str) and parent != entry_id else None

    return lookup


def branch_name(tree: ExplorerTree, leaf_id: str, agent: Agent) -> str:
    """The branch's name: its last user prompt, shortened (the leaf's row text when it has none), worded as
    ``agent``'s tree rows word it (the session's rules: the same text as the tree pane's row)."""
    by_id = tree.flat.by_id
    current: Any = leaf_id
    seen: set[Any] = set()
    while current is not None and current not in seen:
        node = by_id.get(current)
        if node is None:
            break
        seen.add(current)
        db = node.node
        if isinstance(db, DbNode) and db.flags & USER:
            return shorten(_prompt_text(_row_text(tree, current, agent)), NAME_CHARS)
        current = db.entry.get("parentId")
    node = by_id.get(leaf_id)
    text = _row_text(tree, leaf_id, agent) if node is not None and isinstance(node.node, DbNode) else leaf_id
    return shorten(text, NAME_CHARS)


def entry_text(tree: ExplorerTree, entry_id: str | None, agent: Agent) -> str:
    """An entry in words for a heading: its row text as ``agent``'s tree words it, shortened ("" for an
    unknown entry)."""
    node = tree.flat.by_id.get(entry_id) if entry_id is not None else None
    if node is None or not isinstance(node.node, DbNode):
        return ""
    return shorten(_row_text(tree, cast(str, entry_id), agent), NAME_CHARS)


def _row_text(tree: ExplorerTree, entry_id: str, agent: Agent) -> str:
    """The entry's row text as the tree pane shows it: the stored text (v15's wording) for v15's rules, else
    the forest's row text by ``agent``'s wording (read from its line once per forest, then kept there)."""
    node = cast(DbNode, tree.flat.by_id[entry_id].node)
    if agent == "omp15" or tree.forest is None:
        return node.facts.text
    return tree.forest.row_texts(agent, [entry_id]).get(entry_id, node.facts.text)


def _prompt_text(text: str) -> str:
    for prefix in ("user: ", "developer: "):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def branch_on_screen(tree: ExplorerTree, selected_id: str | None, agent: Agent) -> BranchOnScreen | None:
    """The branch shown for ``selected_id``, with its name (worded by ``agent``'s rules) and totals (kept
    with the tree)."""
    leaf = branch_leaf(tree, selected_id)
    if leaf is None:
        return None
    return tree.memo(("branch-on-screen", leaf, agent), lambda: _branch(tree, leaf, agent))


def _branch(tree: ExplorerTree, leaf: str, agent: Agent) -> BranchOnScreen:
    if leaf == tree.flat.leaf_id:
        totals = tree.branch_totals()
    else:
        by_id = tree.flat.by_id
        totals = BranchTotals().plus([cast(DbNode, by_id[i].node) for i in tree.path_ids(leaf)])
    anchor = branch_anchor(leaf, _lookup(tree))
    return BranchOnScreen(leaf, anchor, branch_name(tree, anchor, agent), totals)


def conversation_page(
    session: AgentSession, tree: ExplorerTree, selected_id: str | None, end: int | None
) -> ConversationPage:
    """One page of the branch through ``selected_id`` (root → its branch leaf), ending at ``end`` (default: a
    page that holds the selected entry, with up to ``AFTER_SELECTED`` entries after it), rendered."""
    leaf = branch_leaf(tree, selected_id)
    return tree.memo(
        ("branch-page", session_key(session), selected_id, leaf, end),
        lambda: _page(session, tree, selected_id, leaf, end),
    )


def _page(
    session: AgentSession, tree: ExplorerTree, selected_id: str | None, leaf: str | None, end: int | None
) -> ConversationPage:
    ids = tree.path_ids(leaf)
    if end is None:
        # A path holds an id once; the selected entry is on it (its branch leaf is below it).
        at = ids.index(selected_id) if selected_id in ids else len(ids) - 1
        stop = min(len(ids), at + 1 + AFTER_SELECTED)
    else:
        stop = max(0, min(end, len(ids)))
    begin = max(0, stop - CONVERSATION_PAGE)
    page_ids = ids[begin:stop]
    loaded = _load_entries(session, page_ids)
    tool_calls = build_tool_call_map([loaded[i][1] for i in page_ids if i in loaded])
    key = session_key(session)
    entries = [
        ConversationEntry(_rendered(key, loaded[i][0], loaded[i][1], tool_calls), i, siblings_of(tree, i))
        for i in page_ids
        if i in loaded
    ]
    return ConversationPage(entries, begin, stop, len(ids))
