"""The session tree flattened for the tree selector (spec §17.3), as v15 ``tree-selector.ts`` does it.

:func:`flatten_tree` turns ``SessionManager.get_tree()`` into display order: depth-first, the branch
holding the leaf first, with the indentation and vertical guides (gutters) each row is drawn with. It is
iterative and linear in the number of entries: sessions can hold 100,000 entries and chains 45,000
deep, so nothing recurses over the tree. :mod:`treeview.session.selector` filters and draws the result.

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from treeview.session import js
from treeview.session.jsonl import UNDEFINED

__all__ = [
    "FlatNode",
    "FlatTree",
    "Gutter",
    "TreeNodeLike",
    "flat_from_columns",
    "flat_only_child",
    "flat_to_columns",
    "flatten_tree",
    "register_tool_calls",
]


class TreeNodeLike(Protocol):
    """The node shape of ``SessionManager.get_tree()``: an entry, its children (oldest first), a label."""

    @property
    def entry(self) -> Mapping[str, Any]: ...

    @property
    def children(self) -> Sequence[TreeNodeLike]: ...

    @property
    def label(self) -> str | None: ...


# Not frozen (a frozen dataclass's __init__ costs twice as much, and a 100,000-entry session makes one per
# entry when a server opens it); hashed by value as before. Nothing changes it once made.
@dataclass(slots=True, unsafe_hash=True)
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
    """A vertical guide under an ancestor's connector: ``position`` is its level, ``show`` draws ``│``;
    ``depth_position`` is its level in oh-my-pi 18's geometry (see :attr:`FlatNode.depth`)."""

    position: int
    show: bool
    depth_position: int = field(default=0, compare=False)


class _GutterLink:
    """Persistent (shared-tail) list of gutters, so flattening stays linear on deep branchy trees."""

    __slots__ = ("gutter", "memo", "parent")

    def __init__(self, gutter: Gutter, parent: _GutterLink | None) -> None:
        self.gutter = gutter
        self.parent = parent
        self.memo: dict[Any, str] | None = None

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
    #: The level oh-my-pi 18 draws the row at: one more below each branch point (and below the roots when
    #: there are several), never the extra step v15 takes for the first generation after a branch.
    depth: int = 0

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

    def drawing_memo(self) -> dict[Any, str] | None:
        """A dict shared by the nodes drawn with the same gutters (to keep what is drawn from them), or
        ``None`` for a node without gutters."""
        link = self._gutters
        if link is None:
            return None
        memo = link.memo
        if memo is None:
            memo = link.memo = {}
        return memo

    def depth_gutter_levels(self, from_level: int = 0) -> dict[int, bool]:
        """:meth:`gutter_levels` in oh-my-pi 18's geometry (``Gutter.depth_position``)."""
        by_level: dict[int, bool] = {}
        link = self._gutters
        while link is not None and link.gutter.depth_position >= from_level:
            by_level[link.gutter.depth_position] = link.gutter.show
            link = link.parent
        return by_level

    def gutter_levels(self, from_level: int = 0) -> dict[int, bool]:
        """Level -> ``show`` of the gutters at ``from_level`` or deeper (where two share a level the root-most
        wins, as in v15).

        Walking rootwards the levels only go down (a gutter is added at a branch point, always deeper than
        the one above it; only level 0 can repeat), so the walk stops at the first level above
        ``from_level``: drawing the last few levels of a row 1,000 deep reads a few gutters, not 1,000.
        """
        by_level: dict[int, bool] = {}
        link = self._gutters
        while link is not None and link.gutter.position >= from_level:
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


def flatten_tree(
    roots: Sequence[TreeNodeLike], leaf_id: str | None, leaf_path: Sequence[TreeNodeLike] | None = None
) -> FlatTree:
    """Flatten ``get_tree()`` roots depth-first, the branch holding the leaf first (spec §17.3).

    Indentation grows only at real branch points (and one extra step for the first generation
    after a branch); single-child chains stay flat. Iterative, linear, and cycle-safe (a node
    object reached twice is skipped).

    ``leaf_path``: the nodes from a root down to the leaf, when the caller knows them and the roots
    are a proper forest (every node below exactly one parent, ids unique); it spares a walk over
    every node to find them, and looking up each id of the path.
    """
    # Which subtrees hold the leaf: pre-order list, then walked backwards (children before parents). Only
    # the nodes that hold it are kept (a set of object ids): the rest is most of the tree.
    contains_active: set[int] = set()
    if leaf_path is not None:
        contains_active = {id(node) for node in leaf_path}
    elif leaf_id is not None:
        pre_order: list[TreeNodeLike] = []
        seen: set[int] = set()
        pending: list[TreeNodeLike] = list(roots)
        while pending:
            node = pending.pop()
            key = id(node)
            if key in seen:
                continue
            seen.add(key)
            pre_order.append(node)
            pending.extend(node.children)
        for node in reversed(pre_order):
            if node.entry.get("id") == leaf_id:
                contains_active.add(id(node))
                continue
            for child in node.children:
                if id(child) in contains_active:
                    contains_active.add(id(node))
                    break

    def active_first(nodes: Sequence[TreeNodeLike]) -> Sequence[TreeNodeLike]:
        # A stable partition: the leaf's branch first, the rest keep their (timestamp) order.
        if len(nodes) < 2 or not contains_active:
            return nodes
        first = [n for n in nodes if id(n) in contains_active]
        return first + [n for n in nodes if id(n) not in contains_active] if first else nodes

    multiple_roots = len(roots) > 1
    result: list[FlatNode] = []
    by_id: dict[Any, FlatNode] = {}
    tool_calls: dict[str, tuple[Any, Any]] = {}
    # Stack items: node, indent, just_branched, show_connector, is_last, gutters, is_virtual_root_child and
    # depth (oh-my-pi 18's level).
    # Below the roots just_branched and show_connector are the same value (the parent has several children).
    stack: list[tuple[TreeNodeLike, int, bool, bool, bool, _GutterLink | None, bool, int]] = []
    ordered_roots = active_first(roots)
    start_indent = 1 if multiple_roots else 0
    for i in range(len(ordered_roots) - 1, -1, -1):
        is_last = i == len(ordered_roots) - 1
        stack.append(
            (ordered_roots[i], start_indent, multiple_roots, multiple_roots, is_last, None, multiple_roots, 0)
        )

    emitted: set[int] = set()
    append = result.append
    push = stack.append
    while stack:
        node, indent, just_branched, show_connector, is_last, gutters, is_vrc, depth = stack.pop()
        key = id(node)
        if key in emitted:
            continue
        emitted.add(key)
        entry = node.entry
        if entry.get("type") == "message":
            message = entry.get("message")
            # A message without content (a database node's: role and stop reason only) calls no tool.
            if not isinstance(message, dict) or "content" in message:
                register_tool_calls(entry, tool_calls)
        display_indent = max(0, indent - 1) if multiple_roots else indent
        flat = FlatNode(node, indent, display_indent, show_connector, is_last, is_vrc, gutters, depth)
        append(flat)
        # A later duplicate id wins, like the original's map.
        by_id[entry.get("id")] = flat

        children = node.children
        if not children:
            continue
        child_gutters = gutters
        if show_connector and not is_vrc:
            # Descendants keep a guide at the column of this node's connector.
            position = max(0, display_indent - 1)
            child_gutters = _GutterLink(Gutter(position, not is_last, depth - 1), gutters)
        if len(children) == 1:
            # A chain: the indent grows only for the first generation after a branch.
            push(
                (
                    children[0],
                    indent + 1 if just_branched and indent > 0 else indent,
                    False,
                    False,
                    True,
                    child_gutters,
                    False,
                    depth + 1 if is_vrc else depth,
                )
            )
            continue
        # Indent grows at a branch point.
        ordered = active_first(children)
        last = len(ordered) - 1
        for i in range(last, -1, -1):
            push((ordered[i], indent + 1, True, True, i == last, child_gutters, False, depth + 1))

    active_ids = _active_path(by_id, leaf_id, leaf_path)
    return FlatTree(result, leaf_id, multiple_roots, tool_calls, active_ids, by_id)


def flat_only_child(parent: FlatNode, node: TreeNodeLike, multiple_roots: bool) -> FlatNode:
    """The flat node :func:`flatten_tree` makes for ``node`` when it is the only child of ``parent`` (it is
    drawn right below it): lets a caller extend a flattened tree by a new chain without flattening again."""
    # flatten_tree passes the same value as a node's just_branched and show_connector.
    indent = parent.indent + 1 if parent.show_connector and parent.indent > 0 else parent.indent
    gutters = parent._gutters
    if parent.show_connector and not parent.is_virtual_root_child:
        gutter = Gutter(max(0, parent.display_indent - 1), not parent.is_last, parent.depth - 1)
        gutters = _GutterLink(gutter, gutters)
    display_indent = max(0, indent - 1) if multiple_roots else indent
    depth = parent.depth + 1 if parent.is_virtual_root_child else parent.depth
    return FlatNode(node, indent, display_indent, False, True, False, gutters, depth)


def register_tool_calls(entry: Mapping[str, Any], tool_calls: dict[str, tuple[Any, Any]]) -> None:
    """An assistant turn's tool calls into ``tool_calls``: they word tool results."""
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


def _active_path(
    by_id: Mapping[Any, FlatNode], leaf_id: str | None, leaf_path: Sequence[TreeNodeLike] | None = None
) -> set[str]:
    if leaf_path:
        found = _path_ids(by_id, leaf_id, leaf_path)
        if found is not None:
            return found
    active: set[str] = set()
    current: Any = leaf_id
    # The known path, leaf first, stands in for looking each id up while it names the next node on it.
    known = list(reversed(leaf_path)) if leaf_path else []
    step = 0
    # v15 walks until a falsy id; it loops forever on a parent cycle, so stop at a repeated id.
    while (current != "" if type(current) is str else js.truthy(current)) and current not in active:
        active.add(current)
        if step < len(known) and known[step].entry.get("id") == current:
            current = known[step].entry.get("parentId")
            step += 1
            continue
        flat = by_id.get(current)
        if flat is None:
            break
        current = flat.node.entry.get("parentId")
    return active


def _path_ids(
    by_id: Mapping[Any, FlatNode], leaf_id: str | None, leaf_path: Sequence[TreeNodeLike]
) -> set[str] | None:
    """:func:`_active_path` when ``leaf_path`` is a chain of distinct non-empty string ids, each node's
    ``parentId`` the id before it, ending at ``leaf_id``: the walk from the leaf takes exactly its ids and
    goes on above its root. Made with a few passes in C instead of a step per node; ``None`` otherwise."""
    found = [node.entry.get("id") for node in leaf_path]
    if found[-1] != leaf_id or not all(type(i) is str and i for i in found):
        return None
    ids = cast(list[str], found)
    if [node.entry.get("parentId") for node in leaf_path[1:]] != ids[:-1]:
        return None
    active = set(ids)
    if len(active) != len(ids):
        return None
    current: Any = leaf_path[0].entry.get("parentId")
    while (current != "" if type(current) is str else js.truthy(current)) and current not in active:
        active.add(current)
        flat = by_id.get(current)
        if flat is None:
            break
        current = flat.node.entry.get("parentId")
    return active


# -- a flattened tree as plain lists, to keep on disk next to the nodes it flattens -------------------------

_CONNECTOR, _LAST, _VIRTUAL_ROOT_CHILD = 1, 2, 4


def flat_to_columns(flat: FlatTree, index: Mapping[int, int]) -> dict[str, Any] | None:
    """``flat`` as lists of plain values (JSON), each node named by its place in a list the reader will have
    (``index``: ``id(node)`` → that place), so that :func:`flat_from_columns` makes the same tree again
    without flattening. ``None`` when the tree registered tool calls (nodes with message content: not
    kept)."""
    if flat.tool_calls:
        return None
    links: dict[int, int] = {}
    gutters: list[list[Any]] = []

    def link_index(link: _GutterLink | None) -> int:
        if link is None:
            return -1
        found = links.get(id(link))
        if found is not None:
            return found
        chain: list[_GutterLink] = []
        current: _GutterLink | None = link
        while current is not None and id(current) not in links:
            chain.append(current)
            current = current.parent
        for item in reversed(chain):  # the root-most first: a link's parent always comes before it
            gutter = item.gutter
            parent = -1 if item.parent is None else links[id(item.parent)]
            links[id(item)] = len(gutters)
            gutters.append([gutter.position, gutter.show, gutter.depth_position, parent])
        return links[id(link)]

    nodes = flat.nodes
    return {
        "leaf_id": flat.leaf_id,
        "multiple_roots": flat.multiple_roots,
        "nodes": [index[id(node.node)] for node in nodes],
        "indent": [node.indent for node in nodes],
        "display_indent": [node.display_indent for node in nodes],
        "bits": [
            (_CONNECTOR if node.show_connector else 0)
            | (_LAST if node.is_last else 0)
            | (_VIRTUAL_ROOT_CHILD if node.is_virtual_root_child else 0)
            for node in nodes
        ],
        "depth": [node.depth for node in nodes],
        "gutter": [link_index(node._gutters) for node in nodes],
        "gutters": gutters,
        "active_ids": list(flat.active_ids),
    }


def flat_from_columns(data: Mapping[str, Any], nodes: Sequence[TreeNodeLike]) -> FlatTree:
    """The tree :func:`flat_to_columns` kept, over ``nodes`` (the same nodes, in the same order, as when it
    was kept). Raises ``ValueError`` (or ``KeyError``, ``TypeError``) for data of another shape."""
    links: list[_GutterLink] = []
    for position, show, depth_position, parent in data["gutters"]:
        if not -1 <= parent < len(links):
            raise ValueError("a gutter's parent comes after it")
        links.append(
            _GutterLink(Gutter(position, show, depth_position), links[parent] if parent >= 0 else None)
        )
    places: list[int] = data["nodes"]
    gutter: list[int] = data["gutter"]
    if places and (min(places) < 0 or max(places) >= len(nodes)):
        raise ValueError("a node out of range")
    if gutter and (min(gutter) < -1 or max(gutter) >= len(links)):
        raise ValueError("a gutter out of range")
    chains: list[_GutterLink | None] = [*links, None]  # -1 is None
    result = [
        FlatNode(
            nodes[place],
            indent,
            display_indent,
            bool(bits & _CONNECTOR),
            bool(bits & _LAST),
            bool(bits & _VIRTUAL_ROOT_CHILD),
            chains[link],
            depth,
        )
        for place, indent, display_indent, bits, link, depth in zip(
            places, data["indent"], data["display_indent"], data["bits"], gutter, data["depth"], strict=True
        )
    ]
    by_id: dict[Any, FlatNode] = {flat.node.entry.get("id"): flat for flat in result}
    return FlatTree(result, data["leaf_id"], bool(data["multiple_roots"]), {}, set(data["active_ids"]), by_id)
