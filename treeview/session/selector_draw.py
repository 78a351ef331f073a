"""The tree selector's list drawn as the newest agents draw it: oh-my-pi 18.3.4 and pi 1.6.0.

:func:`treeview.session.selector.render_lines` calls these for ``agent="omp"`` and ``agent="pi"`` (v15's
drawing stays in :mod:`.selector`). Where they differ from v15:

* oh-my-pi 18 (its ``TreeView``): a row sits one level deeper below each branch point only (no extra step for
  the first generation after a branch, so a chain below ``│`` starts at ``│  •``, not ``│     •``); a deep
  window scrolls its gutters left behind a ``…``; there is no ``(i/N)`` position line, only the filter tag
  (``[user]``); an empty list says why (``N entries hidden by the current filter [labeled]`` and how to widen
  it, or that the search matched nothing).
* pi 1.6: the indentation, connectors and gutters are worked out again over the rows the filter keeps (a
  hidden entry's children hang from its nearest visible ancestor); a connector whose row has visible children
  is drawn ``├⊟``/``└⊟`` (foldable); a row too far right for the width pans the list left; rows are cut
  without an ellipsis; Shift+T adds each label's time (``[+label time]`` in the footer).

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from treeview.session.selector_text_latest import format_label_time

if TYPE_CHECKING:
    from treeview.session.selector import FilterMode, Row, TreeSymbols
    from treeview.session.selector_tree import FlatTree

__all__ = ["omp_lines", "pi_lines"]

_TAB: Final = "   "


def _tag(mode: FilterMode) -> str:
    from treeview.session.selector import filter_tag

    return filter_tag(mode)


def _cut(text: str, width: int | None, ellipsis: str = "…") -> str:
    from treeview.session.selector import truncate_to_width

    return truncate_to_width(text, width, ellipsis) if width is not None else text


def _window(selected: int | None, count: int, max_visible: int | None) -> tuple[int, int]:
    from treeview.session.selector import window_bounds

    return window_bounds(selected, count, max_visible or count)


# ---------------------------------------------------------------------------------------------------------
# oh-my-pi 18


def omp_lines(
    rows: Sequence[Row],
    selected_index: int | None,
    mode: FilterMode,
    width: int | None,
    max_visible: int | None,
    symbols: TreeSymbols,
    *,
    total: int,
    query: str = "",
) -> list[str]:
    """oh-my-pi 18's list: the window of rows, then the filter tag (if any); or why nothing is shown.

    ``total``: how many entries the tree holds before filtering; ``query``: the search text.
    """
    tag = _tag(mode)
    if not rows:
        if total == 0:
            lines = ["No entries found", f"(0/0){tag}"]
        elif query:
            lines = [
                f'No entries match search "{query}"',
                "Press Backspace to clear the search",
                f"(0/{total}){tag}",
            ]
        else:
            lines = [
                f"{total} entries hidden by the current filter {tag.strip() or '[default]'}",
                "Press Alt+A to show all, Alt+D for default",
                f"(0/{total}){tag}",
            ]
        return [_cut(line, width) for line in lines]
    start, end = _window(selected_index, len(rows), max_visible)
    window = rows[start:end]
    offset = 0
    if width is not None:
        # Gutters deeper than the width allows scroll left, one offset for the whole window.
        levels = max(1, (width - max(24, width // 2) - 4) // 3)
        offset = max(0, max(row.flat.depth for row in window) - levels)
    lines = []
    for index, row in enumerate(window, start):
        leading = "› " if index == selected_index else "  "
        marker = f"{symbols.bullet} " if row.active else ""
        label = f"[{row.label}] " if row.label else ""
        line = (
            leading + _omp_prefix(row, offset, symbols) + (marker + label + row.content).replace("\t", _TAB)
        )
        lines.append(_cut(line, width))
    if tag:
        lines.append(_cut(tag.strip(), width))
    return lines


def _omp_prefix(row: Row, offset: int, symbols: TreeSymbols) -> str:
    depth = row.flat.depth
    scroll = min(offset, depth)
    shown = depth - scroll
    if shown <= 0:
        return ""
    # Rows of a chain share their gutters (and deep rows have many): drawn once per kind.
    memo = row.flat.drawing_memo()
    key = ("omp", depth, scroll, row.connector, symbols)
    if memo is not None and (known := memo.get(key)) is not None:
        return known
    prefix = _omp_cells(row, scroll, shown, symbols)
    if memo is not None:
        memo[key] = prefix
    return prefix


def _omp_cells(row: Row, scroll: int, shown: int, symbols: TreeSymbols) -> str:
    gutters = row.flat.depth_gutter_levels(scroll)
    connector = row.connector
    cells = []
    for level in range(shown):
        show = gutters.get(level + scroll)
        if show is not None:
            cells.append(f"{symbols.vertical if show else ' '}  ")
        elif connector and level == shown - 1:
            chars = list(symbols.last if connector == "last" else symbols.branch)
            cells.append(
                (chars[0] if chars else " ")
                + (chars[1] if len(chars) > 1 else symbols.horizontal)
                + (chars[2] if len(chars) > 2 else " ")
            )
        else:
            cells.append("   ")
    prefix = "".join(cells)
    return "…" + prefix[1:] if scroll > 0 else prefix


# ---------------------------------------------------------------------------------------------------------
# pi 1.6


class _Shape:
    """A visible row's geometry over the visible tree (pi's ``recalculateVisualStructure``)."""

    __slots__ = ("connector", "foldable", "gutters", "indent", "is_last")

    def __init__(
        self, indent: int, connector: bool, is_last: bool, gutters: tuple[tuple[int, bool], ...]
    ) -> None:
        self.indent = indent
        self.connector = connector
        self.is_last = is_last
        self.gutters = gutters
        self.foldable = False


def _pi_shapes(rows: Sequence[Row], tree: FlatTree | None) -> tuple[list[_Shape], bool]:
    """Each row's shape, and whether the visible tree has several roots."""
    visible = {row.id for row in rows}
    by_id: Mapping[Any, Any] = tree.by_id if tree is not None else {row.id: row.flat for row in rows}
    memo: dict[Any, Any] = {}

    def visible_parent(entry_id: Any) -> Any:
        # The nearest visible ancestor, walking parentId through hidden entries (each walked once).
        node = by_id.get(entry_id)
        current = node.entry.get("parentId") if node is not None else None
        walked: list[Any] = []
        seen: set[Any] = set()
        found = None
        while current is not None and current not in seen:
            if current in visible:
                found = current
                break
            if current in memo:
                found = memo[current]
                break
            seen.add(current)
            walked.append(current)
            parent = by_id.get(current)
            current = parent.entry.get("parentId") if parent is not None else None
        for hidden in walked:
            memo[hidden] = found
        return found

    parent_of: dict[Any, Any] = {}
    children: dict[Any, list[Any]] = {None: []}
    for row in rows:
        parent = visible_parent(row.id)
        if parent == row.id:
            parent = None
        parent_of[row.id] = parent
        children.setdefault(parent, []).append(row.id)
    roots = children[None]
    several_roots = len(roots) > 1
    # pi keeps the full-tree geometry for a row it does not reach again (a repeated id).
    computed: dict[Any, _Shape] = {}
    stack: list[tuple[Any, int, bool, bool, bool, tuple[tuple[int, bool], ...], bool]] = [
        (
            roots[i],
            1 if several_roots else 0,
            several_roots,
            several_roots,
            i == len(roots) - 1,
            (),
            several_roots,
        )
        for i in range(len(roots) - 1, -1, -1)
    ]
    done: set[Any] = set()
    while stack:
        entry_id, indent, just_branched, show_connector, is_last, gutters, root_child = stack.pop()
        if entry_id in done:
            continue
        done.add(entry_id)
        computed[entry_id] = _Shape(indent, show_connector and not root_child, is_last, gutters)
        kids = children.get(entry_id, [])
        several = len(kids) > 1
        child_indent = indent + 1 if several or (just_branched and indent > 0) else indent
        child_gutters = gutters
        if show_connector and not root_child:
            display = max(0, indent - 1) if several_roots else indent
            child_gutters = (*gutters, (max(0, display - 1), not is_last))
        for i in range(len(kids) - 1, -1, -1):
            stack.append((kids[i], child_indent, several, several, i == len(kids) - 1, child_gutters, False))
    shapes = []
    for row in rows:
        shape = computed.get(row.id)
        if shape is None:
            flat = row.flat
            shape = _Shape(
                flat.indent,
                flat.connector_displayed,
                flat.is_last,
                tuple((g.position, g.show) for g in flat.gutters),
            )
        below = children.get(row.id)
        if below:
            parent = parent_of.get(row.id)
            shape.foldable = parent is None or len(children.get(parent) or ()) > 1
        shapes.append(shape)
    return shapes, several_roots


def _pi_prefix(shape: _Shape, several_roots: bool, memo: dict[Any, str]) -> str:
    display = max(0, shape.indent - 1) if several_roots else shape.indent
    position = display - 1 if shape.connector else -1
    # Siblings and chains share one gutters tuple: each kind of prefix is drawn once.
    key = (id(shape.gutters), display, position, shape.is_last, shape.foldable)
    known = memo.get(key)
    if known is not None:
        return known
    by_level: dict[int, bool] = {}
    for at, show in shape.gutters:
        by_level.setdefault(at, show)  # the root-most gutter of a level wins (JavaScript's find)
    cells = []
    for level in range(display):
        gutter = by_level.get(level)
        if gutter is not None:
            cells.append("│  " if gutter else "   ")
        elif level == position:
            cells.append(("└" if shape.is_last else "├") + ("⊟" if shape.foldable else "─") + " ")
        else:
            cells.append("   ")
    memo[key] = prefix = "".join(cells)
    return prefix


def _columns(text: str) -> list[tuple[str, int]]:
    from treeview.session.selector import char_width

    return [(ch, char_width(ch)) for ch in text]


def _slice_columns(text: str, start: int, length: int) -> str:
    """The characters of ``text`` within columns ``[start, start + length)`` (a wide character cut by either
    edge is left out)."""
    from treeview.session.selector import is_narrow

    if is_narrow(text):
        return text[start : start + length]
    out = []
    column = 0
    for ch, width in _columns(text):
        if column >= start and column + width <= start + length:
            out.append(ch)
        column += width
        if column >= start + length:
            break
    return "".join(out)


def _width(text: str) -> int:
    from treeview.session.selector import text_width

    return text_width(text)


def pi_lines(
    rows: Sequence[Row],
    selected_index: int | None,
    mode: FilterMode,
    width: int | None,
    max_visible: int | None,
    *,
    tree: FlatTree | None,
    label_times: Mapping[str, str] | None = None,
    show_label_times: bool = False,
    now: Any = None,
) -> list[str]:
    """pi 1.6's list: the window of rows, then ``  (i/N)`` and the tags; ``  No entries found`` when empty.

    ``tree``: the flattened tree the rows come from (hidden entries are walked through to a row's visible
    parent); ``label_times``: entry id -> when its label was set, drawn when ``show_label_times`` (Shift+T).
    """
    tags = _tag(mode) + (" [+label time]" if show_label_times else "")
    if not rows:
        return [_cut("  No entries found", width, "..."), _cut(f"  (0/0){tags}", width, "...")]
    shapes, several_roots = _pi_shapes(rows, tree)
    selected = selected_index if selected_index is not None else 0
    start, end = _window(selected, len(rows), max_visible)
    drawn = []
    memo: dict[Any, str] = {}
    for index in range(start, end):
        row = rows[index]
        marker = "• " if row.active else ""
        before = _pi_prefix(shapes[index], several_roots, memo) + marker
        label = f"[{row.label}] " if row.label else ""
        stamp = ""
        if show_label_times and row.label and label_times and label_times.get(row.id):
            stamp = f"{format_label_time(label_times[row.id], now)} "
        body = before + label + stamp + row.content
        drawn.append(("› " if index == selected else "  ", body, _width(before), index == selected))
    lines = []
    if width is None:
        lines = [cursor + body for cursor, body, _, _ in drawn]
    else:
        viewport = max(0, width - 2)
        widest = max(_width(body) for _, body, _, _ in drawn)
        most = max(0, widest - viewport)
        scroll = 0
        anchor = next((a for _, _, a, chosen in drawn if chosen), None)
        if anchor is not None and most > 0 and anchor > viewport - min(20, max(4, viewport // 3)):
            scroll = min(most, anchor - min(12, max(2, viewport // 4)))
        for cursor, body, _, _ in drawn:
            shown = _slice_columns(body, scroll, viewport) if scroll > 0 else body
            lines.append(_cut(cursor + shown, width, ""))
    lines.append(_cut(f"  ({selected + 1}/{len(rows)}){tags}", width, "..."))
    return lines
