"""Django's ASGI handler, made to finish every request it starts, so that no database connection is left open.

Django runs a request's synchronous code (middleware, views) in a worker thread of its own, and closes that
thread's database connections when the request finishes (``request_finished`` → ``close_old_connections``,
which honours ``CONN_MAX_AGE``). When a client leaves, Django cancels the view and still sends
``request_finished``; but the signal's receivers run in that same worker thread, behind the view, which a
cancellation cannot stop. If the view takes longer than daphne's ``application_close_timeout`` (10 s), daphne
cancels the whole application instance: Django's handler stops while it waits, ``request_finished`` is never
sent, and the thread's connection stays open, idle, until the garbage collector happens to free it. (The
issue 11 load test counted 43 such connections out of the server's 100.)

:class:`ArborASGIHandler` shields Django's handler from that cancellation: the application instance reports
itself cancelled at once, while Django finishes the request in the background (the view's thread completes,
then ``request_finished`` closes its connections). Views that can stop early do so on the client's
disconnect, which Django passes on as a cancellation (the search: treeview/interactive.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import django
from django.core.handlers.asgi import ASGIHandler

logger = logging.getLogger(__name__)

# Requests finishing after their application instance was cancelled: referenced until done (asyncio keeps only
# weak references to tasks).
_finishing: set[asyncio.Task[Any]] = set()


def _finished(task: asyncio.Task[Any]) -> None:
    _finishing.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("request failed after its client left", exc_info=task.exception())


class ArborASGIHandler(ASGIHandler):
    """:class:`~django.core.handlers.asgi.ASGIHandler` whose requests always finish (see the module)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        task = asyncio.ensure_future(super().__call__(scope, receive, send))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if not task.done():
                _finishing.add(task)
                task.add_done_callback(_finished)
            raise


def get_asgi_application() -> ArborASGIHandler:
    """As :func:`django.core.asgi.get_asgi_application`, with :class:`ArborASGIHandler`."""
    django.setup(set_prefix=False)
    return ArborASGIHandler()
