"""Streaming client for the Anthropic Messages API.

``POST {base}/v1/messages`` with ``stream: true``. The reply arrives as named events: ``message_start``,
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` per block, ``message_delta``
(with the stop reason), ``message_stop``; ``ping`` keeps the connection alive and ``error`` reports a
failure mid-stream.
"""

from __future__ import annotations

import json
from typing import Any

from .base import ProviderError, StreamingSummarizer, StreamState, describe_error
from .sse import SseEvent

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_BASE_URL", "AnthropicSummarizer"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"


class AnthropicSummarizer(StreamingSummarizer):
    """Summarizes with a model behind the Anthropic Messages API."""

    label = "the Anthropic API"

    @property
    def url(self) -> str:
        """``{base}/v1/messages``; a base that already ends in ``/v1`` does not get it twice."""
        base = self.base_url(DEFAULT_BASE_URL)
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def headers(self) -> dict[str, str]:
        """``x-api-key`` and the API version header every request needs."""
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if self.config.api_key:
            headers["x-api-key"] = self.config.api_key
        return headers

    def body(self, system_prompt: str, user_prompt: str, max_tokens: int) -> dict[str, Any]:
        """The system prompt as ``system``, one user message, streamed."""
        return {
            "model": self.config.model,
            "max_tokens": max_tokens,
            "system": system_prompt,
            "messages": [{"role": "user", "content": user_prompt}],
            "stream": True,
        }

    def handle_event(self, event: SseEvent, state: StreamState) -> None:
        """Add the ``text_delta`` pieces of text blocks; thinking, signatures and tool input are ignored.

        ``message_delta`` carries the stop reason (``max_tokens`` → ``"length"``); ``message_stop`` ends
        the reply; an ``error`` event raises :class:`ProviderError`.
        """
        try:
            payload = json.loads(event.data)
        except ValueError:
            raise ProviderError(f"unreadable stream data: {event.data[:200]!r}") from None
        if not isinstance(payload, dict):
            return
        # The event name and the payload's "type" agree; servers that omit "event:" still set "type".
        kind = payload.get("type") if event.event == "message" else event.event
        if kind == "error":
            raise ProviderError(describe_error(payload.get("error")))
        if kind == "content_block_start":
            block = payload.get("content_block")
            if isinstance(block, dict) and block.get("type") == "text":
                state.new_block()
                text = block.get("text")
                state.add_text(text if isinstance(text, str) else "")
        elif kind == "content_block_delta":
            delta = payload.get("delta")
            if (
                isinstance(delta, dict)
                and delta.get("type") == "text_delta"
                and isinstance(delta.get("text"), str)
            ):
                state.add_text(delta["text"])
        elif kind == "message_delta":
            delta = payload.get("delta")
            stop_reason = delta.get("stop_reason") if isinstance(delta, dict) else None
            if stop_reason == "refusal":
                raise ProviderError("the model refused to answer")
            if stop_reason == "max_tokens":
                state.stop_reason = "length"
            elif stop_reason:
                state.stop_reason = "stop"
        elif kind == "message_stop":
            state.finished = True
