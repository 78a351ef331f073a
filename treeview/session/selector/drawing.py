"""Drawing: prefixes, character widths, truncation, and the text lines of rows and footer."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Final

from treeview.session.agents import Agent
from treeview.session.selector.modes import FilterMode, filter_tag
from treeview.session.selector.rows import UNICODE_SYMBOLS, Row, TreeSymbols
from treeview.session.selector_tree import (
    FlatTree,
)

_NO_ENTRIES: Final = "  No entries found"


@functools.cache
def char_width(ch: str) -> int:
    """The terminal columns of one character (east-asian wide 2, combining marks 0, else 1)."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def _narrow_pattern() -> re.Pattern[str]:
    """A run of characters one column wide each (below U+3000: the tree glyphs, Latin, Greek, Cyrillic …),
    so that most lines are measured and cut with ``len`` and slices instead of a loop over characters."""
    ranges: list[str] = []
    start: int | None = None
    for code in range(0x3001):
        narrow = code < 0x3000 and char_width(chr(code)) == 1
        if narrow and start is None:
            start = code
        elif not narrow and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return re.compile(f"[{''.join(ranges)}]*")


_NARROW: Final = _narrow_pattern()


def is_narrow(text: str) -> bool:
    """Whether every character of ``text`` is one column wide."""
    return text.isascii() or _NARROW.fullmatch(text) is not None


def text_width(text: str) -> int:
    """The terminal columns of ``text`` (:func:`char_width` of each character)."""
    return len(text) if is_narrow(text) else sum(map(char_width, text))


def truncate_to_width(text: str, width: int, ellipsis: str = "…") -> str:
    """Cut ``text`` to ``width`` terminal columns with a trailing ``ellipsis`` (an approximation of the
    original's native ``truncateToWidth``: east-asian wide characters count 2, combining marks 0)."""
    if len(text) * 2 <= width:
        return text  # (no character is wider than 2 columns)
    if is_narrow(text):
        if len(text) <= width:
            return text
        room = width - text_width(ellipsis)
        return ellipsis[:width] if room < 0 else text[:room] + ellipsis
    if text_width(text) <= width:
        return text
    room = width - sum(char_width(ch) for ch in ellipsis)
    if room < 0:
        return ellipsis[:width]
    out: list[str] = []
    used = 0
    for ch in text:
        w = char_width(ch)
        if used + w > room:
            break
        out.append(ch)
        used += w
    return "".join(out) + ellipsis


def render_row(
    row: Row, selected: bool = False, width: int | None = None, symbols: TreeSymbols = UNICODE_SYMBOLS
) -> str:
    """One row as the terminal shows it (no colours): cursor (``› `` or two spaces), the tree
    prefix, ``• `` on the active path, ``[label] ``, then the content."""
    marker = f"{symbols.bullet} " if row.active else ""
    line = ("› " if selected else "  ") + row.prefix(symbols) + marker + row.text
    return truncate_to_width(line, width) if width is not None else line


def footer(selected_index: int | None, count: int, mode: FilterMode = "default") -> str:
    """The position line under the rows: ``  (i/N)`` plus the mode tag (``  (0/0)`` when empty)."""
    position = 0 if count == 0 or selected_index is None else selected_index + 1
    return f"  ({position}/{count}){filter_tag(mode)}"


def window_bounds(selected_index: int | None, count: int, max_visible: int) -> tuple[int, int]:
    """The ``[start, end)`` slice of rows drawn around the selection (the original's scrolling)."""
    selected = selected_index or 0
    start = max(0, min(selected - max_visible // 2, count - max_visible))
    return start, min(start + max_visible, count)


def render_lines(
    rows: Sequence[Row],
    selected_index: int | None,
    mode: FilterMode = "default",
    width: int | None = None,
    max_visible: int | None = None,
    symbols: TreeSymbols = UNICODE_SYMBOLS,
    *,
    agent: Agent = "omp15",
    tree: FlatTree | None = None,
    query: str = "",
    label_times: Mapping[str, str] | None = None,
    show_label_times: bool = False,
) -> list[str]:
    """The list body as the agent draws it: the visible window of rows, then the footer.

    v15 (``omp15``): rows, then ``  (i/N) [tag]``, or ``  No entries found``. oh-my-pi 18 and pi 1.6: see
    :mod:`treeview.session.selector_draw`; they need ``tree`` (the flattened tree the rows come from: omp
    counts its entries when nothing is shown, pi walks hidden entries to a row's visible parent) and
    ``query`` (omp says when a search matched nothing). ``label_times`` / ``show_label_times``: pi's label
    times (Shift+T).
    """
    from treeview.session.selector_draw import omp_lines, pi_lines

    if agent == "omp":
        total = len(tree) if tree is not None else len(rows)
        return omp_lines(rows, selected_index, mode, width, max_visible, symbols, total=total, query=query)
    if agent == "pi":
        return pi_lines(
            rows,
            selected_index,
            mode,
            width,
            max_visible,
            tree=tree,
            label_times=label_times,
            show_label_times=show_label_times,
        )
    if not rows:
        lines = [_NO_ENTRIES, footer(None, 0, mode)]
    else:
        start, end = window_bounds(selected_index, len(rows), max_visible or len(rows))
        lines = [render_row(rows[i], i == selected_index, None, symbols) for i in range(start, end)]
        lines.append(footer(selected_index, len(rows), mode))
    return [truncate_to_width(line, width) for line in lines] if width is not None else lines
