"""The full text an entry is searched by (treeview/session/body_text.py) and its storable column
(treeview/services/columns.py): what is in it, what is not, and the cap."""

from __future__ import annotations

from typing import Any

import pytest

from treeview.services.columns import entry_body, entry_facts
from treeview.session.body_text import MAX_BODY, MAX_TOOL_OUTPUT, body_text

LONG = "lorem ipsum " * 300  # 3,600 characters: beyond the selector's 200 and the row text's 2000


def message(role: str, content: Any, **fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "m1",
        "parentId": None,
        "message": {"role": role, "content": content, **fields},
    }


def test_a_user_message_is_its_whole_text_string_or_text_blocks():
    assert body_text(message("user", f"{LONG}zanzibar")) == f"{LONG}zanzibar"
    blocks = [
        {"type": "text", "text": "first block"},
        {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
        {"type": "text", "text": f"{LONG}zanzibar"},
    ]
    assert body_text(message("user", blocks)) == f"first block\n{LONG}zanzibar"
    assert body_text(message("developer", "system note")) == "system note"


def test_an_assistant_message_is_its_text_without_thinking_or_tool_calls():
    content = [
        {"type": "thinking", "thinking": "secret musing"},
        {"type": "text", "text": "Here it is."},
        {"type": "toolCall", "id": "t1", "name": "bash", "arguments": {"command": "make hidden"}},
        {"type": "redactedThinking", "data": "opaque"},
    ]

    assert body_text(message("assistant", content)) == "Here it is."
    # A turn with only thinking and tool calls has no body: it is not indexed (the tree hides it too).
    assert body_text(message("assistant", content[:1] + content[2:])) == ""
    assert body_text(message("assistant", [{"type": "text", "text": "  \n "}])) == ""


def test_a_tool_result_is_its_call_label_then_the_start_of_its_output():
    result = message("toolResult", [{"type": "text", "text": "import argparse"}], toolCallId="t1")

    assert body_text(result, "[read: src/cli.py]") == "[read: src/cli.py]\nimport argparse"
    blocks = [{"type": "text", "text": "a" * (MAX_TOOL_OUTPUT - 10)}, {"type": "text", "text": "b" * 50}]
    body = body_text(message("toolResult", blocks), "[read: x]")
    assert body == "[read: x]\n" + "a" * (MAX_TOOL_OUTPUT - 10) + "\n" + "b" * 9


def test_commands_custom_messages_summaries_and_mentions():
    assert body_text(message("bashExecution", None, command="ls -la", output="total 0")) == "ls -la\ntotal 0"
    long_run = message("bashExecution", None, command="make " + "x" * 3000, output="o" * 9000)
    assert body_text(long_run) == "make " + "x" * 3000 + "\n" + "o" * MAX_TOOL_OUTPUT
    assert body_text(message("pythonExecution", None, code="print(1)", output="1")) == "print(1)\n1"
    assert body_text(message("custom", "rewound", customType="rewind")) == "[rewind]\nrewound"
    mention = message("fileMention", None, files=[{"path": "a.py", "content": "SECRET"}, {"path": "b.md"}])
    assert body_text(mention) == "a.py\nb.md"
    custom = {"type": "custom_message", "customType": "note", "content": [{"type": "text", "text": "hi"}]}
    assert body_text(custom) == "[note]\nhi"
    assert body_text({"type": "branch_summary", "summary": f"{LONG}zanzibar"}) == f"{LONG}zanzibar"
    compaction = {"type": "compaction", "summary": "long summary", "shortSummary": "recap", "tokensBefore": 1}
    assert body_text(compaction) == "long summary\nrecap"


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "model_change", "model": "anthropic/claude"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
        {"type": "label", "targetId": "x", "label": "important"},
        {"type": "custom", "customType": "todo", "data": {"text": "buy milk"}},
        {"type": "session_init", "systemPrompt": "You are", "task": "do"},
        {"type": "branch_summary", "summary": ""},
        {"type": "message", "message": "not an object"},
        {"type": "message", "message": {"role": "user", "content": 42}},
    ],
)
def test_other_entries_have_no_body(entry):
    assert body_text(entry) == ""


def test_the_body_is_cut_at_the_caps_keeping_earlier_parts_whole():
    huge = "x" * (5 * 1024 * 1024)

    body = body_text(message("toolResult", [{"type": "text", "text": huge}]), "[bash: make]")

    assert body == "[bash: make]\n" + "x" * MAX_TOOL_OUTPUT
    assert len(body_text(message("user", huge))) == MAX_BODY
    assert len(body_text(message("assistant", [{"type": "text", "text": huge}]))) == MAX_BODY
    assert len(body_text({"type": "branch_summary", "summary": huge})) == MAX_BODY
    assert body_text({"type": "branch_summary", "summary": "abcdef"}, limit=3) == "abc"
    # Parts after the cap are dropped, the newline between them counts.
    blocks = [{"type": "text", "text": "a" * 10}, {"type": "text", "text": "b" * 10}]
    assert body_text(message("user", blocks), limit=12) == "a" * 10 + "\nb"
    assert body_text(message("user", blocks), limit=11) == "a" * 10


def test_the_column_is_storable_and_uses_the_uncut_row_text():
    entry = message("user", "nul\x00byte and a lone \ud800 surrogate")

    stored = entry_body(entry, "")

    assert "\x00" not in stored and stored.startswith("nul\ufffdbyte")
    stored.encode("utf-8")  # no lone surrogate left
    calls: dict[str, tuple[Any, Any]] = {"t1": ("read", {"path": "/srv/app/" + "d/" * 1200 + "x.py"})}
    result = message("toolResult", [{"type": "text", "text": "output"}], toolCallId="t1")
    facts = entry_facts(result, calls)
    assert facts.body_text.endswith("x.py]\noutput")
    assert len(facts.text) == 2000  # the row text column is cut, the label in the body is not
    assert entry_facts(message("user", f"{LONG}zanzibar"), {}).body_text.endswith("zanzibar")
