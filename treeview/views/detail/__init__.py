"""The session page: the tree, the conversation, labels, the Context tab and long blocks on demand.

Modules: ``state`` (``PageState`` and the row and entry items), ``context`` (the page's template context
and its rendering), ``context_pane`` (the Context tab) and ``pages`` (the views).
"""

from treeview.views.detail.context import _detail_context as _detail_context
from treeview.views.detail.pages import entry_block, session_context, session_detail, set_label, tree_rows
from treeview.views.detail.state import DETAIL_TEMPLATE, PageState, RowItem

__all__ = [
    "DETAIL_TEMPLATE",
    "PageState",
    "RowItem",
    "entry_block",
    "session_context",
    "session_detail",
    "set_label",
    "tree_rows",
]
