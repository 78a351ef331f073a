"""The session tree against oh-my-pi v15's real answers on every fixture, and its own invariants."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.reference import Case, all_cases, omp_view, open_case
from treeview.session.jsonl import SessionFileError, dumps
from treeview.session.session_manager import EntryNotFound, SessionFileChanged, SessionManager, TreeNode

CASES = all_cases()


def _recovered_ids(manager: SessionManager) -> set[str]:
    """Ids of the entries Arbor recovered from glued lines that v15 drops."""
    keep = set(omp_view(manager))
    return {e["id"] for i, e in enumerate(manager.entries) if i not in keep}


def _visible_children(node: TreeNode, skip: set[str]) -> list[TreeNode]:
    """Children as v15 sees them: a recovered (skipped) node is replaced by its own children."""
    result: list[TreeNode] = []
    for child in node.children:
        result.extend(_visible_children(child, skip) if child.entry["id"] in skip else [child])
    return result


def _flat_tree(roots: list[TreeNode], skip: set[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    top = [n for n in roots if n.entry["id"] not in skip]
    stack: list[tuple[TreeNode, Any, int]] = [(node, None, 0) for node in reversed(top)]
    while stack:
        node, parent, depth = stack.pop()
        entry_id = node.entry["id"]
        children = _visible_children(node, skip)
        row = {
            "id": entry_id,
            "treeParent": parent,
            "depth": depth,
            "children": [c.entry["id"] for c in children],
        }
        if node.label is not None:
            row["label"] = node.label
        rows.append(row)
        stack.extend((child, entry_id, depth + 1) for child in reversed(children))
    return rows


def _omp_parent(manager: SessionManager, parent_id: Any, recovered: set[str]) -> Any:
    while parent_id in recovered:
        parent_id = manager.by_id[parent_id].get("parentId")
    return parent_id


@pytest.mark.parametrize("case", CASES, ids=str)
def test_leaf_entries_and_branch_match_the_original(case: Case) -> None:
    manager, ref, ids = open_case(case)
    view = omp_view(manager)
    recovered = _recovered_ids(manager)
    assert manager.leaf_id == ids(ref["leafId"])
    assert manager.session_id == ref["sessionId"]
    entries = [manager.entries[i] for i in view]
    for ours, theirs in zip(entries, ref["entries"], strict=True):
        assert ours["id"] == ids(theirs["id"])
        assert _omp_parent(manager, ours.get("parentId"), recovered) == ids(theirs["parentId"])
        assert ours["type"] == theirs["type"]
        assert ours["timestamp"] == theirs["timestamp"]
        if "role" in theirs:
            assert ours["message"]["role"] == theirs["role"]
    assert [e["id"] for e in manager.get_branch() if e["id"] not in recovered] == ids(ref["branch"])


@pytest.mark.parametrize("case", CASES, ids=str)
def test_tree_and_labels_match_the_original(case: Case) -> None:
    manager, ref, ids = open_case(case)
    recovered = _recovered_ids(manager)
    recovered_targets = {
        manager.by_id[i].get("targetId") for i in recovered if manager.by_id[i]["type"] == "label"
    }
    expected = [
        {**row, "id": ids(row["id"]), "treeParent": ids(row["treeParent"]), "children": ids(row["children"])}
        for row in ref["tree_flat"]
    ]
    rows = _flat_tree(manager.get_tree(), recovered)
    for row in rows:
        if row["id"] in recovered_targets:
            row.pop("label", None)
    assert rows == expected
    labels = {k: v for k, v in manager.labels.items() if k not in recovered_targets}
    assert labels == {ids(k): v for k, v in ref["labels"].items()}
    for parent, children in ref["getChildren_multi"].items():
        ours = [e["id"] for e in manager.get_children(ids(parent)) if e["id"] not in recovered]
        assert ours == ids(children)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_context_matches_the_original(case: Case) -> None:
    manager, ref, ids = open_case(case)
    context = manager.build_session_context()
    expected = ref["context"]
    assert context.thinking_level == expected["thinkingLevel"]
    assert context.models == expected["models"]
    assert context.mode == expected["mode"]
    assert context.injected_ttsr_rules == expected["injectedTtsrRules"]
    assert (context.service_tier or None) == expected["serviceTier"]
    recovered = _recovered_ids(manager)
    recovered_messages = [id(manager.by_id[i].get("message")) for i in recovered]
    messages = [m for m in context.messages if id(m) not in recovered_messages]
    assert len(messages) == expected["message_count"]
    for ours, theirs in zip(messages, expected["messages"], strict=True):
        assert ours["role"] == theirs["role"]
        assert hashlib.sha256(dumps(ours).encode()).hexdigest() == theirs["json_sha256"]


def _strip_transient_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_transient_keys(v) for k, v in value.items() if k not in ("partialJson", "jsonlEvents")
        }
    if isinstance(value, list):
        return [_strip_transient_keys(v) for v in value]
    return value


def _as_omp_persists(text: str) -> str:
    """omp's §9.4 persistence transform, which Arbor deliberately does not apply: drop transient keys.

    (The fixtures hold no images or 500k strings, the transform's other two rules.)
    """
    return "".join(dumps(_strip_transient_keys(json.loads(line))) + "\n" for line in text.splitlines())


def _normalize_ids(text: str, entry_ids: list[str]) -> str:
    for index, entry_id in enumerate(entry_ids):
        text = text.replace(json.dumps(entry_id), f'"<id:{index}>"')
    return text


@pytest.mark.parametrize(
    "case", [c for c in CASES if "sha256" in str(c.reference.get("migrated", {}))], ids=str
)
def test_migrated_file_bytes_match_the_original(case: Case) -> None:
    manager, ref, _ = open_case(case)
    migrated = ref["migrated"]
    assert manager.migrated
    text = manager.serialize()
    assert text == "".join(manager.iter_lines())
    if "partialJson" in text:
        assert '"partialJson"' in manager.serialize()  # Arbor keeps every key...
        text = _as_omp_persists(text)  # ...so compare what is left after omp's transform
    normalized = _normalize_ids(text, [e["id"] for e in manager.entries])
    if manager.warnings and _recovered_ids(manager):
        # v15 drops the second object of a glued line; Arbor keeps it, so only the shared lines compare.
        head = normalized.splitlines()[: len(migrated["normalized_head"])]
        assert head == migrated["normalized_head"]
        return
    assert hashlib.sha256(normalized.encode()).hexdigest() == migrated["normalized_sha256"]
    if "text" in migrated:
        assert normalized == _normalize_ids(migrated["text"], migrated["ids_in_file_order"])


def test_v1_compaction_index_becomes_the_id_of_that_physical_line() -> None:
    manager = SessionManager.open(Path(__file__).parent / "data/handmade/v1_index_compaction.jsonl")
    compaction = next(e for e in manager.entries if e["type"] == "compaction")
    assert "firstKeptEntryIndex" not in compaction
    assert compaction["firstKeptEntryId"] == manager.entries[3]["id"]
    assert list(compaction)[-3:] == ["id", "parentId", "firstKeptEntryId"]
    assert list(manager.header)[-1] == "version" and manager.header["version"] == 3


def test_v2_hook_message_becomes_custom_and_version_keeps_its_place() -> None:
    manager = SessionManager.open(Path(__file__).parent / "data/handmade/v2_hookmessage_fromhook.jsonl")
    roles = [e["message"]["role"] for e in manager.entries if e["type"] == "message"]
    assert "hookMessage" not in roles and "custom" in roles
    assert list(manager.header).index("version") == 1


HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/p"}'


def _entry(entry_id: str, parent: str | None, ts: str = "2026-05-01T10:00:01.000Z", **extra: Any) -> str:
    return dumps(
        {"type": "custom", "customType": "x", "id": entry_id, "parentId": parent, "timestamp": ts, **extra}
    )


def _session(*lines: str) -> SessionManager:
    return SessionManager.from_text("\n".join([HEADER, *lines]) + "\n")


def test_a_parent_cycle_never_hangs_and_keeps_every_entry() -> None:
    manager = _session(_entry("a", None), _entry("b", "c"), _entry("c", "b"))
    assert [e["id"] for e in manager.get_branch("b")] == ["c", "b"]
    roots = manager.get_tree()
    assert sorted(n.entry["id"] for n in roots) == ["a", "b"]
    assert any("cycle" in w.message for w in manager.warnings)
    assert manager.build_session_context("c").messages == []


def test_duplicate_ids_keep_the_later_entry_and_warn() -> None:
    manager = _session(_entry("a", None, data=1), _entry("a", None, data=2))
    assert manager.by_id["a"]["data"] == 2
    assert len(manager.get_tree()) == 1
    assert any("duplicate id" in w.message for w in manager.warnings)


def test_children_sort_by_timestamp_and_invalid_timestamps_keep_file_order() -> None:
    manager = _session(
        _entry("r", None),
        _entry("late", "r", "2026-05-01T10:00:09.000Z"),
        _entry("bad", "r", "not a date"),
        _entry("early", "r", "2026-05-01T10:00:02.000Z"),
    )
    children = [n.entry["id"] for n in manager.get_tree()[0].children]
    assert children == ["early", "late", "bad"]


def test_self_parented_and_orphan_entries_become_roots() -> None:
    manager = _session(_entry("a", None), _entry("s", "s"), _entry("o", "missing"))
    assert [n.entry["id"] for n in manager.get_tree()] == ["a", "s", "o"]


def test_get_branch_is_linear_on_a_very_deep_path() -> None:
    lines = [_entry("e0", None)] + [_entry(f"e{i}", f"e{i - 1}") for i in range(1, 60_000)]
    manager = _session(*lines)
    assert len(manager.get_branch()) == 60_000
    assert len(manager.get_tree()) == 1


def test_header_less_file_is_read_with_a_warning_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"type":"message","id":"a"}\n')
    manager = SessionManager.open(path, persist=True)
    assert "no session header" in manager.warnings[0].message and manager.leaf_id == "a"
    manager.append_label_change("a", "seen")
    assert path.read_text() == '{"type":"message","id":"a"}\n'
    path.write_text("no json here\n")
    with pytest.raises(SessionFileError, match="session header"):
        SessionManager.open(path)


def test_branching_appends_and_labels_follow_the_original() -> None:
    manager = SessionManager.create("/proj")
    root = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    answer = manager.append_message({"role": "assistant", "content": [], "timestamp": 2})
    label_id = manager.append_label_change(root, "start")
    assert manager.leaf_id == label_id and manager.by_id[label_id]["parentId"] == answer
    manager.append_label_change(root)
    assert manager.get_label(root) is None
    assert "label" not in manager.by_id[manager.leaf_id]
    summary_id = manager.branch_with_summary(None, "abandoned")
    summary = manager.by_id[summary_id]
    assert list(summary) == ["type", "id", "parentId", "timestamp", "fromId", "summary"]
    assert summary["fromId"] == "root" and summary["parentId"] is None
    manager.reset_leaf()
    new_root = manager.append_thinking_level_change()
    assert manager.by_id[new_root] == {**manager.by_id[new_root], "parentId": None, "thinkingLevel": None}
    with pytest.raises(EntryNotFound, match="Entry nope not found"):
        manager.branch("nope")
    custom = manager.append_custom_entry("state")
    assert list(manager.by_id[custom]) == ["type", "customType", "id", "parentId", "timestamp"]
    assert re.fullmatch(r"[0-9a-f]{8}", custom)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", manager.by_id[custom]["timestamp"])


def test_create_branched_session_recreates_labels_and_writes_at_once(tmp_path: Path) -> None:
    source = Path(__file__).parent / "data/handmade/v3_branching_labels.jsonl"
    copy = tmp_path / "s.jsonl"
    copy.write_bytes(source.read_bytes())
    manager = SessionManager.open(copy, persist=True)
    new_file = manager.create_branched_session("e5000001")
    assert new_file is not None and Path(new_file).parent == tmp_path
    lines = Path(new_file).read_text().splitlines()
    # oh-my-pi 18 starts the file with a 256-byte title slot (the title of the new session, empty here).
    slot, header = json.loads(lines[0]), json.loads(lines[1])
    assert slot["type"] == "title" and slot["updatedAt"] == header["timestamp"]
    assert len(lines[0].encode()) + 1 == 256
    assert list(header) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert header["parentSession"] == str(copy)
    last = json.loads(lines[-1])
    assert last["type"] == "label" and last["targetId"] == "b2000008" and last["label"] == "click-version"
    assert copy.read_bytes() == source.read_bytes()


def test_appends_go_to_the_end_of_an_unchanged_file_only(tmp_path: Path) -> None:
    source = Path(__file__).parent / "data/handmade/v3_branching_labels.jsonl"
    copy = tmp_path / "s.jsonl"
    original = source.read_bytes()
    copy.write_bytes(original)
    manager = SessionManager.open(copy, persist=True)
    new_id = manager.append_label_change("b2000001", "first")
    data = copy.read_bytes()
    assert data.startswith(original)
    assert json.loads(data[len(original) :])["id"] == new_id
    with copy.open("ab") as handle:
        handle.write(b'{"type":"custom","customType":"agent wrote this"')
    with pytest.raises(SessionFileChanged):
        manager.append_label_change("b2000001", "second")
    assert copy.read_bytes().endswith(b'"agent wrote this"')


def test_migrated_files_are_never_rewritten_in_place(tmp_path: Path) -> None:
    source = Path(__file__).parent / "data/handmade/v1_index_compaction.jsonl"
    copy = tmp_path / "v1.jsonl"
    copy.write_bytes(source.read_bytes())
    manager = SessionManager.open(copy, persist=True)
    with pytest.raises(SessionFileChanged, match="older format"):
        manager.append_label_change(manager.entries[0]["id"], "x")
    assert copy.read_bytes() == source.read_bytes()


def test_untouched_files_serialize_byte_for_byte() -> None:
    for case in CASES:
        manager = SessionManager.open(case.path)
        if manager.migrated or manager.warnings:
            continue
        assert manager.serialize().encode() == case.path.read_bytes(), case.name


def test_new_session_is_written_only_once_an_assistant_exists(tmp_path: Path) -> None:
    manager = SessionManager.create("/proj", str(tmp_path), parent_session="/old.jsonl")
    assert manager.session_file is not None
    manager.append_model_change("anthropic/claude")
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    assert not Path(manager.session_file).exists()
    manager.append_message({"role": "assistant", "content": [], "timestamp": 2})
    lines = Path(manager.session_file).read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["parentSession"] == "/old.jsonl"
    manager.append_label_change(manager.entries[0]["id"], "m")
    assert len(Path(manager.session_file).read_text().splitlines()) == 5
    name = Path(manager.session_file).name
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f-]{36}\.jsonl", name)


def test_title_slot_overrides_the_header_title() -> None:
    manager = SessionManager.open(
        Path(__file__).parent / "data/handmade/omp18_title_slot_new_entry_types.jsonl"
    )
    assert manager.title_slot is not None
    assert manager.session_name == manager.title_slot["title"]


def test_glued_objects_are_all_recovered_with_a_warning() -> None:
    manager = SessionManager.open(Path(__file__).parent / "data/handmade/v3_orphans_sorting_malformed.jsonl")
    assert {"bad00001", "bad00002"} <= set(manager.by_id)
    assert manager.by_id["bad00002"]["type"] == "label"
    assert manager.get_label("r0000001") == "lost"
    messages = {(w.line, w.message.split(":")[0].split(" (")[0]) for w in manager.warnings}
    assert (6, "2 JSON objects glued on one line; each was recovered") in messages
    assert any(w.line == 9 and "not valid JSON" in w.message for w in manager.warnings)
    assert any(w.line == 12 and "incomplete last line" in w.message for w in manager.warnings)


operations = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant", "branch", "reset", "label", "unlabel", "summary"]),
        st.integers(0, 10**6),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(operations)
def test_any_sequence_of_operations_keeps_a_valid_tree(ops: list[tuple[str, int]]) -> None:
    manager = SessionManager.create("/proj")
    for op, pick in ops:
        known = list(manager.by_id)
        target = known[pick % len(known)] if known else None
        if op == "user":
            manager.append_message({"role": "user", "content": f"u{pick}", "timestamp": pick})
        elif op == "assistant":
            manager.append_message({"role": "assistant", "content": [], "timestamp": pick})
        elif op == "branch" and target:
            manager.branch(target)
        elif op == "reset":
            manager.reset_leaf()
        elif op == "label" and target:
            manager.append_label_change(target, f"l{pick}")
        elif op == "unlabel" and target:
            manager.append_label_change(target, None)
        elif op == "summary":
            manager.branch_with_summary(target, f"s{pick}")
    ids = list(manager.by_id)
    assert len(ids) == len(manager.entries) == len(set(ids))
    for entry_id in ids:
        path = manager.get_branch(entry_id)
        assert path[-1]["id"] == entry_id
        assert path[0]["parentId"] is None
        assert all(child["parentId"] == parent["id"] for parent, child in zip(path, path[1:], strict=False))
    reached = _flat_tree(manager.get_tree(), set())
    assert sorted(row["id"] for row in reached) == sorted(ids)
    # What was written reads back as the same session.
    reread = SessionManager.from_text(manager.serialize())
    assert reread.entries == manager.entries and reread.labels == manager.labels
    assert reread.leaf_id == (manager.entries[-1]["id"] if manager.entries else None)


def test_unknown_entry_types_and_keys_are_kept_and_behave_as_tree_nodes() -> None:
    future = dumps(
        {
            "type": "hologram",
            "id": "h1",
            "parentId": "a",
            "timestamp": "2026-05-01T10:00:02.000Z",
            "beam": [1.5],
        }
    )
    manager = _session(_entry("a", None, extra_key={"x": 1}), future)
    assert manager.leaf_id == "h1"
    assert [e["id"] for e in manager.get_branch()] == ["a", "h1"]
    assert manager.get_tree()[0].children[0].entry["type"] == "hologram"
    assert manager.build_session_context().messages == []
    assert manager.raw_line(1) == future and manager.entries[0]["extra_key"] == {"x": 1}
    child = manager.append_message({"role": "user", "content": "go on", "timestamp": 3})
    assert manager.by_id[child]["parentId"] == "h1"
    assert SessionManager.from_text(manager.serialize()).entries == manager.entries
