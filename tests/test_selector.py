"""The tree selector (spec §17) against oh-my-pi v15's real selector on every fixture, plus its own rules."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.reference import DATA, IdMap
from treeview.session import selector as sel
from treeview.session.session_manager import SessionManager

# --------------------------------------------------------------------------------------------------
# Reference cases: every reference answer that holds a ``tree_selector``.

# v15 draws these entries as an EMPTY row (its switch has no case for them); Arbor shows v18's text
# (decided in the issue). The reference row is then the v15 row with nothing after the marker.
V18_ROW_TEXT = {
    "a2000003": "[service tier: flex]",  # v15 string tier; v18 itself would print "0:f 1:l 2:e 3:x"
    "a2000004": "[mode: plan]",
    "b2100004": "[ttsr injection]",
    "b2100006": "[mode: none]",
    "b2100011": "[ttsr injection]",
    "f7000003": "[service tier: (default)]",
    "f7000006": "[reset boundary]",
    "f7000007": "[credential pin: anthropic]",
    "f7000008": "[title: Fresh start]",
    "f7000011": "[model usage]",
    "f7000012": "[archive]",
}
V15_TEXT_TYPES = {
    "message",
    "custom_message",
    "compaction",
    "branch_summary",
    "model_change",
    "thinking_level_change",
    "custom",
    "label",
}


def _first_object_per_line(text: str) -> str:
    """The file as v15 reads it: of a line holding several glued JSON objects, only the first is kept."""
    decoder = json.JSONDecoder()
    lines = text.split("\n")
    for index, line in enumerate(lines):
        try:
            _, end = decoder.raw_decode(line)
        except ValueError:
            continue
        if line[end:].strip():
            lines[index] = line[:end]
    return "\n".join(lines)


@dataclass(frozen=True)
class RefCase:
    reference_path: Path
    fixture: Path
    keep_lines: int | None = None  # the "truncated-after-line-N" variants

    def __str__(self) -> str:
        return self.reference_path.name.removesuffix(".omp.json")

    @property
    def reference(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.reference_path.read_text(encoding="utf-8"))
        return data

    def text(self) -> str:
        data = self.fixture.read_bytes()
        if self.keep_lines is not None:
            data = b"".join(line + b"\n" for line in data.split(b"\n")[: self.keep_lines])
        return data.decode("utf-8")


def _ref_cases() -> list[RefCase]:
    cases: list[RefCase] = []
    for path in sorted((DATA / "reference").glob("*.omp.json")):
        if "tree_selector" not in json.loads(path.read_text(encoding="utf-8")):
            continue  # parse-probe, and the title-slot files v15 re-initialised (see .slot-stripped)
        stem = path.name.removesuffix(".omp.json").removesuffix(".slot-stripped")
        stem, _, keep = stem.partition(".truncated-after-line-")
        fixture = next(
            p for p in (DATA / "handmade" / f"{stem}.jsonl", DATA / "real" / f"{stem}.jsonl") if p.exists()
        )
        cases.append(RefCase(path, fixture, int(keep) if keep else None))
    return cases


REF_CASES = _ref_cases()
MODES = list(sel.FILTER_MODES)


def _open_v15_view(case: RefCase) -> tuple[SessionManager, dict[str, Any], IdMap]:
    """The session as v15 saw it (glued extras dropped; Arbor strips a title slot itself), ids mapped."""
    manager = SessionManager.from_text(_first_object_per_line(case.text()), agent="omp15")
    reference = case.reference
    return manager, reference, IdMap(manager, reference)


def test_every_reference_with_a_selector_is_covered() -> None:
    names = {str(case) for case in REF_CASES}
    assert len(REF_CASES) == 11
    assert "v3_branching_labels.truncated-after-line-10" in names
    assert "omp18_title_slot_new_entry_types.slot-stripped" in names


def test_truncated_variant_is_the_exact_input_v15_read() -> None:
    case = next(c for c in REF_CASES if c.keep_lines is not None)
    digest = hashlib.sha256(case.text().encode("utf-8")).hexdigest()
    assert digest == case.reference["input_sha256"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", REF_CASES, ids=str)
def test_selector_matches_v15_ids_selection_rows_and_footer(case: RefCase, mode: str) -> None:
    manager, reference, ids = _open_v15_view(case)
    expected = reference["tree_selector"]["modes"][mode]
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    rows = sel.visible_rows(flat, mode, "")  # type: ignore[arg-type]
    index = sel.initial_selection(flat, rows)

    assert [row.id for row in rows] == ids(expected["ids"])
    assert (None if index is None else rows[index].id) == ids(expected["initial_selected"])
    if "rows" not in expected:
        return  # the big references keep rendered rows (and footer) for the default mode only
    width = reference["tree_selector"]["width"]
    lines = sel.render_lines(rows, index, mode, width=width)  # type: ignore[arg-type]
    assert lines[-1] == expected["footer"]
    want = list(expected["rows"])
    ref_ids = expected["ids"]
    for position, row in enumerate(rows):
        if row.type in V15_TEXT_TYPES:
            continue
        # v15 renders this row empty after the marker; Arbor appends v18's text.
        assert want[position].endswith(("• ", "  ")), want[position]
        want[position] += V18_ROW_TEXT[ref_ids[position]]
    assert lines[:-1] == want


@pytest.mark.parametrize("case", REF_CASES, ids=str)
def test_search_matches_v15(case: RefCase) -> None:
    manager, reference, ids = _open_v15_view(case)
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    searches = reference["tree_selector"]["search"]
    assert searches
    for search in searches:
        rows = sel.visible_rows(flat, search["mode"], search["query"])
        assert [row.id for row in rows] == ids(search["ids"]), search["query"]


def test_big_default_view_matches_v15_and_labels_tool_results_from_their_calls() -> None:
    case = next(c for c in REF_CASES if str(c) == "pi-mono_large-session_v1")
    manager, reference, _ = _open_v15_view(case)
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    lines = sel.render_lines(sel.visible_rows(flat), sel.initial_selection(flat, sel.visible_rows(flat)))
    assert len(lines) == 721
    assert "  • [read: packages/coding-agent/docs/theme.md]" in lines
    assert '  • [bash: grep -n "chalk\\." packages/coding-agent/src/tui/tu...]' in lines
    assert lines[:-1] == reference["tree_selector"]["modes"]["default"]["rows"]


# --------------------------------------------------------------------------------------------------
# handmade/expected.json (hand-derived; line-based parser: a glued line is skipped whole)


def _expected_cases() -> list[str]:
    expected = json.loads((DATA / "handmade" / "expected.json").read_text(encoding="utf-8"))
    return [name for name in expected if not name.startswith("_")]


@pytest.mark.parametrize("name", _expected_cases())
def test_handmade_expected_flatten_order_and_rows(name: str) -> None:
    expected = json.loads((DATA / "handmade" / "expected.json").read_text(encoding="utf-8"))[name]
    decoder = json.JSONDecoder()
    lines = []
    for line in (DATA / "handmade" / name).read_text(encoding="utf-8").split("\n"):
        try:
            _, end = decoder.raw_decode(line)
            if line[end:].strip():
                continue
        except ValueError:
            pass
        lines.append(line)
    manager = SessionManager.from_text("\n".join(lines))
    # v1 files get random ids: expected.json names them "<id of line N>" (line 1 is the header).
    placeholder = {f"<id of line {i + 2}>": e["id"] for i, e in enumerate(manager.entries)}

    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    want_order = [[placeholder.get(i, i), indent] for i, indent in expected["flattenOrder(all rows)"]]
    assert [[node.id, node.indent] for node in flat] == want_order
    for mode, want_rows in expected["treeSelectorRows"].items():
        got = [
            row.prefix()
            + ("• " if row.active else "")
            + (f"[{row.label}] " if row.label else "")
            + f"{row.id} {row.role or row.type}"
            for row in sel.visible_rows(flat, mode, "")
        ]
        want = [_replace_placeholders(row, placeholder) for row in want_rows]
        assert got == want, mode


def _replace_placeholders(text: str, placeholder: dict[str, str]) -> str:
    for key, value in placeholder.items():
        text = text.replace(key, value)
    return text


def test_arbor_shows_the_label_it_recovers_from_a_glued_line() -> None:
    # v15 drops the label entry glued after "bad00001"; Arbor keeps it, so its target gets the label.
    manager = SessionManager.open(DATA / "handmade" / "v3_orphans_sorting_malformed.jsonl")
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    labeled = sel.visible_rows(flat, "labeled-only")
    assert [(row.id, row.text) for row in labeled] == [("r0000001", "[lost] user: root question")]
    everything = [row.id for row in sel.visible_rows(flat, "all")]
    assert everything.index("bad00002") == everything.index("bad00001") + 1


# --------------------------------------------------------------------------------------------------
# A stand-in tree built from dicts (same shape as SessionManager.get_tree()).


@dataclass
class Node:
    entry: dict[str, Any]
    children: list[Node] = field(default_factory=list)
    label: str | None = None


_CLOCK = [0]


def _entry(entry_id: str, parent: str | None, kind: str = "message", **fields: Any) -> dict[str, Any]:
    _CLOCK[0] += 1
    stamp = f"2026-05-01T10:{_CLOCK[0] // 60 % 60:02d}:{_CLOCK[0] % 60:02d}.000Z"
    return {"type": kind, "id": entry_id, "parentId": parent, "timestamp": stamp, **fields}


def _msg(
    entry_id: str, parent: str | None, role: str, text: str | None = None, **extra: Any
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, **extra}
    if text is not None:
        message["content"] = [{"type": "text", "text": text}]
    message.setdefault("content", [])
    return _entry(entry_id, parent, message=message)


def _tree(entries: list[dict[str, Any]], labels: dict[str, str] | None = None) -> list[Node]:
    """get_tree() for test entries already in timestamp order."""
    nodes = {e["id"]: Node(e, [], (labels or {}).get(e["id"])) for e in entries}
    roots: list[Node] = []
    for node in nodes.values():
        parent = nodes.get(node.entry["parentId"])
        (parent.children if parent is not None else roots).append(node)
    return roots


def _branchy() -> tuple[list[Node], str]:
    """u1 → a1 → {u2 → a2 (leaf), u3 → a3}, plus settings and a tool-only assistant."""
    entries = [
        _entry("m1", None, "model_change", model="anthropic/claude"),
        _msg("u1", "m1", "user", "first question"),
        _msg("a1", "u1", "assistant", "first answer", stopReason="stop"),
        _msg("u3", "a1", "user", "older branch"),
        _msg(
            "t3", "u3", "assistant", content=[{"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}}]
        ),
        _msg("r3", "t3", "toolResult", "listing", toolCallId="c1", toolName="ls"),
        _msg("a3", "r3", "assistant", "older answer", stopReason="stop"),
        _msg("u2", "a1", "user", "newer branch"),
        _msg("a2", "u2", "assistant", "newer answer", stopReason="stop"),
    ]
    return _tree(entries, {"u3": "keep"}), "a2"


def test_active_branch_comes_first_with_connectors_and_gutters() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "all")
    lines = sel.render_lines(rows, sel.initial_selection(flat, rows), "all")
    assert lines == [
        "  • [model: anthropic/claude]",
        "  • user: first question",
        "  • assistant: first answer",
        "  ├─ • user: newer branch",
        "› │     • assistant: newer answer",
        "  └─ [keep] user: older branch",
        "        [ls: .]",
        "        assistant: older answer",
        "  (5/8) [all]",
    ]
    assert [(r.id, r.indent, r.connector, r.gutters) for r in rows[3:6]] == [
        ("u2", 1, "branch", ()),
        ("a2", 2, None, (sel.Gutter(0, True),)),
        ("u3", 1, "last", ()),
    ]
    assert rows[4].is_leaf and rows[4].active and not rows[5].active
    assert rows[5].text == "[keep] user: older branch" and rows[5].content == "user: older branch"
    assert rows[5].as_dict() == {
        "id": "u3",
        "text": "[keep] user: older branch",
        "indent": 1,
        "active": False,
    }
    assert sel.make_row(flat[5], flat) == rows[5]


def test_ascii_symbols() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "default")
    lines = [sel.render_row(row, symbols=sel.ASCII_SYMBOLS) for row in rows]
    # Array.from("|--") has three characters, so the ASCII connector has no space after it.
    assert lines[2:5] == [
        "  |--* user: newer branch",
        "  |     * assistant: newer answer",
        "  '--[keep] user: older branch",
    ]


def test_several_roots_hang_from_a_virtual_root_without_connectors() -> None:
    roots = _tree(
        [_msg("x", None, "user", "one"), _msg("y", None, "user", "two"), _msg("y2", "y", "user", "three")]
    )
    flat = sel.flatten_tree(roots, "y2")
    assert flat.multiple_roots
    rows = sel.visible_rows(flat)
    # The root holding the leaf comes first; its single child still gets one step of indent.
    assert [sel.render_row(r) for r in rows] == ["  • user: two", "     • user: three", "  user: one"]


def test_default_filters_hide_settings_and_tool_only_assistants() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    visible = {mode: [row.id for row in sel.visible_rows(flat, mode)] for mode in sel.FILTER_MODES}
    assert visible == {
        "default": ["u1", "a1", "u2", "a2", "u3", "r3", "a3"],
        "no-tools": ["u1", "a1", "u2", "a2", "u3", "a3"],
        "user-only": ["u1", "u2", "u3"],
        "labeled-only": ["u3"],
        "all": ["m1", "u1", "a1", "u2", "a2", "u3", "r3", "a3"],  # t3 (tool call only) hidden even here
    }


def test_textless_assistant_is_shown_when_it_is_the_leaf_or_failed() -> None:
    entries = [
        _msg("u", None, "user", "go"),
        _msg("a", "u", "assistant", "   ", stopReason="toolUse"),
        _msg("b", "a", "assistant", stopReason="aborted"),
        _msg("c", "b", "assistant", stopReason="error", errorMessage="boom\n" + "x" * 100),
        _msg("d", "c", "assistant", stopReason="stop"),
    ]
    flat = sel.flatten_tree(_tree(entries), "d")
    rows = sel.visible_rows(flat, "all")
    assert [(row.id, row.content) for row in rows] == [
        ("u", "user: go"),
        ("b", "assistant: (aborted)"),
        ("c", "assistant: " + ("boom " + "x" * 100)[:80]),
        ("d", "assistant: (no content)"),
    ]


def test_row_text_of_every_v15_entry_type() -> None:
    text = sel.display_text
    assert text(_msg("1", None, "developer", "be\tbrief\n")) == "developer: be brief"
    assert text(_msg("1", None, "user", None, content="plain string")) == "user: plain string"
    assert text(_msg("1", None, "bashExecution", command="ls -la\n")) == "[bash]: ls -la"
    assert text(_msg("1", None, "fileMention")) == "[fileMention]"
    assert text(_msg("1", None, "toolResult", toolCallId="nope", toolName="grep")) == "[grep]"
    assert text(_msg("1", None, "toolResult", toolCallId="nope")) == "[tool]"
    custom = _entry(
        "1", None, "custom_message", customType="note", content=[{"type": "text", "text": "a\nb"}]
    )
    assert text(custom) == "[note]: a b"
    assert text(_entry("1", None, "compaction", tokensBefore=12500)) == "[compaction: 13k tokens]"
    assert text(_entry("1", None, "compaction", tokensBefore=2499)) == "[compaction: 2k tokens]"
    assert text(_entry("1", None, "branch_summary", summary=" s\n1 ")) == "[branch summary]: s 1"
    assert text(_entry("1", None, "model_change", provider="x", modelId="y")) == "[model: undefined]"
    assert text(_entry("1", None, "thinking_level_change", thinkingLevel=None)) == "[thinking: off]"
    assert text(_entry("1", None, "custom", customType="todo")) == "[custom: todo]"
    assert text(_entry("1", None, "label", targetId="x")) == "[label: (cleared)]"
    assert text(_entry("1", None, "label", targetId="x", label="v1")) == "[label: v1]"


def test_types_v15_leaves_blank_get_v18_text() -> None:
    # v15.0.0 renders all of these as an empty row (only the marker); the issue chose v18's text.
    text = sel.display_text
    assert text(_entry("1", None, "mode_change", mode="plan", data={})) == "[mode: plan]"
    assert text(_entry("1", None, "ttsr_injection", injectedRules=["r"])) == "[ttsr injection]"
    assert text(_entry("1", None, "service_tier_change", serviceTier=None)) == "[service tier: (default)]"
    tiers = {"openai": "priority", "anthropic": "flex"}
    assert text(_entry("1", None, "service_tier_change", serviceTier=tiers)) == (
        "[service tier: openai:priority anthropic:flex]"
    )
    assert text(_entry("1", None, "service_tier_change", serviceTier="flex")) == "[service tier: flex]"
    assert text(_entry("1", None, "session_init", systemPrompt="", task="t", tools=[])) == "[session init]"
    assert text(_entry("1", None, "mcp_tool_selection", selectedToolNames=[])) == "[mcp tool selection]"
    assert text(_entry("1", None, "some_future_type")) == "[some future type]"
    assert text(_entry("1", None, "title_change", title="A\nB")) == "[title: A B]"


def _tool_row(name: str, arguments: Any) -> str:
    call = {"type": "toolCall", "id": "c", "name": name, "arguments": arguments}
    entries = [
        _msg("a", None, "assistant", content=[call], stopReason="toolUse"),
        _msg("r", "a", "toolResult", "out", toolCallId="c", toolName=name),
    ]
    flat = sel.flatten_tree(_tree(entries), "r")
    return sel.visible_rows(flat, "all", home="/home/me")[-1].content


def test_tool_results_are_labelled_from_their_call() -> None:
    assert _tool_row("read", {"path": "a.py"}) == "[read: a.py]"
    assert _tool_row("read", {"file_path": "a.py", "offset": 5, "limit": 10}) == "[read: a.py:5-14]"
    assert _tool_row("read", {"path": "a.py", "offset": 5}) == "[read: a.py:5]"
    assert _tool_row("read", {"path": "a.py", "limit": 10}) == "[read: a.py:1-10]"
    assert _tool_row("read", {"path": "/home/me/x.py"}) == "[read: ~/x.py]"
    assert _tool_row("write", {"path": "w.txt"}) == "[write: w.txt]"
    assert _tool_row("edit", {"file_path": "e.txt"}) == "[edit: e.txt]"
    assert _tool_row("bash", {"command": "echo hi"}) == "[bash: echo hi]"
    long = "echo " + "x" * 60
    assert _tool_row("bash", {"command": long}) == f"[bash: {long[:50]}...]"
    assert _tool_row("search", {"pattern": "foo", "paths": ["a", "b"]}) == "[search: /foo/ in a, b]"
    assert _tool_row("search", {"pattern": "foo"}) == "[search: /foo/ in .]"
    assert _tool_row("find", {"pattern": "*.py"}) == "[find: *.py]"
    assert _tool_row("ls", {}) == "[ls: .]"
    # v15 has no "grep" case: it is labelled like any other tool, with its JSON arguments cut to 40.
    assert _tool_row("grep", {"pattern": "x"}) == '[grep: {"pattern":"x"}]'
    big = {"query": "y" * 50}
    assert _tool_row("web_search", big) == f"[web_search: {json.dumps(big, separators=(',', ':'))[:40]}...]"


def test_message_text_is_cut_at_200_utf16_units() -> None:
    text = sel.display_text(_msg("1", None, "user", "a" * 199 + "😀tail"))
    # 199 units + a 2-unit emoji would be 201: JavaScript keeps half the pair; Arbor drops it.
    assert text == "user: " + "a" * 199
    assert sel.display_text(_msg("1", None, "user", "😀" * 150)) == "user: " + "😀" * 100


def test_search_is_and_of_lowercase_tokens_over_label_role_and_text() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    assert [r.id for r in sel.visible_rows(flat, "default", "BRANCH")] == ["u2", "u3"]
    assert [r.id for r in sel.visible_rows(flat, "default", "  user   older ")] == ["u3"]
    assert [r.id for r in sel.visible_rows(flat, "default", "keep")] == ["u3"]
    assert [r.id for r in sel.visible_rows(flat, "all", "model anthropic")] == ["m1"]
    assert sel.visible_rows(flat, "default", "user nothing") == []
    assert sel.searchable_text(roots[0].children[0].children[0].children[0]) == "keep user older branch"


def test_mode_cycle_order() -> None:
    order = ["default", "no-tools", "user-only", "labeled-only", "all"]
    assert list(sel.FILTER_MODES) == order
    assert [sel.next_filter_mode(m) for m in order] == order[1:] + order[:1]  # type: ignore[arg-type]
    assert [sel.next_filter_mode(m, backwards=True) for m in order] == order[-1:] + order[:-1]  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        sel.next_filter_mode("bogus")  # type: ignore[arg-type]
    assert [sel.filter_tag(m) for m in order] == ["", " [no-tools]", " [user]", " [labeled]", " [all]"]  # type: ignore[arg-type]


def test_initial_selection_is_leaf_else_nearest_visible_ancestor_else_last() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "user-only")
    assert rows[sel.initial_selection(flat, rows) or 0].id == "u2"  # the leaf's user message
    rows = sel.visible_rows(flat, "labeled-only")
    assert sel.initial_selection(flat, rows) == 0  # "u3" is not an ancestor: falls back to the last row
    assert sel.initial_selection(flat, sel.visible_rows(flat, "default", "zzz")) is None
    no_leaf = sel.flatten_tree(roots, None)
    rows = sel.visible_rows(no_leaf)
    assert sel.initial_selection(no_leaf, rows) == len(rows) - 1
    assert sel.initial_selection(flat, sel.visible_rows(flat), selected_id="r3") == 5


def test_selection_follows_the_entry_through_filter_and_search_changes() -> None:
    roots, leaf = _branchy()
    selector = sel.TreeSelector(roots, leaf)
    assert selector.selected_id == "a2"
    selector.set_mode("user-only")
    assert selector.selected_id == "u2"  # nearest visible ancestor
    selector.set_mode("default")
    assert selector.selected_id == "u2"  # the selection moved, so it stays there
    selector.move(+1)
    selector.set_query("nothing matches")
    assert selector.rows == [] and selector.selected_id is None and selector.footer() == "  (0/0)"
    assert selector.render() == ["  No entries found", "  (0/0)"]
    selector.set_query("")
    assert selector.selected_id == "a2"  # remembered across the empty result
    selector.cycle_mode(backwards=True)
    assert selector.mode == "all" and selector.selected_id == "a2" and selector.footer() == "  (5/8) [all]"
    selector.move(+4)
    assert selector.selected_id == "m1"  # wraps around
    selector.page(-10)
    assert selector.selected_index == 0
    selector.page(+100)
    assert selector.selected_id == "a3"


def test_follow_selection_rules() -> None:
    roots, leaf = _branchy()
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "no-tools")
    assert sel.follow_selection(flat, rows, "a3") == rows.index(next(r for r in rows if r.id == "a3"))
    assert rows[sel.follow_selection(flat, rows, "r3") or 0].id == "u3"  # hidden tool result → its ancestor
    assert sel.follow_selection(flat, rows, "unknown") == len(rows) - 1
    assert sel.follow_selection(flat, rows, None) == 0  # v15: no previous selection keeps index 0
    assert sel.follow_selection(flat, [], "a3") is None


def test_window_and_footer() -> None:
    assert sel.window_bounds(0, 100, 10) == (0, 10)
    assert sel.window_bounds(50, 100, 10) == (45, 55)
    assert sel.window_bounds(99, 100, 10) == (90, 100)
    assert sel.footer(4, 9, "no-tools") == "  (5/9) [no-tools]"
    assert sel.render_lines([], None, "labeled-only") == ["  No entries found", "  (0/0) [labeled]"]
    assert sel.truncate_to_width("abcdef", 4) == "abc…"
    assert sel.truncate_to_width("日本語", 4) == "日…"


def test_empty_tree() -> None:
    flat = sel.flatten_tree([], None)
    assert len(flat) == 0 and sel.visible_rows(flat) == []


def _chain(count: int) -> list[Node]:
    nodes = [Node(_msg("n0", None, "user", "t0"))]
    for i in range(1, count):
        node = Node(_msg(f"n{i}", f"n{i - 1}", "user" if i % 2 == 0 else "assistant", f"t{i}"))
        nodes[-1].children.append(node)
        nodes.append(node)
    return nodes


def test_deep_linear_chain_flattens_without_recursion() -> None:
    nodes = _chain(50_000)
    flat = sel.flatten_tree([nodes[0]], "n49999")
    assert len(flat) == 50_000 and all(node.indent == 0 for node in flat)
    assert len(flat.active_ids) == 50_000
    rows = sel.visible_rows(flat)
    assert sel.initial_selection(flat, rows) == 49_999
    assert sel.render_row(rows[-1], True) == "› • assistant: t49999"
    # Searching from a hidden deep entry walks 50,000 parents iteratively.
    assert sel.follow_selection(flat, sel.visible_rows(flat, "default", "t0"), "n49999") == 0


def test_deep_chain_below_a_branch_keeps_one_gutter() -> None:
    nodes = _chain(45_000)
    side = Node(_msg("side", "n0", "user", "side"))
    nodes[0].children.append(side)
    flat = sel.flatten_tree([nodes[0]], "n44999")
    rows = sel.visible_rows(flat)
    assert rows[-1].id == "side" and rows[-1].connector == "last"
    assert rows[-2].prefix() == "│     " and rows[-2].display_indent == 2


def test_parent_cycles_do_not_hang() -> None:
    a = Node(_msg("a", "b", "user", "a"))
    b = Node(_msg("b", "a", "user", "b"), [a])
    a.children.append(b)  # a malformed structure: the nodes form a loop
    flat = sel.flatten_tree([a], "b")
    assert [node.id for node in flat] == ["a", "b"]
    assert flat.active_ids == {"a", "b"}
    rows = sel.visible_rows(flat, "default", "zzz")
    assert sel.nearest_visible_index(flat, rows, "b") is None
    rows = sel.visible_rows(flat, "all", "a")
    assert sel.nearest_visible_index(flat, [r for r in rows if r.id == "a"], "b") == 0


def _comb(depth: int) -> tuple[list[Node], str]:
    """A chain ``n0 … n{depth}`` where every node also has a side answer: ``depth`` branch points one below
    the other, so the rows go ``depth`` levels deep."""
    nodes = [Node(_msg("n0", None, "user", "t0"))]
    for i in range(1, depth + 1):
        node = Node(_msg(f"n{i}", f"n{i - 1}", "user", f"t{i}"))
        side = Node(_msg(f"s{i}", f"n{i - 1}", "user", f"side {i}"))
        nodes[-1].children += [node, side]
        nodes.append(node)
    return [nodes[0]], f"n{depth}"


def test_folded_prefix_draws_the_last_levels_of_the_full_prefix() -> None:
    roots, leaf = _comb(60)
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "all")
    assert max(row.display_indent for row in rows) == 60
    for levels in (0, 1, 4, 7):
        for row in rows:
            folded, text = row.folded_prefix(levels)
            full = row.prefix()
            assert folded == max(0, row.display_indent - levels), row.id
            if folded:
                # Three characters a level: the drawn part is the tail of the full prefix, guides included.
                assert text == full[-3 * levels :] if levels else text == "", row.id
            else:
                assert text == full, row.id
    deep = next(row for row in rows if row.id == "s60")
    assert deep.folded_prefix(4) == (56, "│  │  │  └─ ")
    with pytest.raises(ValueError):
        rows[0].folded_prefix(-1)


def test_folded_prefix_reads_only_the_gutters_it_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    from treeview.session import selector_tree

    base = selector_tree._GutterLink
    reads = [0]

    class CountingLink(base):  # type: ignore[misc,valid-type]
        __slots__ = ()

        @property  # type: ignore[override]
        def parent(self) -> Any:
            reads[0] += 1
            return base.parent.__get__(self)  # type: ignore[attr-defined]

        @parent.setter
        def parent(self, value: Any) -> None:
            base.parent.__set__(self, value)  # type: ignore[attr-defined]

    monkeypatch.setattr(selector_tree, "_GutterLink", CountingLink)
    roots, leaf = _comb(3_000)
    flat = sel.flatten_tree(roots, leaf)
    rows = sel.visible_rows(flat, "all")
    reads[0] = 0
    drawn = [row.folded_prefix(4) for row in rows]
    # Every one of 6,000 rows, up to 3,000 levels deep, drawn from at most a handful of gutters each.
    assert reads[0] <= 6 * len(rows)
    assert max(len(text) for _, text in drawn) == 12
    assert max(folded for folded, _ in drawn) == 2_996
