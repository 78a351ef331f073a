"""The ingest API as the push client sees it: a few JSON calls over httpx, errors sorted by what to do."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

__all__ = ["Api", "ApiError", "Offline", "SourceState"]

USER_AGENT = "arbor-push/1"
#: A chunk whose answer was lost is sent again this many times at once before the file waits for later.
RETRIES = 2


class Offline(Exception):
    """The server cannot be reached (or answered 5xx): try again later; nothing is lost."""


class ApiError(Exception):
    """The server refused: ``status``, its ``code`` and ``detail`` (what to do), ``state`` on 409."""

    def __init__(self, status: int, code: str, detail: str, body: dict[str, Any]) -> None:
        super().__init__(f"{detail} ({status} {code})")
        self.status = status
        self.code = code
        self.detail = detail
        self.body = body

    @property
    def fatal(self) -> bool:
        """A token problem: no file can be pushed with this token (stop, tell the user)."""
        return self.status in (401, 403) and self.code != "not_owner"


@dataclass(frozen=True)
class SourceState:
    """What the server holds of one file."""

    key: str
    length: int
    slot_length: int
    slot_sha256: str
    body_sha256: str
    max_request: int
    session_url: str | None
    entries: int
    imported: bool = True

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SourceState:
        session = data.get("session") or {}
        return cls(
            key=data["source"],
            length=int(data["length"]),
            slot_length=int(data["slot"]["length"]),
            slot_sha256=data["slot"]["sha256"],
            body_sha256=data["body_sha256"],
            max_request=int(data["limits"]["max_request_bytes"]),
            session_url=session.get("url"),
            entries=int(session.get("entries", 0)),
            imported=bool(data.get("imported", True)),
        )


class Api:
    """One server, one token. ``sent`` counts the bytes of file content sent (retries included)."""

    def __init__(self, server: str, token: str, *, timeout: float = 600.0) -> None:
        self.base = server.rstrip("/") + "/api/v1/"
        self.client = httpx.Client(
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT},
            timeout=httpx.Timeout(timeout, connect=10.0),
            follow_redirects=False,
        )
        self.sent = 0

    def close(self) -> None:
        self.client.close()

    def _call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One request; a 429 waits as long as the server asks (a few times), then tries again."""
        for _ in range(5):
            try:
                response = self.client.request(method, self.base + path, **kwargs)
            except httpx.TransportError as error:
                raise Offline(f"cannot reach the server: {error or type(error).__name__}") from None
            if response.status_code >= 500:
                raise Offline(f"the server answered {response.status_code}")
            try:
                body = orjson.loads(response.content) if response.content else {}
            except orjson.JSONDecodeError:
                body = {}
            if not isinstance(body, dict):
                body = {}
            if response.status_code == 429:
                time.sleep(min(60, int(response.headers.get("Retry-After", "1") or 1)))
                continue
            if response.status_code >= 300:
                detail = body.get("detail") or response.reason_phrase or "refused"
                if response.status_code in (301, 302, 303, 307, 308):
                    detail = f"redirected to {response.headers.get('Location')}: check --server (https?)"
                raise ApiError(response.status_code, str(body.get("error", "error")), str(detail), body)
            return body
        raise ApiError(429, "rate_limited", "the server keeps asking to slow down", {})

    def me(self) -> dict[str, Any]:
        return self._call("GET", "me")

    def source(self, machine: str, path: str, session_id: str) -> SourceState:
        data = orjson.dumps({"machine": machine, "path": path, "session_id": session_id})
        body = self._call("POST", "sources", content=data, headers={"Content-Type": "application/json"})
        return SourceState.from_json(body)

    def _bytes(self, method: str, path: str, data: bytes, params: dict[str, int]) -> dict[str, Any]:
        """Send a chunk; a lost answer is sent again as it was (the server stores a chunk once)."""
        headers = {"Content-Type": "application/octet-stream"}
        for attempt in range(RETRIES + 1):
            self.sent += len(data)
            try:
                return self._call(method, path, content=data, params=params, headers=headers)
            except Offline:
                if attempt == RETRIES:
                    raise
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def append(self, key: str, offset: int, data: bytes, *, more: bool = False) -> dict[str, Any]:
        params = {"offset": offset, "more": 1} if more else {"offset": offset}
        return self._bytes("POST", f"sources/{key}/append", data, params)

    def put_slot(self, key: str, data: bytes) -> dict[str, Any]:
        return self._bytes("PUT", f"sources/{key}/slot", data, {})

    def rewrite(self, key: str, offset: int, total: int, data: bytes) -> dict[str, Any]:
        return self._bytes("POST", f"sources/{key}/rewrite", data, {"offset": offset, "total": total})
