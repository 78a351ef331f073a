"""The ingest API: JSON over HTTP, a personal token in ``Authorization: Bearer``.

``GET /api/v1/me`` (who the token is), ``POST /api/v1/sources`` (a pushed file's state), ``POST
/api/v1/sources/<key>/append?offset=N`` (bytes from N), ``PUT /api/v1/sources/<key>/slot`` (a new title
slot of the same length), ``POST /api/v1/sources/<key>/rewrite?offset=N&total=T`` (a whole new version, in
chunks). Every error is JSON: ``{"error": code, "detail": what to do}`` with 400 / 401 / 403 / 404 / 405 /
409 / 413 / 422 / 429; a 409 carries the current ``state``. A token opens nothing but this API.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from treeview.ingest import services
from treeview.ingest.models import ApiToken
from treeview.ingest.services import IngestError
from treeview.ingest.tokens import TokenRefused, check_token

View = Callable[..., HttpResponse]
_DESCRIPTION_LIMIT = 64 * 1024


def _json(data: Any, status: int = 200, **headers: str) -> HttpResponse:
    response = HttpResponse(orjson.dumps(data), status=status, content_type="application/json")
    response["Cache-Control"] = "no-store"
    for name, value in headers.items():
        response[name] = value
    return response


def error(status: int, code: str, detail: str, **extra: Any) -> HttpResponse:
    headers = {}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="arbor"'
    if extra.get("retry_after"):
        headers["Retry-After"] = str(extra["retry_after"])
    return _json({"error": code, "detail": detail, **extra}, status, **headers)


def _address(request: HttpRequest) -> str | None:
    # daphne --proxy-headers puts the client's address here behind a front server (docs/deploy.md).
    return request.META.get("REMOTE_ADDR") or None


def api_view(*methods: str) -> Callable[[View], View]:
    """Method check, token check (``request.token``), and every failure as a JSON answer."""

    def decorate(view: View) -> View:
        @csrf_exempt
        @login_not_required
        @wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                response = error(405, "method_not_allowed", f"use {' or '.join(methods)}")
                response["Allow"] = ", ".join(methods)
                return response
            try:
                token = check_token(request.headers.get("Authorization", ""), _address(request))
            except TokenRefused as refused:
                return error(refused.status, refused.code, refused.detail, retry_after=refused.retry_after)
            request.token = token  # type: ignore[attr-defined]
            try:
                return view(request, token, *args, **kwargs)
            except IngestError as failure:
                extra = {"state": services.describe(failure.source)} if failure.source is not None else {}
                return error(failure.status, failure.code, failure.detail, **extra)

        return wrapper

    return decorate


def _int(request: HttpRequest, name: str) -> int:
    value = request.GET.get(name, "")
    if not value.isdigit() or len(value) > 15:
        raise IngestError(400, "bad_request", f"?{name}= must be a whole number of bytes")
    return int(value)


def _request_limit() -> int:
    return int(settings.ARBOR_INGEST_MAX_REQUEST_MB * 1024 * 1024)


def _pushed(result: services.Pushed) -> HttpResponse:
    state = services.describe(result.source)
    sync = result.sync
    return _json(
        {
            **state,
            "stored": result.stored,
            "duplicate": result.duplicate,
            "status": sync.status if sync is not None else "unchanged",
            "entries_added": sync.entries_added if sync is not None else 0,
        }
    )


@api_view("GET")
def me(request: HttpRequest, token: ApiToken) -> HttpResponse:
    visibility, team = services.default_visibility(token.user)
    return _json(
        {
            "user": token.user.get_username(),
            "token": {
                "prefix": token.prefix,
                "name": token.name,
                "expires_at": token.expires_at.isoformat() if token.expires_at else None,
            },
            "default_visibility": {"visibility": visibility, "team": team.name if team else None},
            "limits": services.limits(),
        }
    )


@api_view("POST")
def sources(request: HttpRequest, token: ApiToken) -> HttpResponse:
    body = request.read(_DESCRIPTION_LIMIT + 1)
    if len(body) > _DESCRIPTION_LIMIT:
        raise IngestError(413, "request_too_large", "a file's description is a small JSON object")
    try:
        data = orjson.loads(body or b"{}")
    except orjson.JSONDecodeError:
        raise IngestError(400, "bad_request", "the body must be JSON") from None
    if not isinstance(data, dict):
        raise IngestError(400, "bad_request", 'the body must be {"machine", "path", "session_id"}')
    source = services.open_source(
        token.user, data.get("machine", ""), data.get("path"), data.get("session_id")
    )
    if source.owner_id != token.user.pk:
        raise IngestError(404, "not_found", "no such pushed file")
    return _json(services.describe(source))


@api_view("POST")
def append(request: HttpRequest, token: ApiToken, key: str) -> HttpResponse:
    offset = _int(request, "offset")
    more = request.GET.get("more") == "1"
    return _pushed(services.append(token.user, key, offset, request, _request_limit(), more=more))


@api_view("PUT")
def slot(request: HttpRequest, token: ApiToken, key: str) -> HttpResponse:
    return _pushed(services.put_slot(token.user, key, request))


@api_view("POST")
def rewrite(request: HttpRequest, token: ApiToken, key: str) -> HttpResponse:
    offset, total = _int(request, "offset"), _int(request, "total")
    return _pushed(services.rewrite(token.user, key, offset, total, request, _request_limit()))
