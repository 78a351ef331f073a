"""Arbor's own error pages: 404, 403 and 500 in the site's look, and "not found" without Django's debug page.

With DEBUG on (the default of ``./arbor run``) Django answers an ``Http404`` with its technical page, which
lists the URL patterns and reads as a crash. :class:`NotFoundMiddleware` renders our 404 page for the
``Http404`` a view raises ("no such session", "no such entry") whatever DEBUG says; an address that matches no
URL pattern keeps Django's debug page in DEBUG, where it helps a developer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_not_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    HttpResponseServerError,
)
from django.template import loader
from django.template.response import TemplateResponse
from django.templatetags.static import static


def _reason(exception: BaseException | None) -> str:
    # Our views raise Http404 with a sentence meant for the reader ("no imported session has this id").
    message = exception.args[0] if exception is not None and exception.args else ""
    return message if isinstance(message, str) else ""


@login_not_required
def favicon(request: HttpRequest) -> HttpResponse:
    """``/favicon.ico``: the site's icon (an SVG in the static files)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


def page_not_found(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    response = TemplateResponse(request, "404.html", {"reason": _reason(exception)}, status=404)
    return response.render()


def permission_denied(request: HttpRequest, exception: BaseException | None = None) -> HttpResponse:
    response = TemplateResponse(request, "403.html", {"reason": _reason(exception)}, status=403)
    return response.render()


def server_error(request: HttpRequest) -> HttpResponse:
    # No request context: whatever broke may be in it (the database, a context processor).
    return HttpResponseServerError(loader.get_template("500.html").render())


class NotFoundMiddleware:
    """Renders a view's ``Http404`` with our template, in DEBUG too (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> Any:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404):
            return page_not_found(request, exception)
        return None
