"""Tests for treeview.session.messages: convertToLlm parity with oh-my-pi v15.0.0 (its rules stay available as
``agent="omp15"``; the newest agents' are checked in test_messages_latest.py) and its helpers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from treeview.session.jsonl import UNDEFINED, dumps
from treeview.session.messages import (
    BRANCH_SUMMARY_CONTEXT_TEMPLATE,
    COMPACTION_SUMMARY_CONTEXT_TEMPLATE,
    bash_execution_to_text,
    branch_summary_context_text,
    compaction_summary_context_text,
    format_bytes,
    format_output_notice,
    format_prompt_output,
    message_text,
    python_execution_to_text,
    render_prompt,
)
from treeview.session.messages import convert_to_llm as convert_for_agent
from treeview.session.session_manager import SessionManager


def convert_to_llm(messages: list[Any]) -> list[dict[str, Any]]:
    """v15's convertToLlm (these tests pin the v15 rules)."""
    return convert_for_agent(messages, "omp15")


DATA = Path(__file__).parent / "data"
REFERENCE = DATA / "reference"

# ---------------------------------------------------------------------------------------------------------
# Reference parity
# ---------------------------------------------------------------------------------------------------------


def _fixture_bytes(fixture: str) -> bytes:
    """The exact input the reference run read (variants are derived from the committed fixtures)."""
    if fixture.endswith(".slot-stripped.jsonl"):
        original = _fixture_bytes(fixture.replace(".slot-stripped", ""))
        return original.split(b"\n", 1)[1]
    if fixture == "v3_branching_labels.truncated-after-line-10.jsonl":
        lines = _fixture_bytes("v3_branching_labels.jsonl").split(b"\n")
        return b"\n".join(lines[:10]) + b"\n"
    for folder in ("handmade", "real"):
        path = DATA / folder / fixture
        if path.exists():
            return path.read_bytes()
    raise FileNotFoundError(fixture)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-le", "surrogatepass")


def _js_length(text: str) -> int:
    """``String.prototype.length`` (UTF-16 code units)."""
    return len(_utf16(text)) // 2


def _js_prefix(text: str, units: int) -> str:
    """``text.slice(0, units)`` in UTF-16 code units (may end on a lone high surrogate, as in JS)."""
    return _utf16(text)[: units * 2].decode("utf-16-le", "surrogatepass")


def _js_suffix(text: str, units: int) -> str:
    """``text.slice(-units)`` in UTF-16 code units."""
    return _utf16(text)[-units * 2 :].decode("utf-16-le", "surrogatepass")


def _js_sha256(text: str) -> str:
    """sha256 of a JS string as Node hashes it: UTF-8, lone surrogates become U+FFFD."""
    well_formed = _utf16(text).decode("utf-16-le", "replace")
    return hashlib.sha256(well_formed.encode("utf-8")).hexdigest()


def _block_types(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return ["string"]
    if isinstance(content, list):
        return [block.get("type") for block in content]
    return []


REFERENCE_FILES = sorted(p.name for p in REFERENCE.glob("*.omp.json") if p.name != "parse-probe.omp.json")


def _load_reference(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REFERENCE / name).read_text(encoding="utf-8"))
    return data


def _json_sha256(message: dict[str, Any]) -> str:
    return _js_sha256(dumps(message))


def _context_messages(tmp_path: Path, fixture: str, reference: dict[str, Any]) -> list[dict[str, Any]]:
    """Arbor's context messages for ``fixture``, aligned with the reference context.

    The only accepted difference is a decided one: on a line holding two glued JSON objects Arbor recovers
    both, v15 keeps only the first, so Arbor's context may hold extra messages. They are dropped here by
    matching ``json_sha256`` (JSON.stringify of each message) in order; everything else must match.
    """
    path = tmp_path / fixture
    path.write_bytes(_fixture_bytes(fixture))
    messages = SessionManager.open(path, agent="omp15").build_session_context().messages
    expected = reference["context"]["messages"]
    aligned: list[dict[str, Any]] = []
    extras = 0
    for message in messages:
        if len(aligned) < len(expected) and _json_sha256(message) == expected[len(aligned)]["json_sha256"]:
            aligned.append(message)
        else:
            extras += 1
    assert len(aligned) == len(expected)
    assert extras == (1 if fixture == "pi-mono_root-session_v1_malformed-line.jsonl" else 0)
    return aligned


def _assert_llm_matches(llm: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert len(llm) == len(expected)
    for index, (message, want) in enumerate(zip(llm, expected, strict=True)):
        text = message_text(message)
        got = {
            "role": message.get("role"),
            "attribution": message.get("attribution"),
            "text_len": _js_length(text),
            "text_sha256": _js_sha256(text),
            # the reference keeps the first 300 units, and the last 120 as text_tail when longer
            "text": _js_prefix(text, 300),
            "text_tail": _js_suffix(text, 120) if _js_length(text) > 300 else None,
            "blocks": _block_types(message),
            "timestamp": message.get("timestamp"),
        }
        wanted = {key: want.get(key) for key in got}
        assert got == wanted, f"llm message {index}"


@pytest.mark.parametrize("reference_name", REFERENCE_FILES)
def test_convert_to_llm_matches_reference(tmp_path: Path, reference_name: str) -> None:
    reference = _load_reference(reference_name)
    if reference["reinitialized"]:
        # v15 could not read the title slot and started an empty session: nothing reaches the LLM.
        assert reference["llm"]["messages"] == []
        assert convert_to_llm([]) == []
        return
    messages = _context_messages(tmp_path, reference["fixture"], reference)
    llm = convert_to_llm(messages)
    assert reference["llm"]["message_count"] == len(reference["llm"]["messages"])
    _assert_llm_matches(llm, reference["llm"]["messages"])


@pytest.mark.parametrize(
    "fixture",
    [
        "real/oh-my-pi_large-session_v3-migrated_title-slot.jsonl",
        "handmade/omp18_title_slot_new_entry_types.jsonl",
    ],
)
def test_title_slot_files_present_like_their_slot_stripped_reference(fixture: str) -> None:
    # Arbor reads the title slot that v15 could not; the result must equal v15's answer without the slot.
    path = DATA / fixture
    stripped = _load_reference(path.name.replace(".jsonl", ".slot-stripped.omp.json"))
    llm = convert_to_llm(SessionManager.open(path, agent="omp15").build_session_context().messages)
    _assert_llm_matches(llm, stripped["llm"]["messages"])


@pytest.mark.parametrize("reference_name", REFERENCE_FILES)
def test_context_message_text_matches_reference(tmp_path: Path, reference_name: str) -> None:
    reference = _load_reference(reference_name)
    if reference["reinitialized"]:
        return
    messages = _context_messages(tmp_path, reference["fixture"], reference)
    for index, (message, want) in enumerate(zip(messages, reference["context"]["messages"], strict=True)):
        text = message_text(message)
        assert message.get("role") == want["role"], index
        assert _js_length(text) == want["text_len"], index
        assert _js_prefix(text, 200) == want["text"], index


def test_convert_to_llm_leaves_the_context_messages_unchanged(tmp_path: Path) -> None:
    reference = _load_reference("v3_custom_mode_ttsr.omp.json")
    messages = _context_messages(tmp_path, "v3_custom_mode_ttsr.jsonl", reference)
    before = [dumps(message) for message in messages]
    convert_to_llm(messages)
    assert [dumps(message) for message in messages] == before


# ---------------------------------------------------------------------------------------------------------
# Per-role conversion and key order (JSON.stringify of the result is hashed elsewhere)
# ---------------------------------------------------------------------------------------------------------


def test_user_message_gets_default_attribution_appended_last() -> None:
    message = {"role": "user", "content": "hi", "timestamp": 5}
    (converted,) = convert_to_llm([message])
    assert dumps(converted) == '{"role":"user","content":"hi","timestamp":5,"attribution":"user"}'
    assert "attribution" not in message  # a copy, like the JS spread


def test_existing_attribution_keeps_its_key_position() -> None:
    message = {"role": "user", "attribution": "agent", "content": [], "timestamp": 1}
    (converted,) = convert_to_llm([message])
    assert dumps(converted) == '{"role":"user","attribution":"agent","content":[],"timestamp":1}'
    # null is replaced in place (?? treats null like undefined)
    (converted,) = convert_to_llm([{"role": "user", "attribution": None, "content": "x"}])
    assert dumps(converted) == '{"role":"user","attribution":"user","content":"x"}'


def test_developer_message_defaults_to_agent_attribution() -> None:
    (converted,) = convert_to_llm([{"role": "developer", "content": "rules", "timestamp": 2}])
    assert converted["attribution"] == "agent"
    assert list(converted) == ["role", "content", "timestamp", "attribution"]


def test_assistant_message_is_returned_unchanged() -> None:
    message = {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"}
    (converted,) = convert_to_llm([message])
    assert converted is message


def test_tool_result_keeps_content_and_adds_agent_attribution() -> None:
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "data"}],
        "isError": False,
        "timestamp": 3,
    }
    (converted,) = convert_to_llm([message])
    assert list(converted) == [
        "role",
        "toolCallId",
        "toolName",
        "content",
        "isError",
        "timestamp",
        "attribution",
    ]
    assert converted["content"] == message["content"]
    assert converted["attribution"] == "agent"


def test_pruned_tool_result_joins_text_blocks_without_separator() -> None:
    message = {
        "role": "toolResult",
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "x", "mimeType": "image/png"},
            {"type": "text", "text": "b"},
        ],
        "prunedAt": 10,
        "attribution": "user",
    }
    (converted,) = convert_to_llm([message])
    assert converted["content"] == [{"type": "text", "text": "ab"}]
    assert list(converted) == ["role", "content", "prunedAt", "attribution"]
    assert converted["attribution"] == "user"


def test_pruned_tool_result_without_text_says_output_truncated() -> None:
    for content in ([], [{"type": "image", "data": "x"}], [{"type": "text", "text": ""}]):
        (converted,) = convert_to_llm([{"role": "toolResult", "content": content, "prunedAt": 1}])
        assert converted["content"] == [{"type": "text", "text": "[Output truncated]"}]


def test_pruned_at_null_still_counts_as_pruned() -> None:
    # The original tests `prunedAt === undefined`, so a stored null prunes too.
    (converted,) = convert_to_llm(
        [{"role": "toolResult", "content": [{"type": "text", "text": "t"}], "prunedAt": None}]
    )
    assert converted["content"] == [{"type": "text", "text": "t"}]
    assert converted["content"] is not None


def test_bash_execution_becomes_user_message() -> None:
    message = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a\nb",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": 7,
    }
    (converted,) = convert_to_llm([message])
    assert dumps(converted) == (
        '{"role":"user","content":[{"type":"text","text":"Ran `ls`\\n```\\na\\nb\\n```"}],'
        '"attribution":"user","timestamp":7}'
    )


def test_excluded_executions_are_dropped() -> None:
    messages = [
        {"role": "bashExecution", "command": "ls", "output": "", "excludeFromContext": True},
        {"role": "pythonExecution", "code": "1", "output": "", "excludeFromContext": True},
        {"role": "bashExecution", "command": "pwd", "output": "", "excludeFromContext": False},
    ]
    converted = convert_to_llm(messages)
    assert len(converted) == 1
    assert converted[0]["content"][0]["text"] == "Ran `pwd`\n(no output)"


def test_bash_text_cancelled_and_exit_codes() -> None:
    base = {"command": "make", "output": ""}
    assert bash_execution_to_text({**base, "cancelled": True, "exitCode": 2}) == (
        "Ran `make`\n(no output)\n\n(command cancelled)"
    )
    assert (
        bash_execution_to_text({**base, "exitCode": 2})
        == "Ran `make`\n(no output)\n\nCommand exited with code 2"
    )
    assert bash_execution_to_text({**base, "exitCode": -1}).endswith("Command exited with code -1")
    for quiet in (0, None, 0.0):
        assert bash_execution_to_text({**base, "exitCode": quiet}) == "Ran `make`\n(no output)"
    assert bash_execution_to_text(base) == "Ran `make`\n(no output)"
    # strict inequality: false and "0" are not the number 0
    assert bash_execution_to_text({**base, "exitCode": False}).endswith("code false")
    assert bash_execution_to_text({**base, "exitCode": "0"}).endswith("code 0")


def test_python_text_layout_cancelled_and_failure() -> None:
    message = {
        "role": "pythonExecution",
        "code": "print(1)",
        "output": "1",
        "exitCode": 0,
        "cancelled": False,
    }
    assert python_execution_to_text(message) == "Ran Python:\n```python\nprint(1)\n```\nOutput:\n```\n1\n```"
    assert python_execution_to_text({**message, "output": "", "cancelled": True}) == (
        "Ran Python:\n```python\nprint(1)\n```\n(no output)\n\n(execution cancelled)"
    )
    assert python_execution_to_text({**message, "exitCode": 1}).endswith("\n\nExecution failed with code 1")
    (converted,) = convert_to_llm([{**message, "timestamp": 4}])
    assert list(converted) == ["role", "content", "attribution", "timestamp"]
    assert converted["attribution"] == "user"


def test_output_notice_from_meta() -> None:
    meta = {
        "truncation": {
            "direction": "tail",
            "truncatedBy": "bytes",
            "totalLines": 5000,
            "totalBytes": 900000,
            "outputLines": 1200,
            "outputBytes": 51200,
            "shownRange": {"start": 3801, "end": 5000},
            "artifactId": "7",
        }
    }
    text = bash_execution_to_text({"command": "cat big", "output": "x", "exitCode": 0, "meta": meta})
    assert text == (
        "Ran `cat big`\n```\nx\n```\n\n"
        "[Showing lines 3801-5000 of 5000 (50.0KB limit). Read artifact://7 for full output]"
    )


def test_output_notice_variants() -> None:
    assert format_output_notice(None) == ""
    assert format_output_notice({}) == ""
    head = {"truncatedBy": "lines", "totalLines": 10, "outputLines": 3, "shownRange": {"start": 1, "end": 3}}
    assert format_output_notice({"truncation": {**head, "nextOffset": 4}}) == (
        "\n\n[Showing lines 1-3 of 10. Use :4 to continue]"
    )
    empty_range = {**head, "shownRange": {"start": 5, "end": 4}}
    assert format_output_notice({"truncation": empty_range}) == "\n\n[Showing 3 of 10 lines]"
    limits = {
        "matchLimit": {"reached": 100, "suggestion": 200},
        "resultLimit": {"reached": 5, "suggestion": 10},
        "columnTruncated": {"maxColumn": 512},
    }
    assert format_output_notice({"limits": limits}) == (
        "\n\n[100 matches limit reached. Use limit=200 for more. 5 results limit reached. "
        "Use limit=10 for more. Some lines truncated to 512 chars]"
    )
    diagnostics = {"summary": "1 error", "messages": ["src/a.ts:1:2 [error] bad", "odd"]}
    assert format_output_notice({"diagnostics": diagnostics}) == (
        "\n\nLSP Diagnostics (1 error):\n# src/\n## a.ts\n  1:2 [error] bad\n\nodd"
    )


def test_format_bytes_rounds_like_to_fixed() -> None:
    assert format_bytes(512) == "512B"
    assert format_bytes(1023) == "1023B"
    assert format_bytes(1024) == "1.0KB"
    # 1.25 is exact in binary: toFixed rounds the tie up, Python's "%.1f" would give 1.2.
    assert format_bytes(1280) == "1.3KB"
    assert format_bytes(1536 * 1024) == "1.5MB"
    assert format_bytes(3 * 1024**3) == "3.0GB"


def test_custom_and_hook_messages_become_user_messages() -> None:
    custom = {
        "role": "custom",
        "customType": "note",
        "content": "hello",
        "display": False,
        "details": {"a": 1},
        "attribution": "agent",
        "timestamp": 9,
    }
    hook = {
        "role": "hookMessage",
        "customType": "git",
        "content": [{"type": "text", "text": "x"}],
        "display": True,
    }
    converted = convert_to_llm([custom, hook])
    assert dumps(converted[0]) == (
        '{"role":"user","content":[{"type":"text","text":"hello"}],"attribution":"agent","timestamp":9}'
    )
    assert dumps(converted[1]) == '{"role":"user","content":[{"type":"text","text":"x"}]}'


def test_custom_message_with_undefined_attribution_omits_it() -> None:
    custom = {"role": "custom", "customType": "t", "content": "c", "attribution": UNDEFINED, "timestamp": 1}
    (converted,) = convert_to_llm([custom])
    assert dumps(converted) == '{"role":"user","content":[{"type":"text","text":"c"}],"timestamp":1}'


def test_branch_summary_message() -> None:
    (converted,) = convert_to_llm(
        [{"role": "branchSummary", "summary": "did X", "fromId": "a", "timestamp": 1}]
    )
    assert dumps(converted) == (
        '{"role":"user","content":[{"type":"text","text":"The following is a summary of a branch that this '
        'conversation came back from:\\n\\n<summary>\\ndid X\\n</summary>"}],'
        '"attribution":"agent","timestamp":1}'
    )


def test_compaction_summary_message_carries_provider_payload() -> None:
    payload = {"type": "openaiResponsesHistory", "provider": "openai", "items": []}
    message = {
        "role": "compactionSummary",
        "summary": "S",
        "shortSummary": "s",
        "tokensBefore": 10,
        "providerPayload": payload,
        "timestamp": 2,
    }
    (converted,) = convert_to_llm([message])
    assert list(converted) == ["role", "content", "attribution", "providerPayload", "timestamp"]
    assert converted["providerPayload"] is payload
    assert converted["content"][0]["text"].endswith("analysis:\n\n<summary>\nS\n</summary>")
    (without,) = convert_to_llm([{**message, "providerPayload": UNDEFINED}])
    assert "providerPayload" not in without


def test_file_mention_message() -> None:
    image = {"type": "image", "data": "AAA", "mimeType": "image/png"}
    message = {
        "role": "fileMention",
        "files": [
            {"path": "a.py", "content": "print(1)", "lineCount": 1},
            {"path": "empty.txt", "content": ""},
            {"path": "pic.png", "content": "", "image": image},
        ],
        "timestamp": 8,
    }
    (converted,) = convert_to_llm([message])
    assert converted["content"][0] == {
        "type": "text",
        "text": (
            '<system-reminder>\n<file path="a.py">\nprint(1)\n</file>\n\n<file path="empty.txt">\n</file>'
            '\n\n<file path="pic.png">\n</file>\n</system-reminder>'
        ),
    }
    assert converted["content"][1] is image
    assert list(converted) == ["role", "content", "attribution", "timestamp"]
    assert converted["attribution"] == "user"


def test_unknown_roles_and_non_dicts_are_dropped() -> None:
    assert convert_to_llm([{"role": "mystery"}, {"content": "no role"}, None, "text", 3]) == []  # type: ignore[list-item]


def test_hostile_messages_do_not_crash() -> None:
    hostile: list[Any] = [
        {"role": "user"},
        {"role": "user", "content": 5},
        {"role": "toolResult", "prunedAt": 1, "content": "not a list"},
        {
            "role": "toolResult",
            "prunedAt": 1,
            "content": [None, 3, {"type": "text"}, {"type": "text", "text": 7}],
        },
        {"role": "toolResult"},
        {"role": "bashExecution"},
        {
            "role": "bashExecution",
            "meta": {"truncation": {"shownRange": "x"}, "limits": "y", "diagnostics": {}},
        },
        {"role": "bashExecution", "meta": {"truncation": {"truncatedBy": "bytes"}}, "output": ["a", None]},
        {"role": "pythonExecution", "code": None, "output": {}},
        {"role": "custom"},
        {"role": "hookMessage", "content": None},
        {"role": "branchSummary"},
        {"role": "compactionSummary", "summary": ["a", 1, None]},
        {"role": "fileMention"},
        {"role": "fileMention", "files": [None, "x", {"path": 1, "content": 2}]},
        {"role": "assistant"},
    ]
    converted = convert_to_llm(hostile)
    assert len(converted) == len(hostile)
    for message in converted:
        dumps(message)
        message_text(message)
    assert converted[3]["content"] == [{"type": "text", "text": "7"}]
    assert converted[5]["content"][0]["text"] == "Ran `undefined`\n(no output)"
    assert (
        converted[7]["content"][0]["text"]
        == "Ran `undefined`\n```\na,\n```\n\n[Showing undefined of undefined lines (NaNGB limit)]"
    )
    assert converted[12]["content"][0]["text"].endswith("<summary>\na,1,\n</summary>")
    assert "<summary>\n</summary>" in converted[11]["content"][0]["text"]


# ---------------------------------------------------------------------------------------------------------
# Templates, rendering and the post-render formatter
# ---------------------------------------------------------------------------------------------------------


def test_templates_are_the_v15_files() -> None:
    assert BRANCH_SUMMARY_CONTEXT_TEMPLATE.endswith("<summary>\n{{summary}}\n</summary>\n")
    assert len(COMPACTION_SUMMARY_CONTEXT_TEMPLATE.encode()) == 450  # byte size of the v15.0.0 file
    assert len(BRANCH_SUMMARY_CONTEXT_TEMPLATE.encode()) == 112


def test_summary_text_is_formatted_too() -> None:
    summary = (
        "## Goal  \nfix\n\n\n\n## Notes\n| a  |  b |\n|:--|--:|\n\n<read-files>\nx.py\n\n</read-files>\n"
    )
    assert branch_summary_context_text(summary) == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
        "## Goal\nfix\n## Notes\n|a|b|\n|:---|---:|\n\n<read-files>\nx.py\n</read-files>\n</summary>"
    )
    assert compaction_summary_context_text("x").startswith("Another language model started")


def test_render_prompt_substitutes_without_escaping_or_reparsing() -> None:
    assert render_prompt("<{{a}}>{{ b.c }}", a="&<>\"'{{a}}", b={"c": 2}) == "<&<>\"'{{a}}>2"
    assert render_prompt("[{{missing}}][{{n}}][{{t}}][{{f}}]", n=None, t=True, f=1.5) == "[][][true][1.5]"
    assert render_prompt("{{x}}}", x="v") == "v}"
    with pytest.raises(ValueError):
        render_prompt("{{#if x}}y{{/if}}", x=1)


def test_formatter_strips_trailing_whitespace_everywhere() -> None:
    assert format_prompt_output("a  \t\n```\ncode   \n```\nb\u00a0") == "a\n```\ncode\n```\nb"


def test_formatter_blank_line_runs() -> None:
    # a single blank line survives; a run of 2+ is removed together with blank lines before it
    assert format_prompt_output("a\n\nb") == "a\n\nb"
    assert format_prompt_output("a\n\n\nb") == "a\nb"
    assert format_prompt_output("a\n \n\t\n  \nb") == "a\nb"
    assert format_prompt_output("\n\na") == "a"
    assert format_prompt_output("\na") == "a"
    assert format_prompt_output("a\n\n") == "a"


def test_formatter_keeps_blank_runs_inside_code_blocks() -> None:
    assert format_prompt_output("```\nx\n\n\ny\n```\n\n\nz") == "```\nx\n\n\ny\n```\nz"
    assert format_prompt_output("~~~\n| a | b |\n~~~") == "~~~\n| a | b |\n~~~"


def test_formatter_drops_blank_lines_before_closing_tags() -> None:
    assert format_prompt_output("<x>\nbody\n\n</x>") == "<x>\nbody\n</x>"
    assert format_prompt_output("<x>\nbody\n\n  </x>") == "<x>\nbody\n  </x>"
    # only lower-case [a-z_-] tag names count
    assert format_prompt_output("a\n\n</X1>") == "a\n\n</X1>"


def test_formatter_compacts_tables() -> None:
    assert format_prompt_output("  | a | b |\n  | :-- | :-: |") == "  |a|b|\n  |:---|:---:|"


def test_formatter_optional_passes() -> None:
    assert format_prompt_output("a -> b ... c", replace_ascii_symbols=True) == "a → b … c"
    assert (
        format_prompt_output("**MUST** `MUST NOT` MUST NOT", normalize_rfc2119=True)
        == "MUST `MUST NOT` NEVER"
    )
    assert format_prompt_output("x\n\n{{/if}}", render_phase="pre-render") == "x\n{{/if}}"


# ---------------------------------------------------------------------------------------------------------
# message_text
# ---------------------------------------------------------------------------------------------------------


def test_message_text_variants() -> None:
    blocks = [
        {"type": "thinking", "thinking": "hmm"},
        {"type": "text", "text": "a"},
        {"type": "image", "data": "x"},
        {"type": "toolCall", "id": "1", "name": "n", "arguments": {}},
        {"type": "text", "text": "b"},
    ]
    assert message_text({"role": "assistant", "content": blocks}) == "ab"
    assert message_text({"role": "user", "content": "plain"}) == "plain"
    assert message_text({"role": "branchSummary", "summary": "s"}) == "s"
    assert message_text({"role": "compactionSummary", "summary": "c"}) == "c"
    assert message_text({"role": "bashExecution", "command": "ls"}) == ""
    assert message_text({"role": "user"}) == ""
    assert message_text({"role": "user", "content": [None, {"type": "text"}]}) == ""
