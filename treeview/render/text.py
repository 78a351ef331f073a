"""Coercion of hostile entry values into displayable text and numbers.

Parsed entries are whatever the file said: a `name` can be a dict, a `text` can hold lone surrogates (valid
JSON, invalid UTF-8). Everything shown goes through these helpers first so that rendering never raises and
the page can always be encoded.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Lone surrogates cannot be encoded as UTF-8; NUL is a parse error in HTML text (browsers drop or replace it).
_UNENCODABLE = re.compile("[\x00\ud800-\udfff]")


def clean_text(text: str) -> str:
    """`text` with lone surrogates (they cannot be encoded as UTF-8) and NULs replaced by U+FFFD."""
    return _UNENCODABLE.sub("\ufffd", text)


def as_text(value: Any) -> str:
    """A display string for any JSON value: strings as they are, None as "", anything else as compact JSON."""
    if isinstance(value, str):
        return clean_text(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return clean_text(json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":")))


def opt_text(value: Any) -> str | None:
    """Like `as_text`, but None stays None (an absent optional field)."""
    return None if value is None else as_text(value)


def as_int(value: Any) -> int | None:
    """An integer from a JSON number (integral floats included); None for anything else, booleans included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def as_number(value: Any) -> float | None:
    """A finite float from a JSON number; None for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def one_line(text: str, limit: int = 200) -> str:
    """The first line of `text`, cut to `limit` characters with an ellipsis."""
    line = text.strip().split("\n", 1)[0]
    if len(line) > limit or "\n" in text.strip():
        return line[:limit].rstrip() + "…"
    return line


def format_size(size: int) -> str:
    """A byte count as a short human size: 512 B, 12.3 KB, 4.8 MB (units of 1024)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def utf8_size(text: str) -> int:
    """The UTF-8 size of `text` in bytes (lone surrogates count as the 3 bytes of U+FFFD)."""
    return len(text.encode("utf-8", "surrogatepass"))
