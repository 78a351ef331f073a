"""convertToLlm by the newest agents' rules (oh-my-pi 18.3.4, pi 1.6.0); the fixtures' answers are checked
message by message in test_reference_latest.py, these pin each rule on its own."""

from __future__ import annotations

from typing import Any

import pytest

from treeview.session.jsonl import dumps
from treeview.session.messages import convert_to_llm, message_text


def test_omp_sends_custom_messages_as_developer_messages() -> None:
    custom = {"role": "custom", "customType": "note", "content": "remember", "display": False, "timestamp": 5}
    (converted,) = convert_to_llm([custom], "omp")
    assert converted == {
        "role": "developer",
        "content": [{"type": "text", "text": "remember"}],
        "timestamp": 5,
    }


def test_omp_splits_images_of_a_custom_message_into_a_user_message() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    custom = {
        "role": "custom",
        "customType": "shot",
        "content": [{"type": "text", "text": "look"}, image],
        "attribution": "agent",
        "timestamp": 1,
    }
    developer, user = convert_to_llm([custom], "omp")
    assert developer["role"] == "developer" and message_text(developer) == "look"
    assert user["role"] == "user"
    assert user["content"] == [{"type": "text", "text": "Images attached to shot."}, image]


def test_omp_summary_wrappers() -> None:
    compaction = {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 2}
    branch = {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 3}
    first, second = convert_to_llm([compaction, branch], "omp")
    assert message_text(first) == (
        "Prior model work/tool state available.\nMUST build on prior work; NEVER duplicate prior work.\n\n"
        "<summary>\nS\n</summary>"
    )
    assert message_text(second) == "Branch-return summary:\n\n<summary>\nB\n</summary>"
    assert first["attribution"] == second["attribution"] == "agent"
    handoff = convert_to_llm([{**compaction, "method": "handoff"}], "omp")[0]
    assert message_text(handoff).startswith(
        "Context replaced."
    ) and "<handoff>\nS\n</handoff>" in message_text(handoff)


def test_omp_snapcompact_sends_its_summary_and_blocks_unwrapped() -> None:
    block = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    message = {"role": "compactionSummary", "summary": "lead-in", "blocks": [block], "timestamp": 1}
    (converted,) = convert_to_llm([message], "omp")
    assert converted["content"] == [{"type": "text", "text": "lead-in"}, block]


def test_omp_drops_an_empty_user_interrupted_assistant_turn() -> None:
    aborted = {
        "role": "assistant",
        "content": [],
        "stopReason": "aborted",
        "errorMessage": "Interrupted by user",
    }
    assert convert_to_llm([aborted], "omp") == []
    assert convert_to_llm([{**aborted, "content": [{"type": "text", "text": "half"}]}], "omp") != []


def test_pi_wraps_summaries_in_its_own_prefixes_and_knows_fewer_roles() -> None:
    messages: list[Any] = [
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 2},
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 3},
        {"role": "custom", "customType": "c", "content": "hello", "timestamp": 4},
        {"role": "fileMention", "files": []},
        {"role": "pythonExecution", "code": "1"},
        {"role": "developer", "content": "d"},
    ]
    compaction, branch, custom = convert_to_llm(messages, "pi")
    assert message_text(compaction) == (
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nS\n</summary>"
    )
    assert message_text(branch).endswith("<summary>\nB</summary>")
    assert custom == {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 4}


def test_pi_bash_text_names_the_full_output_file() -> None:
    bash = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a",
        "truncated": True,
        "fullOutputPath": "/t",
    }
    (converted,) = convert_to_llm([bash], "pi")
    assert message_text(converted) == "Ran `ls`\n```\na\n```\n\n[Output truncated. Full output: /t]"
    assert "attribution" not in converted


def test_unknown_agent_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown agent"):
        convert_to_llm([], "claude")


@pytest.mark.parametrize("agent", ["omp", "pi"])
def test_hostile_messages_do_not_crash(agent: str) -> None:
    hostile: list[Any] = [
        {"role": "user"},
        {"role": "custom"},
        {"role": "custom", "content": [None, 3, {"type": "image"}]},
        {"role": "hookMessage", "content": None},
        {"role": "branchSummary"},
        {"role": "compactionSummary", "summary": ["a", 1, None], "blocks": "x", "images": 3},
        {"role": "fileMention", "files": [None, "x", {"path": 1, "content": 2, "image": {"type": "image"}}]},
        {"role": "assistant", "content": None, "stopReason": "aborted"},
        {"role": "bashExecution", "output": ["a"], "exitCode": "1"},
        None,
        7,
    ]
    for message in convert_to_llm(hostile, agent):
        dumps(message)
        message_text(message)
