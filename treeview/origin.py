"""Which pages may open a websocket: only this site's own, by scheme, host and port.

Channels' ``AllowedHostsOriginValidator`` compares an ``Origin`` header's host name with ``ALLOWED_HOSTS`` and
ignores its scheme and port, so a page served by anything else on an allowed host (``http://localhost:9999``)
could drive navigation with the visitor's cookies. A socket is admitted when its ``Origin`` is exactly the
origin the browser is talking to (the ``Host`` header, itself an allowed host, with the scheme the connection
arrived on) or one of ``CSRF_TRUSTED_ORIGINS``, the same rule Django's CSRF check applies to a POST.
"""

from __future__ import annotations

from typing import Any

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": "80", "https": "443"}


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            try:
                return str(value.decode("latin-1"))
            except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes every byte
                return None
    return None


def _scheme(scope: dict[str, Any]) -> str:
    """The page's scheme: the socket's (``wss`` means the page came over https), or, behind a proxy that
    terminates TLS, what ``SECURE_PROXY_SSL_HEADER`` says (as Django decides ``request.is_secure()``)."""
    if scope.get("scheme") in ("wss", "https"):
        return "https"
    proxy_header = settings.SECURE_PROXY_SSL_HEADER
    if proxy_header:
        name, secure_value = proxy_header
        asgi_name = name.removeprefix("HTTP_").lower().replace("_", "-").encode()
        value = _header(scope, asgi_name)
        if value is not None and value.split(",", 1)[0].strip() == secure_value:
            return "https"
    return "http"


def _normalized(scheme: str, netloc: str) -> str:
    host, port = split_domain_port(netloc.lower())
    if not host:
        return ""
    port = port or DEFAULT_PORTS.get(scheme, "")
    if ":" in host:  # an IPv6 literal, split_domain_port drops its brackets
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the socket's ``Origin`` is this site (scheme, host and port) or a trusted origin."""
    origin = _header(scope, b"origin")
    host = _header(scope, b"host")
    if not origin or not host or "://" not in origin:
        return False
    origin_scheme, _, origin_netloc = origin.partition("://")
    origin_key = _normalized(origin_scheme.lower(), origin_netloc.rstrip("/"))
    if not origin_key:
        return False
    trusted = {
        _normalized(scheme.lower(), netloc.rstrip("/"))
        for scheme, _, netloc in (item.partition("://") for item in settings.CSRF_TRUSTED_ORIGINS)
        if "*" not in netloc
    }
    if origin_key in trusted:
        return True
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    return origin_key == _normalized(_scheme(scope), host)


class SameOriginValidator:
    """ASGI middleware for websockets: refuse (HTTP 403 at the handshake) any ``Origin`` but this site's."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
