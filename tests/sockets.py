"""Websockets through the real ASGI stack of ``sessions_site.asgi`` (origin check, cookie session,
``AuthMiddlewareStack``), as a browser opens them: the scope's user is whatever the middleware makes of the
session cookie (a lazy wrapper), never an object a test put there."""

from __future__ import annotations

from typing import Any

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from sessions_site.asgi import application

#: An origin the test settings allow (Django's test environment adds "testserver" to ALLOWED_HOSTS).
ORIGIN = "http://testserver"


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return str(client.cookies[settings.SESSION_COOKIE_NAME].value)


async def signed_in_socket(
    path: str, user: Any = None, *, origin: str | None = ORIGIN, host: str = "testserver"
) -> WebsocketCommunicator:
    """A communicator for ``path`` on the real stack; signed in as ``user`` (None: no cookie)."""
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if user is not None:
        cookie = await sync_to_async(_session_cookie)(user)
        headers.append((b"cookie", f"{settings.SESSION_COOKIE_NAME}={cookie}".encode()))
    return WebsocketCommunicator(application, path, headers=headers)
