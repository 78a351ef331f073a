"""The sample sessions: samples/ is what the generator writes, and the showcase shows every feature."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from treeview.session.cli import main
from treeview.session.jsonl import dumps
from treeview.session.session_manager import SessionManager
from treeview.session.showcase import CHECKER_ID, SHOWCASE_ID, SUBAGENT_ID, showcase_files

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
SHOWCASE = "showcase-export-by-day.jsonl"
SUBAGENT = "showcase-export-by-day/Reviewer.jsonl"
CHECKER = "showcase-export-by-day/Reviewer/Reviewer.Checker.jsonl"


def test_committed_samples_are_what_the_generator_writes():
    for name, text in showcase_files().items():
        assert (SAMPLES / name).read_text(encoding="utf-8") == text, (
            "run: python -m treeview.session showcase"
        )


def test_the_generator_is_deterministic_and_writes_through_the_cli(tmp_path, capsys):
    assert main(["showcase", "-o", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().out
    for name, text in showcase_files().items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", [SHOWCASE, SUBAGENT, CHECKER])
def test_samples_read_without_warnings_and_serialize_byte_for_byte(name):
    manager = SessionManager.open(SAMPLES / name)

    assert manager.warnings == []
    for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines():
        assert dumps(json.loads(line)) == line


def test_the_showcase_has_every_feature():
    manager = SessionManager.open(SAMPLES / SHOWCASE)
    entries = [e for e in manager.entries if e.get("type") != "session"]
    children = Counter(e["parentId"] for e in entries)
    types = Counter(e["type"] for e in entries)
    messages = [e["message"] for e in entries if e["type"] == "message"]
    tools = {
        block["name"]
        for m in messages
        if m["role"] == "assistant"
        for block in m["content"]
        if block["type"] == "toolCall"
    }
    outputs = [m["content"][0]["text"] for m in messages if m["role"] == "toolResult"]

    assert manager.session_id == SHOWCASE_ID
    assert sum(1 for count in children.values() if count > 1) >= 3  # branch points
    assert len(manager.labels) >= 4
    assert types["compaction"] == 1 and types["branch_summary"] == 1
    assert types["model_change"] >= 2 and types["custom_message"] == 1 and types["custom"] == 1
    assert {"read", "write", "edit", "bash", "grep", "find", "ls", "task"} <= tools
    assert max(len(text.splitlines()) for text in outputs) > 200  # a long tool output
    assert any(m["role"] == "toolResult" and m["isError"] for m in messages)
    assert any(m["role"] == "bashExecution" for m in messages)
    assert any(b["type"] == "image" for m in messages if m["role"] == "user" for b in m["content"])
    assert any(b["type"] == "thinking" for m in messages if m["role"] == "assistant" for b in m["content"])
    # The leaf is on the conversational main line, not on an abandoned branch.
    assert manager.leaf_id == entries[-1]["id"]


def test_the_subagent_is_a_child_of_the_showcase():
    manager = SessionManager.open(SAMPLES / SUBAGENT)
    header = json.loads((SAMPLES / SUBAGENT).read_text(encoding="utf-8").splitlines()[0])

    assert manager.session_id == SUBAGENT_ID
    assert header["parentSession"] == SHOWCASE_ID
    assert any(e.get("type") == "session_init" for e in manager.entries)
    checker = json.loads((SAMPLES / CHECKER).read_text(encoding="utf-8").splitlines()[0])
    assert checker["id"] == CHECKER_ID and checker["parentSession"] == SUBAGENT_ID


@pytest.mark.django_db
def test_the_sample_subagents_are_listed_under_the_showcase(tmp_path):
    from treeview.models import AgentSession
    from treeview.services.sync import sync_paths

    main(["showcase", "-o", str(tmp_path)])
    sync_paths([tmp_path])
    showcase = AgentSession.objects.get(subagent_of__isnull=True)
    assert showcase.session_id == SHOWCASE_ID
    reviewer = showcase.subagents.get()
    assert (reviewer.session_id, reviewer.agent_key) == (SUBAGENT_ID, "Reviewer")
    assert reviewer.subagents.get().agent_key == "Reviewer.Checker"


@pytest.mark.django_db
def test_the_sample_directories_import_without_a_failure(settings):
    from treeview.services.sync import sync_file

    files = [path for folder in settings.SAMPLE_SESSION_DIRS for path in sorted(folder.rglob("*.jsonl"))]
    results = [sync_file(path) for path in files]

    assert len(files) >= 4
    assert [
        (str(path), r.error) for path, r in zip(files, results, strict=True) if r.status == "failed"
    ] == []
