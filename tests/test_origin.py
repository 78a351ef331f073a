"""Which pages may open a websocket (``treeview.origin``): this site's own origin only, scheme and port
included, or a trusted origin; checked through the real ASGI stack and on scopes."""

from __future__ import annotations

from typing import Any

import pytest

from tests.sockets import signed_in_socket
from treeview.origin import origin_allowed

pytestmark = pytest.mark.django_db(transaction=True)


def _scope(origin: str | None, host: str | None, scheme: str = "ws", **headers: str) -> dict[str, Any]:
    pairs = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    if origin is not None:
        pairs.append((b"origin", origin.encode()))
    if host is not None:
        pairs.append((b"host", host.encode()))
    return {"type": "websocket", "scheme": scheme, "headers": pairs}


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        ("http://localhost:8000", "localhost:8000", "ws", True),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "ws", True),
        ("http://localhost", "localhost:80", "ws", True),  # default port written or not
        ("https://localhost", "localhost", "wss", True),
        ("http://[::1]:8000", "[::1]:8000", "ws", True),
        ("HTTP://LOCALHOST:8000", "localhost:8000", "ws", True),
        # Another port on an allowed host: another site (the finding: it was accepted).
        ("http://localhost:9999", "localhost:8000", "ws", False),
        # The page came over http but claims https, or the other way round.
        ("https://localhost:8000", "localhost:8000", "ws", False),
        ("http://localhost", "localhost", "wss", False),
        ("http://evil.example", "localhost:8000", "ws", False),
        ("http://evil.example", "evil.example", "ws", False),  # a Host that is not allowed
        ("null", "localhost:8000", "ws", False),
        (None, "localhost:8000", "ws", False),
        ("http://localhost:8000", None, "ws", False),
        ("http://", "localhost:8000", "ws", False),
    ],
)
def test_only_this_sites_own_origin_is_admitted(
    origin: str | None, host: str | None, scheme: str, allowed: bool
) -> None:
    assert origin_allowed(_scope(origin, host, scheme)) is allowed


def test_trusted_origins_are_admitted(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://arbor.example.com"]
    assert origin_allowed(_scope("https://arbor.example.com", "localhost:8000"))
    assert not origin_allowed(_scope("https://arbor.example.com:8443", "localhost:8000"))


def test_behind_a_tls_proxy_the_forwarded_scheme_counts(settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["arbor.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    page = "https://arbor.example.com"
    assert origin_allowed(_scope(page, "arbor.example.com", x_forwarded_proto="https"))
    assert not origin_allowed(_scope(page, "arbor.example.com"))
    settings.SECURE_PROXY_SSL_HEADER = None
    assert not origin_allowed(_scope(page, "arbor.example.com", x_forwarded_proto="https"))


@pytest.mark.parametrize(
    ("origin", "host", "admitted"),
    [
        ("http://testserver", "testserver", True),
        ("http://testserver:9999", "testserver", False),
        ("https://testserver", "testserver", False),
        (None, "testserver", False),
    ],
)
async def test_the_real_stack_refuses_foreign_origins_at_the_handshake(
    settings: Any, origin: str | None, host: str, admitted: bool
) -> None:
    settings.ARBOR_SINGLE_USER = True
    socket = await signed_in_socket("/ws/sessions/", origin=origin, host=host)
    ok, _ = await socket.connect(timeout=5)
    assert ok is admitted
    if ok:
        await socket.disconnect()
