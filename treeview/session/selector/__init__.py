"""Tree selector (spec §17): flatten the session tree, filter and search it, and draw its rows.

This mirrors the ``/tree`` selector of oh-my-pi v15 (``modes/components/tree-selector.ts``) so that
Arbor shows the same rows, in the same order, with the same text, as the original. Flattening lives in
:mod:`treeview.session.selector_tree`, the text of each row (and what search matches) in
:mod:`treeview.session.selector_text`; this package filters, selects and draws, and is the one to import
(it re-exports the names of both).

Everything here is iterative and linear in the number of entries: sessions can hold 100,000
entries and chains 45,000 deep, so nothing recurses over the tree.

Typical use::

    flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    rows = visible_rows(flat, "default", "")
    index = initial_selection(flat, rows)
    lines = render_lines(rows, index, "default")  # or render_row(row, selected) and footer(...)

The web UI draws the same :class:`Row` objects as HTML (``row.gutters``, ``row.connector``,
``row.active``, ``row.label``, ``row.content``); :class:`TreeSelector` keeps the interactive state
(filter, search, selection) with the original's selection rules.

Modules: ``modes`` (filter modes), ``rows`` (``Row``, ``make_row``), ``filtering``, ``selection``
(``TreeSelector``) and ``drawing``.
"""

from treeview.session.selector.drawing import char_width as char_width
from treeview.session.selector.drawing import (
    footer,
    render_lines,
    render_row,
    truncate_to_width,
    window_bounds,
)
from treeview.session.selector.drawing import is_narrow as is_narrow
from treeview.session.selector.drawing import text_width as text_width
from treeview.session.selector.filtering import filter_nodes, visible_rows
from treeview.session.selector.modes import _HIDDEN_TYPES as _HIDDEN_TYPES
from treeview.session.selector.modes import FILTER_MODES, FilterMode, filter_tag, next_filter_mode
from treeview.session.selector.rows import ASCII_SYMBOLS, UNICODE_SYMBOLS, Row, TreeSymbols, make_row
from treeview.session.selector.rows import _prefix as _prefix
from treeview.session.selector.selection import (
    TreeSelector,
    follow_selection,
    initial_selection,
    nearest_visible_index,
)
from treeview.session.selector_text import display_text, searchable_text
from treeview.session.selector_text_latest import format_label_time
from treeview.session.selector_tree import (
    FlatNode,
    FlatTree,
    Gutter,
    RowFacts,
    TreeNodeLike,
    flatten_tree,
)

__all__ = [
    "ASCII_SYMBOLS",
    "FILTER_MODES",
    "UNICODE_SYMBOLS",
    "FilterMode",
    "FlatNode",
    "FlatTree",
    "Gutter",
    "Row",
    "RowFacts",
    "TreeNodeLike",
    "TreeSelector",
    "TreeSymbols",
    "display_text",
    "filter_nodes",
    "filter_tag",
    "flatten_tree",
    "follow_selection",
    "footer",
    "format_label_time",
    "initial_selection",
    "make_row",
    "nearest_visible_index",
    "next_filter_mode",
    "render_lines",
    "render_row",
    "searchable_text",
    "truncate_to_width",
    "visible_rows",
    "window_bounds",
]
