"""The session page's websocket: live "changed" events, and navigation jobs (``/tree``) streamed as they run.

Client → server: ``{"type": "start", "target": id, "summarize": bool, "instructions": str | null}``,
``{"type": "cancel"}``, ``{"type": "ping"}``. Server → client: ``progress`` (``phase`` collecting /
summarizing, ``entries``, and ``delta`` with each piece of summary text), ``done``, ``cancelled``, ``error``
(``code`` and ``message``; ``forbidden``: the user sees the session but may not move its leaf), ``changed``
(another page or the sync changed the session), ``pong``.

A navigation runs as its own task, so ``cancel`` is read while it streams; ``cancel`` and a closed socket
abort it and wait for it, and an aborted navigation writes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any
from urllib.parse import parse_qs, urlencode

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser
from django.urls import reverse

from treeview.access import NAVIGATE, REFUSALS, can, can_view, sees_everything
from treeview.llm import summarizer_status
from treeview.models import AgentSession
from treeview.services.events import ACCESS_CHANGED, SESSIONS_GROUP, session_group
from treeview.services.navigate import NavigationFailed, NavigationOutcome, navigate
from treeview.session.branch_summary import AbortSignal

log = logging.getLogger(__name__)

#: Close codes: no such session (the HTTP 404 of a socket); not allowed to see it (or signed out).
CLOSE_NOT_FOUND = 4404
CLOSE_FORBIDDEN = 4403
MAX_ID_LENGTH = 200
MAX_INSTRUCTIONS = 20_000
NOTHING_TO_SUMMARIZE = (
    "Nothing to summarize: the branch you left has no messages after the point you moved to "
    "(moving further down the same branch abandons nothing), so the leaf moved without a summary."
)
NO_INSTRUCTIONS = (
    "The offline digest picks entries by rule and cannot follow custom instructions; "
    "configure a model (ARBOR_LLM_PROVIDER) to give some. Nothing was changed."
)
CANCELLED_MESSAGE = "Branch summarization cancelled"


def _find_session(session_id: str, copy: str | None) -> AgentSession | None:
    if copy is not None:
        if not copy.isdigit():
            return None
        return AgentSession.objects.filter(session_id=session_id, pk=int(copy)).first()
    return AgentSession.objects.by_session_id(session_id)


def _allowed_session(user: Any, session_id: str, copy: str | None) -> tuple[AgentSession | None, int]:
    """The session, or the close code: 4404 when it does not exist, 4403 when ``user`` may not see it (also
    when it does not exist, for a user who does not see everything: no existence leak)."""
    session = _find_session(session_id, copy)
    if sees_everything(user):
        return session, CLOSE_NOT_FOUND
    if session is None or not can_view(user, session):
        return None, CLOSE_FORBIDDEN
    return session, CLOSE_FORBIDDEN


def _stored_user(user: Any) -> Any:
    """The scope's user as stored now (deactivated, demoted, deleted since the socket opened). The scope holds
    whatever the middleware put there (under ``AuthMiddlewareStack`` a lazy wrapper, not a model instance), so
    the user model comes from the settings, never from the object."""
    if not user.is_authenticated:
        return AnonymousUser()
    return get_user_model().objects.filter(pk=user.pk).first() or AnonymousUser()


def _may_still_view(user: Any, session_pk: int) -> bool:
    """``can_view`` against the stored session and the stored user (deactivated, or removed from a team)."""
    session = AgentSession.objects.filter(pk=session_pk).first()
    if session is None:
        return False
    return can_view(_stored_user(user), session)


def _may_navigate(user: Any, session_pk: int) -> bool:
    """``can(user, session, NAVIGATE)`` against the stored session and user: a grant taken back since the
    socket opened counts."""
    session = AgentSession.objects.filter(pk=session_pk).first()
    return session is not None and can(_stored_user(user), session, NAVIGATE)


class BadMessage(ValueError):
    """A client message that is not one of the protocol's (answered with an ``error``, the socket stays)."""


def _start_fields(content: dict[str, Any]) -> tuple[str, bool, str | None]:
    target = content.get("target")
    summarize = content.get("summarize", False)
    instructions = content.get("instructions")
    if not isinstance(target, str) or not target or len(target) > MAX_ID_LENGTH:
        raise BadMessage("start needs a target entry id")
    if not isinstance(summarize, bool):
        raise BadMessage("summarize must be true or false")
    if instructions is not None and (
        not isinstance(instructions, str) or len(instructions) > MAX_INSTRUCTIONS
    ):
        raise BadMessage(f"instructions must be text of at most {MAX_INSTRUCTIONS} characters")
    return target, summarize, instructions


class SessionConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """One open session page."""

    session: AgentSession | None = None
    group: str | None = None
    job: asyncio.Task[None] | None = None
    signal: AbortSignal | None = None

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        return orjson.loads(text_data)

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return orjson.dumps(content).decode()

    async def connect(self) -> None:
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        copy = query.get("copy", [None])[-1]
        # AuthMiddlewareStack puts the user in the scope; a bare router (tests) leaves it out: signed out.
        user = self.scope.get("user") or AnonymousUser()
        self.session, refusal = await database_sync_to_async(_allowed_session)(user, session_id, copy)
        if self.session is None:
            await self.close(code=refusal)
            return
        self.group = session_group(self.session.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        # Closing the tab cancels a running navigation: nothing is written.
        await self._stop_job()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        if text_data is None:
            await self._error("bad-message", "Send JSON text frames")
            return
        try:
            content = orjson.loads(text_data)
        except orjson.JSONDecodeError:
            await self._error("bad-message", "Malformed JSON")
            return
        if not isinstance(content, dict):
            await self._error("bad-message", "A message is a JSON object with a type")
            return
        await self.receive_json(content)

    async def receive_json(self, content: dict[str, Any], **kwargs: Any) -> None:
        kind = content.get("type")
        try:
            if kind == "start":
                await self._start(*_start_fields(content))
            elif kind == "cancel":
                await self._cancel()
            elif kind == "ping":
                await self.send_json({"type": "pong"})
            else:
                raise BadMessage(f"Unknown message type {str(kind)[:40]!r}")
        except BadMessage as error:
            await self._error("bad-message", str(error))

    # -- the navigation job -------------------------------------------------------------------------------

    async def _start(self, target: str, summarize: bool, instructions: str | None) -> None:
        if self.job is not None and not self.job.done():
            await self._error("busy", "A navigation is already running on this page")
            return
        # Access is checked again before every write: it may have been taken away since the socket opened.
        if not await self._still_allowed():
            return
        # Seeing a session is not moving its leaf (treeview/access.py): refused; the socket stays open.
        user = self.scope.get("user") or AnonymousUser()
        assert self.session is not None
        if not await database_sync_to_async(_may_navigate)(user, self.session.pk):
            await self._error("forbidden", REFUSALS[NAVIGATE])
            return
        if summarize and instructions and instructions.strip() and summarizer_status().provider == "digest":
            await self._error("no-instructions", NO_INSTRUCTIONS)
            return
        self.signal = AbortSignal()
        self.job = asyncio.create_task(self._run(target, summarize, instructions, self.signal))

    async def _cancel(self) -> None:
        if self.job is None or self.job.done() or self.signal is None:
            await self._error("not-running", "Nothing to cancel")
            return
        self.signal.abort()

    async def _stop_job(self) -> None:
        job = self.job
        if job is None or job.done():
            return
        if self.signal is not None:
            self.signal.abort()
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job

    async def _run(self, target: str, summarize: bool, instructions: str | None, signal: AbortSignal) -> None:
        assert self.session is not None

        async def progress(message: dict[str, Any]) -> None:
            await self.send_json({"type": "progress", **message})

        async def delta(text: str) -> None:
            if text and not signal.aborted:
                await self.send_json({"type": "progress", "phase": "summarizing", "delta": text})

        try:
            outcome = await navigate(
                self.session.pk,
                target,
                summarize=summarize,
                custom_instructions=instructions,
                signal=signal,
                progress=progress,
                on_delta=delta,
            )
        except NavigationFailed as error:
            await self._error(error.code, str(error))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("navigation of session %s failed", self.session.session_id)
            await self._error("internal", "The navigation failed; nothing was changed")
        else:
            message = self._outcome_message(outcome)
            if summarize and outcome.status == "done" and outcome.summary_id is None:
                # A summary was asked for and none was written: say why rather than close in silence.
                message.update(nothingToSummarize=True, message=NOTHING_TO_SUMMARIZE)
            await self.send_json(message)

    def _outcome_message(self, outcome: NavigationOutcome) -> dict[str, Any]:
        if outcome.status == "cancelled":
            message = CANCELLED_MESSAGE if outcome.aborted else "Navigation cancelled by an extension"
            return {"type": "cancelled", "leafId": outcome.leaf_id, "message": message}
        done: dict[str, Any] = {
            "type": "done",
            "leafId": outcome.leaf_id,
            "summaryId": outcome.summary_id,
            "editorText": outcome.editor_text,
            "abandoned": outcome.abandoned,
            "url": self._page_url(outcome.leaf_id),
        }
        if outcome.status == "noop":
            done.update(noop=True, message="Already at this point")
        return done

    def _page_url(self, leaf_id: str | None) -> str:
        assert self.session is not None
        base = reverse("treeview:session_detail", kwargs={"session_id": self.session.session_id})
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        params = {"copy": query["copy"][-1]} if "copy" in query else {}
        if leaf_id is not None:
            params["targetId"] = leaf_id
        return f"{base}?{urlencode(params)}" if params else base

    async def _error(self, code: str, message: str) -> None:
        await self.send_json({"type": "error", "code": code, "message": message})

    # -- group events -------------------------------------------------------------------------------------

    async def _still_allowed(self) -> bool:
        """Whether the socket's user may still see the session; if not, stop any job and close with 4403."""
        assert self.session is not None
        user = self.scope.get("user") or AnonymousUser()
        allowed = await database_sync_to_async(_may_still_view)(user, self.session.pk)
        if not allowed:
            await self._stop_job()
            await self.close(code=CLOSE_FORBIDDEN)
        return allowed

    async def session_changed(self, event: dict[str, Any]) -> None:
        """The session changed (a label, a move, a summary, a sync): the page refreshes what it shows. A
        change of who may see it (``access``) closes the socket of a user who no longer may, first."""
        if event.get("reason") == ACCESS_CHANGED and not await self._still_allowed():
            return
        changed = {"type": "changed", "reason": event.get("reason"), "entry": event.get("entry")}
        await self.send_json({**changed, "leaf": event.get("leaf")})


def _may_list(user: Any) -> bool:
    return sees_everything(user) or bool(user.is_authenticated and user.is_active)


class SessionListConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    """The session list: told that some session changed (never which: the reader may not see them all)."""

    joined = False

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return orjson.dumps(content).decode()

    async def connect(self) -> None:
        user = self.scope.get("user") or AnonymousUser()
        if not await database_sync_to_async(_may_list)(user):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.channel_layer.group_add(SESSIONS_GROUP, self.channel_name)
        self.joined = True
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(SESSIONS_GROUP, self.channel_name)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """The list only listens."""

    async def session_changed(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "changed"})
