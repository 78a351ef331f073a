"""Thin glue over ``treeview.services`` and ``treeview.explorer``: one module per screen."""

from treeview.views.detail import entry_block, session_context, session_detail, set_label
from treeview.views.downloads import download_branch, download_session
from treeview.views.sessions import persist_position, session_list, upload

__all__ = [
    "download_branch",
    "download_session",
    "entry_block",
    "persist_position",
    "session_context",
    "session_detail",
    "session_list",
    "set_label",
    "upload",
]
