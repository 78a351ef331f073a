"""Tree selector (spec §17): flatten the session tree, filter and search it, and draw its rows.

This mirrors the ``/tree`` selector of oh-my-pi v15 (``modes/components/tree-selector.ts``) so that
Arbor shows the same rows, in the same order, with the same text, as the original. The one deliberate
difference: entry types that v15 draws as an *empty* row (``mode_change``, ``ttsr_injection``,
``service_tier_change``, ``session_init`` and every type v15 does not know) get the text v18 gives
them (``[mode: plan]``, ``[service tier: …]``, ``[ttsr injection]`` …). Search terms stay v15's.

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

import math
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol, cast, get_args

from treeview.session.jsonl import dumps as _json_stringify
from treeview.session.jsonl import format_number as _number_string

__all__ = [
    "ASCII_SYMBOLS",
    "FILTER_MODES",
    "UNICODE_SYMBOLS",
    "FilterMode",
    "FlatNode",
    "FlatTree",
    "Gutter",
    "Row",
    "TreeNodeLike",
    "TreeSelector",
    "TreeSymbols",
    "display_text",
    "filter_nodes",
    "filter_tag",
    "flatten_tree",
    "follow_selection",
    "footer",
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
# Bookkeeping entries the default and no-tools views hide (v15's list; v18 hides more).
_SETTINGS_TYPES: Final = frozenset({"label", "custom", "model_change", "thinking_level_change"})
_MAX_EXTRACT: Final = 200  # message text is cut to 200 UTF-16 units before display and search
_NO_ENTRIES: Final = "  No entries found"


class TreeNodeLike(Protocol):
    """The node shape of ``SessionManager.get_tree()``: an entry, its children (oldest first), a label."""

    @property
    def entry(self) -> Mapping[str, Any]: ...

    @property
    def children(self) -> Sequence[TreeNodeLike]: ...

    @property
    def label(self) -> str | None: ...


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
        return _prefix(self.display_indent, self.flat._gutters, self.connector, symbols)


# --------------------------------------------------------------------------------------------------
# JavaScript value semantics (the row text is built with template literals, ``||``, ``??`` and
# UTF-16 string lengths; reproducing them keeps odd entries rendering exactly like the original).

_MISSING: Final = object()  # an absent key, i.e. JavaScript ``undefined``
_JS_WS: Final = (  # what JavaScript's trim() and \\s treat as white space
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_WS_RUN: Final = re.compile(f"[{_JS_WS}]+")
_NEWLINE_TAB: Final = re.compile("[\n\t]")


def _nullish(value: Any) -> bool:
    return value is None or value is _MISSING


def _truthy(value: Any) -> bool:
    if _nullish(value) or value is False:
        return False
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def _js_str(value: Any) -> str:
    """``String(value)`` / template-literal conversion."""
    if value is _MISSING:
        return "undefined"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isnan(value):
            return "NaN"
        if isinstance(value, float) and math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return _number_string(value)
    if isinstance(value, list):
        return _js_join(value, ",")
    return "[object Object]"


def _js_join(values: Sequence[Any], sep: str) -> str:
    """``Array.prototype.join``: null and undefined become empty strings."""
    return sep.join("" if _nullish(v) else _js_str(v) for v in values)


def _js_number(value: Any) -> float:
    """``Number(value)`` for the values that reach arithmetic here."""
    if value is None or value is False:
        return 0.0
    if value is True:
        return 1.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip(_JS_WS)
        if not text:
            return 0.0
        try:
            return float(text)
        except ValueError:
            return math.nan
    return math.nan


def _js_trim(text: str) -> str:
    return text.strip(_JS_WS)


def _utf16_len(text: str) -> int:
    return len(text) if text.isascii() else len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


def _utf16_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 units. A surrogate pair cut in half is dropped entirely
    (JavaScript would keep a lone surrogate, which cannot be encoded as UTF-8)."""
    if text.isascii() or len(text) * 2 <= end:
        return text[:end]
    units = 0
    for index, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > end:
            return text[:index]
    return text


def _normalize(text: str) -> str:
    return _js_trim(_NEWLINE_TAB.sub(" ", text))


def _shorten_path(path: str, home: str | None) -> str:
    return f"~{path[len(home) :]}" if home and path.startswith(home) else path


# --------------------------------------------------------------------------------------------------
# Flattening


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
                tool_calls[call_id] = (block.get("name", _MISSING), block.get("arguments", _MISSING))


def _active_path(by_id: Mapping[Any, FlatNode], leaf_id: str | None) -> set[str]:
    active: set[str] = set()
    current: Any = leaf_id
    # v15 walks until a falsy id; it loops forever on a parent cycle, so stop at a repeated id.
    while _truthy(current) and current not in active:
        active.add(current)
        flat = by_id.get(current)
        if flat is None:
            break
        current = flat.entry.get("parentId")
    return active


# --------------------------------------------------------------------------------------------------
# Row text


def _extract_content(content: Any) -> str:
    """The first 200 UTF-16 units of a message's text (a string, or the text blocks concatenated)."""
    if isinstance(content, str):
        return _utf16_slice(content, _MAX_EXTRACT)
    if isinstance(content, list):
        result = ""
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                result += _js_str(block.get("text", _MISSING))
                if _utf16_len(result) >= _MAX_EXTRACT:
                    return _utf16_slice(result, _MAX_EXTRACT)
        return result
    return ""


def _has_text_content(content: Any) -> bool:
    if isinstance(content, str):
        return _js_trim(content) != ""
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str) and _js_trim(text):
                    return True
    return False


def _format_tool_call(name: Any, args: Any, home: str | None) -> str:
    """The label of a tool result, built from its tool call (v15's ``formatToolCall``)."""
    fields = args if isinstance(args, dict) else {}

    def pick(*keys: str, default: str) -> str:
        for key in keys:
            value = fields.get(key, _MISSING)
            if _truthy(value):
                return _js_str(value)
        return default

    if name in ("read", "write", "edit"):
        path = _shorten_path(pick("path", "file_path", default=""), home)
        if name != "read":
            return f"[{name}: {path}]"
        offset = fields.get("offset", _MISSING)
        limit = fields.get("limit", _MISSING)
        if offset is not _MISSING or limit is not _MISSING:
            start: Any = 1 if _nullish(offset) else offset
            end: Any = ""
            if limit is not _MISSING:
                if isinstance(start, str) or isinstance(limit, str):
                    end = _js_number(_js_str(start) + _js_str(limit)) - 1  # JS: string "+" concatenates
                else:
                    end = _js_number(start) + _js_number(limit) - 1
                if isinstance(end, float) and end.is_integer() and abs(end) < 2**53:
                    end = int(end)
            path += f":{_js_str(start)}" + (f"-{_js_str(end)}" if _truthy(end) else "")
        return f"[read: {path}]"
    if name == "bash":
        raw = pick("command", default="")
        command = _utf16_slice(_normalize(raw), 50)
        return f"[bash: {command}{'...' if _utf16_len(raw) > 50 else ''}]"
    if name == "search":
        pattern = pick("pattern", default="")
        paths = fields.get("paths")
        scope = _js_join(paths, ", ") if isinstance(paths, list) else pick("path", default=".")
        return f"[search: /{pattern}/ in {_shorten_path(scope, home)}]"
    if name == "find":
        paths = fields.get("paths")
        scope = _js_join(paths, ", ") if isinstance(paths, list) else pick("pattern", default=".")
        return f"[find: {_shorten_path(scope, home)}]"
    if name == "ls":
        return f"[ls: {_shorten_path(pick('path', default='.'), home)}]"
    encoded = _json_stringify({} if args is _MISSING else args)
    return f"[{_js_str(name)}: {_utf16_slice(encoded, 40)}{'...' if _utf16_len(encoded) > 40 else ''}]"


def _service_tier_text(tier: Any) -> str:
    # v18 prints a per-family map as "family:tier" pairs and null as "(default)". v15 files store a
    # plain string, which v18 would spell out character by character; print the string instead.
    if not _truthy(tier):
        return "(default)"
    if isinstance(tier, dict):
        return " ".join(f"{_js_str(family)}:{_js_str(value)}" for family, value in tier.items())
    return _js_str(tier)


def display_text(
    entry: Mapping[str, Any], tool_calls: Mapping[str, tuple[Any, Any]] | None = None, home: str | None = None
) -> str:
    """The content text of an entry's row (without label), as v15 draws it (spec §17.4).

    ``tool_calls`` labels tool results (``FlatTree.tool_calls``); ``home`` is shortened to ``~`` in
    tool paths, like the original does with the user's home directory (``None``: no shortening).
    Types v15 leaves blank get v18's text.
    """
    kind = entry.get("type", _MISSING)
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        role = msg.get("role", _MISSING)
        if role in ("user", "developer"):
            return f"{role}: {_normalize(_extract_content(msg.get('content')))}"
        if role == "assistant":
            text = _normalize(_extract_content(msg.get("content")))
            if text:
                return f"assistant: {text}"
            if msg.get("stopReason") == "aborted":
                return "assistant: (aborted)"
            error = msg.get("errorMessage", _MISSING)
            if _truthy(error):
                return f"assistant: {_utf16_slice(_normalize(_js_str(error)), 80)}"
            return "assistant: (no content)"
        if role == "toolResult":
            call_id = msg.get("toolCallId")
            call = tool_calls.get(call_id) if tool_calls and isinstance(call_id, str) and call_id else None
            if call is not None:
                return _format_tool_call(call[0], call[1], home)
            tool_name = msg.get("toolName", _MISSING)
            return f"[{'tool' if _nullish(tool_name) else _js_str(tool_name)}]"
        if role == "bashExecution":
            command = msg.get("command", _MISSING)
            return f"[bash]: {_normalize('' if _nullish(command) else _js_str(command))}"
        return f"[{_js_str(role)}]"
    if kind == "custom_message":
        content = entry.get("content")
        if isinstance(content, list):
            content = _js_join(
                [b.get("text", _MISSING) for b in content if isinstance(b, dict) and b.get("type") == "text"],
                "",
            )
        text = content if isinstance(content, str) else ""
        return f"[{_js_str(entry.get('customType', _MISSING))}]: {_normalize(text)}"
    if kind == "compaction":
        tokens = _js_number(entry.get("tokensBefore", _MISSING)) / 1000
        rounded = float(math.floor(tokens + 0.5)) if math.isfinite(tokens) else tokens  # JS Math.round
        return f"[compaction: {_js_str(rounded)}k tokens]"
    if kind == "branch_summary":
        summary = entry.get("summary")
        return f"[branch summary]: {_normalize(summary if isinstance(summary, str) else '')}"
    if kind == "model_change":
        return f"[model: {_js_str(entry.get('model', _MISSING))}]"
    if kind == "thinking_level_change":
        level = entry.get("thinkingLevel", _MISSING)
        return f"[thinking: {'off' if _nullish(level) else _js_str(level)}]"
    if kind == "custom":
        return f"[custom: {_js_str(entry.get('customType', _MISSING))}]"
    if kind == "label":
        label = entry.get("label", _MISSING)
        return f"[label: {'(cleared)' if _nullish(label) else _js_str(label)}]"
    # From here v15 draws an empty row; Arbor uses v18's text (see the module docstring).
    if kind == "service_tier_change":
        return f"[service tier: {_service_tier_text(entry.get('serviceTier'))}]"
    if kind == "mode_change":
        return f"[mode: {_js_str(entry.get('mode', _MISSING))}]"
    if kind == "title_change":
        title = entry.get("title", _MISSING)
        return f"[title: {_normalize(_js_str(title))}]"
    if kind == "credential_pin":
        return f"[credential pin: {_js_str(entry.get('provider', _MISSING))}]"
    return f"[{_js_str(kind).replace('_', ' ')}]"


def searchable_text(node: TreeNodeLike) -> str:
    """The text a search query is matched against (not lowercased; spec §17.6, v15 terms)."""
    entry = node.entry
    parts: list[Any] = []
    if node.label:
        parts.append(node.label)
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        msg: Mapping[str, Any] = message if isinstance(message, dict) else {}
        parts.append(msg.get("role"))
        content = msg.get("content")
        if _truthy(content):
            parts.append(_extract_content(content))
        if msg.get("role") == "bashExecution" and _truthy(msg.get("command")):
            parts.append(msg["command"])
    elif kind == "custom_message":
        content = entry.get("content")
        parts += [entry.get("customType"), content if isinstance(content, str) else _extract_content(content)]
    elif kind == "compaction":
        parts.append("compaction")
    elif kind == "branch_summary":
        parts += ["branch summary", entry.get("summary")]
    elif kind == "model_change":
        parts += ["model", entry.get("model")]
    elif kind == "thinking_level_change":
        level = entry.get("thinkingLevel")
        parts += ["thinking", "off" if level is None else level]
    elif kind == "custom":
        parts += ["custom", entry.get("customType")]
    elif kind == "label":
        label = entry.get("label")
        parts += ["label", "" if label is None else label]
    return _js_join(parts, " ")


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
    return [token for token in _JS_WS_RUN.split(query.lower()) if token]


def _passes(flat: FlatNode, leaf_id: str | None, mode: FilterMode) -> bool:
    entry = flat.entry
    kind = entry.get("type")
    message = entry.get("message") if kind == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    if role == "assistant" and entry.get("id") != leaf_id:
        # Tool-call-only assistant turns are noise, but errors and aborts stay (in every mode).
        assert isinstance(message, dict)
        stop = message.get("stopReason")
        error_or_aborted = _truthy(stop) and stop not in ("stop", "toolUse")
        if not error_or_aborted and not _has_text_content(message.get("content")):
            return False
    if mode == "user-only":
        return role == "user"
    if mode == "labeled-only":
        return flat.node.label is not None
    if mode == "all":
        return True
    if kind in _SETTINGS_TYPES:
        return False
    return not (mode == "no-tools" and role == "toolResult")


def filter_nodes(flat: FlatTree, mode: FilterMode = "default", query: str = "") -> list[FlatNode]:
    """The flat nodes visible under a filter mode and search query, in tree order (spec §17.5-6).

    The query is lowercased and split on whitespace; every token must be a substring of the
    lowercased :func:`searchable_text`.
    """
    mode = _check_mode(mode)
    tokens = _search_tokens(query)
    visible: list[FlatNode] = []
    for node in flat.nodes:
        if not _passes(node, flat.leaf_id, mode):
            continue
        if tokens:
            haystack = searchable_text(node.node).lower()
            if not all(token in haystack for token in tokens):
                continue
        visible.append(node)
    return visible


def make_row(flat: FlatNode, tree: FlatTree, home: str | None = None) -> Row:
    """The :class:`Row` of one flat node (build only a window of rows from :func:`filter_nodes`)."""
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
        content=display_text(entry, tree.tool_calls, home),
        label=label if label else None,
        indent=flat.indent,
        display_indent=flat.display_indent,
        active=entry_id in tree.active_ids,
        is_leaf=tree.leaf_id is not None and entry_id == tree.leaf_id,
        connector=connector,
        flat=flat,
    )


def visible_rows(
    flat: FlatTree, mode: FilterMode = "default", query: str = "", home: str | None = None
) -> list[Row]:
    """The rows the selector shows for a filter mode and search query, in display order."""
    return [make_row(node, flat, home) for node in filter_nodes(flat, mode, query)]


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
    gutters: _GutterLink | None,
    connector: Literal["branch", "last"] | None,
    symbols: TreeSymbols,
) -> str:
    if display_indent <= 0:
        return ""
    by_level: dict[int, bool] = {}
    link = gutters
    while link is not None:
        # The original takes the first (root-most) gutter at a level: walking rootwards, the last write.
        by_level[link.gutter.position] = link.gutter.show
        link = link.parent
    connector_level = display_indent - 1 if connector else -1
    glyph = ""
    if connector:
        chars = list(symbols.last if connector == "last" else symbols.branch)
        glyph = (
            (chars[0] if chars else " ")
            + (chars[1] if len(chars) > 1 else symbols.horizontal)
            + (chars[2] if len(chars) > 2 else " ")
        )
    parts: list[str] = []
    for level in range(display_indent):
        show = by_level.get(level)
        if show is not None:
            parts.append((symbols.vertical if show else " ") + "  ")
        elif level == connector_level:
            parts.append(glyph)
        else:
            parts.append("   ")
    return "".join(parts)


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def truncate_to_width(text: str, width: int) -> str:
    """Cut ``text`` to ``width`` terminal columns with a trailing ``…`` (an approximation of the
    original's native ``truncateToWidth``: east-asian wide characters count 2, combining marks 0)."""
    total = 0
    for ch in text:
        total += _char_width(ch)
    if total <= width:
        return text
    if width <= 1:
        return "…"[:width]
    out: list[str] = []
    used = 0
    for ch in text:
        w = _char_width(ch)
        if used + w > width - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


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
) -> list[str]:
    """The list body as text: the visible window of rows, then the footer, or ``  No entries found``."""
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
    ) -> None:
        self.flat = flatten_tree(roots, leaf_id)
        self.home = home
        self.mode = _check_mode(mode)
        self.query = query
        self.rows = visible_rows(self.flat, self.mode, self.query, home)
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
        self.rows = visible_rows(self.flat, self.mode, self.query, self.home)
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

    def footer(self) -> str:
        """The footer line for the current state."""
        return footer(self.selected_index, len(self.rows), self.mode)

    def render(self, width: int | None = None, max_visible: int | None = None) -> list[str]:
        """The list body as text (rows of the visible window, then the footer)."""
        return render_lines(self.rows, self.selected_index, self.mode, width, max_visible)
