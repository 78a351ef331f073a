"""Branch-summary preparation, prompt and stored text (spec §13.4), on small handmade branches."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from treeview.session.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    AbortSignal,
    FileOperations,
    SummaryResult,
    build_branch_summary_prompt,
    compute_file_lists,
    estimate_tokens,
    finalize_summary,
    format_file_operations,
    generate_branch_summary,
    prepare_branch,
    prepare_branch_entries,
    serialize_conversation,
    token_budget,
)
from treeview.session.messages import branch_summary_context_text, compaction_summary_context_text

TS = "2026-05-01T10:00:00.000Z"


def _entry(entry_id: str, kind: str = "message", **fields: Any) -> dict[str, Any]:
    return {"type": kind, "id": entry_id, "parentId": None, "timestamp": TS, **fields}


def _user(entry_id: str, text: str) -> dict[str, Any]:
    return _entry(
        entry_id, message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    )


def _assistant(entry_id: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return _entry(entry_id, message={"role": "assistant", "content": list(blocks), "timestamp": 2})


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": f"call-{name}", "name": name, "arguments": arguments}


def _tool_result(entry_id: str, text: str) -> dict[str, Any]:
    message = {
        "role": "toolResult",
        "toolCallId": "x",
        "toolName": "read",
        "content": [{"type": "text", "text": text}],
    }
    return _entry(entry_id, message=message)


def _branch() -> list[dict[str, Any]]:
    """A small abandoned branch: every entry kind the summarizer treats differently."""
    return [
        _entry(
            "s1",
            "branch_summary",
            fromId="root",
            summary="Earlier exploration.",
            details={"readFiles": ["old-read.py"], "modifiedFiles": ["old-mod.py"]},
            fromExtension=False,
        ),
        _entry(
            "s2",
            "branch_summary",
            fromId="s1",
            summary="Ext.",
            details={"readFiles": ["ext.py"]},
            fromExtension=True,
        ),
        _user("u1", "Refactor the parser."),
        _assistant(
            "a1",
            {"type": "thinking", "thinking": "Look first."},
            {"type": "text", "text": "Reading files."},
            _call("read", path="a.py"),
            _call("read", path="b.py"),
            _call("write", path="b.py", content="x = 1\n"),
            _call("edit", path="c.py", oldText="a", newText="b"),
            _call("read", path=42),
            _call("bash", command="ls"),
        ),
        _tool_result("t1", "file contents"),
        _entry("l1", "label", targetId="u1", label="start"),
        _entry("m1", "model_change", model="anthropic/x"),
        _entry("c1", "custom_message", customType="note", content="Remember the tests.", display=True),
        _entry("k1", "compaction", summary="Compacted history.", firstKeptEntryId="u1", tokensBefore=100),
    ]


class RecordingSummarizer:
    """Test double of the Summarizer protocol."""

    def __init__(self, result: SummaryResult) -> None:
        self.result = result
        self.calls: list[dict[str, Any]] = []

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        self.calls.append({"system": system_prompt, "user": user_prompt, "max_tokens": max_tokens})
        return self.result


def _chars(fragments: Any) -> int:
    """A deterministic token counter for budget tests: one token per character."""
    return sum(len(fragment) for fragment in fragments)


# ---------------------------------------------------------------------------------------------------------


def test_prompt_texts_are_the_v15_prompt_files_byte_for_byte() -> None:
    # sha256 of the v15.0.0 files (prompts/compaction/branch-summary.md, branch-summary-preamble.md,
    # prompts/system/summarization-system.md) after prompt.render, which drops the final newline.
    assert hashlib.sha256(BRANCH_SUMMARY_PROMPT.encode()).hexdigest() == (
        "a12a8fe92a4d30ecec80114847031ce79167b903580cd0ce07e64c398263bb62"
    )
    assert hashlib.sha256(BRANCH_SUMMARY_PREAMBLE.encode()).hexdigest() == (
        "5ed8b8e14790f8da297c43eebece78b666557c024e486b501ce65097277caeda"
    )
    assert hashlib.sha256(SUMMARIZATION_SYSTEM_PROMPT.encode()).hexdigest() == (
        "62b891996642e1d273c148639b954da4f51e77ce379056a0229248b13292c03d"
    )
    assert BRANCH_SUMMARY_PROMPT.startswith("You MUST create a structured summary")
    for heading in ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress"):
        assert f"\n{heading}\n" in BRANCH_SUMMARY_PROMPT
    assert "\n## Key Decisions\n" in BRANCH_SUMMARY_PROMPT and "\n## Next Steps\n" in BRANCH_SUMMARY_PROMPT


def test_prepare_branch_entries_keeps_conversation_entries_in_order() -> None:
    messages, _ = prepare_branch_entries(_branch(), 0)
    assert [m["role"] for m in messages] == [
        "branchSummary",
        "branchSummary",
        "user",
        "assistant",
        "custom",
        "compactionSummary",
    ]
    # Summaries carry their text and the entry timestamp as epoch milliseconds.
    assert messages[0]["summary"] == "Earlier exploration." and messages[0]["timestamp"] == 1777629600000
    assert messages[4]["content"] == "Remember the tests." and messages[5]["tokensBefore"] == 100


def test_file_operations_come_from_tool_calls_and_pi_generated_summaries() -> None:
    _, file_ops = prepare_branch_entries(_branch(), 0)
    assert list(file_ops.read) == ["old-read.py", "a.py", "b.py"]
    assert list(file_ops.written) == ["b.py"]
    assert list(file_ops.edited) == ["old-mod.py", "c.py"]
    # The extension-made summary's files and the non-string path are ignored; a file both read and
    # written counts as modified only.
    assert compute_file_lists(file_ops) == (["a.py", "old-read.py"], ["b.py", "c.py", "old-mod.py"])


def test_file_lists_sort_like_javascript() -> None:
    ops = FileOperations(read=dict.fromkeys(["b", "B", "a", "\U0001f600.py", "\uff5e.py"]))
    read, modified = compute_file_lists(ops)
    # UTF-16 order puts the astral emoji (surrogates D83D...) before U+FF5E.
    assert read == ["B", "a", "b", "\U0001f600.py", "\uff5e.py"] and modified == []


def test_token_budget_keeps_the_newest_messages() -> None:
    entries = [_user("u1", "a" * 40), _user("u2", "b" * 40), _user("u3", "c" * 40)]
    messages, _ = prepare_branch_entries(entries, 85, count_tokens=_chars)
    assert [m["content"][0]["text"][0] for m in messages] == ["b", "c"]
    # A budget of 0 means no limit.
    assert len(prepare_branch_entries(entries, 0, count_tokens=_chars)[0]) == 3


def test_a_summary_past_the_budget_is_kept_while_under_ninety_percent() -> None:
    summary = _entry("s", "compaction", summary="S" * 50, tokensBefore=1)
    entries = [_user("u0", "old"), summary, _user("u1", "x" * 40)]
    kept = prepare_branch(entries, 60, count_tokens=_chars)
    assert [m["role"] for m in kept.messages] == ["compactionSummary", "user"] and kept.total_tokens == 90
    # Above 90% of the budget the summary is dropped too, and the walk still stops there.
    dropped = prepare_branch(entries, 44, count_tokens=_chars)
    assert [m["role"] for m in dropped.messages] == ["user"] and dropped.total_tokens == 40


def test_file_operations_from_summaries_count_even_when_cut_by_the_budget() -> None:
    entries = [*_branch()[:2], _user("u1", "x" * 100)]
    messages, file_ops = prepare_branch_entries(entries, 10, count_tokens=_chars)
    assert messages == [] and "old-read.py" in file_ops.read


def test_estimate_tokens_picks_the_same_fragments_as_v15() -> None:
    seen: list[list[str]] = []

    def spy(fragments: Any) -> int:
        seen.append(list(fragments))
        return 7

    assert estimate_tokens({"role": "user", "content": "hi"}, spy) == 7
    assert estimate_tokens({"role": "user", "content": [{"type": "text", "text": ""}]}, spy) == 0
    assistant = {"role": "assistant", "content": [{"type": "text", "text": "t"}, _call("read", path="a")]}
    assert estimate_tokens(assistant, spy) == 7
    tool = {"role": "toolResult", "content": [{"type": "text", "text": "r"}, {"type": "image", "data": ""}]}
    assert estimate_tokens(tool, spy) == 1207
    assert estimate_tokens({"role": "toolResult", "content": [{"type": "image"}]}, spy) == 1200
    assert estimate_tokens({"role": "bashExecution", "command": "ls", "output": "x"}, spy) == 7
    assert estimate_tokens({"role": "custom", "content": "ignored by v15"}, spy) == 0
    assert seen == [["hi"], ["t", "read", '{"path":"a"}'], ["r"], ["ls", "x"]]


def test_default_token_estimate_is_a_quarter_of_the_utf16_length() -> None:
    assert estimate_tokens({"role": "user", "content": "abcde"}) == 2
    assert estimate_tokens({"role": "user", "content": "\U0001f600\U0001f600"}) == 1
    assert estimate_tokens({"role": "branchSummary", "summary": "x" * 8}) == 2


def test_token_budget_is_context_window_minus_reserve() -> None:
    assert token_budget(None) == 128000 - 16384
    assert token_budget(0, 1000) == 127000
    assert token_budget(200000, 20000) == 180000


# ---------------------------------------------------------------------------------------------------------
# Prompt


def test_serialize_conversation_labels_each_part() -> None:
    llm = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hi "},
                {"type": "image"},
                {"type": "text", "text": "there"},
            ],
        },
        {"role": "user", "content": ""},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "thinking", "thinking": "think"},
                {"type": "text", "text": "two"},
                _call("edit", path="a.py", count=2, opts={"x": [1, 2.5]}, quote='say "hi"'),
                _call("noargs"),
            ],
        },
        {"role": "toolResult", "content": [{"type": "text", "text": "ok"}]},
        {"role": "developer", "content": "ignored"},
    ]
    assert serialize_conversation(llm) == (
        "[User]: Hi there\n\n"
        "[Assistant thinking]: think\n\n"
        "[Assistant]: one\ntwo\n\n"
        '[Assistant tool calls]: edit(path="a.py", count=2, opts={"x":[1,2.5]}, '
        'quote="say \\"hi\\""); noargs()\n\n'
        "[Tool result]: ok"
    )


def test_tool_results_are_cut_at_2000_characters() -> None:
    text = "x" * 1999 + "\U0001f600" + "tail"  # the emoji straddles the cut: 2 UTF-16 units
    serialized = serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": text}]}])
    assert serialized.startswith("[Tool result]: " + "x" * 1999)
    # JS slices UTF-16 code units: the cut keeps half of the emoji (a lone surrogate), 5 units remain.
    assert serialized.endswith("x\ud83d\n\n[... 5 more characters truncated]")
    exact = serialize_conversation(
        [{"role": "toolResult", "content": [{"type": "text", "text": "y" * 2000}]}]
    )
    assert exact == "[Tool result]: " + "y" * 2000


def test_branch_summary_prompt_structure() -> None:
    messages, _ = prepare_branch_entries(_branch(), 0)
    system, user = build_branch_summary_prompt(messages)
    assert system == SUMMARIZATION_SYSTEM_PROMPT
    assert user == (
        "<conversation>\n"
        f"[User]: {branch_summary_context_text('Earlier exploration.')}\n\n"
        f"[User]: {branch_summary_context_text('Ext.')}\n\n"
        "[User]: Refactor the parser.\n\n"
        "[Assistant thinking]: Look first.\n\n"
        "[Assistant]: Reading files.\n\n"
        '[Assistant tool calls]: read(path="a.py"); read(path="b.py"); '
        'write(path="b.py", content="x = 1\\n"); '
        'edit(path="c.py", oldText="a", newText="b"); read(path=42); bash(command="ls")\n\n'
        "[User]: Remember the tests.\n\n"
        f"[User]: {compaction_summary_context_text('Compacted history.')}\n"
        "</conversation>\n\n" + BRANCH_SUMMARY_PROMPT
    )


def test_custom_instructions_replace_the_default_instructions() -> None:
    messages = [{"role": "user", "content": "q", "timestamp": 1}]
    assert build_branch_summary_prompt(messages, "Focus on files.")[1] == (
        "<conversation>\n[User]: q\n</conversation>\n\nFocus on files."
    )
    assert build_branch_summary_prompt(messages, "")[1].endswith(BRANCH_SUMMARY_PROMPT)


# ---------------------------------------------------------------------------------------------------------
# Stored text


def test_finalize_summary_uses_the_clean_format() -> None:
    assert finalize_summary("## Goal\nX", ["r1.py", "r2.py"], ["m.py"]) == (
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\n"
        "## Goal\nX\n\n"
        "<read-files>\nr1.py\nr2.py\n</read-files>\n\n"
        "<modified-files>\nm.py\n</modified-files>"
    )
    assert finalize_summary("## Goal\nX\n\n", [], []) == f"{BRANCH_SUMMARY_PREAMBLE}\n\n## Goal\nX"
    assert (
        finalize_summary("Y", [], ["m.py"])
        == f"{BRANCH_SUMMARY_PREAMBLE}\n\nY\n\n<modified-files>\nm.py\n</modified-files>"
    )


def test_finalize_summary_replaces_file_lists_the_model_echoed() -> None:
    echoed = (
        "## Goal\nX\n\n<read-files>\nwrong.py\n</read-files>\n<modified-files>\nw.py\n</modified-files>\n"
    )
    assert (
        finalize_summary(echoed, ["a.py"], [])
        == f"{BRANCH_SUMMARY_PREAMBLE}\n\n## Goal\nX\n\n<read-files>\na.py\n</read-files>"
    )


def test_empty_model_reply_is_stored_as_no_summary_generated() -> None:
    assert finalize_summary("", ["a.py"], []) == "No summary generated"
    assert finalize_summary("  \n", [], []) == "No summary generated"


def test_long_file_lists_are_cut_after_twenty() -> None:
    files = [f"f{i:02}.py" for i in range(23)]
    block = format_file_operations(files, [])
    lines = block.split("\n")
    assert lines[0] == "<read-files>" and lines[-1] == "</read-files>"
    assert lines[1:21] == files[:20] and lines[21] == "\u2026 (3 more files omitted)" and len(lines) == 23
    assert (
        format_file_operations(files[:20], []) == "<read-files>\n" + "\n".join(files[:20]) + "\n</read-files>"
    )
    assert format_file_operations([], []) == ""


# ---------------------------------------------------------------------------------------------------------
# Generation


def test_generate_branch_summary_calls_the_model_and_returns_files() -> None:
    summarizer = RecordingSummarizer(SummaryResult(text="## Goal\nParser."))
    result = asyncio.run(generate_branch_summary(_branch(), summarizer, context_window=None))
    assert result.aborted is False and result.error is None
    assert result.read_files == ["a.py", "old-read.py"] and result.modified_files == [
        "b.py",
        "c.py",
        "old-mod.py",
    ]
    assert result.summary == finalize_summary("## Goal\nParser.", result.read_files, result.modified_files)
    (call,) = summarizer.calls
    assert call["max_tokens"] == 2048 and call["system"] == SUMMARIZATION_SYSTEM_PROMPT
    assert call["user"] == build_branch_summary_prompt(prepare_branch_entries(_branch(), 0)[0])[1]


def test_generate_branch_summary_with_nothing_to_summarize_skips_the_model() -> None:
    summarizer = RecordingSummarizer(SummaryResult(text="unused"))
    entries = [_tool_result("t1", "x"), _entry("l1", "label", targetId="t1", label="x")]
    result = asyncio.run(generate_branch_summary(entries, summarizer))
    assert result.summary == "No content to summarize" and summarizer.calls == []
    assert result.read_files == [] and result.modified_files == []


def test_generate_branch_summary_reports_abort_and_error() -> None:
    aborted = asyncio.run(
        generate_branch_summary(_branch(), RecordingSummarizer(SummaryResult(stop_reason="aborted")))
    )
    assert aborted.aborted is True and aborted.summary is None
    failed = asyncio.run(
        generate_branch_summary(
            _branch(), RecordingSummarizer(SummaryResult(stop_reason="error", error_message=""))
        )
    )
    assert failed.error == "Summarization failed" and failed.summary is None


def test_generate_branch_summary_budget_uses_the_context_window() -> None:
    entries = [_user("u1", "a" * 400), _user("u2", "b" * 40)]
    summarizer = RecordingSummarizer(SummaryResult(text="ok"))
    asyncio.run(
        generate_branch_summary(
            entries, summarizer, context_window=1100, reserve_tokens=1000, count_tokens=_chars
        )
    )
    assert "a" * 400 not in summarizer.calls[0]["user"] and "b" * 40 in summarizer.calls[0]["user"]


def test_abort_signal_cancels_a_pending_summary_call() -> None:
    class Hanging:
        cancelled = False

        async def summarize(self, **kwargs: Any) -> SummaryResult:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                Hanging.cancelled = True
                raise
            return SummaryResult()

    async def scenario() -> Any:
        signal = AbortSignal()
        task = asyncio.create_task(generate_branch_summary(_branch(), Hanging(), signal=signal))
        await asyncio.sleep(0.01)
        signal.abort("esc")
        return await asyncio.wait_for(task, 5), signal

    result, signal = asyncio.run(scenario())
    assert result.aborted is True and Hanging.cancelled is True
    assert signal.aborted is True and signal.reason == "esc"
