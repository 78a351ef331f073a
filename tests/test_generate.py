"""Synthetic session generator: determinism, structure and realism of the produced files."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

from treeview.session.generate import generate_session, write_session
from treeview.session.jsonl import dumps, loads

ISO_MS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
UUID_V7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
HEX8 = re.compile(r"^[0-9a-f]{8}$")
BASE_KEYS = ["type", "id", "parentId", "timestamp"]


@cache
def lines_for(entries: int, seed: int) -> tuple[str, ...]:
    return tuple(generate_session(entries, seed))


@cache
def parsed(entries: int, seed: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    values = [loads(line) for line in lines_for(entries, seed)]
    return values[0], values[1:]


def path_ids(by_id: dict[str, dict[str, Any]], leaf: str | None) -> list[str]:
    ids: list[str] = []
    while leaf is not None:
        ids.append(leaf)
        leaf = by_id[leaf]["parentId"]
    return ids[::-1]


def test_same_seed_gives_identical_bytes() -> None:
    assert list(generate_session(1500, 42)) == list(lines_for(1500, 42))


def test_different_seed_gives_different_session() -> None:
    assert lines_for(1500, 42) != lines_for(1500, 43)


def test_exact_number_of_entries_after_the_header() -> None:
    for n in (0, 1, 2, 37, 1000):
        assert len(list(generate_session(n, 5))) == n + 1


def test_smaller_session_is_a_prefix_of_a_larger_one_with_the_same_seed() -> None:
    assert lines_for(3000, 42)[:1501] == lines_for(1500, 42)


def test_every_line_parses_and_reserializes_byte_for_byte() -> None:
    for line in lines_for(1500, 42):
        value = json.loads(line)
        assert isinstance(value, dict)
        # Exactly what JSON.stringify would have written for the parsed value.
        assert dumps(value) == line
        assert "\n" not in line


def test_first_line_is_a_v3_header_in_writer_key_order() -> None:
    header, _ = parsed(1500, 42)
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["type"] == "session"
    assert header["version"] == 3
    assert UUID_V7.match(header["id"])
    assert ISO_MS.match(header["timestamp"])
    assert header["cwd"].startswith("/")


def test_ids_are_unique_eight_hex_chars() -> None:
    _, entries = parsed(3000, 7)
    ids = [entry["id"] for entry in entries]
    assert len(set(ids)) == len(ids)
    assert all(HEX8.match(entry_id) for entry_id in ids)


def test_parent_ids_point_to_earlier_entries_and_only_the_first_is_a_root() -> None:
    _, entries = parsed(3000, 7)
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        parent = entry["parentId"]
        if index == 0:
            assert parent is None
        else:
            assert parent in seen
        seen.add(entry["id"])


def test_timestamps_are_iso_ms_and_never_go_backwards() -> None:
    header, entries = parsed(3000, 7)
    stamps = [header["timestamp"]] + [entry["timestamp"] for entry in entries]
    assert all(ISO_MS.match(stamp) for stamp in stamps)
    assert stamps == sorted(stamps)


def test_keys_follow_the_v15_writer_order() -> None:
    _, entries = parsed(3000, 7)
    for entry in entries:
        keys = list(entry)
        if entry["type"] == "custom":
            assert keys == ["type", "customType", "data", *BASE_KEYS[1:]]
        elif entry["type"] == "custom_message":
            payload = ["customType", "content", "display", "details", "attribution"]
            assert keys == ["type", *payload, *BASE_KEYS[1:]]
        else:
            assert keys[:4] == BASE_KEYS
        if entry["type"] == "message":
            assert keys == [*BASE_KEYS, "message"]
            assert list(entry["message"])[0] == "role"


def test_the_session_starts_like_a_new_omp_sdk_session() -> None:
    _, entries = parsed(1500, 42)
    assert entries[0]["type"] == "model_change"
    assert "role" not in entries[0]
    assert entries[1]["type"] == "thinking_level_change"


def test_all_the_interesting_entry_types_appear() -> None:
    _, entries = parsed(3000, 7)
    kinds = Counter(
        entry["message"]["role"] if entry["type"] == "message" else entry["type"] for entry in entries
    )
    for kind in (
        "user",
        "assistant",
        "toolResult",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "label",
        "custom",
        "custom_message",
    ):
        assert kinds[kind] > 0, kind
    # Tool traffic dominates, as in real sessions.
    assert kinds["toolResult"] > kinds["user"] * 2


def test_assistant_messages_have_thinking_tool_calls_and_float_costs() -> None:
    _, entries = parsed(3000, 7)
    messages = [entry["message"] for entry in entries if entry["type"] == "message"]
    assistants = [message for message in messages if message["role"] == "assistant"]
    blocks = Counter(block["type"] for message in assistants for block in message["content"])
    assert blocks["thinking"] and blocks["text"] and blocks["toolCall"]
    tools = {block["name"] for m in assistants for block in m["content"] if block["type"] == "toolCall"}
    assert {"read", "write", "edit", "bash", "grep"} <= tools
    for message in assistants:
        usage = message["usage"]
        assert list(usage)[:6] == ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"]
        parts = usage["input"] + usage["output"] + usage["cacheRead"] + usage["cacheWrite"]
        assert usage["totalTokens"] == parts
    assert any(isinstance(m["usage"]["cost"]["total"], float) for m in assistants)


def test_every_tool_result_answers_a_tool_call_on_its_path() -> None:
    _, entries = parsed(3000, 7)
    by_id = {entry["id"]: entry for entry in entries}
    for entry in entries:
        if entry["type"] != "message" or entry["message"]["role"] != "toolResult":
            continue
        call_id = entry["message"]["toolCallId"]
        parent = by_id[entry["parentId"]]
        # Walk back over sibling results to the assistant message that made the call.
        while parent["type"] == "message" and parent["message"]["role"] == "toolResult":
            parent = by_id[parent["parentId"]]
        assert parent["message"]["role"] == "assistant"
        assert call_id in {b["id"] for b in parent["message"]["content"] if b["type"] == "toolCall"}


def test_tree_branches() -> None:
    _, entries = parsed(3000, 7)
    children = Counter(entry["parentId"] for entry in entries)
    assert sum(1 for count in children.values() if count >= 2) >= 3


def test_branch_summaries_hang_from_their_branch_point() -> None:
    _, entries = parsed(3000, 7)
    summaries = [entry for entry in entries if entry["type"] == "branch_summary"]
    assert summaries
    for entry in summaries:
        assert entry["fromId"] == entry["parentId"]
        assert entry["fromExtension"] is False
        assert set(entry["details"]) == {"readFiles", "modifiedFiles"}


def test_compaction_keeps_an_entry_on_its_own_path() -> None:
    _, entries = parsed(3000, 7)
    by_id = {entry["id"]: entry for entry in entries}
    compactions = [entry for entry in entries if entry["type"] == "compaction"]
    assert compactions
    for entry in compactions:
        path = path_ids(by_id, entry["parentId"])
        assert entry["firstKeptEntryId"] in path
        kept = by_id[entry["firstKeptEntryId"]]
        assert kept["type"] == "message" and kept["message"]["role"] == "user"
        # The kept part starts after any earlier compaction on the same path.
        earlier = [i for i, entry_id in enumerate(path) if by_id[entry_id]["type"] == "compaction"]
        if earlier:
            assert path.index(entry["firstKeptEntryId"]) > earlier[-1]
        assert isinstance(entry["tokensBefore"], int) and entry["tokensBefore"] > 0


def test_labels_target_earlier_entries_and_some_are_cleared() -> None:
    _, entries = parsed(3000, 7)
    seen: set[str] = set()
    cleared = 0
    for entry in entries:
        if entry["type"] == "label":
            assert entry["targetId"] in seen
            if "label" not in entry:
                cleared += 1
            else:
                assert entry["label"]
        seen.add(entry["id"])
    assert cleared > 0


def test_the_current_path_is_deep() -> None:
    _, entries = parsed(3000, 7)
    by_id = {entry["id"]: entry for entry in entries}
    depth = len(path_ids(by_id, entries[-1]["id"]))
    assert depth > 0.6 * len(entries)


def test_file_size_scales_with_entries_and_is_about_2_5_kb_per_entry() -> None:
    small = sum(len(line.encode()) + 1 for line in lines_for(1000, 42))
    large = sum(len(line.encode()) + 1 for line in lines_for(3000, 42))
    assert 2.0 < large / small < 4.5
    assert 1500 < large / 3000 < 4000
    # Heavy tail: the largest line is many times the median.
    sizes = sorted(len(line) for line in lines_for(3000, 42))
    assert sizes[-1] > 10 * sizes[len(sizes) // 2]


def test_write_session_writes_the_generated_lines(tmp_path: Path) -> None:
    target = tmp_path / "s.jsonl"
    size = write_session(target, 700, 9)
    data = target.read_bytes()
    assert size == len(data)
    assert data == ("\n".join(generate_session(700, 9)) + "\n").encode()
    assert not [p for p in tmp_path.iterdir() if p.name != "s.jsonl"]


def test_session_manager_loads_generated_file_cleanly(tmp_path: Path) -> None:
    from treeview.session.session_manager import SessionManager

    target = tmp_path / "s.jsonl"
    write_session(target, 2000, 11)
    manager = SessionManager.open(target)
    assert manager.warnings == []
    assert len(manager.entries) == 2000
    _, entries = parsed(2000, 11)
    assert manager.get_leaf_id() == entries[-1]["id"]
    by_id = {entry["id"]: entry for entry in entries}
    assert [e["id"] for e in manager.get_branch()] == path_ids(by_id, entries[-1]["id"])
    assert manager.build_session_context().messages


def test_output_does_not_depend_on_the_string_hash_seed() -> None:
    import hashlib
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, sys\n"
        "from treeview.session.generate import generate_session\n"
        "print(hashlib.sha256('\\n'.join(generate_session(800, 3)).encode()).hexdigest())\n"
    )
    root = Path(__file__).resolve().parent.parent
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for hash_seed in ("1", "2")
    }
    assert digests == {hashlib.sha256("\n".join(generate_session(800, 3)).encode()).hexdigest()}
