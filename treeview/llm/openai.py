"""Streaming client for the OpenAI-compatible Chat Completions API.

Speaks to OpenAI itself and to the servers that copy its API: vLLM, Ollama, llama.cpp's server, LM Studio.
``POST {base}/chat/completions`` with ``stream: true``; the reply arrives as ``data: {chunk}`` events and
ends with ``data: [DONE]``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from .base import ProviderError, StreamingSummarizer, StreamState, describe_error
from .sse import SseEvent

__all__ = ["DEFAULT_BASE_URL", "OpenAISummarizer"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

# finish_reason values that are not a normal end; every other value ("stop", "tool_calls", ...) is one.
_FINISH_ERRORS = {"content_filter": "the reply was stopped by the provider's content filter"}


class OpenAISummarizer(StreamingSummarizer):
    """Summarizes with a model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    label = "the OpenAI-compatible server"

    @property
    def url(self) -> str:
        """``{base}/chat/completions``; a base URL with no path (``http://localhost:11434``) gets ``/v1``."""
        base = self.base_url(DEFAULT_BASE_URL)
        if not urlsplit(base).path:
            base += "/v1"
        return f"{base}/chat/completions"

    def headers(self) -> dict[str, str]:
        """A bearer token when an API key is set (local servers usually need none)."""
        return {"authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}

    def body(self, system_prompt: str, user_prompt: str, max_tokens: int) -> dict[str, Any]:
        """System and user message, streamed. ``max_tokens`` (not ``max_completion_tokens``) because the
        compatible servers all accept it."""
        return {
            "model": self.config.model,
            "messages": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": user_prompt},
            ],
            "max_tokens": max_tokens,
            "stream": True,
        }

    def handle_event(self, event: SseEvent, state: StreamState) -> None:
        """Add ``choices[0].delta.content``; a ``finish_reason`` or ``[DONE]`` ends the reply.

        Reasoning deltas (``reasoning_content``, ``reasoning``) are not part of the summary and are
        ignored. An ``{"error": ...}`` chunk (OpenAI, vLLM) raises :class:`ProviderError`.
        """
        data = event.data.strip()
        if data == "[DONE]":
            state.finished = True
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise ProviderError(f"unreadable stream data: {data[:200]!r}") from None
        if not isinstance(chunk, dict):
            return
        if chunk.get("error"):
            raise ProviderError(describe_error(chunk["error"]))
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return  # e.g. the closing usage chunk
        choice = choices[0]
        delta = choice.get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("content"), str):
            state.add_text(delta["content"])
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            if finish_reason in _FINISH_ERRORS:
                raise ProviderError(_FINISH_ERRORS[finish_reason])
            state.stop_reason = "length" if finish_reason == "length" else "stop"
            # Some servers (older llama.cpp) never send [DONE]; the finish reason already ends the reply.
            state.finished = True
