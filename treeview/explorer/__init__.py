"""The session page's data: cached flattened trees, the window of tree rows, and a page of the conversation.

A session's forest is read once per process and then kept current from the rows appended since
(``tree_index.Forest``); a flattened tree is made once per (session, state, leaf) and kept in a small LRU
cache. When a session grows by a chain below its leaf (a label, an appended entry, a sync of the agent's new
lines) the new flattened tree is the old one with the chain spliced in below the old leaf, not flattened
again. A request then only filters the in-memory tree (cached per filter and search), builds the rows of one
window, and loads and renders one page of the conversation path (the ``raw`` text of at most
``CONVERSATION_PAGE`` entries).

The server's threads share all of it: the caches have their own locks, a forest changes only under its
session's lock, and a flattened tree never changes once made (what it derives is computed on first use).

The package's modules: limits.py (sizes and the page's modes), trees.py (``ExplorerTree``: a flattened tree
and what requests derive from it), prepare.py (work ahead of time that gives way to requests), caches.py
(the caches and their budgets), making.py (``explorer_tree``: a tree from the cache, else made),
tree_pane.py and conversation_pane.py (the two panes of the page).
"""

from treeview.explorer.caches import SessionKey, cached_forest, clear_caches, session_key
from treeview.explorer.conversation_pane import ConversationEntry, ConversationPage, Sibling, siblings_of
from treeview.explorer.limits import (
    CONVERSATION_PAGE,
    FOREST_SHARE,
    TREE_LEVELS,
    TREE_SLICE_MAX,
    TREE_WINDOW,
    VIEW_MODES,
    ViewMode,
)
from treeview.explorer.making import explorer_tree, keep_snapshot
from treeview.explorer.prepare import pause_for_requests, prepare_search
from treeview.explorer.tree_pane import TreeWindow, tree_window, view_tag
from treeview.explorer.trees import BranchTotals, ExplorerTree, Visible, path_ids
from treeview.tree_filter import COMMENTED

__all__ = [
    "COMMENTED",
    "CONVERSATION_PAGE",
    "FOREST_SHARE",
    "TREE_LEVELS",
    "TREE_SLICE_MAX",
    "TREE_WINDOW",
    "VIEW_MODES",
    "BranchTotals",
    "ConversationEntry",
    "ConversationPage",
    "ExplorerTree",
    "SessionKey",
    "Sibling",
    "TreeWindow",
    "ViewMode",
    "Visible",
    "cached_forest",
    "clear_caches",
    "explorer_tree",
    "keep_snapshot",
    "path_ids",
    "pause_for_requests",
    "prepare_search",
    "session_key",
    "siblings_of",
    "tree_window",
    "view_tag",
]
