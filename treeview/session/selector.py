"""Tree selector (spec §17): flatten the session tree, filter and search it, and draw its rows.

This mirrors the ``/tree`` selector of oh-my-pi v15 (``modes/components/tree-selector.ts``) so that
Arbor shows the same rows, in the same order, with the same text, as the original. Flattening lives in
:mod:`treeview.session.selector_tree`, the text of each row (and what search matches) in
:mod:`treeview.session.selector_text`; this module filters, selects and draws, and is the one to import
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
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast, get_args

from treeview.session import js
from treeview.session.agents import Agent
from treeview.session.fuzzy import fuzzy_matches
from treeview.session.selector_text import display_text, has_text_content, searchable_text
from treeview.session.selector_text_latest import (
    format_label_time,
    omp_display_text,
    omp_has_text,
    pi_display_text,
)
from treeview.session.selector_tree import (
    FlatNode,
    FlatTree,
    Gutter,
    RowFacts,
    TreeNodeLike,
    facts_of,
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

FilterMode = Literal["default", "no-tools", "user-only", "labeled-only", "all"]
#: Cycle order of Ctrl+O (Shift+Ctrl+O goes backwards).
FILTER_MODES: Final[tuple[FilterMode, ...]] = get_args(FilterMode)

_FILTER_TAGS: Final[Mapping[str, str]] = {
    "default": "",
    "no-tools": " [no-tools]",
    "user-only": " [user]",
    "labeled-only": " [labeled]",
    "all": " [all]",
}
# Bookkeeping entries the default and no-tools views hide, by agent (v15's list; oh-my-pi 18 and pi 1.6 more).
_SETTINGS_TYPES: Final = frozenset({"label", "custom", "model_change", "thinking_level_change"})
_HIDDEN_TYPES: Final[Mapping[str, frozenset[str]]] = {
    "omp15": _SETTINGS_TYPES,
    "omp": _SETTINGS_TYPES
    | {
        "model_usage",
        "service_tier_change",
        "title_change",
        "credential_pin",
        "session_init",
        "ttsr_injection",
        "mode_change",
        "reset_boundary",
    },
    "pi": _SETTINGS_TYPES | {"context_edit", "session_info"},
}
_NO_ENTRIES: Final = "  No entries found"

# JavaScript's /\s+/, which splits a search query into tokens.
_WHITESPACE_RUN: Final = re.compile(f"{js.RE_SPACE}+")


@dataclass(frozen=True, slots=True)
class TreeSymbols:
    """Glyphs of one symbol set (the original's ``theme.tree`` and ``theme.md.bullet``)."""

    branch: str
    last: str
    vertical: str
    horizontal: str
    bullet: str


UNICODE_SYMBOLS: Final = TreeSymbols(branch="├─", last="└─", vertical="│", horizontal="─", bullet="•")
ASCII_SYMBOLS: Final = TreeSymbols(branch="|--", last="'--", vertical="|", horizontal="-", bullet="*")


@dataclass(frozen=True, slots=True)
class Row:
    """A visible row: what to draw, structured so a terminal or HTML renderer can both use it."""

    id: Any
    type: Any
    role: str | None
    #: The entry text (``user: …``, ``[read: x.py]`` …) without the label.
    content: str
    label: str | None
    indent: int
    display_indent: int
    #: On the path from the root to the current leaf (drawn with ``• ``).
    active: bool
    is_leaf: bool
    #: ``"branch"`` (``├─``), ``"last"`` (``└─``) or ``None`` (no connector).
    connector: Literal["branch", "last"] | None
    flat: FlatNode = field(repr=False, compare=False)

    @property
    def text(self) -> str:
        """The row text after the tree prefix and marker: ``[label] `` (if any) plus the content."""
        return f"[{self.label}] {self.content}" if self.label else self.content

    @property
    def gutters(self) -> tuple[Gutter, ...]:
        return self.flat.gutters

    def as_dict(self) -> dict[str, Any]:
        """The row as the ``select`` command prints it: id, text (with label), display indent, active."""
        return {"id": self.id, "text": self.text, "indent": self.display_indent, "active": self.active}

    def prefix(self, symbols: TreeSymbols = UNICODE_SYMBOLS) -> str:
        """The indentation drawn before the marker: gutters, the connector, spaces (3 chars a level)."""
        memo = self.flat.drawing_memo()
        if memo is None:
            return _prefix(self.display_indent, {}, self.connector, symbols)
        # Rows of a chain share their gutters, and deep rows have hundreds of them: drawn once per kind.
        key = (self.display_indent, self.connector, symbols)
        text = memo.get(key)
        if text is None:
            text = memo[key] = _prefix(
                self.display_indent, self.flat.gutter_levels(), self.connector, symbols
            )
        return text

    def folded_prefix(self, levels: int, symbols: TreeSymbols = UNICODE_SYMBOLS) -> tuple[int, str]:
        """The prefix with only its last ``levels`` levels drawn, and how many levels were left out before
        them (``0``: the whole prefix). A row thousands of levels deep costs the same as a shallow one:
        ``levels`` cells, from the gutters of those levels only."""
        if levels < 0:
            raise ValueError("levels must be >= 0")
        folded = max(0, self.display_indent - levels)
        if folded == 0:
            return 0, self.prefix(symbols)
        memo = self.flat.drawing_memo()
        key = ("folded", levels, self.display_indent, self.connector, symbols)
        text = memo.get(key) if memo is not None else None
        if text is None:
            by_level = self.flat.gutter_levels(folded)
            shifted = {level - folded: show for level, show in by_level.items()}
            text = _prefix(levels, shifted, self.connector, symbols)
            if memo is not None:
                memo[key] = text
        return folded, text


# --------------------------------------------------------------------------------------------------
# Filtering and search


def _check_mode(mode: str) -> FilterMode:
    if mode not in _FILTER_TAGS:
        raise ValueError(f"unknown tree filter mode {mode!r} (expected one of {', '.join(FILTER_MODES)})")
    return cast(FilterMode, mode)


def next_filter_mode(mode: FilterMode, backwards: bool = False) -> FilterMode:
    """The next mode of the Ctrl+O cycle (``default → no-tools → user-only → labeled-only → all``)."""
    index = FILTER_MODES.index(_check_mode(mode))
    return FILTER_MODES[(index + (-1 if backwards else 1)) % len(FILTER_MODES)]


def filter_tag(mode: FilterMode) -> str:
    """The footer tag of a mode: ``""``, ``" [no-tools]"``, ``" [user]"``, ``" [labeled]"``, ``" [all]"``."""
    return _FILTER_TAGS[_check_mode(mode)]


def _search_tokens(query: str) -> list[str]:
    return [token for token in _WHITESPACE_RUN.split(query.lower()) if token]


def _passes(flat: FlatNode, leaf_id: str | None, mode: FilterMode, agent: Agent = "omp15") -> bool:
    entry = flat.entry
    kind = entry.get("type")
    if agent == "pi" and kind == "usage":
        return False  # pi never shows its usage records, not even in "all"
    message = entry.get("message") if kind == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    if role == "assistant" and entry.get("id") != leaf_id:
        # Tool-call-only assistant turns are noise, but errors and aborts stay (in every mode).
        assert isinstance(message, dict)
        stop = message.get("stopReason")
        error_or_aborted = js.truthy(stop) and stop not in ("stop", "toolUse")
        facts = facts_of(flat.node)
        if facts is not None:
            has_text = facts.has_text
        elif agent == "omp":
            has_text = omp_has_text(message.get("content"))
        else:
            has_text = has_text_content(message.get("content"))
        if not error_or_aborted and not has_text:
            return False
    if mode == "user-only":
        if agent == "omp" and kind == "custom_message":
            # A user-invoked skill prompt starts a turn like a user message does.
            return entry.get("customType") == "skill-prompt"
        return role == "user"
    if mode == "labeled-only":
        return flat.node.label is not None
    if mode == "all":
        return True
    if kind in _HIDDEN_TYPES[agent]:
        return False
    return not (mode == "no-tools" and role == "toolResult")


def filter_nodes(
    flat: FlatTree, mode: FilterMode = "default", query: str = "", *, agent: Agent = "omp15"
) -> list[FlatNode]:
    """The flat nodes visible under a filter mode and search query, in tree order (spec §17.5-6).

    The filters hide each agent's bookkeeping rows (oh-my-pi 18 hides more than v15; pi never shows
    ``usage``). Search: oh-my-pi 18 matches every whitespace-separated token fuzzily (:mod:`.fuzzy`) against
    its searchable text, which names bookkeeping rows too; pi and v15 need each lowercased token as a
    substring of the lowercased :func:`searchable_text`.
    """
    mode = _check_mode(mode)
    tokens = _search_tokens(query)
    visible: list[FlatNode] = []
    for node in flat.nodes:
        if not _passes(node, flat.leaf_id, mode, agent):
            continue
        if tokens:
            if agent == "omp":
                text = _omp_haystack(node)
                if not all(fuzzy_matches(token, text) for token in tokens):
                    continue
            else:
                haystack = _haystack(node, agent)
                if not all(token in haystack for token in tokens):
                    continue
        visible.append(node)
    return visible


def _haystack(flat: FlatNode, agent: Agent = "omp15") -> str:
    facts = facts_of(flat.node)
    if facts is None:
        return searchable_text(flat.node, agent).lower()
    label = flat.node.label
    return f"{label.lower()} {facts.search_text}" if label else facts.search_text


def _omp_haystack(flat: FlatNode) -> str:
    facts = facts_of(flat.node)
    if facts is None:
        return searchable_text(flat.node, "omp")
    label = flat.node.label
    return f"{label} {facts.search_text}" if label else facts.search_text


_TEXTS: Final = {"omp": omp_display_text, "pi": pi_display_text, "omp15": display_text}


def make_row(flat: FlatNode, tree: FlatTree, home: str | None = None, agent: Agent = "omp15") -> Row:
    """The :class:`Row` of one flat node (build only a window of rows from :func:`filter_nodes`).

    Its text is the agent's (a node carrying precomputed :class:`RowFacts` keeps theirs)."""
    entry = flat.entry
    message = entry.get("message") if entry.get("type") == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    entry_id = entry.get("id")
    connector: Literal["branch", "last"] | None = None
    if flat.connector_displayed:
        connector = "last" if flat.is_last else "branch"
    label = flat.node.label
    return Row(
        id=entry_id,
        type=entry.get("type"),
        role=role if isinstance(role, str) else None,
        content=facts.text
        if (facts := facts_of(flat.node)) is not None
        else _TEXTS[agent](entry, tree.tool_calls, home),
        label=label if label else None,
        indent=flat.indent,
        display_indent=flat.display_indent,
        active=entry_id in tree.active_ids,
        is_leaf=tree.leaf_id is not None and entry_id == tree.leaf_id,
        connector=connector,
        flat=flat,
    )


def visible_rows(
    flat: FlatTree,
    mode: FilterMode = "default",
    query: str = "",
    home: str | None = None,
    *,
    agent: Agent = "omp15",
) -> list[Row]:
    """The rows the selector shows for a filter mode and search query, in display order."""
    return [make_row(node, flat, home, agent) for node in filter_nodes(flat, mode, query, agent=agent)]


# --------------------------------------------------------------------------------------------------
# Selection


def nearest_visible_index(flat: FlatTree, rows: Sequence[Row], entry_id: str | None) -> int | None:
    """Index of ``entry_id`` among ``rows``, else of its nearest visible ancestor, else the last row.

    ``None`` when there are no rows. The parent walk stops at a repeated id (v15 would loop).
    """
    if not rows:
        return None
    index_of = {row.id: i for i, row in enumerate(rows)}
    current: Any = entry_id
    seen: set[Any] = set()
    while current is not None and current not in seen:
        seen.add(current)
        if current in index_of:
            return index_of[current]
        node = flat.by_id.get(current)
        if node is None:
            break
        current = node.entry.get("parentId")
    return len(rows) - 1


def initial_selection(flat: FlatTree, rows: Sequence[Row], selected_id: str | None = None) -> int | None:
    """Where the cursor starts (spec §17.1): ``selected_id`` or the leaf, else its nearest visible
    ancestor, else the last row; ``None`` when nothing is visible."""
    return nearest_visible_index(flat, rows, selected_id if selected_id is not None else flat.leaf_id)


def follow_selection(flat: FlatTree, rows: Sequence[Row], previous_id: str | None) -> int | None:
    """The selection after a filter or search change: the same entry, else its nearest visible
    ancestor, else the last row. With no previous selection (the selector opened on an empty
    list) v15 keeps index 0, i.e. the first row."""
    if not rows:
        return None
    if previous_id is None:
        return 0
    return nearest_visible_index(flat, rows, previous_id)


# --------------------------------------------------------------------------------------------------
# Drawing


def _prefix(
    display_indent: int,
    by_level: Mapping[int, bool],
    connector: Literal["branch", "last"] | None,
    symbols: TreeSymbols,
) -> str:
    if display_indent <= 0:
        return ""
    connector_level = display_indent - 1 if connector else -1
    glyph = ""
    if connector:
        chars = list(symbols.last if connector == "last" else symbols.branch)
        glyph = (
            (chars[0] if chars else " ")
            + (chars[1] if len(chars) > 1 else symbols.horizontal)
            + (chars[2] if len(chars) > 2 else " ")
        )
    # Three spaces a level, then the guides and the connector: a row can sit a thousand levels deep.
    cells = ["   "] * display_indent
    bar = symbols.vertical + "  "
    for level, show in by_level.items():
        if show and 0 <= level < display_indent:
            cells[level] = bar
    if connector and by_level.get(connector_level) is None:
        cells[connector_level] = glyph
    return "".join(cells)


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


class TreeSelector:
    """Interactive selector state with the original's rules (filter, search, selection, moves)."""

    def __init__(
        self,
        roots: Sequence[TreeNodeLike],
        leaf_id: str | None,
        mode: FilterMode = "default",
        query: str = "",
        selected_id: str | None = None,
        home: str | None = None,
        agent: Agent = "omp15",
        label_times: Mapping[str, str] | None = None,
    ) -> None:
        self.flat = flatten_tree(roots, leaf_id)
        self.home = home
        self.agent = agent
        #: Entry id -> when its label was set (``SessionManager.label_times``), for Shift+T.
        self.label_times = label_times
        self.show_label_times = False
        self.mode = _check_mode(mode)
        self.query = query
        self.rows = visible_rows(self.flat, self.mode, self.query, home, agent=agent)
        self.selected_index = initial_selection(self.flat, self.rows, selected_id)
        # Kept while a filter shows nothing, so the cursor comes back to the same entry.
        self._last_selected_id: str | None = self.selected_id

    @property
    def selected_id(self) -> str | None:
        """Id of the selected row (``None`` when nothing is visible)."""
        if self.selected_index is None:
            return None
        return cast("str | None", self.rows[self.selected_index].id)

    def _refilter(self) -> None:
        if self.selected_index is not None:
            self._last_selected_id = self.selected_id
        self.rows = visible_rows(self.flat, self.mode, self.query, self.home, agent=self.agent)
        self.selected_index = follow_selection(self.flat, self.rows, self._last_selected_id)
        if self.selected_index is not None:
            self._last_selected_id = self.selected_id

    def set_mode(self, mode: FilterMode) -> None:
        """Switch the filter mode (Alt+D/T/U/L/A)."""
        self.mode = _check_mode(mode)
        self._refilter()

    def cycle_mode(self, backwards: bool = False) -> None:
        """Ctrl+O / Shift+Ctrl+O."""
        self.set_mode(next_filter_mode(self.mode, backwards))

    def set_query(self, query: str) -> None:
        """Replace the search query."""
        self.query = query
        self._refilter()

    def move(self, delta: int) -> None:
        """Up (-1) / Down (+1), wrapping around."""
        if self.rows and self.selected_index is not None:
            self.selected_index = (self.selected_index + delta) % len(self.rows)

    def page(self, delta: int) -> None:
        """Left / Right: jump ``delta`` rows, clamped to the list."""
        if self.rows and self.selected_index is not None:
            self.selected_index = max(0, min(len(self.rows) - 1, self.selected_index + delta))

    def jump_turn(self, direction: Literal[-1, 1]) -> None:
        """oh-my-pi's Alt+Up (-1) / Alt+Down (+1): the nearest row above / below that is a user or assistant
        message (a turn); the selection stays when there is none (no wrapping)."""
        if self.selected_index is None:
            return
        index = self.selected_index + direction
        while 0 <= index < len(self.rows):
            if self.rows[index].role in ("user", "assistant"):
                self.selected_index = index
                self._last_selected_id = self.selected_id
                return
            index += direction

    def toggle_label_times(self) -> None:
        """pi's Shift+T: show / hide when each label was set (drawn by pi's rules, ``[+label time]``)."""
        self.show_label_times = not self.show_label_times

    def footer(self) -> str:
        """The v15 footer line for the current state (the newest agents' are in :meth:`render`)."""
        return footer(self.selected_index, len(self.rows), self.mode)

    def render(self, width: int | None = None, max_visible: int | None = None) -> list[str]:
        """The list body as the agent draws it (rows of the visible window, then the footer)."""
        return render_lines(
            self.rows,
            self.selected_index,
            self.mode,
            width,
            max_visible,
            agent=self.agent,
            tree=self.flat,
            query=self.query,
            label_times=self.label_times,
            show_label_times=self.show_label_times,
        )
