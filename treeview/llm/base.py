"""What the streaming model clients share: configuration, the HTTP request, cancellation and errors.

A provider module (:mod:`treeview.llm.openai`, :mod:`treeview.llm.anthropic`) only says where to send
the request, what to send, and how to read its server-sent events into a :class:`StreamState`.
:class:`StreamingSummarizer` does the rest: it posts the request with httpx, feeds the body to the
:class:`~treeview.llm.sse.SseParser`, passes each text delta to ``on_delta``, closes the stream as soon as
the :class:`~treeview.session.branch_summary.AbortSignal` fires (or the awaiting task is cancelled), and
turns every failure into a ``SummaryResult(stop_reason="error")`` with a message a person can act on.

No Django here: :class:`LlmConfig` carries the settings, so the clients are easy to test.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from treeview.session.branch_summary import AbortSignal, SummaryResult

from .sse import SseEvent, SseParser

__all__ = [
    "DeltaCallback",
    "LlmConfig",
    "ProviderError",
    "StreamState",
    "StreamingSummarizer",
    "describe_error",
    "error_text_from_body",
]

#: Receives each piece of the reply's text as it arrives (e.g. to push it to the browser).
DeltaCallback = Callable[[str], Awaitable[None]]

#: How much of an error response is read: enough for any JSON error, never a runaway body.
ERROR_BODY_LIMIT = 64 * 1024
#: How much of an unparseable error body is quoted in the message.
ERROR_QUOTE_LIMIT = 300


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """The settings of one model endpoint (``ARBOR_LLM_*``).

    ``base_url`` empty means the provider's public API. ``timeout`` is the seconds to wait for the
    connection and for each next piece of the stream.
    """

    provider: str
    model: str
    base_url: str = ""
    api_key: str = ""
    timeout: float = 60.0
    context_window: int = 128000


class ProviderError(Exception):
    """The provider reported an error inside the stream; the message is shown to the user."""


@dataclass(slots=True)
class StreamState:
    """What has been read from the stream so far.

    ``blocks`` are the reply's text blocks (the result text is them joined with ``"\\n"``); ``finished``
    turns true when the provider said the reply is complete, so a stream that merely stops is an error.
    """

    blocks: list[str] = field(default_factory=lambda: [""])
    stop_reason: str = "stop"
    finished: bool = False
    #: Text received but not yet handed to ``on_delta``.
    pending: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The reply so far."""
        return "\n".join(block for block in self.blocks if block)

    def add_text(self, delta: str) -> None:
        """Append ``delta`` to the current text block."""
        if not delta:
            return
        if self.blocks[-1] == "" and any(self.blocks[:-1]):
            # The first text of a later block: the result joins blocks with "\n", so the stream must too.
            self.pending.append("\n")
        self.blocks[-1] += delta
        self.pending.append(delta)

    def new_block(self) -> None:
        """Start another text block (Anthropic replies can hold several)."""
        if self.blocks[-1]:
            self.blocks.append("")


def describe_error(error: object) -> str:
    """The text of a provider's ``error`` value: ``{"message": ..., "type": ...}`` or a plain string."""
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type")
        text = message if isinstance(message, str) and message else "unknown error"
        return f"{text} ({kind})" if isinstance(kind, str) and kind else text
    return str(error) if error else "unknown error"


def error_text_from_body(body: bytes) -> str:
    """The human part of a provider's JSON error body, or the start of the body itself.

    OpenAI and Anthropic both use ``{"error": {"message": ...}}``; vLLM answers ``{"message": ...}`` and
    Ollama ``{"error": "..."}``.
    """
    text = body.decode("utf-8", errors="replace").strip()
    with contextlib.suppress(ValueError):
        data = json.loads(text)
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict) and error.get("message") or isinstance(error, str) and error:
                return describe_error(error)
            if isinstance(data.get("message"), str) and data["message"]:
                return str(data["message"])
            if isinstance(data.get("detail"), str) and data["detail"]:
                return str(data["detail"])
    text = " ".join(text.split())
    if len(text) > ERROR_QUOTE_LIMIT:
        text = text[:ERROR_QUOTE_LIMIT] + "…"
    return text or "(empty response)"


class StreamingSummarizer(ABC):
    """A :class:`~treeview.session.branch_summary.Summarizer` that streams one reply over HTTP."""

    #: Names the server in error messages ("the OpenAI-compatible server", "the Anthropic API").
    label: str = "the model server"

    def __init__(self, config: LlmConfig, on_delta: DeltaCallback | None = None) -> None:
        self.config = config
        self.on_delta = on_delta

    # -- what a provider defines -------------------------------------------------------------------------

    @property
    @abstractmethod
    def url(self) -> str:
        """The endpoint the request is posted to."""

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """Provider headers (authentication, API version); JSON and SSE headers are added."""

    @abstractmethod
    def body(self, system_prompt: str, user_prompt: str, max_tokens: int) -> dict[str, Any]:
        """The JSON request body of a streamed reply."""

    @abstractmethod
    def handle_event(self, event: SseEvent, state: StreamState) -> None:
        """Read one server-sent event into ``state``; raise :class:`ProviderError` for an error event."""

    # -- the shared machinery ----------------------------------------------------------------------------

    @property
    def _subject(self) -> str:
        """The label at the start of a sentence."""
        return self.label[:1].upper() + self.label[1:]

    def base_url(self, default: str) -> str:
        """The configured base URL (or ``default``) without a trailing slash."""
        return (self.config.base_url or default).rstrip("/")

    async def summarize(
        self, *, system_prompt: str, user_prompt: str, max_tokens: int, signal: AbortSignal
    ) -> SummaryResult:
        """Stream one reply to ``user_prompt`` under ``system_prompt``.

        Returns the text with ``stop_reason`` ``"stop"`` or ``"length"``; ``"aborted"`` (with the text so
        far) as soon as ``signal`` fires, the HTTP stream being closed at once; ``"error"`` with a message
        for HTTP errors, error events, timeouts and broken connections. Cancelling the awaiting task
        closes the stream too. An exception raised by ``on_delta`` is the caller's and propagates.
        """
        state = StreamState()
        if signal.aborted:
            return SummaryResult(stop_reason="aborted")
        stream = asyncio.ensure_future(self._stream(system_prompt, user_prompt, max_tokens, state))
        aborted = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({stream, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            aborted.cancel()
            if not stream.done():
                # Cancelling the task unwinds its ``async with`` blocks, which close the HTTP stream.
                stream.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await stream
        if stream.cancelled():
            return SummaryResult(text=state.text, stop_reason="aborted")
        return stream.result()

    async def _stream(
        self, system_prompt: str, user_prompt: str, max_tokens: int, state: StreamState
    ) -> SummaryResult:
        url = self.url
        timeout = self.config.timeout
        try:
            async with (
                httpx.AsyncClient(timeout=httpx.Timeout(timeout)) as client,
                client.stream(
                    "POST",
                    url,
                    json=self.body(system_prompt, user_prompt, max_tokens),
                    headers={
                        "accept": "text/event-stream",
                        "content-type": "application/json",
                        **self.headers(),
                    },
                ) as response,
            ):
                if response.status_code >= 400:
                    body = await _read_limited(response)
                    status = f"{response.status_code} {response.reason_phrase}".strip()
                    return self._error(
                        f"{self._subject} answered HTTP {status}: {error_text_from_body(body)}", state
                    )
                content_type = response.headers.get("content-type", "")
                if not content_type.startswith("text/event-stream"):
                    body = await _read_limited(response)
                    return self._error(
                        f"{self._subject} did not stream its reply (content-type {content_type or 'none'}): "
                        f"{error_text_from_body(body)}",
                        state,
                    )
                parser = SseParser()
                async for chunk in response.aiter_bytes():
                    for event in parser.feed(chunk):
                        self.handle_event(event, state)
                        await self._flush(state)
                        if state.finished:
                            break
                    if state.finished:
                        break
        except ProviderError as exc:
            return self._error(f"{self._subject} reported an error: {exc}", state)
        except httpx.TimeoutException:
            return self._error(
                f"{self._subject} at {url} did not answer within {timeout:g} s (ARBOR_LLM_TIMEOUT)", state
            )
        except httpx.ConnectError as exc:
            return self._error(f"Could not connect to {self.label} at {url}: {_reason(exc)}", state)
        except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
            return self._error(f"The connection to {self.label} broke off mid-reply: {_reason(exc)}", state)
        except httpx.HTTPError as exc:
            return self._error(f"The request to {self.label} at {url} failed: {_reason(exc)}", state)
        if not state.finished:
            return self._error(f"The stream from {self.label} ended before the reply was complete", state)
        return SummaryResult(text=state.text, stop_reason=state.stop_reason)

    async def _flush(self, state: StreamState) -> None:
        """Hand the text received since the last call to ``on_delta``."""
        if not state.pending:
            return
        delta = "".join(state.pending)
        state.pending.clear()
        if self.on_delta is not None:
            await self.on_delta(delta)

    @staticmethod
    def _error(message: str, state: StreamState) -> SummaryResult:
        # The partial text is kept for the record, but an error result is never stored as a summary.
        return SummaryResult(text=state.text, stop_reason="error", error_message=message)


async def _read_limited(response: httpx.Response) -> bytes:
    """Up to :data:`ERROR_BODY_LIMIT` bytes of ``response``'s body."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return bytes(body[:ERROR_BODY_LIMIT])


def _reason(exc: Exception) -> str:
    """``exc``'s message; some httpx errors have none, then its kind."""
    return str(exc) or type(exc).__name__
