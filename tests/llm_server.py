"""A local model server for tests: speaks the streaming wire formats of OpenAI and Anthropic.

::

    with LlmServer(provider="openai", tokens=["Hel", "lo"], delay=0.0, mode="normal") as server:
        config = LlmConfig(provider="openai", model="m", base_url=server.base_url)
        ...
        server.requests        # the JSON bodies received, oldest first
        server.calls           # RecordedRequest(path, headers, body) for each request

It listens on 127.0.0.1 (a free port) in a background thread of the test process, over a real socket, so a
daphne subprocess can use it too (``ARBOR_LLM_BASE_URL=server.base_url``). Responses are HTTP/1.1 with
chunked transfer encoding and ``Connection: close``, as real providers stream.

The attributes can be changed while it runs; each request reads them when it arrives (``delay`` before each
token):

* ``tokens``: the text pieces of the reply; ``thinking``: reasoning pieces sent before them (OpenAI:
  ``reasoning_content`` deltas, Anthropic: a thinking block), which a client must ignore.
* ``delay``: seconds before each token (a slow stream to cancel mid-way).
* ``mode``: ``"normal"``; ``"error"`` (HTTP ``status`` with the provider's JSON error body);
  ``"stream_error"`` (half the tokens, then the provider's error event); ``"drop"`` (half the tokens, then
  the socket is closed without ending the chunked body); ``"incomplete"`` (all tokens, then the body ends
  cleanly without the final events); ``"json"`` (200 with one JSON object instead of a stream).
* ``finish``: ``"stop"`` or ``"length"`` (OpenAI ``finish_reason: "length"``, Anthropic
  ``stop_reason: "max_tokens"``).
* ``status``, ``error_message``: the HTTP status and text of ``mode="error"`` and of the error event.
* ``api_key``: when set, requests without the right key (``Authorization: Bearer`` / ``x-api-key``) get 401.

Each stream's end is recorded in ``server.streams`` (:class:`StreamRecord`: tokens sent and how it ended:
``"complete"``, ``"client_gone"`` when the client closed the connection, ``"dropped"``, ``"stopped"``);
:meth:`LlmServer.wait_for_streams` waits for them. A slow stream notices a departed client within about
20 ms, and leaving the ``with`` block ends every stream.
"""

from __future__ import annotations

import json
import select
import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["LlmServer", "RecordedRequest", "StreamRecord"]

PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
# How often a waiting stream looks at its socket and at the stop flag.
POLL_SECONDS = 0.02


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as received: path, headers (names in lower case) and JSON body."""

    path: str
    headers: dict[str, str]
    body: Any


@dataclass(slots=True)
class StreamRecord:
    """How one streamed response went: ``tokens_sent`` text tokens, ended by ``outcome``."""

    tokens_sent: int = 0
    outcome: str = ""
    ended_at: float = 0.0


class _ClientGone(Exception):
    """The client closed the connection (or the server is stopping)."""


@dataclass(slots=True)
class _Events:
    """The server-sent events of one response, split where tokens are sent."""

    head: list[bytes] = field(default_factory=list)
    token: list[bytes] = field(default_factory=list)
    error: bytes = b""
    tail: list[bytes] = field(default_factory=list)


def _sse(data: Any, event: str | None = None) -> bytes:
    lines = f"event: {event}\n" if event else ""
    payload = data if isinstance(data, str) else json.dumps(data)
    return f"{lines}data: {payload}\n\n".encode()


def _openai_events(server: LlmServer, model: str) -> _Events:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion.chunk",
                "created": 1764460800,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    return _Events(
        head=[chunk({"role": "assistant", "content": ""})]
        + [chunk({"reasoning_content": piece}) for piece in server.thinking],
        token=[chunk({"content": token}) for token in server.tokens],
        error=_sse(
            {"error": {"message": server.error_message, "type": "server_error", "param": None, "code": None}}
        ),
        tail=[
            chunk({}, "length" if server.finish == "length" else "stop"),
            _sse(
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"total_tokens": 9},
                }
            ),
            _sse("[DONE]"),
        ],
    )


def _anthropic_events(server: LlmServer, model: str) -> _Events:
    def event(kind: str, **data: Any) -> bytes:
        return _sse({"type": kind, **data}, kind)

    head = [
        event(
            "message_start",
            message={
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 12, "output_tokens": 1},
            },
        ),
        event("ping"),
    ]
    text_index = 0
    if server.thinking:
        head.append(event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}))
        head += [
            event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": piece})
            for piece in server.thinking
        ]
        head.append(
            event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "c2ln"})
        )
        head.append(event("content_block_stop", index=0))
        text_index = 1
    head.append(event("content_block_start", index=text_index, content_block={"type": "text", "text": ""}))
    return _Events(
        head=head,
        token=[
            event("content_block_delta", index=text_index, delta={"type": "text_delta", "text": token})
            for token in server.tokens
        ],
        error=event("error", error={"type": "overloaded_error", "message": server.error_message}),
        tail=[
            event("content_block_stop", index=text_index),
            event(
                "message_delta",
                delta={
                    "stop_reason": "max_tokens" if server.finish == "length" else "end_turn",
                    "stop_sequence": None,
                },
                usage={"output_tokens": len(server.tokens)},
            ),
            event("message_stop"),
        ],
    )


def _error_body(provider: str, message: str, kind: str) -> dict[str, Any]:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HttpServer

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def do_POST(self) -> None:
        """Record the request, then answer it as the configured provider would."""
        owner = self.server.owner
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        owner._record(RecordedRequest(path=self.path, headers=headers, body=body))
        provider = owner.provider
        if self.path != PATHS[provider]:
            self._json(404, _error_body(provider, f"no route for {self.path}", "not_found_error"))
        elif owner.api_key and not self._authorized(provider, headers, owner.api_key):
            self._json(401, _error_body(provider, "invalid api key", "authentication_error"))
        elif not isinstance(body, dict):
            self._json(400, _error_body(provider, "body is not a JSON object", "invalid_request_error"))
        elif owner.mode == "json":
            # A server that ignores "stream": true and answers with one JSON object.
            self._json(200, {"id": "x", "choices": [{"message": {"content": "".join(owner.tokens)}}]})
        elif owner.mode == "error":
            kind = "api_error" if provider == "anthropic" else "server_error"
            self._json(owner.status, _error_body(provider, owner.error_message, kind))
        else:
            self._stream(owner, str(body.get("model", "")))

    @staticmethod
    def _authorized(provider: str, headers: dict[str, str], key: str) -> bool:
        if provider == "anthropic":
            return headers.get("x-api-key") == key
        return headers.get("authorization") == f"Bearer {key}"

    def _json(self, status: int, data: dict[str, Any]) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(payload)
        self.close_connection = True

    def _stream(self, owner: LlmServer, model: str) -> None:
        self.close_connection = True
        record = StreamRecord()
        mode = owner.mode
        events = (_anthropic_events if owner.provider == "anthropic" else _openai_events)(owner, model)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("connection", "close")
        self.end_headers()
        try:
            for data in events.head:
                self._chunk(data)
            cut = len(events.token) // 2 if mode in ("drop", "stream_error") else len(events.token)
            for data in events.token[:cut]:
                self._pause(owner)
                self._chunk(data)
                record.tokens_sent += 1
            if mode == "drop":
                # Close without the chunked body's last chunk: the client sees the connection break.
                self.connection.shutdown(socket.SHUT_RDWR)
                record.outcome = "dropped"
                return
            if mode == "stream_error":
                self._chunk(events.error)
            elif mode != "incomplete":
                for data in events.tail:
                    self._chunk(data)
            self.wfile.write(b"0\r\n\r\n")
            record.outcome = "complete"
        except _ClientGone:
            record.outcome = "stopped" if owner._stopping.is_set() else "client_gone"
        except OSError:
            record.outcome = "client_gone"
        finally:
            owner._finish(record)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _pause(self, owner: LlmServer) -> None:
        """Wait ``owner.delay`` seconds, but stop at once when the client leaves or the server stops."""
        deadline = time.monotonic() + owner.delay
        while True:
            if owner._stopping.is_set():
                raise _ClientGone
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([self.connection], [], [], max(0.0, min(remaining, POLL_SECONDS)))
            if readable:
                try:
                    peeked = self.connection.recv(1, socket.MSG_PEEK)
                except OSError:
                    raise _ClientGone from None
                if not peeked:
                    raise _ClientGone
                # The client sent something more (it never should): do not spin on it.
                time.sleep(max(0.0, min(remaining, POLL_SECONDS)))
            if remaining <= 0:
                return


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: LlmServer

    def server_bind(self) -> None:
        # HTTPServer.server_bind looks the host name up (getfqdn), which can stall without DNS.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class LlmServer:
    """A fake OpenAI or Anthropic streaming endpoint on 127.0.0.1; use it as a context manager."""

    def __init__(
        self,
        provider: str = "openai",
        tokens: list[str] | None = None,
        delay: float = 0.0,
        mode: str = "normal",
        *,
        thinking: list[str] | None = None,
        finish: str = "stop",
        status: int = 500,
        error_message: str = "The server had an error while processing your request.",
        api_key: str | None = None,
    ) -> None:
        if provider not in PATHS:
            raise ValueError(f"provider must be one of {sorted(PATHS)}")
        self.provider = provider
        self.tokens = list(tokens) if tokens is not None else ["Hello", ", ", "world", "."]
        self.delay = delay
        self.mode = mode
        self.thinking = list(thinking) if thinking is not None else ["Thinking about it."]
        self.finish = finish
        self.status = status
        self.error_message = error_message
        self.api_key = api_key
        self.calls: list[RecordedRequest] = []
        self.streams: list[StreamRecord] = []
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._httpd: _HttpServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------------

    def start(self) -> LlmServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        httpd = _HttpServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="llm-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """End every stream, stop serving and close the socket."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> LlmServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what tests read --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The port it listens on."""
        assert self._httpd is not None, "the server is not running"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What ``ARBOR_LLM_BASE_URL`` should be: ``http://127.0.0.1:PORT/v1`` (OpenAI) or without ``/v1``."""
        root = f"http://127.0.0.1:{self.port}"
        return f"{root}/v1" if self.provider == "openai" else root

    @property
    def requests(self) -> list[Any]:
        """The JSON bodies received, oldest first."""
        with self._lock:
            return [call.body for call in self.calls]

    def wait_for_streams(self, count: int = 1, timeout: float = 5.0) -> list[StreamRecord]:
        """Wait until ``count`` streamed responses have ended; return all records so far."""
        with self._lock:
            self._lock.wait_for(lambda: len(self.streams) >= count, timeout=timeout)
            return list(self.streams)

    # -- used by the handler ------------------------------------------------------------------------------

    def _record(self, call: RecordedRequest) -> None:
        with self._lock:
            self.calls.append(call)

    def _finish(self, record: StreamRecord) -> None:
        record.ended_at = time.monotonic()
        with self._lock:
            self.streams.append(record)
            self._lock.notify_all()
