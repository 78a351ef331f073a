"""Extensions (spec §16): loading ``ARBOR_EXTENSIONS``, the process-wide runner, worker threads and timeouts,
the context handlers read, the system check, and the example extension ``keep_labeled_leaf``."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from tests.reference import DATA, import_fixture
from treeview.contrib import keep_labeled_leaf
from treeview.extensions import (
    KEPT_ERRORS,
    ExtensionRegistry,
    HookContext,
    build_hook_runner,
    check_extensions,
    current_context,
    hook_context,
    hook_runner,
    load_extension,
    reset_hook_runner,
    stored_view,
)
from treeview.session.branch_summary import AbortSignal
from treeview.session.hooks import (
    SESSION_BEFORE_BRANCH,
    SESSION_BEFORE_TREE,
    SESSION_BRANCH,
    SESSION_TREE,
    SessionBeforeBranchEvent,
    SessionBeforeTreeEvent,
    SessionBranchEvent,
    SessionTreeEvent,
    TreePreparation,
    result_field,
)
from treeview.session.navigation import navigate_tree
from treeview.session.session_manager import SessionManager

BRANCHING = DATA / "handmade" / "v3_branching_labels.jsonl"
CALLS: list[str] = []


@pytest.fixture(autouse=True)
def fresh_runner() -> Iterator[None]:
    CALLS.clear()
    reset_hook_runner()
    yield
    reset_hook_runner()


@pytest.fixture
def fake_module() -> Iterator[Any]:
    """Put modules in ``sys.modules`` for the test only: ``fake_module("name", register=...)``."""
    added: list[str] = []

    def make(name: str, **attributes: Any) -> types.ModuleType:
        module = types.ModuleType(name)
        for key, value in attributes.items():
            setattr(module, key, value)
        sys.modules[name] = module
        added.append(name)
        return module

    yield make
    for name in added:
        sys.modules.pop(name, None)


def emit(runner: Any, event: Any) -> Any:
    return asyncio.run(runner.emit(event))


def before_branch() -> SessionBeforeBranchEvent:
    return SessionBeforeBranchEvent(entry_id="x")


# Registered by dotted path in the tests below.
def register_recorder(runner: ExtensionRegistry) -> None:
    runner.on(SESSION_BRANCH, lambda event: CALLS.append(f"branch from {event.previous_session_file}"))


# -- loading -------------------------------------------------------------------------------------------------


def test_a_module_path_and_a_function_path_both_register(fake_module: Any) -> None:
    fake_module("arbor_test_ext_module", register=lambda runner: runner.on(SESSION_TREE, CALLS.append))
    runner = build_hook_runner(["arbor_test_ext_module", "tests.test_extensions.register_recorder"], 5)

    assert runner.timeout == 5.0
    assert runner.has_handlers(SESSION_TREE) and runner.has_handlers(SESSION_BRANCH)
    emit(runner, SessionBranchEvent(previous_session_file="/a.jsonl"))
    assert CALLS == ["branch from /a.jsonl"]


def test_hook_runner_is_built_once_from_the_settings_and_rebuilt_when_they_change() -> None:
    with override_settings(ARBOR_EXTENSIONS=[], ARBOR_EXTENSION_TIMEOUT=30):
        empty = hook_runner()
        assert hook_runner() is empty
        assert not any(empty.has_handlers(event) for event in (SESSION_BRANCH, SESSION_BEFORE_TREE))
        assert empty.timeout == 30.0
    with override_settings(
        ARBOR_EXTENSIONS=["tests.test_extensions.register_recorder"], ARBOR_EXTENSION_TIMEOUT=7
    ):
        runner = hook_runner()
        assert runner is not empty and runner.has_handlers(SESSION_BRANCH) and runner.timeout == 7.0
        assert hook_runner() is runner
        reset_hook_runner()
        assert hook_runner() is not runner


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("arbor_no_such_module", "extension arbor_no_such_module cannot be imported"),
        ("tests.test_extensions.no_such_function", "cannot be imported"),
        ("tests.test_extensions.CALLS", "is not a register(runner) function"),
        ("tests.reference", "has no register(runner) function"),
    ],
)
def test_an_extension_that_cannot_be_loaded_is_a_configuration_error(path: str, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_extension(path)
    with override_settings(ARBOR_EXTENSIONS=[path]), pytest.raises(ImproperlyConfigured):
        hook_runner()


def test_a_missing_dependency_inside_an_extension_is_reported_as_such(
    fake_module: Any, tmp_path: Path
) -> None:
    package = tmp_path / "arbor_broken_ext"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import arbor_missing_dependency\n\ndef register(runner):\n    pass\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(ImproperlyConfigured, match="No module named 'arbor_missing_dependency'"):
            load_extension("arbor_broken_ext")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("arbor_broken_ext", None)


def test_register_failing_or_naming_an_unknown_event_is_a_configuration_error(fake_module: Any) -> None:
    def broken(runner: ExtensionRegistry) -> None:
        raise ValueError("oops")

    fake_module("arbor_test_ext_broken", register=broken)
    with pytest.raises(
        ImproperlyConfigured, match="arbor_test_ext_broken: register\\(\\) failed: ValueError"
    ):
        build_hook_runner(["arbor_test_ext_broken"], 1)

    fake_module("arbor_test_ext_typo", register=lambda runner: runner.on("session_before_fork", print))
    with pytest.raises(ImproperlyConfigured, match="unknown event 'session_before_fork'"):
        build_hook_runner(["arbor_test_ext_typo"], 1)


def test_the_system_check_reports_extensions_that_cannot_be_loaded() -> None:
    with override_settings(
        ARBOR_EXTENSIONS=["tests.test_extensions.register_recorder", "arbor_no_such_module"]
    ):
        (problem,) = check_extensions()
        assert problem.id == "treeview.E001" and "arbor_no_such_module" in problem.msg
        with pytest.raises(SystemCheckError, match="treeview.E001"):
            call_command("check")
    with override_settings(ARBOR_EXTENSIONS=["treeview.contrib.keep_labeled_leaf"]):
        assert check_extensions() == []


# -- running handlers ----------------------------------------------------------------------------------------


def test_plain_handlers_run_in_a_worker_thread_with_the_context(fake_module: Any) -> None:
    seen: list[tuple[str, Any]] = []

    def plain(event: Any) -> dict[str, bool]:
        context = current_context()
        seen.append((threading.current_thread().name, context and context.label("b1")))
        return {"cancel": True}

    async def coroutine(event: Any) -> None:
        seen.append((threading.current_thread().name, "never: the plain handler cancelled"))

    fake_module(
        "arbor_test_ext_threads",
        register=lambda r: (r.on(SESSION_BEFORE_BRANCH, plain), r.on(SESSION_BEFORE_BRANCH, coroutine)),
    )
    runner = build_hook_runner(["arbor_test_ext_threads"], 5)

    async def run() -> Any:
        with hook_context(None, {"b1": "checkpoint"}):  # type: ignore[arg-type]
            return await runner.emit(before_branch())

    result = asyncio.run(run())

    assert result_field(result, "cancel") is True
    assert len(seen) == 1
    thread, label = seen[0]
    assert thread.startswith("arbor-extension") and label == "checkpoint"


def test_async_handlers_run_on_the_loop_and_see_the_context(fake_module: Any) -> None:
    seen: list[Any] = []

    async def handler(event: Any) -> None:
        context = current_context()
        seen.append((threading.current_thread() is threading.main_thread(), context and context.entry("e1")))

    fake_module("arbor_test_ext_async", register=lambda r: r.on(SESSION_TREE, handler))
    runner = build_hook_runner(["arbor_test_ext_async"], 5)

    async def run() -> None:
        with hook_context(None, {}, entries={"e1": {"type": "label"}}):  # type: ignore[arg-type]
            await runner.emit(SessionTreeEvent(new_leaf_id="a", old_leaf_id="b"))
        assert current_context() is None

    asyncio.run(run())
    assert seen == [(True, {"type": "label"})]


def test_a_slow_plain_handler_times_out_and_the_next_one_runs(fake_module: Any, caplog: Any) -> None:
    release = threading.Event()

    def slow(event: Any) -> dict[str, bool]:
        release.wait(10)
        return {"cancel": True}

    fake_module("arbor_test_ext_slow", register=lambda r: r.on(SESSION_BEFORE_BRANCH, slow))
    fake_module(
        "arbor_test_ext_fast", register=lambda r: r.on(SESSION_BEFORE_BRANCH, lambda e: CALLS.append("fast"))
    )
    runner = build_hook_runner(["arbor_test_ext_slow", "arbor_test_ext_fast"], 0.2)
    started = time.monotonic()
    try:
        result = emit(runner, before_branch())
    finally:
        release.set()

    assert time.monotonic() - started < 5
    assert result is None and CALLS == ["fast"]
    assert [(e.extension, e.event, e.error) for e in runner.errors] == [
        ("arbor_test_ext_slow", SESSION_BEFORE_BRANCH, "handler timed out after 200ms")
    ]
    assert "timed out" in caplog.text


def test_a_failing_handler_is_logged_and_isolated(fake_module: Any, caplog: Any) -> None:
    def fail(event: Any) -> None:
        raise RuntimeError("kaput")

    fake_module("arbor_test_ext_fail", register=lambda r: r.on(SESSION_BEFORE_TREE, fail))
    fake_module(
        "arbor_test_ext_after",
        register=lambda r: r.on(SESSION_BEFORE_TREE, lambda e: {"summary": {"summary": "S"}}),
    )
    runner = build_hook_runner(["arbor_test_ext_fail", "arbor_test_ext_after"], 5)
    event = SessionBeforeTreeEvent(TreePreparation("t", "o", None, [], True), AbortSignal())

    result = emit(runner, event)

    assert result_field(result_field(result, "summary"), "summary") == "S"
    (error,) = runner.errors
    assert (error.extension, error.error) == ("arbor_test_ext_fail", "kaput") and "RuntimeError" in str(
        error.stack
    )
    assert "arbor_test_ext_fail" in caplog.text and "kaput" in caplog.text


def test_the_runner_keeps_only_the_recent_failures(fake_module: Any) -> None:
    def fail(event: Any) -> None:
        raise RuntimeError("again")

    fake_module("arbor_test_ext_noisy", register=lambda r: r.on(SESSION_BRANCH, fail))
    runner = build_hook_runner(["arbor_test_ext_noisy"], 5)

    async def many() -> None:
        for _ in range(KEPT_ERRORS + 5):
            await runner.emit(SessionBranchEvent(previous_session_file=None))

    asyncio.run(many())
    assert len(runner.errors) == KEPT_ERRORS


# -- the example extension -----------------------------------------------------------------------------------


def context_for(manager: SessionManager) -> HookContext:
    return HookContext(session=None, labels=dict(manager.labels), lookup=manager.get_entry)  # type: ignore[arg-type]


def tree_event(manager: SessionManager, target: str) -> SessionBeforeTreeEvent:
    preparation = TreePreparation(target, manager.get_leaf_id(), None, [], False)
    return SessionBeforeTreeEvent(preparation=preparation, signal=AbortSignal())


def decide(manager: SessionManager, target: str) -> Any:
    with hook_context(None, dict(manager.labels), entries=manager.get_entry):  # type: ignore[arg-type]
        return keep_labeled_leaf.before_tree(tree_event(manager, target))


def branching_at(leaf: str) -> SessionManager:
    manager = SessionManager.open(BRANCHING)
    manager.branch(leaf)
    return manager


def test_keep_labeled_leaf_refuses_to_leave_a_labeled_leaf() -> None:
    manager = branching_at("b2000008")  # labeled "click-version" in the fixture
    assert manager.labels == {"b2000008": "click-version"}
    result = decide(manager, "a1000001")
    assert result is not None and result.cancel is True
    # The label entries above the labeled leaf (c3000002, c3000003) are the same place.
    manager.branch("c3000003")
    assert decide(manager, "b2000003").cancel is True
    assert decide(manager, "c3000002") is None and decide(manager, "b2000008") is None


def test_keep_labeled_leaf_lets_an_unlabeled_leaf_go() -> None:
    # The fixture's own leaf: a custom entry below the label entries, not itself labeled.
    assert decide(SessionManager.open(BRANCHING), "a1000001") is None
    assert decide(branching_at("b2000007"), "a1000001") is None


def test_keep_labeled_leaf_looks_through_label_entries_at_the_tip() -> None:
    manager = SessionManager.create("/tmp/x")
    question = manager.append_message({"role": "user", "content": "q"})
    answer = manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "a"}]})
    label = manager.append_label_change(answer, "keep")  # the leaf is now the label entry
    assert manager.get_leaf_id() == label

    assert decide(manager, question).cancel is True
    # Staying: the labeled entry itself, below the label entries.
    assert decide(manager, answer) is None
    # Cleared: free to go.
    manager.append_label_change(answer, None)
    assert decide(manager, question) is None


def test_keep_labeled_leaf_re_editing_the_labeled_user_message_is_leaving() -> None:
    manager = SessionManager.create("/tmp/x")
    manager.append_message({"role": "user", "content": "first"})
    manager.append_message({"role": "assistant", "content": [{"type": "text", "text": "a"}]})
    question = manager.append_message({"role": "user", "content": "second"})
    manager.append_label_change(question, "here")
    # Selecting a user message moves the leaf to its parent: that leaves the labeled message.
    assert decide(manager, question).cancel is True


def test_keep_labeled_leaf_without_a_context_does_nothing() -> None:
    manager = branching_at("b2000008")
    assert keep_labeled_leaf.before_tree(tree_event(manager, "a1000001")) is None


def test_keep_labeled_leaf_cancels_the_cores_navigation() -> None:
    manager = branching_at("b2000008")
    runner = build_hook_runner(["treeview.contrib.keep_labeled_leaf"], 5)

    async def navigate(target: str) -> Any:
        with hook_context(None, dict(manager.labels), entries=manager.get_entry):  # type: ignore[arg-type]
            return await navigate_tree(manager, target, hooks=runner)

    result = asyncio.run(navigate("a1000001"))
    assert result.cancelled is True and manager.get_leaf_id() == "b2000008"
    assert runner.errors == []


def test_keep_labeled_leaf_is_registered_for_session_before_tree_only() -> None:
    runner = build_hook_runner(["treeview.contrib.keep_labeled_leaf"], 5)
    assert runner.has_handlers(SESSION_BEFORE_TREE)
    assert not any(runner.has_handlers(e) for e in (SESSION_TREE, SESSION_BEFORE_BRANCH, SESSION_BRANCH))


@pytest.mark.django_db
def test_keep_labeled_leaf_with_a_stored_session(tmp_path: Path) -> None:
    from treeview.services.append import set_label

    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    labels, entries = stored_view(session)
    assert labels == {"b2000008": "click-version"} and entries("c3000002")["type"] == "label"
    with hook_context(session, labels, entries=entries):
        assert keep_labeled_leaf.before_tree(tree_event_at(session.leaf_id, "a1000001")) is None

    set_label(session, "e5000001", "done here")  # labels the leaf; the leaf moves to the new label entry
    session.refresh_from_db()
    labels, entries = stored_view(session)
    with hook_context(session, labels, entries=entries):
        result = keep_labeled_leaf.before_tree(tree_event_at(session.leaf_id, "a1000001"))
        assert keep_labeled_leaf.before_tree(tree_event_at(session.leaf_id, "e5000001")) is None
    assert result is not None and result.cancel is True


def tree_event_at(leaf: str | None, target: str) -> SessionBeforeTreeEvent:
    return SessionBeforeTreeEvent(TreePreparation(target, leaf, None, [], False), AbortSignal())
