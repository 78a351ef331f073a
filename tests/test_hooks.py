"""The extension/hook runner (spec §16): order, combination of results, isolation of failures."""

from __future__ import annotations

import asyncio
from typing import Any

from treeview.session.hooks import (
    DEFAULT_HANDLER_TIMEOUT,
    SESSION_BEFORE_BRANCH,
    SESSION_BEFORE_TREE,
    SESSION_BRANCH,
    ExtensionError,
    HookRunner,
    SessionBeforeBranchEvent,
    SessionBeforeBranchResult,
    SessionBranchEvent,
    result_field,
)


def _emit(runner: HookRunner, event: Any) -> Any:
    return asyncio.run(runner.emit(event))


def test_default_timeout_is_thirty_seconds() -> None:
    assert DEFAULT_HANDLER_TIMEOUT == 30.0 and HookRunner().timeout == 30.0


def test_handlers_run_one_after_another_in_registration_order() -> None:
    runner = HookRunner()
    log: list[str] = []

    def make(name: str, delay: float) -> Any:
        async def handler(event: Any) -> None:
            log.append(f"{name} start")
            await asyncio.sleep(delay)
            log.append(f"{name} end")

        return handler

    runner.on(SESSION_BRANCH, make("first", 0.03))
    runner.on(SESSION_BRANCH, make("second", 0))
    runner.on(SESSION_BRANCH, lambda event: log.append("sync"))
    assert _emit(runner, SessionBranchEvent(previous_session_file=None)) is None
    assert log == ["first start", "first end", "second start", "second end", "sync"]


def test_last_non_none_result_wins_for_before_events() -> None:
    runner = HookRunner()
    runner.on(SESSION_BEFORE_BRANCH, lambda event: {"skipConversationRestore": False})
    runner.on(SESSION_BEFORE_BRANCH, lambda event: SessionBeforeBranchResult(skip_conversation_restore=True))
    runner.on(SESSION_BEFORE_BRANCH, lambda event: None)
    result = _emit(runner, SessionBeforeBranchEvent(entry_id="x"))
    assert result_field(result, "skip_conversation_restore") is True


def test_first_cancel_returns_immediately() -> None:
    runner = HookRunner()
    ran: list[str] = []
    runner.on(SESSION_BEFORE_TREE, lambda event: ran.append("a") or {"cancel": False, "tag": "a"})
    runner.on(SESSION_BEFORE_TREE, lambda event: ran.append("b") or {"cancel": True, "tag": "b"})
    runner.on(SESSION_BEFORE_TREE, lambda event: ran.append("c") or {"cancel": True, "tag": "c"})
    result = _emit(runner, {"type": SESSION_BEFORE_TREE})
    assert result == {"cancel": True, "tag": "b"} and ran == ["a", "b"]


def test_results_of_other_events_are_ignored() -> None:
    runner = HookRunner()
    runner.on(SESSION_BRANCH, lambda event: {"cancel": True})
    assert _emit(runner, SessionBranchEvent(previous_session_file="/x")) is None


def test_raising_handler_is_isolated_and_reported() -> None:
    runner = HookRunner()
    reported: list[ExtensionError] = []
    runner.on_error(reported.append)

    async def broken(event: Any) -> Any:
        raise ValueError("bad extension")

    runner.on(SESSION_BEFORE_BRANCH, lambda event: {"skipConversationRestore": True}, extension="good")
    runner.on(SESSION_BEFORE_BRANCH, broken, extension="broken")
    result = _emit(runner, SessionBeforeBranchEvent(entry_id="x"))
    # The failing handler's result counts as None, so the earlier result still wins.
    assert result == {"skipConversationRestore": True}
    (error,) = reported
    assert (error.extension, error.event, error.error) == ("broken", "session_before_branch", "bad extension")
    assert error.stack is not None and "ValueError" in error.stack
    assert runner.errors == reported


def test_timed_out_handler_is_stopped_and_reported() -> None:
    runner = HookRunner(timeout=0.02)
    state = {"finished": False}

    async def slow(event: Any) -> dict[str, bool]:
        await asyncio.sleep(5)
        state["finished"] = True
        return {"cancel": True}

    runner.on(SESSION_BEFORE_TREE, slow, extension="slow")
    runner.on(SESSION_BEFORE_TREE, lambda event: {"summary": {"summary": "s"}}, extension="fast")
    result = _emit(runner, {"type": SESSION_BEFORE_TREE})
    assert result == {"summary": {"summary": "s"}} and state["finished"] is False
    assert [(e.extension, e.error) for e in runner.errors] == [("slow", "handler timed out after 20ms")]


def test_a_failing_error_listener_does_not_break_the_emit() -> None:
    runner = HookRunner()

    def bad_listener(error: ExtensionError) -> None:
        raise RuntimeError("listener")

    runner.on_error(bad_listener)
    runner.on(SESSION_BRANCH, lambda event: 1 / 0)
    assert _emit(runner, SessionBranchEvent(previous_session_file=None)) is None
    assert runner.errors[0].error == "division by zero"


def test_unregistering_a_handler() -> None:
    runner = HookRunner()
    calls: list[Any] = []
    remove = runner.on(SESSION_BRANCH, calls.append)
    assert runner.has_handlers(SESSION_BRANCH)
    remove()
    assert not runner.has_handlers(SESSION_BRANCH)
    _emit(runner, SessionBranchEvent(previous_session_file=None))
    assert calls == []


def test_result_field_reads_objects_and_mappings() -> None:
    assert result_field(None, "cancel") is None
    assert result_field({"cancel": True}, "cancel") is True
    assert result_field({"skipConversationRestore": True}, "skip_conversation_restore") is True
    assert result_field(SessionBeforeBranchResult(cancel=True), "cancel") is True
    assert result_field(object(), "cancel", False) is False
