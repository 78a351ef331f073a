"""Navigation by the newest agents' rules (the fixtures' answers: test_reference_latest.py)."""

from __future__ import annotations

import asyncio
import json

import pytest

from treeview.session.navigation import navigate_tree, prepare_navigation
from treeview.session.session_manager import SessionManager

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/p"}


def _session(agent: str, *entries: dict) -> SessionManager:
    lines = [HEADER]
    parent = None
    for index, entry in enumerate(entries):
        entry_id = f"e{index}"
        lines.append(
            {"id": entry_id, "parentId": parent, "timestamp": f"2026-05-01T10:00:0{index}.000Z", **entry}
        )
        parent = entry_id
    return SessionManager.from_text("".join(json.dumps(line) + "\n" for line in lines), agent=agent)  # type: ignore[arg-type]


USER = {"type": "message", "message": {"role": "user", "content": "first"}}
ASKED = {"type": "message", "message": {"role": "user", "content": "aborted before any reply"}}


def test_omp_rewinds_past_a_user_message_that_is_the_leaf() -> None:
    manager = _session(
        "omp", USER, {"type": "message", "message": {"role": "assistant", "content": []}}, ASKED
    )
    result = asyncio.run(navigate_tree(manager, "e2"))
    assert manager.get_leaf_id() == "e1"
    assert result.editor_text == "aborted before any reply"
    assert prepare_navigation(_session("omp", USER, ASKED), "e1").new_leaf_id == "e0"


@pytest.mark.parametrize("agent", ["pi", "omp15"])
def test_pi_and_v15_treat_the_leaf_as_a_no_op(agent: str) -> None:
    manager = _session(agent, USER, ASKED)
    result = asyncio.run(navigate_tree(manager, "e1"))
    assert manager.get_leaf_id() == "e1" and result.editor_text is None


def test_omp_lands_on_a_skill_prompt_pi_rewinds_past_it() -> None:
    skill = {
        "type": "custom_message",
        "customType": "skill-prompt",
        "content": "run the skill",
        "display": True,
    }
    assert prepare_navigation(_session("omp", USER, skill, USER), "e1").new_leaf_id == "e1"
    plan = prepare_navigation(_session("pi", USER, skill, USER), "e1")
    assert (plan.new_leaf_id, plan.editor_text) == ("e0", "run the skill")


def test_label_timestamps_follow_the_latest_label_entry() -> None:
    manager = _session(
        "pi",
        USER,
        {"type": "label", "targetId": "e0", "label": "a"},
        {"type": "label", "targetId": "e0", "label": "b"},
    )
    assert manager.label_timestamp("e0") == "2026-05-01T10:00:02.000Z"
    manager.append_label_change("e0", None)
    assert manager.label_timestamp("e0") is None
    label_id = manager.append_label_change("e0", "c")
    assert manager.label_timestamp("e0") == manager.by_id[label_id]["timestamp"]


def test_pi_totals_include_usage_entries_compactions_summaries_and_tool_results() -> None:
    from pathlib import Path

    path = Path(__file__).parent / "data" / "latest" / "pi16w_features_200.jsonl"
    pi = SessionManager.open(path)
    assert pi.agent == "pi"
    expected = 0.0
    for entry in pi.entries:
        message = entry.get("message") if entry["type"] == "message" else None
        usage = entry.get("usage") if message is None else message.get("usage")
        if isinstance(usage, dict):
            expected += usage["cost"]["total"]
    assert expected > 0
    assert pi.usage_statistics().cost == pytest.approx(expected)
    as_omp = SessionManager.open(path, agent="omp").usage_statistics()
    assert as_omp.cost < pi.usage_statistics().cost  # omp does not count pi's extra usage records


def test_pi_branch_relinks_past_dropped_labels_and_keeps_label_times() -> None:
    label = {"type": "label", "targetId": "e0", "label": "start"}
    answer = {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "a"}]}}
    pi = _session("pi", USER, label, answer)
    pi.create_branched_session("e2")
    assert [(e["id"], e["parentId"]) for e in pi.entries[:2]] == [("e0", None), ("e2", "e0")]
    assert pi.entries[2]["type"] == "label" and pi.entries[2]["timestamp"] == "2026-05-01T10:00:01.000Z"
    assert pi.title_slot is None
    omp = _session("omp", USER, label, answer)
    omp.create_branched_session("e2")
    assert omp.entries[1]["parentId"] == "e1"  # oh-my-pi keeps the link to the dropped label
    assert omp.title_slot is not None and omp.serialize().startswith('{"type":"title"')
