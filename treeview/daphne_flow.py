"""Two fixes to how daphne sends a streamed response body (issue 11, findings 8 and 10).

Back-pressure: daphne hands every ``http.response.body`` message straight to Twisted, which buffers what the
socket cannot take yet without limit, and its ``send`` returns at once; Django then pulls the next chunk of
a download right away, so one reader who stops reading makes the server hold the whole file. Here a body
message with more to come registers a push producer on the request (Twisted pauses it when the transport's
send buffer is full and resumes it when it drains), and ``send`` waits while it is paused: the generator is
pulled at the client's pace, and a stalled reader holds O(one chunk).

Abort: when the application raises after the response started (a database error in the middle of a
download), daphne tries to start a 500 response, which fails, and leaves the connection open until the
client gives up. Here the connection is aborted instead: the client sees an incomplete transfer at once.

Installed once from ``TreeviewConfig.ready``; a daphne whose internals differ is left alone (logged).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

logger = logging.getLogger(__name__)

#: Seconds between checks that a paused response's connection is still there.
RECHECK = 1.0
_installed = False


class _Pacer:
    """The push producer Twisted pauses and resumes; ``ready`` is set while the transport takes more."""

    def __init__(self, paused: bool) -> None:
        self.ready = asyncio.Event()
        if not paused:
            self.ready.set()

    def pauseProducing(self) -> None:  # noqa: N802 (Twisted's interface)
        self.ready.clear()

    def resumeProducing(self) -> None:  # noqa: N802
        self.ready.set()

    def stopProducing(self) -> None:  # noqa: N802
        self.ready.set()


def _gone(protocol: Any) -> bool:
    return bool(protocol.finished or protocol.channel is None or getattr(protocol, "_disconnected", False))


async def _wait_for_room(protocol: Any) -> None:
    pacer: _Pacer | None = getattr(protocol, "_arbor_pacer", None)
    if pacer is None:
        if protocol.producer is not None:
            return  # someone else's producer: leave it alone
        pacer = _Pacer(paused=bool(getattr(protocol.channel, "_waitingForTransport", False)))
        protocol.registerProducer(pacer, True)
        protocol._arbor_pacer = pacer
    while not pacer.ready.is_set() and not _gone(protocol):
        try:
            await asyncio.wait_for(pacer.ready.wait(), RECHECK)
        except TimeoutError:
            continue


def _release(protocol: Any) -> None:
    if getattr(protocol, "_arbor_pacer", None) is not None:
        protocol._arbor_pacer = None
        if protocol.channel is not None:
            protocol.unregisterProducer()


def install() -> None:
    """Patch daphne's server and HTTP request classes (idempotent)."""
    global _installed
    if _installed:
        return
    try:
        from daphne.http_protocol import WebRequest
        from daphne.server import Server
    except ImportError:
        return
    if not all(hasattr(WebRequest, name) for name in ("handle_exception", "handle_reply")) or not hasattr(
        Server, "handle_reply"
    ):
        logger.warning("daphne's internals changed: streamed downloads run without back-pressure")
        return
    original_reply = Server.handle_reply
    original_exception = WebRequest.handle_exception

    async def handle_reply(self: Any, protocol: Any, message: Any) -> None:
        body = isinstance(protocol, WebRequest) and message.get("type") == "http.response.body"
        more = bool(body and message.get("more_body", False))
        if body and not more:
            _release(protocol)  # the request is finishing: the channel's next request may register its own
        await original_reply(self, protocol, message)
        if more and not _gone(protocol):
            await _wait_for_room(protocol)

    def handle_exception(self: Any, exception: BaseException) -> None:
        if not self._response_started:
            original_exception(self, exception)
            return
        # Too late for a 500: end the connection without the final chunk, so the client knows the body is cut.
        logger.error("response to %s aborted after it started: %r", getattr(self, "uri", b"?"), exception)
        _release(self)
        if self.channel is not None and self.channel.transport is not None:
            self.channel.transport.abortConnection()

    Server.handle_reply = handle_reply  # type: ignore[method-assign]
    WebRequest.handle_exception = handle_exception  # type: ignore[method-assign]
    _installed = True
