"""Tree navigation and /branch against oh-my-pi v15's real answers, plus hooks, summaries and aborts."""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.reference import DATA, Case, IdMap, all_cases, load_reference, omp_view, open_case
from treeview.session.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    AbortController,
    AbortSignal,
    SummaryResult,
)
from treeview.session.hooks import (
    SESSION_BEFORE_BRANCH,
    SESSION_BEFORE_TREE,
    SESSION_BRANCH,
    SESSION_TREE,
    HookRunner,
    HookSummary,
    SessionBeforeTreeEvent,
    SessionBeforeTreeResult,
)
from treeview.session.navigation import (
    InvalidBranchEntry,
    NavigationError,
    NoModelForSummary,
    branch_from_user_message,
    collect_entries_for_branch_summary,
    navigate_tree,
    prepare_navigation,
    user_messages_for_branching,
)
from treeview.session.session_manager import EntryNotFound, SessionManager

CASES = all_cases()
BRANCHING = DATA / "handmade" / "v3_branching_labels.jsonl"


class FakeSummarizer:
    """A test double of the Summarizer protocol: records the prompts, answers with fixed text."""

    def __init__(
        self, text: str = "## Goal\nTry click.", stop_reason: str = "stop", error: str | None = None
    ):
        self.text = text
        self.stop_reason = stop_reason
        self.error = error
        self.calls: list[dict[str, Any]] = []

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        self.calls.append(
            {"system_prompt": system_prompt, "user_prompt": user_prompt, "max_tokens": max_tokens}
        )
        return SummaryResult(text=self.text, stop_reason=self.stop_reason, error_message=self.error)


class HangingSummarizer:
    """Never answers until cancelled; tells the test when the call has started."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        raise AssertionError("not reached")


def _recovered(manager: SessionManager) -> tuple[set[str], set[int]]:
    """Ids of entries Arbor recovered from glued lines (v15 drops them) and their messages' identities."""
    keep = set(omp_view(manager))
    ids = {entry["id"] for index, entry in enumerate(manager.entries) if index not in keep}
    return ids, {id(manager.by_id[i].get("message")) for i in ids}


def _truncated_branching_file(tmp_path: Path) -> Path:
    """The reference's ``v3_branching_labels.truncated-after-line-10``: the first ten lines of the fixture."""
    lines = BRANCHING.read_bytes().split(b"\n")
    path = tmp_path / "truncated.jsonl"
    path.write_bytes(b"\n".join(lines[:10]) + b"\n")
    return path


def _copy(source: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir(exist_ok=True)
    target = folder / source.name
    shutil.copyfile(source, target)
    return target


# ---------------------------------------------------------------------------------------------------------
# Reference answers: collect and navigate
# ---------------------------------------------------------------------------------------------------------


def _open(name: str, path: Path) -> tuple[SessionManager, dict[str, Any], IdMap]:
    if name == "v3_branching_labels.truncated-after-line-10":
        manager = SessionManager.open(path, agent="omp15")
        reference = load_reference("v3_branching_labels.truncated-after-line-10.jsonl")
        return manager, reference, IdMap(manager, reference)
    return open_case(Case(name, path))


@pytest.mark.parametrize("case", [c for c in CASES if c.reference.get("collect")], ids=str)
def test_collect_entries_matches_the_original(case: Case) -> None:
    manager, ref, ids = open_case(case)
    recovered, _ = _recovered(manager)
    leaf = manager.get_leaf_id()
    assert leaf == ids(ref["leafId"])
    for expected in ref["collect"]:
        target = ids(expected["target"])
        result = collect_entries_for_branch_summary(manager, leaf, target)
        if "not_called" in expected:
            # v15 loops forever on a cyclic parent chain; we must simply terminate.
            assert all(entry["id"] != target for entry in result.entries[:-1])
            continue
        assert result.common_ancestor_id == ids(expected["commonAncestorId"]), expected["why"]
        ours = [entry["id"] for entry in result.entries if entry["id"] not in recovered]
        assert ours == ids(expected["entries"]), expected["why"]


def test_collect_entries_matches_the_original_on_the_truncated_file(tmp_path: Path) -> None:
    manager, ref, ids = _open(
        "v3_branching_labels.truncated-after-line-10", _truncated_branching_file(tmp_path)
    )
    for expected in ref["collect"]:
        result = collect_entries_for_branch_summary(manager, manager.get_leaf_id(), expected["target"])
        assert result.common_ancestor_id == expected["commonAncestorId"]
        assert [entry["id"] for entry in result.entries] == expected["entries"]


def _check_navigation(manager: SessionManager, ref: dict[str, Any], ids: IdMap) -> None:
    _, recovered_messages = _recovered(manager)
    loaded_leaf = manager.get_leaf_id()
    for expected in ref["navigate"]:
        manager.branch(loaded_leaf)  # the reference puts the leaf back before each call
        target = ids(expected["target"])
        if "not_called" in expected:
            # A self-parented user message: v15 would hang; we move and return.
            asyncio.run(navigate_tree(manager, target))
            continue
        if "error" in expected:
            with pytest.raises(EntryNotFound) as raised:
                asyncio.run(navigate_tree(manager, target))
            assert f"Error: {raised.value}" == expected["error"]
            assert manager.get_leaf_id() == ids(expected["leaf_after_error"])
            continue
        result = asyncio.run(navigate_tree(manager, target))
        assert result.cancelled is expected["cancelled"]
        assert result.new_leaf_id == manager.get_leaf_id() == ids(expected["newLeafId"]), expected["why"]
        assert result.editor_text == expected["editorText"], expected["why"]
        assert result.summary_entry is None
        context = result.session_context or manager.build_session_context()
        messages = [m for m in context.messages if id(m) not in recovered_messages]
        assert len(messages) == expected["context_message_count"], expected["why"]
        if "context_roles" in expected:
            assert ",".join(m["role"] for m in messages) == expected["context_roles"], expected["why"]


@pytest.mark.parametrize("case", [c for c in CASES if c.reference.get("navigate")], ids=str)
def test_navigate_tree_matches_the_original(case: Case, tmp_path: Path) -> None:
    path = _copy(case.path, tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, persist=True, agent="omp15")
    _check_navigation(manager, case.reference, IdMap(manager, case.reference))
    # A move without a summary writes nothing (the leaf is not persisted).
    assert case.reference["navigate_file_unchanged"] is True
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_navigate_tree_matches_the_original_on_the_truncated_file(tmp_path: Path) -> None:
    manager, ref, ids = _open(
        "v3_branching_labels.truncated-after-line-10", _truncated_branching_file(tmp_path)
    )
    _check_navigation(manager, ref, ids)


@pytest.mark.parametrize("case", [c for c in CASES if c.reference.get("navigate")], ids=str)
def test_prepare_navigation_agrees_with_navigate_and_changes_nothing(case: Case) -> None:
    manager, ref, ids = open_case(case)
    leaf = manager.get_leaf_id()
    entry_count = len(manager.entries)
    for expected in ref["navigate"]:
        if "not_called" in expected or "error" in expected:
            continue
        plan = prepare_navigation(manager, ids(expected["target"]))
        assert manager.get_leaf_id() == leaf and len(manager.entries) == entry_count
        assert plan.new_leaf_id == ids(expected["newLeafId"])
        assert plan.editor_text == expected["editorText"]
        assert plan.is_noop is (ids(expected["target"]) == leaf)


def test_prepare_navigation_rejects_an_unknown_target() -> None:
    manager = SessionManager.open(BRANCHING)
    with pytest.raises(EntryNotFound, match="Entry nope not found"):
        prepare_navigation(manager, "nope")


def test_navigating_to_the_current_leaf_is_a_no_op() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    calls: list[str] = []
    hooks.on(SESSION_BEFORE_TREE, lambda event: calls.append("before"))
    hooks.on(SESSION_TREE, lambda event: calls.append("after"))
    result = asyncio.run(navigate_tree(manager, "e5000001", summarize=True, hooks=hooks))
    assert result.cancelled is False and result.editor_text is None and result.session_context is None
    assert calls == []


def test_unknown_target_raises_entry_not_found() -> None:
    manager = SessionManager.open(BRANCHING)
    with pytest.raises(EntryNotFound, match="^'?Entry missing not found"):
        asyncio.run(navigate_tree(manager, "missing"))
    assert str(EntryNotFound("missing")) == "Entry missing not found"


def test_summarize_without_a_model_raises_before_anything_else() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    called: list[object] = []
    hooks.on(SESSION_BEFORE_TREE, called.append)
    with pytest.raises(NoModelForSummary, match="^No model available for summarization$"):
        asyncio.run(navigate_tree(manager, "b2000003", summarize=True, hooks=hooks))
    # Even an unknown target reports the missing model first, as in v15.
    with pytest.raises(NoModelForSummary):
        asyncio.run(navigate_tree(manager, "missing", summarize=True))
    assert called == [] and manager.get_leaf_id() == "e5000001"


# ---------------------------------------------------------------------------------------------------------
# Summaries during navigation
# ---------------------------------------------------------------------------------------------------------


def test_summary_hangs_at_the_destination_like_the_handmade_scenario(tmp_path: Path) -> None:
    # handmade/expected.json "navigateTreeScenario": the truncated file, navigateTree('b2000003', summarize).
    path = _truncated_branching_file(tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, persist=True)
    summarizer = FakeSummarizer(text="## Goal\nAdd subcommands.")
    result = asyncio.run(navigate_tree(manager, "b2000003", summarize=True, summarizer=summarizer))

    assert result.common_ancestor_id == "b2000003"
    assert [e["id"] for e in result.entries_to_summarize] == ["b2000004", "b2000005", "b2000006", "c3000001"]
    assert result.editor_text == "Add subcommands."
    entry = result.summary_entry
    assert entry is not None and manager.get_leaf_id() == entry["id"] == result.new_leaf_id
    assert list(entry) == [
        "type",
        "id",
        "parentId",
        "timestamp",
        "fromId",
        "summary",
        "details",
        "fromExtension",
    ]
    assert entry["parentId"] == entry["fromId"] == "b2000002"
    assert entry["details"] == {"readFiles": ["cli.py"], "modifiedFiles": []}
    assert entry["fromExtension"] is False
    assert entry["summary"] == (
        f"{BRANCH_SUMMARY_PREAMBLE}\n\n## Goal\nAdd subcommands.\n\n<read-files>\ncli.py\n</read-files>"
    )
    # Exactly one line was appended; the old bytes are untouched.
    after = path.read_bytes()
    assert after.startswith(before) and after[len(before) :].count(b"\n") == 1
    assert [m["role"] for m in result.session_context.messages] == ["user", "assistant", "branchSummary"]

    # The prompt: tool result and label skipped, thinking/tool call/text in order.
    (call,) = summarizer.calls
    assert call["system_prompt"] == SUMMARIZATION_SYSTEM_PROMPT
    assert call["max_tokens"] == 2048
    assert call["user_prompt"] == (
        "<conversation>\n"
        "[Assistant thinking]: I should look at cli.py first.\n\n"
        '[Assistant tool calls]: read(path="cli.py")\n\n'
        "[Assistant]: Added `init` and `run` subcommands.\n"
        "</conversation>\n\n" + BRANCH_SUMMARY_PROMPT
    )


def test_custom_instructions_replace_the_default_prompt(tmp_path: Path) -> None:
    manager = SessionManager.open(_truncated_branching_file(tmp_path))
    summarizer = FakeSummarizer()
    asyncio.run(
        navigate_tree(
            manager, "b2000003", summarize=True, summarizer=summarizer, custom_instructions="Only list files."
        )
    )
    assert summarizer.calls[0]["user_prompt"].endswith("</conversation>\n\nOnly list files.")


def test_summary_of_a_root_user_message_becomes_a_new_root() -> None:
    manager = SessionManager.open(DATA / "handmade" / "v3_orphans_sorting_malformed.jsonl")
    result = asyncio.run(navigate_tree(manager, "r0000001", summarize=True, summarizer=FakeSummarizer()))
    entry = result.summary_entry
    assert entry is not None and entry["parentId"] is None and entry["fromId"] == "root"
    assert result.editor_text == "root question"


def test_moving_forward_with_summarize_writes_no_summary(tmp_path: Path) -> None:
    path = _copy(BRANCHING, tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, persist=True)
    manager.branch("b2000002")
    summarizer = FakeSummarizer()
    result = asyncio.run(navigate_tree(manager, "b2000008", summarize=True, summarizer=summarizer))
    assert result.entries_to_summarize == [] and result.summary_entry is None
    assert manager.get_leaf_id() == "b2000008"
    assert summarizer.calls == [] and path.read_bytes() == before


def test_branch_of_only_tool_results_is_stored_as_no_content(tmp_path: Path) -> None:
    manager = SessionManager.open(_truncated_branching_file(tmp_path))
    manager.branch("b2000005")  # old path below b2000004: only the tool result b2000005
    summarizer = FakeSummarizer()
    result = asyncio.run(navigate_tree(manager, "b2000004", summarize=True, summarizer=summarizer))
    assert result.summary_entry is not None
    assert result.summary_entry["summary"] == "No content to summarize"
    assert result.summary_entry["details"] == {"readFiles": [], "modifiedFiles": []}
    assert summarizer.calls == []


def test_summarizer_error_raises_and_changes_nothing(tmp_path: Path) -> None:
    path = _copy(BRANCHING, tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, persist=True)
    failing = FakeSummarizer(stop_reason="error", error="rate limited")
    with pytest.raises(NavigationError, match="^rate limited$"):
        asyncio.run(navigate_tree(manager, "b2000003", summarize=True, summarizer=failing))
    silent = FakeSummarizer(stop_reason="error")
    with pytest.raises(NavigationError, match="^Summarization failed$"):
        asyncio.run(navigate_tree(manager, "b2000003", summarize=True, summarizer=silent))
    assert manager.get_leaf_id() == "e5000001" and path.read_bytes() == before


def test_abort_mid_summary_leaves_file_and_leaf_unchanged(tmp_path: Path) -> None:
    path = _copy(BRANCHING, tmp_path)
    before = path.read_bytes()
    manager = SessionManager.open(path, persist=True)
    entry_count = len(manager.entries)
    tree_events: list[object] = []
    hooks = HookRunner()
    hooks.on(SESSION_TREE, tree_events.append)

    async def scenario() -> Any:
        controller = AbortController()
        summarizer = HangingSummarizer()
        task = asyncio.create_task(
            navigate_tree(
                manager,
                "b2000003",
                summarize=True,
                summarizer=summarizer,
                hooks=hooks,
                signal=controller.signal,
            )
        )
        await summarizer.started.wait()
        controller.abort()  # what Esc (abortBranchSummary) does
        result = await asyncio.wait_for(task, timeout=5)
        return result, summarizer

    result, summarizer = asyncio.run(scenario())
    assert result.cancelled is True and result.aborted is True and result.summary_entry is None
    assert summarizer.cancelled is True
    assert manager.get_leaf_id() == "e5000001" and len(manager.entries) == entry_count
    assert path.read_bytes() == before
    assert tree_events == []


def test_summarizer_reporting_aborted_counts_as_abort() -> None:
    manager = SessionManager.open(BRANCHING)
    result = asyncio.run(
        navigate_tree(manager, "b2000003", summarize=True, summarizer=FakeSummarizer(stop_reason="aborted"))
    )
    assert result.cancelled and result.aborted and manager.get_leaf_id() == "e5000001"


def test_signal_aborted_before_the_call_does_not_call_the_model() -> None:
    manager = SessionManager.open(BRANCHING)
    signal = AbortSignal()
    signal.abort()
    summarizer = FakeSummarizer()
    result = asyncio.run(
        navigate_tree(manager, "b2000003", summarize=True, summarizer=summarizer, signal=signal)
    )
    assert result.aborted and summarizer.calls == [] and len(manager.entries) == 15


# ---------------------------------------------------------------------------------------------------------
# Hooks around navigation
# ---------------------------------------------------------------------------------------------------------


def test_before_tree_hook_can_cancel_the_move() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    hooks.on(SESSION_BEFORE_TREE, lambda event: {"cancel": True})
    summarizer = FakeSummarizer()
    result = asyncio.run(
        navigate_tree(manager, "b2000003", summarize=True, summarizer=summarizer, hooks=hooks)
    )
    assert result.cancelled is True and result.aborted is False
    assert manager.get_leaf_id() == "e5000001" and summarizer.calls == [] and len(manager.entries) == 15


def test_before_tree_hook_receives_the_preparation_and_signal() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    seen: list[SessionBeforeTreeEvent] = []
    hooks.on(SESSION_BEFORE_TREE, seen.append)
    signal = AbortSignal()
    asyncio.run(navigate_tree(manager, "b2000006", hooks=hooks, signal=signal))
    (event,) = seen
    assert event.type == "session_before_tree" and event.signal is signal
    prep = event.preparation
    assert (prep.target_id, prep.old_leaf_id, prep.common_ancestor_id) == ("b2000006", "e5000001", "b2000002")
    assert prep.user_wants_summary is False
    assert [e["id"] for e in prep.entries_to_summarize][:2] == ["d4000001", "b2000007"]


def test_hook_summary_is_used_even_for_an_empty_branch_when_asked(tmp_path: Path) -> None:
    path = _copy(BRANCHING, tmp_path)
    manager = SessionManager.open(path, persist=True)
    manager.branch("b2000002")  # moving forward: nothing to summarize
    hooks = HookRunner()

    async def supply(event: SessionBeforeTreeEvent) -> SessionBeforeTreeResult:
        return SessionBeforeTreeResult(summary=HookSummary("From the extension.", {"source": "ext"}))

    hooks.on(SESSION_BEFORE_TREE, supply)
    tree_events: list[Any] = []
    hooks.on(SESSION_TREE, tree_events.append)
    summarizer = FakeSummarizer()
    result = asyncio.run(
        navigate_tree(manager, "b2000008", summarize=True, summarizer=summarizer, hooks=hooks)
    )
    entry = result.summary_entry
    assert entry is not None and summarizer.calls == []
    assert entry["summary"] == "From the extension." and entry["fromExtension"] is True
    assert entry["details"] == {"source": "ext"} and entry["parentId"] == "b2000008"
    (event,) = tree_events
    assert event.new_leaf_id == entry["id"] and event.old_leaf_id == "b2000002"
    assert event.summary_entry is entry and event.from_extension is True
    assert path.read_text().splitlines()[-1].endswith('"details":{"source":"ext"},"fromExtension":true}')


def test_hook_summary_is_ignored_when_no_summary_was_asked() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    hooks.on(SESSION_BEFORE_TREE, lambda event: {"summary": {"summary": "ignored"}})
    tree_events: list[Any] = []
    hooks.on(SESSION_TREE, tree_events.append)
    result = asyncio.run(navigate_tree(manager, "b2000006", hooks=hooks))
    assert result.summary_entry is None and manager.get_leaf_id() == "b2000006"
    assert tree_events[0].from_extension is None and tree_events[0].summary_entry is None


def test_hook_summary_without_details_omits_the_key() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    hooks.on(SESSION_BEFORE_TREE, lambda event: {"summary": {"summary": "plain"}})
    result = asyncio.run(
        navigate_tree(manager, "b2000006", summarize=True, summarizer=FakeSummarizer(), hooks=hooks)
    )
    assert result.summary_entry is not None
    assert "details" not in result.summary_entry and result.summary_entry["fromExtension"] is True


def test_failing_and_slow_tree_hooks_are_isolated() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner(timeout=0.05)
    order: list[str] = []

    def broken(event: object) -> None:
        order.append("broken")
        raise RuntimeError("boom")

    async def slow(event: object) -> dict[str, bool]:
        order.append("slow")
        await asyncio.sleep(10)
        return {"cancel": True}

    hooks.on(SESSION_BEFORE_TREE, broken, extension="broken-ext")
    hooks.on(SESSION_BEFORE_TREE, slow, extension="slow-ext")
    hooks.on(SESSION_BEFORE_TREE, lambda event: order.append("last"))
    result = asyncio.run(navigate_tree(manager, "b2000006", hooks=hooks))
    assert result.cancelled is False and manager.get_leaf_id() == "b2000006"
    assert order == ["broken", "slow", "last"]
    assert [(e.extension, e.event, e.error) for e in hooks.errors] == [
        ("broken-ext", "session_before_tree", "boom"),
        ("slow-ext", "session_before_tree", "handler timed out after 50ms"),
    ]


# ---------------------------------------------------------------------------------------------------------
# /branch
# ---------------------------------------------------------------------------------------------------------


def test_user_messages_for_branching_lists_every_user_message_in_file_order() -> None:
    manager = SessionManager.open(BRANCHING)
    choices = user_messages_for_branching(manager)
    assert [(c.entry_id, c.text) for c in choices] == [
        ("b2000001", "Write a CLI argument parser in Python."),
        ("b2000003", "Add subcommands."),
        ("b2000007", "Add subcommands using click instead."),
    ]


def test_user_messages_for_branching_skips_empty_text() -> None:
    manager = SessionManager.create("/tmp/x")
    manager.append_message(
        {"role": "user", "content": [{"type": "image", "data": "", "mimeType": "image/png"}]}
    )
    second = manager.append_message({"role": "user", "content": "hi"})
    assert [(c.entry_id, c.text) for c in user_messages_for_branching(manager)] == [(second, "hi")]


def _normalize_branched(lines: list[str], ref_branched: dict[str, Any], positions: dict[str, int]) -> str:
    """Reproduce the reference's ``normalization`` on a file we wrote (see ``branched.normalization``).

    Header id/timestamp/parentSession become placeholders; entries with ids unknown to the source (fresh
    label entries) get ``<fresh:k>`` / ``<fresh-ts:k>``; source ids become ``<id:N>`` (N = reference
    position), wherever they appear as a JSON string.
    """
    lines = list(lines)
    header = json.loads(lines[0])
    for key, placeholder in (
        ("id", "<new-session-id>"),
        ("timestamp", "<new-session-timestamp>"),
        ("parentSession", "<parent-session-file>"),
    ):
        lines[0] = lines[0].replace(json.dumps(header[key]), json.dumps(placeholder), 1)
    fresh = 0
    for number in range(1, len(lines)):
        if not lines[number]:
            continue
        entry = json.loads(lines[number])
        if entry["id"] not in positions:
            line = lines[number].replace(f'"id":"{entry["id"]}"', f'"id":"<fresh:{fresh}>"', 1)
            line = line.replace(f'"timestamp":"{entry["timestamp"]}"', f'"timestamp":"<fresh-ts:{fresh}>"', 1)
            lines[number] = line
            fresh += 1
    result = "\n".join(lines)
    for entry_id, position in positions.items():
        result = result.replace(f'"{entry_id}"', f'"<id:{position}>"')
    assert fresh == len(ref_branched["mask"]["fresh_entry_ids"])
    return result


def _recovered_for_branching(manager: SessionManager) -> tuple[dict[str, Any], set[tuple[str, str]]]:
    """What Arbor recovered from glued lines that v15 never saw: ``{id: parentId}`` of those entries, and
    the ``(target, label)`` of recovered label entries (they re-appear as fresh labels in a branched file).
    """
    recovered, _ = _recovered(manager)
    labels = {
        (manager.by_id[i]["targetId"], manager.by_id[i].get("label"))
        for i in recovered
        if manager.by_id[i].get("type") == "label"
    }
    return {i: manager.by_id[i].get("parentId") for i in recovered}, labels


def _check_branched_file(
    written: Path,
    source: Path,
    ref_branched: dict[str, Any],
    positions: dict[str, int],
    recovered: tuple[dict[str, Any], set[tuple[str, str]]],
) -> set[str]:
    """Compare a file we wrote with the reference; returns the ids of the lines left out (see below)."""
    recovered_parents, recovered_labels = recovered
    text = written.read_text(encoding="utf-8")
    header = json.loads(text.split("\n", 1)[0])
    assert written.parent == source.parent
    assert written.name == f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"
    assert list(header) == ref_branched["header_keys"]
    assert header["parentSession"] == str(source)
    # Lines that exist only because Arbor recovers glued lines (spec §21.4) are left out, and links to a
    # left-out entry point to its parent, which is what v15's file holds.
    lines: list[str] = []
    dropped: set[str] = set()
    for line in text.split("\n"):
        entry = json.loads(line) if line and lines else None
        if entry and (
            entry["id"] in recovered_parents
            or (
                entry["id"] not in positions
                and (entry.get("targetId"), entry.get("label")) in recovered_labels
            )
        ):
            dropped.add(entry["id"])
            continue
        lines.append(line)
    assert len(lines) - 1 == ref_branched["line_count"]
    kept = "\n".join(lines)
    for entry_id in dropped & recovered_parents.keys():
        kept = kept.replace(f'"{entry_id}"', json.dumps(recovered_parents[entry_id]))
    normalized = _normalize_branched(kept.split("\n"), ref_branched, positions)
    if "normalized_text" in ref_branched:
        assert normalized == ref_branched["normalized_text"]
    else:
        assert (
            normalized.split("\n")[: len(ref_branched["normalized_head"])] == ref_branched["normalized_head"]
        )
        assert hashlib.sha256(normalized.encode()).hexdigest() == ref_branched["normalized_sha256"]
    return dropped


def _positions(manager: SessionManager) -> dict[str, int]:
    """Our id -> the entry's position in the reference's ``entries`` (v15 numbering)."""
    return {manager.entries[index]["id"]: pos for pos, index in enumerate(omp_view(manager))}


@pytest.mark.parametrize("case", [c for c in CASES if "entryId" in c.reference.get("branched", {})], ids=str)
def test_branch_from_user_message_writes_the_file_the_original_wrote(case: Case, tmp_path: Path) -> None:
    ref = case.reference["branched"]
    source = _copy(case.path, tmp_path)
    before = source.read_bytes()
    manager = SessionManager.open(source, persist=True, agent="omp15")
    ids = IdMap(manager, case.reference)
    positions = _positions(manager)
    recovered = _recovered_for_branching(manager)
    hooks = HookRunner()
    branch_events: list[Any] = []
    hooks.on(SESSION_BRANCH, branch_events.append)

    result = asyncio.run(branch_from_user_message(manager, ids(ref["entryId"]), hooks=hooks))

    assert result.cancelled is ref["cancelled"] and result.selected_text == ref["selectedText"]
    assert result.new_session_file is not None and Path(result.new_session_file).exists()
    assert source.read_bytes() == before  # source_unchanged
    assert len(list(source.parent.iterdir())) == ref["files_in_session_dir"]
    assert [event.previous_session_file for event in branch_events] == [str(source)]
    dropped = _check_branched_file(Path(result.new_session_file), source, ref, positions, recovered)
    # v1 sources: the reference's leaf_after is an id of its own re-migrated instance; it is the parent.
    expected_leaf = ids(ref["parentId"]) if "ids_note" in ref else ids(ref["leaf_after"])
    assert manager.get_leaf_id() == expected_leaf or manager.get_leaf_id() in dropped


@pytest.mark.parametrize("case", [c for c in CASES if c.reference.get("branched_extra")], ids=str)
def test_create_branched_session_at_the_leaf_writes_the_file_the_original_wrote(
    case: Case, tmp_path: Path
) -> None:
    (ref,) = case.reference["branched_extra"]
    source = _copy(case.path, tmp_path)
    manager = SessionManager.open(source, persist=True, agent="omp15")
    ids = IdMap(manager, case.reference)
    positions = _positions(manager)
    recovered = _recovered_for_branching(manager)
    written = manager.create_branched_session(ids(ref["entryId"]))
    assert written is not None
    dropped = _check_branched_file(Path(written), source, ref, positions, recovered)
    if ref["mask"]["fresh_entry_ids"]:
        assert manager.get_leaf_id() not in positions
    elif "ids_note" in ref:
        assert ref["leaf_after"] == ref["instance_entry_id"] and manager.get_leaf_id() == ids(ref["entryId"])
    else:
        assert manager.get_leaf_id() == ids(ref["leaf_after"]) or manager.get_leaf_id() in dropped


def test_branching_from_a_root_message_starts_an_empty_session(tmp_path: Path) -> None:
    source = _copy(DATA / "handmade" / "v3_orphans_sorting_malformed.jsonl", tmp_path)
    manager = SessionManager.open(source, persist=True)
    result = asyncio.run(branch_from_user_message(manager, "r0000001"))
    assert result.selected_text == "root question" and result.cancelled is False
    assert manager.entries == [] and manager.get_leaf_id() is None
    assert manager.header["parentSession"] == str(source)
    assert result.new_session_file == manager.session_file
    # Nothing is written until the first assistant message (lazy flush).
    assert sorted(p.name for p in source.parent.iterdir()) == [source.name]


@pytest.mark.parametrize("entry_id", ["b2000002", "c3000001", "missing"])
def test_branching_from_anything_but_a_user_message_is_refused(entry_id: str) -> None:
    manager = SessionManager.open(BRANCHING)
    with pytest.raises(InvalidBranchEntry, match="^Invalid entry ID for branching$"):
        asyncio.run(branch_from_user_message(manager, entry_id))


def test_before_branch_hook_can_cancel(tmp_path: Path) -> None:
    source = _copy(BRANCHING, tmp_path)
    manager = SessionManager.open(source, persist=True)
    hooks = HookRunner()
    hooks.on(SESSION_BEFORE_BRANCH, lambda event: {"cancel": True})
    after: list[Any] = []
    hooks.on(SESSION_BRANCH, after.append)
    result = asyncio.run(branch_from_user_message(manager, "b2000003", hooks=hooks))
    assert result.cancelled is True and result.selected_text == "Add subcommands."
    assert result.new_session_file is None and after == []
    assert manager.session_file == str(source) and len(manager.entries) == 15
    assert [p.name for p in source.parent.iterdir()] == [source.name]


def test_before_branch_hook_can_skip_the_conversation_restore() -> None:
    manager = SessionManager.open(BRANCHING)
    hooks = HookRunner()
    seen: list[str] = []

    async def handler(event: Any) -> dict[str, bool]:
        seen.append(event.entry_id)
        return {"skipConversationRestore": True}

    hooks.on(SESSION_BEFORE_BRANCH, handler)
    result = asyncio.run(branch_from_user_message(manager, "b2000003", hooks=hooks))
    assert seen == ["b2000003"] and result.skip_conversation_restore is True
    assert [e["id"] for e in manager.entries] == ["a1000001", "a1000002", "b2000001", "b2000002"]
