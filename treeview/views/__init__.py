"""Thin glue over ``treeview.services`` and ``treeview.explorer``: one module per screen."""

from treeview.views.detail import entry_block, session_context, session_detail, set_label, tree_rows
from treeview.views.downloads import download_branch, download_session
from treeview.views.fork import branch_picker, fork_session
from treeview.views.search import search, search_open
from treeview.views.sessions import persist_position, session_list, upload

__all__ = [
    "branch_picker",
    "download_branch",
    "download_session",
    "entry_block",
    "fork_session",
    "persist_position",
    "search",
    "search_open",
    "session_context",
    "session_detail",
    "session_list",
    "set_label",
    "tree_rows",
    "upload",
]
