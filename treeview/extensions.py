"""Extensions: Python handlers for the session-tree events of spec §16, listed in ``ARBOR_EXTENSIONS``.

Each dotted path names a module with a ``register(runner)`` function, or such a function itself. ``register``
is called once per process, when the first action needs the hooks, with an :class:`ExtensionRegistry`:
``runner.on(event, handler)`` adds a handler for ``session_before_tree``, ``session_tree``,
``session_before_branch`` or ``session_branch``. The events and results are the core's
(``treeview.session.hooks``), and so is the runner (:class:`~treeview.session.hooks.HookRunner`): handlers
run one after the other, each under ``ARBOR_EXTENSION_TIMEOUT``; one that raises or times out is logged and
counts as no answer. Plain functions run in a worker thread (they never block the server's event loop, the
timeout applies to them too, and they may use the ORM); ``async`` handlers run on the loop.

The action emitting an event says which session it is about with :func:`hook_context`; handlers read it
with :func:`current_context` (the session's labels and entries, which the core's events do not carry).
See docs/extensions.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import importlib
import inspect
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.db import connections
from django.dispatch import receiver
from django.utils.module_loading import import_string

from treeview.session.hooks import (
    SESSION_BEFORE_BRANCH,
    SESSION_BEFORE_TREE,
    SESSION_BRANCH,
    SESSION_TREE,
    ExtensionError,
    Handler,
    HookRunner,
)

if TYPE_CHECKING:
    from treeview.models import AgentSession

__all__ = [
    "EVENTS",
    "ExtensionRegistry",
    "HookContext",
    "build_hook_runner",
    "check_extensions",
    "current_context",
    "hook_context",
    "hook_runner",
    "load_extension",
    "reset_hook_runner",
    "stored_view",
]

logger = logging.getLogger(__name__)

#: The events Arbor emits (§16). v15's compaction and switch events have no counterpart here.
EVENTS = (SESSION_BEFORE_TREE, SESSION_TREE, SESSION_BEFORE_BRANCH, SESSION_BRANCH)

#: Failures the process-wide runner remembers (``runner.errors``); older ones are only in the log.
KEPT_ERRORS = 100


# -- what handlers know about the session ------------------------------------------------------------------

EntryLookup = Callable[[str], Mapping[str, Any] | None]


def _no_entries(_: str) -> None:
    return None


@dataclass(frozen=True)
class HookContext:
    """The session an event is about, as the emitting action knows it.

    ``session`` is the stored :class:`~treeview.models.AgentSession` (for ``session_branch``: the session
    branched from; ``new_session`` is the one created). ``labels`` maps entry ids to their resolved labels.
    :meth:`entry` gives an entry by id with at least ``type``, ``id`` and ``parentId`` (``None`` when unknown
    or when the action gave no entries).
    """

    session: AgentSession
    labels: Mapping[str, str] = field(default_factory=dict)
    new_session: AgentSession | None = None
    lookup: EntryLookup = field(default=_no_entries, repr=False)

    def label(self, entry_id: str | None) -> str | None:
        """The label of ``entry_id`` (None when it has none)."""
        return self.labels.get(entry_id) if entry_id else None

    def entry(self, entry_id: str | None) -> Mapping[str, Any] | None:
        return self.lookup(entry_id) if entry_id else None


_current: contextvars.ContextVar[HookContext | None] = contextvars.ContextVar(
    "arbor_hook_context", default=None
)


@contextmanager
def hook_context(
    session: AgentSession,
    labels: Mapping[str, str],
    *,
    entries: Mapping[str, Mapping[str, Any]] | EntryLookup | None = None,
    new_session: AgentSession | None = None,
) -> Iterator[HookContext]:
    """Make ``session`` the context of the events emitted inside the block (sync or async code alike).

    ``entries`` is a mapping of entry ids to entries or a function returning one (or None). Give what the
    action has in memory: handlers may run on the event loop, where the ORM cannot be used.
    """
    if entries is None:
        lookup: EntryLookup = _no_entries
    elif isinstance(entries, Mapping):
        lookup = entries.get
    else:
        lookup = entries
    context = HookContext(session, labels, new_session, lookup)
    token = _current.set(context)
    try:
        yield context
    finally:
        _current.reset(token)


def stored_view(session: AgentSession) -> tuple[dict[str, str], EntryLookup]:
    """The labels and an entry lookup of a stored session, for :func:`hook_context`, from the cached tree
    of its stored leaf (entries have ``type``, ``id``, ``parentId``, ``timestamp`` and a message's
    ``role``). Uses the ORM: call it from sync code (``sync_to_async`` in a coroutine)."""
    from treeview import explorer

    by_id = explorer.explorer_tree(session, session.leaf_id).flat.by_id
    labels = {entry_id: node.node.label for entry_id, node in by_id.items() if node.node.label}

    def lookup(entry_id: str) -> Mapping[str, Any] | None:
        node = by_id.get(entry_id)
        return node.entry if node is not None else None

    return labels, lookup


def current_context() -> HookContext | None:
    """The context of the event being handled (None when the emitter set none, e.g. the core's CLI)."""
    return _current.get()


# -- registering handlers ------------------------------------------------------------------------------------


def _call_in_worker(handler: Handler, event: object) -> Any:
    try:
        return handler(event)
    finally:
        # The ORM opens a connection per thread: close the one this call may have opened.
        connections.close_all()


def _settle(future: asyncio.Future[Any], outcome: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled: the handler timed out and nobody waits for it any more
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(outcome)


def _in_thread(loop: asyncio.AbstractEventLoop, call: Callable[[], Any]) -> asyncio.Future[Any]:
    """Run ``call`` in a new daemon thread: one that hangs past its timeout can neither hold up later
    handlers (as a full pool would) nor the server's shutdown (as a pool's threads, joined at exit, would)."""
    future: asyncio.Future[Any] = loop.create_future()

    def target() -> None:
        outcome: Any = None
        error: BaseException | None = None
        try:
            outcome = call()
        except BaseException as exc:
            error = exc
        # A closed loop (RuntimeError): the emitting action is long gone.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, future, outcome, error)

    threading.Thread(target=target, name="arbor-extension", daemon=True).start()
    return future


def _is_async(handler: Handler) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(
        getattr(handler, "__call__", None)  # noqa: B004 -- an object whose __call__ is async
    )


def _in_worker_thread(handler: Handler) -> Handler:
    """``handler`` as a coroutine function that runs it in a worker thread, with the caller's context."""

    @functools.wraps(handler)
    async def run(event: object) -> Any:
        context = contextvars.copy_context()
        call = functools.partial(context.run, _call_in_worker, handler, event)
        # Cancelling (the timeout) stops waiting at once; the thread finishes on its own.
        outcome = await _in_thread(asyncio.get_running_loop(), call)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    return run


class ExtensionRegistry:
    """What an extension's ``register(runner)`` receives: :meth:`on` adds handlers under its name."""

    def __init__(self, runner: HookRunner, name: str) -> None:
        self.runner = runner
        self.name = name

    @property
    def timeout(self) -> float:
        """Seconds one handler may take (``ARBOR_EXTENSION_TIMEOUT``)."""
        return self.runner.timeout

    def on(self, event: str, handler: Handler) -> Callable[[], None]:
        """Call ``handler(event)`` for every ``event``; returns a function that removes it again."""
        if event not in EVENTS:
            raise ImproperlyConfigured(
                f"extension {self.name}: unknown event {event!r} (Arbor emits {', '.join(EVENTS)})"
            )
        if not callable(handler):
            raise ImproperlyConfigured(f"extension {self.name}: the handler for {event} is not callable")
        wrapped = handler if _is_async(handler) else _in_worker_thread(handler)
        return self.runner.on(event, wrapped, extension=self.name)


def load_extension(path: str) -> Callable[[ExtensionRegistry], Any]:
    """The ``register`` function ``path`` names (a module having one, or the function itself).

    Raises ImproperlyConfigured with the reason when it cannot be imported or is not callable.
    """
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as error:
        # Only "path is not a module" falls through to "path is module.attribute"; a module that exists but
        # fails to import (a missing dependency inside it) is reported as it is.
        if error.name is None or not (path == error.name or path.startswith(error.name + ".")):
            raise ImproperlyConfigured(f"extension {path} cannot be imported: {error}") from error
        module = None
    except Exception as error:
        raise ImproperlyConfigured(f"extension {path} cannot be imported: {error!r}") from error
    if module is not None:
        register = getattr(module, "register", None)
        if not callable(register):
            raise ImproperlyConfigured(f"extension {path} has no register(runner) function")
        return register  # type: ignore[no-any-return]
    try:
        register = import_string(path)
    except ImportError as error:
        raise ImproperlyConfigured(f"extension {path} cannot be imported: {error}") from error
    except Exception as error:
        raise ImproperlyConfigured(f"extension {path} cannot be imported: {error!r}") from error
    if not callable(register):
        raise ImproperlyConfigured(f"extension {path} is not a register(runner) function")
    return register  # type: ignore[no-any-return]


def _keep_recent_errors(runner: HookRunner) -> Callable[[ExtensionError], None]:
    def trim(_: ExtensionError) -> None:
        del runner.errors[:-KEPT_ERRORS]

    return trim


def build_hook_runner(paths: Sequence[str], timeout: float) -> HookRunner:
    """A runner with the handlers of the extensions ``paths`` name, registered in that order."""
    runner = HookRunner(timeout=float(timeout))
    runner.on_error(_keep_recent_errors(runner))
    for path in paths:
        register = load_extension(path)
        try:
            register(ExtensionRegistry(runner, path))
        except ImproperlyConfigured:
            raise
        except Exception as error:
            raise ImproperlyConfigured(f"extension {path}: register() failed: {error!r}") from error
        logger.info("extension %s registered", path)
    return runner


_runner: HookRunner | None = None
_runner_lock = threading.Lock()


def hook_runner() -> HookRunner:
    """The process-wide runner, built from the settings at first use. Raises ImproperlyConfigured."""
    global _runner
    runner = _runner
    if runner is None:
        with _runner_lock:
            if _runner is None:
                _runner = build_hook_runner(settings.ARBOR_EXTENSIONS, settings.ARBOR_EXTENSION_TIMEOUT)
            runner = _runner
    return runner


def reset_hook_runner() -> None:
    """Forget the runner: the next :func:`hook_runner` reads the settings again (tests)."""
    global _runner
    with _runner_lock:
        _runner = None


@receiver(setting_changed)
def _settings_changed(*, setting: str, **_: Any) -> None:
    if setting in ("ARBOR_EXTENSIONS", "ARBOR_EXTENSION_TIMEOUT"):
        reset_hook_runner()


def check_extensions(app_configs: Any = None, **_: Any) -> list[checks.CheckMessage]:
    """System check: every path in ``ARBOR_EXTENSIONS`` imports and names a ``register`` function."""
    problems: list[checks.CheckMessage] = []
    for path in settings.ARBOR_EXTENSIONS:
        try:
            load_extension(path)
        except ImproperlyConfigured as error:
            problems.append(
                checks.Error(
                    str(error),
                    hint="ARBOR_EXTENSIONS lists dotted paths of modules with a register(runner) function",
                    obj="ARBOR_EXTENSIONS",
                    id="treeview.E001",
                )
            )
    return problems
