"""Reading a file's bytes: hash windows, complete lines, text for the database, line digests."""

from __future__ import annotations

import hashlib
from typing import IO

from treeview.session.jsonl import CHUNK_SIZE, ParseWarning

HASH_WINDOW = 64 * 1024


def _read_range(handle: IO[bytes], start: int, end: int) -> bytes:
    handle.seek(start)
    return handle.read(max(0, end - start))


def window_hashes(handle: IO[bytes], end: int) -> tuple[str, str]:
    head = hashlib.sha256(_read_range(handle, 0, min(end, HASH_WINDOW))).hexdigest()
    tail = hashlib.sha256(_read_range(handle, max(0, end - HASH_WINDOW), end)).hexdigest()
    return head, tail


def _complete_end(handle: IO[bytes], size: int) -> int:
    """Offset just past the last newline at or before ``size`` (0 when there is none)."""
    position = size
    while position > 0:
        start = max(0, position - CHUNK_SIZE)
        block = _read_range(handle, start, position)
        index = block.rfind(b"\n")
        if index >= 0:
            return start + index + 1
        position = start
    return 0


def _text(data: bytes, warnings: list[ParseWarning], line: int) -> str:
    """Text for the database: bytes that are not UTF-8 cannot be stored as they are (replaced, warned)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(ParseWarning(line, "bytes that are not UTF-8 are stored as U+FFFD (export differs)"))
        text = data.decode("utf-8", errors="replace")
    if "\x00" in text:
        # Only a broken line can hold a raw NUL (JSON escapes it); no database stores one in text.
        warnings.append(ParseWarning(line, "NUL bytes are stored as U+FFFD (export differs)"))
        text = text.replace("\x00", "\ufffd")
    return text


def line_digest(before: str, raw: str) -> str:
    return hashlib.blake2b(f"{before}\x00{raw}".encode(), digest_size=16).hexdigest()


def _digest(before: str, raw: str | bytes) -> str:
    """``line_digest(before, raw)``; ``raw`` may be the text's UTF-8 bytes (hashed as they are)."""
    if isinstance(raw, str):
        return line_digest(before, raw)
    hasher = hashlib.blake2b(before.encode(), digest_size=16)
    hasher.update(b"\x00")
    hasher.update(raw)
    return hasher.hexdigest()
