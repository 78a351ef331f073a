"""The sizes of the tree window, the conversation page and the caches, and the page's filter modes."""

from __future__ import annotations

from typing import Literal

from treeview.session.selector import (
    FILTER_MODES,
    FilterMode,
)
from treeview.tree_filter import COMMENTED

# Rows drawn around the selection: about 60 before and 60 after it, more than a tall pane shows (explorer.js
# loads the others as the pane scrolls; without JavaScript, "load earlier/later" pages by this many).
TREE_WINDOW = 120
# Most rows one request of the rows endpoint returns (the page scrolls through the tree in slices).
TREE_SLICE_MAX = 400
# Tree levels drawn before a row's text; deeper rows fold the levels above them into a depth badge ("⋯12"),
# so that every row's text starts inside the pane, at any depth (a prefix is 3 characters a level).
TREE_LEVELS = 4
# Entries of the conversation path rendered at once ("earlier entries" loads more): a rendered entry is
# about 60 elements, and the page stays under a few thousand whatever the session's size.
CONVERSATION_PAGE = 40
# Flattened trees kept per process (one per session state and leaf); forests (one per session). Both are
# also bounded by bytes: a share of settings.ARBOR_TREE_CACHE_MB each (see _budget).
FLAT_CACHE_SIZE = 8
FOREST_CACHE_SIZE = 4
# Estimated bytes a cached value holds, measured with tracemalloc on the generated 100,000-entry session:
# a forest node 1,420 bytes (row and search text included), a flattened tree's row 150 bytes, plus its
# filter and search results (a list slot and a position per visible row, a few modes at a time).
FOREST_NODE_BYTES = 1_500
FLAT_ROW_BYTES = 250
# A tree's memo holds what views derive from it (the Context tab at a few entries).
MEMO_ALLOWANCE_BYTES = 2 * 1024 * 1024
VIEW_BYTES = 2_000  # a rendered entry's own objects, on top of its HTML
# The budget's shares: forests, flattened trees, rendered entries.
FOREST_SHARE, TREE_SHARE, VIEW_SHARE = 0.6, 0.3, 0.1
# Filter and search results kept per flattened tree (search as you type asks for several).
VISIBLE_CACHE_SIZE = 8
# Values a view keeps with a tree (ExplorerTree.memo).
MEMO_CACHE_SIZE = 8
# Rendered conversation entries kept per process (a few pages: the neighbours of a selection share most).
VIEW_CACHE_SIZE = 600

# The page's filter modes: the agent's five, then Arbor's "commented" (entries with comments; the session core
# knows nothing of comments, so the mode lives here and in the page's form).
ViewMode = FilterMode | Literal["commented"]
VIEW_MODES: tuple[ViewMode, ...] = (*FILTER_MODES, COMMENTED)
