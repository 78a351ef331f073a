"""The share form's scan socket (``ws/share-scan/<session id>/``): scans a long branch for secrets in the
background with progress, so the form's request never holds a worker for half a minute.

Protocol (orjson): client → server ``{"type": "start", "leafId": ...}`` and ``{"type": "cancel"}``;
server → client ``progress`` (``done``, ``total``), ``done``, ``cancelled`` and ``error`` (``message``).
The scan runs as its own task, a chunk of entries per step in the ORM's thread (``database_sync_to_async``),
so ``cancel`` and a closed socket stop it between chunks; what was scanned stays cached
(treeview/services/share_scan.py) and the page, reloaded, finds the result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.contrib.auth.models import AnonymousUser

from treeview.access import can_view
from treeview.consumers import CLOSE_FORBIDDEN, _allowed_session, _stored_user
from treeview.models import AgentSession
from treeview.services import share, share_scan

logger = logging.getLogger(__name__)

LEAF_MAX = 64


def _prepare(user: Any, session_pk: int, leaf_id: str) -> Iterator[tuple[int, int]] | str:
    """The scan's steps for the session as stored now, or why not (a message)."""
    session = AgentSession.objects.filter(pk=session_pk).first()
    stored = _stored_user(user)
    if session is None or not can_view(stored, session):
        return "You cannot see this session any more."
    path = share.branch_path(session, leaf_id)
    if not path or path[-1] != leaf_id:
        return "No entry with this id in the session."
    return share_scan.scan_steps(session, leaf_id, share.team_strings(stored, session))


class ShareScanConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        return orjson.loads(text_data)

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return orjson.dumps(content).decode()

    async def connect(self) -> None:
        self.task: asyncio.Task[None] | None = None
        self.user = self.scope.get("user") or AnonymousUser()
        session_id = self.scope["url_route"]["kwargs"]["session_id"]
        query = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        copy = query.get("copy", [None])[0]
        session, code = await database_sync_to_async(_allowed_session)(self.user, session_id, copy)
        if session is None:
            await self.close(code=code or CLOSE_FORBIDDEN)
            return
        self.session_pk = session.pk
        await self.accept()

    async def disconnect(self, code: int) -> None:
        await self._cancel()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "start":
            leaf = content.get("leafId")
            if not isinstance(leaf, str) or not leaf or len(leaf) > LEAF_MAX:
                await self.send_json({"type": "error", "message": "A start names the leaf to scan to."})
            elif self.task is None or self.task.done():
                self.task = asyncio.create_task(self._scan(leaf))
        elif kind == "cancel":
            if await self._cancel():
                await self.send_json({"type": "cancelled"})
        else:
            await self.send_json({"type": "error", "message": "Unknown message."})

    async def _cancel(self) -> bool:
        task, self.task = getattr(self, "task", None), None
        if task is None or task.done():
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return True

    async def _scan(self, leaf: str) -> None:
        try:
            steps = await database_sync_to_async(_prepare)(self.user, self.session_pk, leaf)
            if isinstance(steps, str):
                await self.send_json({"type": "error", "message": steps})
                return
            step = database_sync_to_async(next)
            while (progress := await step(steps, None)) is not None:
                done, total = progress
                await self.send_json({"type": "progress", "done": done, "total": total})
            await self.send_json({"type": "done"})
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("share scan of %s to %s failed", self.session_pk, leaf)
            await self.send_json({"type": "error", "message": "The scan failed; try the link below."})
