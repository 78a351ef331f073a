"""Rows: the symbol sets, ``Row`` (one drawn line of the tree), and ``make_row`` with its prefix."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from treeview.session.agents import Agent
from treeview.session.selector_text import display_text
from treeview.session.selector_text_latest import (
    omp_display_text,
    pi_display_text,
)
from treeview.session.selector_tree import (
    FlatNode,
    FlatTree,
    Gutter,
    facts_of,
)


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
