"""Ids and timestamps as oh-my-pi v15 makes them (§1.2, §4)."""

from __future__ import annotations

import os
import secrets
import threading
import time
import uuid
from collections.abc import Container
from datetime import UTC, datetime

__all__ = ["generate_id", "iso_now", "new_session_id", "parse_timestamp_ms", "snowflake", "uuid7"]


def iso_now() -> str:
    """``new Date().toISOString()``: UTC, three fraction digits, a literal ``Z``."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def generate_id(existing: Container[str]) -> str:
    """An entry id: the last 8 hex chars of a random UUID, retried against ``existing`` (omp v15)."""
    for _ in range(100):
        candidate = str(uuid.uuid4())[-8:]
        if candidate not in existing:
            return candidate
    return snowflake()


_snowflake_lock = threading.Lock()
_snowflake_state = {"ms": 0, "seq": 0}


def snowflake() -> str:
    """A 16-hex-char time-ordered id, the fallback when 100 random ids collide."""
    with _snowflake_lock:
        ms = int(time.time() * 1000)
        if ms == _snowflake_state["ms"]:
            _snowflake_state["seq"] = (_snowflake_state["seq"] + 1) & 0xFFF
        else:
            _snowflake_state["ms"], _snowflake_state["seq"] = ms, 0
        value = (ms << 22) | ((os.getpid() & 0x3FF) << 12) | _snowflake_state["seq"]
    return f"{value & 0xFFFFFFFFFFFFFFFF:016x}"


def uuid7() -> str:
    """A lowercase UUIDv7 string (what ``Bun.randomUUIDv7()`` returns): 48-bit ms time, then random bits."""
    ms = int(time.time() * 1000) & ((1 << 48) - 1)
    rand = secrets.randbits(74)
    value = (ms << 80) | (0x7 << 76) | ((rand >> 62) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    return str(uuid.UUID(int=value))


def new_session_id() -> str:
    """A session id as omp v15 creates them (UUIDv7)."""
    return uuid7()


def parse_timestamp_ms(value: object) -> float | None:
    """``Date.parse``-like: epoch milliseconds of an ISO timestamp (or a number), ``None`` when invalid."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp() * 1000.0
