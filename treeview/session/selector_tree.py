"""The session tree flattened for the tree selector (spec §17.3), as v15 ``tree-selector.ts`` does it.

:func:`flatten_tree` turns ``SessionManager.get_tree()`` into display order: depth-first, the branch
holding the leaf first, with the indentation and vertical guides (gutters) each row is drawn with. It is
iterative and linear in the number of entries: sessions can hold 100,000 entries and chains 45,000
deep, so nothing recurses over the tree. :mod:`treeview.session.selector` filters and draws the result.

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from treeview.session import js
from treeview.session.jsonl import UNDEFINED

__all__ = ["FlatNode", "FlatTree", "Gutter", "TreeNodeLike", "flatten_tree"]


class TreeNodeLike(Protocol):
    """The node shape of ``SessionManager.get_tree()``: an entry, its children (oldest first), a label."""

    @property
    def entry(self) -> Mapping[str, Any]: ...

    @property
    def children(self) -> Sequence[TreeNodeLike]: ...

    @property
    def label(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class RowFacts:
    """What the selector would compute from a full entry, computed beforehand (e.g. stored in a database).

    A node may carry these as a ``facts`` attribute; its ``entry`` then needs only ``type``, ``id``,
    ``parentId``, ``timestamp`` and, for messages, ``message.role`` and ``message.stopReason``.
    """

    #: The row text without label (:func:`~treeview.session.selector_text.display_text`).
    text: str
    #: The lowercased searchable text without label (:func:`~treeview.session.selector_text.searchable_text`).
    search_text: str
    #: For an assistant message: it has non-blank text.
    has_text: bool


def facts_of(node: TreeNodeLike) -> RowFacts | None:
    """The precomputed facts of a node, if it carries them."""
    facts = getattr(node, "facts", None)
    return facts if isinstance(facts, RowFacts) else None


@dataclass(frozen=True, slots=True)
class Gutter:
    """A vertical guide under an ancestor's connector: ``position`` is its level, ``show`` draws ``│``."""

    position: int
    show: bool


class _GutterLink:
    """Persistent (shared-tail) list of gutters, so flattening stays linear on deep branchy trees."""

    __slots__ = ("gutter", "parent")

    def __init__(self, gutter: Gutter, parent: _GutterLink | None) -> None:
        self.gutter = gutter
        self.parent = parent

    def to_tuple(self) -> tuple[Gutter, ...]:
        out: list[Gutter] = []
        link: _GutterLink | None = self
        while link is not None:
            out.append(link.gutter)
            link = link.parent
        out.reverse()
        return tuple(out)


@dataclass(slots=True)
class FlatNode:
    """One node of the flattened tree, in display order, before filtering."""

    node: TreeNodeLike
    indent: int
    display_indent: int
    #: The parent has several children (``├─``/``└─`` would be drawn)...
    show_connector: bool
    is_last: bool
    #: ...but roots under the virtual root (several roots) never draw theirs.
    is_virtual_root_child: bool
    _gutters: _GutterLink | None

    @property
    def entry(self) -> Mapping[str, Any]:
        return self.node.entry

    @property
    def id(self) -> Any:
        return self.node.entry.get("id")

    @property
    def connector_displayed(self) -> bool:
        return self.show_connector and not self.is_virtual_root_child

    @property
    def gutters(self) -> tuple[Gutter, ...]:
        return self._gutters.to_tuple() if self._gutters is not None else ()

    def gutter_levels(self) -> dict[int, bool]:
        """Level -> ``show`` of the gutters (where two share a level the root-most wins, as in v15)."""
        by_level: dict[int, bool] = {}
        link = self._gutters
        while link is not None:
            # Walking rootwards, the last write is the root-most gutter.
            by_level[link.gutter.position] = link.gutter.show
            link = link.parent
        return by_level


@dataclass(slots=True)
class FlatTree:
    """The flattened tree plus what the selector derives from it once (tool calls, active path)."""

    nodes: list[FlatNode]
    leaf_id: str | None
    multiple_roots: bool
    #: Tool-call id -> (tool name, arguments), from every assistant message, later ones winning.
    tool_calls: dict[str, tuple[Any, Any]]
    #: Ids from the leaf up to its root (walking ``parentId``).
    active_ids: set[str]
    #: Entry id -> flat node (a later duplicate id wins, like the original's map).
    by_id: dict[Any, FlatNode]

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[FlatNode]:
        return iter(self.nodes)

    def __getitem__(self, index: int) -> FlatNode:
        return self.nodes[index]


def flatten_tree(roots: Sequence[TreeNodeLike], leaf_id: str | None) -> FlatTree:
    """Flatten ``get_tree()`` roots depth-first, the branch holding the leaf first (spec §17.3).

    Indentation grows only at real branch points (and one extra step for the first generation
    after a branch); single-child chains stay flat. Iterative, linear, and cycle-safe (a node
    object reached twice is skipped).
    """
    # Which subtrees hold the leaf: pre-order list, then walked backwards (children before parents).
    pre_order: list[TreeNodeLike] = []
    seen: set[int] = set()
    pending: list[TreeNodeLike] = list(roots)
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        pre_order.append(node)
        pending.extend(node.children)
    contains_active: dict[int, bool] = {}
    for node in reversed(pre_order):
        has = leaf_id is not None and node.entry.get("id") == leaf_id
        if not has:
            has = any(contains_active.get(id(child), False) for child in node.children)
        contains_active[id(node)] = has

    def active_first(nodes: Sequence[TreeNodeLike]) -> list[TreeNodeLike]:
        # A stable partition: the leaf's branch first, the rest keep their (timestamp) order.
        first = [n for n in nodes if contains_active.get(id(n), False)]
        return first + [n for n in nodes if not contains_active.get(id(n), False)] if first else list(nodes)

    multiple_roots = len(roots) > 1
    result: list[FlatNode] = []
    tool_calls: dict[str, tuple[Any, Any]] = {}
    # Stack items: node, indent, just_branched, show_connector, is_last, gutters, is_virtual_root_child.
    stack: list[tuple[TreeNodeLike, int, bool, bool, bool, _GutterLink | None, bool]] = []
    ordered_roots = active_first(roots)
    start_indent = 1 if multiple_roots else 0
    for i in range(len(ordered_roots) - 1, -1, -1):
        is_last = i == len(ordered_roots) - 1
        stack.append(
            (ordered_roots[i], start_indent, multiple_roots, multiple_roots, is_last, None, multiple_roots)
        )

    emitted: set[int] = set()
    while stack:
        node, indent, just_branched, show_connector, is_last, gutters, is_vrc = stack.pop()
        if id(node) in emitted:
            continue
        emitted.add(id(node))
        _register_tool_calls(node.entry, tool_calls)
        display_indent = max(0, indent - 1) if multiple_roots else indent
        result.append(FlatNode(node, indent, display_indent, show_connector, is_last, is_vrc, gutters))

        children = node.children
        multiple_children = len(children) > 1
        # Indent grows at a branch point, and once more for the first generation after one.
        child_indent = indent + 1 if multiple_children or (just_branched and indent > 0) else indent
        child_gutters = gutters
        if show_connector and not is_vrc:
            # Descendants keep a guide at the column of this node's connector.
            position = max(0, display_indent - 1)
            child_gutters = _GutterLink(Gutter(position, not is_last), gutters)
        ordered = active_first(children)
        for i in range(len(ordered) - 1, -1, -1):
            stack.append(
                (
                    ordered[i],
                    child_indent,
                    multiple_children,
                    multiple_children,
                    i == len(ordered) - 1,
                    child_gutters,
                    False,
                )
            )

    by_id: dict[Any, FlatNode] = {}
    for flat in result:
        by_id[flat.id] = flat
    return FlatTree(result, leaf_id, multiple_roots, tool_calls, _active_path(by_id, leaf_id), by_id)


def _register_tool_calls(entry: Mapping[str, Any], tool_calls: dict[str, tuple[Any, Any]]) -> None:
    if entry.get("type") != "message":
        return
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return
    content = message.get("content")
    if not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, dict) and block.get("type") == "toolCall":
            call_id = block.get("id")
            if isinstance(call_id, str):
                tool_calls[call_id] = (block.get("name", UNDEFINED), block.get("arguments", UNDEFINED))


def _active_path(by_id: Mapping[Any, FlatNode], leaf_id: str | None) -> set[str]:
    active: set[str] = set()
    current: Any = leaf_id
    # v15 walks until a falsy id; it loops forever on a parent cycle, so stop at a repeated id.
    while js.truthy(current) and current not in active:
        active.add(current)
        flat = by_id.get(current)
        if flat is None:
            break
        current = flat.entry.get("parentId")
    return active
