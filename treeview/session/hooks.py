"""A small extension/hook runner for the session-tree events (spec §16).

It mirrors ``ExtensionRunner.emit`` of omp v15 for the four events the tree uses:

* handlers run **sequentially**, in registration order, each under a timeout (30 s by default);
* a handler that raises or times out is isolated: the failure is recorded as an :class:`ExtensionError`
  (and passed to error listeners) and its result counts as ``None``;
* for the ``session_before_*`` events the last non-None result wins, but the first result with
  ``cancel`` set returns immediately; other events ignore results.

Handlers take the event object and may be plain functions or coroutine functions. A plain function runs
to completion inline (as a synchronous JavaScript handler does), so only awaitable work can time out.
Results may be the result dataclasses below or plain mappings such as ``{"cancel": True}``.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .branch_summary import AbortSignal

__all__ = [
    "DEFAULT_HANDLER_TIMEOUT",
    "SESSION_BEFORE_BRANCH",
    "SESSION_BEFORE_TREE",
    "SESSION_BRANCH",
    "SESSION_TREE",
    "ExtensionError",
    "Handler",
    "HookRunner",
    "HookSummary",
    "SessionBeforeBranchEvent",
    "SessionBeforeBranchResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "SessionBranchEvent",
    "SessionTreeEvent",
    "TreePreparation",
    "result_field",
]

logger = logging.getLogger(__name__)

SESSION_BEFORE_TREE: Final = "session_before_tree"
SESSION_TREE: Final = "session_tree"
SESSION_BEFORE_BRANCH: Final = "session_before_branch"
SESSION_BRANCH: Final = "session_branch"

#: Events whose results are combined with "last wins, first cancel returns" (v15 also has
#: ``session_before_switch`` and ``session_before_compact``; they follow the same rule here).
_BEFORE_EVENTS: Final = frozenset(
    {SESSION_BEFORE_TREE, SESSION_BEFORE_BRANCH, "session_before_switch", "session_before_compact"}
)

#: Seconds a handler may take (v15 ``EXTENSION_HANDLER_TIMEOUT_MS`` = 30 000).
DEFAULT_HANDLER_TIMEOUT: Final = 30.0


# ---------------------------------------------------------------------------------------------------------
# Events and results
# ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class TreePreparation:
    """What a tree move is about to do (v15 ``TreePreparation``)."""

    target_id: str
    old_leaf_id: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[dict[str, Any]]
    user_wants_summary: bool


@dataclass(slots=True)
class SessionBeforeTreeEvent:
    """Emitted before a tree move; handlers may cancel it or supply the branch summary."""

    preparation: TreePreparation
    signal: AbortSignal
    type: str = SESSION_BEFORE_TREE


@dataclass(slots=True)
class SessionTreeEvent:
    """Emitted after a tree move. ``from_extension`` is None when no summary was written."""

    new_leaf_id: str | None
    old_leaf_id: str | None
    summary_entry: dict[str, Any] | None = None
    from_extension: bool | None = None
    type: str = SESSION_TREE


@dataclass(slots=True)
class SessionBeforeBranchEvent:
    """Emitted before ``/branch`` creates a new session from a user message."""

    entry_id: str
    type: str = SESSION_BEFORE_BRANCH


@dataclass(slots=True)
class SessionBranchEvent:
    """Emitted after ``/branch`` switched to the new session."""

    previous_session_file: str | None
    type: str = SESSION_BRANCH


@dataclass(slots=True)
class HookSummary:
    """A branch summary supplied by an extension; ``details`` is stored as given (omitted when None)."""

    summary: str
    details: Any = None


@dataclass(slots=True)
class SessionBeforeTreeResult:
    """Result of a ``session_before_tree`` handler."""

    cancel: bool = False
    summary: HookSummary | Mapping[str, Any] | None = None


@dataclass(slots=True)
class SessionBeforeBranchResult:
    """Result of a ``session_before_branch`` handler."""

    cancel: bool = False
    skip_conversation_restore: bool = False


@dataclass(slots=True)
class ExtensionError:
    """A handler that raised or timed out. ``extension`` is the name it was registered under."""

    extension: str
    event: str
    error: str
    stack: str | None = None


Handler = Callable[[Any], Any]
"""``handler(event) -> result | None`` or an ``async`` function returning the same."""

_KEY_ALIASES: Final = {"skip_conversation_restore": "skipConversationRestore"}


def result_field(result: object, name: str, default: Any = None) -> Any:
    """Read ``name`` from a handler result that is a dataclass/object or a (JS-style) mapping.

    Mappings may use the snake_case name or the original camelCase key (``skipConversationRestore``).
    """
    if result is None:
        return default
    if isinstance(result, Mapping):
        if name in result:
            return result[name]
        alias = _KEY_ALIASES.get(name)
        return result.get(alias, default) if alias else default
    return getattr(result, name, default)


@dataclass(slots=True)
class _Registration:
    handler: Handler
    extension: str


@dataclass
class HookRunner:
    """Registers handlers per event name and emits events to them (see the module docstring)."""

    timeout: float = DEFAULT_HANDLER_TIMEOUT
    errors: list[ExtensionError] = field(default_factory=list)
    _handlers: dict[str, list[_Registration]] = field(default_factory=dict, repr=False)
    _error_listeners: list[Callable[[ExtensionError], None]] = field(default_factory=list, repr=False)

    def on(self, event: str, handler: Handler, *, extension: str | None = None) -> Callable[[], None]:
        """Register ``handler`` for ``event``; returns a function that unregisters it.

        ``extension`` names the handler in error reports (defaults to the handler's qualified name).
        """
        registration = _Registration(
            handler, extension or str(getattr(handler, "__qualname__", repr(handler)))
        )
        self._handlers.setdefault(event, []).append(registration)

        def remove() -> None:
            handlers = self._handlers.get(event, [])
            if registration in handlers:
                handlers.remove(registration)

        return remove

    def has_handlers(self, event: str) -> bool:
        """True when at least one handler is registered for ``event``."""
        return bool(self._handlers.get(event))

    def on_error(self, listener: Callable[[ExtensionError], None]) -> Callable[[], None]:
        """Call ``listener`` for every handler failure; returns a function that removes it."""
        self._error_listeners.append(listener)
        return lambda: self._error_listeners.remove(listener) if listener in self._error_listeners else None

    def _report(self, error: ExtensionError) -> None:
        self.errors.append(error)
        for listener in list(self._error_listeners):
            # A broken listener must not break the emitting session either.
            try:
                listener(error)
            except Exception:
                logger.exception("extension error listener failed")

    async def _run(self, registration: _Registration, event_type: str, event: object) -> Any:
        """Run one handler under the timeout; failures are reported and give None."""
        try:
            outcome = registration.handler(event)
            if inspect.isawaitable(outcome):
                task = asyncio.ensure_future(outcome)
                try:
                    done, _ = await asyncio.wait({task}, timeout=self.timeout)
                except asyncio.CancelledError:
                    task.cancel()
                    raise
                if not done:
                    # Unlike the original (whose late promise keeps running), a timed-out handler is stopped.
                    task.cancel()
                    await asyncio.wait({task})
                    message = f"handler timed out after {round(self.timeout * 1000)}ms"
                    logger.warning(
                        "Extension handler timed out: %s on %s", registration.extension, event_type
                    )
                    self._report(ExtensionError(registration.extension, event_type, message))
                    return None
                outcome = task.result()
            return outcome
        except Exception as exc:
            logger.warning("Extension handler failed: %s on %s: %s", registration.extension, event_type, exc)
            self._report(ExtensionError(registration.extension, event_type, str(exc), traceback.format_exc()))
            return None

    async def emit(self, event: object) -> Any:
        """Send ``event`` (any object with a ``type`` attribute or key) to its handlers, in order.

        For ``session_before_*`` events returns the combined result (None when no handler answered);
        for other events returns None.
        """
        event_type = result_field(event, "type")
        if not isinstance(event_type, str):
            raise ValueError("event has no type")
        combined: Any = None
        # Copy: a handler may register or remove handlers while the event is running.
        for registration in list(self._handlers.get(event_type, [])):
            outcome = await self._run(registration, event_type, event)
            if event_type in _BEFORE_EVENTS and outcome is not None and outcome is not False:
                combined = outcome
                if result_field(outcome, "cancel"):
                    return combined
        return combined
