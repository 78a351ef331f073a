"""Refuse an ingest request whose declared body is too large before reading it.

Django's ASGI handler reads a whole request body (to a temporary file) before any view runs, so the view's
own limit would only answer after the bytes arrived. This wrapper answers 413 at once from the
``Content-Length`` header; the view still counts what it reads (a body without that header).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from django.conf import settings

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

PREFIX = "/api/"
#: Room for the part of a request that is not the chunk (the ingest bodies are the chunk itself).
SLACK = 64 * 1024


class BodyLimit:
    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith(PREFIX):
            limit = settings.ARBOR_INGEST_MAX_REQUEST_MB * 1024 * 1024 + SLACK
            for name, value in scope.get("headers", []):
                if name == b"content-length" and value.isdigit() and int(value) > limit:
                    await _refuse(send, limit - SLACK)
                    return
        await self.app(scope, receive, send)


async def _refuse(send: Send, limit: int) -> None:
    body = orjson.dumps(
        {"error": "request_too_large", "detail": f"at most {limit} bytes per request: send smaller chunks"}
    )
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
