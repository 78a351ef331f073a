"""What both ends of a push agree on about a session file: its title slot, header id and prefix hash.

The ingest API compares the file on the laptop with the copy on the server without sending it: the server
tells its length, the title slot's length and hash, and a hash of the body (everything after the slot) up to
its length; the laptop hashes the same range of its own file. Equal hashes: only the bytes after that point
travel. The body is hashed in 1 MiB blocks (the hash of the block hashes, then the length), so the server
extends its hash after an append by reading at most one block again, and a laptop that follows a growing file
keeps its block hashes and reads only what is new. The slot is hashed apart because omp rewrites it in place
when a session is renamed: a new slot of the same length travels alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import IO

import orjson

from .headerless import is_sdk_v4
from .jsonl import is_title_slot

__all__ = ["BLOCK", "BodyHash", "FileHead", "body_digest", "read_head"]

#: Bytes per hashed block of the body.
BLOCK = 1 << 20
#: How much of a file is read to find its title slot and header (a header line longer than this is refused).
HEAD_LIMIT = 1 << 20


@dataclass(frozen=True)
class FileHead:
    """The start of a session file: the title slot line (``b""`` without one) and the header's id."""

    slot: bytes
    session_id: str

    @property
    def slot_length(self) -> int:
        return len(self.slot)

    @property
    def slot_sha256(self) -> str:
        return hashlib.sha256(self.slot).hexdigest()


def _line(data: bytes, start: int) -> tuple[bytes, int] | None:
    end = data.find(b"\n", start)
    return None if end < 0 else (data[start : end + 1], end + 1)


def read_head(handle: IO[bytes], headerless_id: str | None = None) -> FileHead | None:
    """The title slot and header id of a session file, or None while they are not complete lines yet (or
    the file does not start like a session file: the import then says why).

    ``headerless_id``: the id of a file whose first object is an entry, not a header (the import reads it
    with a made-up header of that id, treeview/session/headerless.py); without it such a file gives None.
    """
    handle.seek(0)
    data = handle.read(HEAD_LIMIT)
    first = _line(data, 0)
    if first is None:
        return None
    line, after = first
    slot = b""
    value = _object(line)
    if value is not None and is_title_slot(value):
        slot = line
        second = _line(data, after)
        if second is None:
            return None
        value = _object(second[0])
    if value is None:
        return None
    session_id = value.get("id")
    if value.get("type") == "session" and isinstance(session_id, str):
        return FileHead(slot, session_id)
    if headerless_id is not None and value.get("type") != "session" and not is_sdk_v4(value):
        return FileHead(slot, headerless_id)
    return None


def _object(line: bytes) -> dict[str, object] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def body_digest(blocks: list[str], tail: bytes, length: int) -> str:
    """The body hash from the hashes of its full blocks, the bytes after them and the body's length."""
    hasher = hashlib.sha256()
    for block in blocks:
        hasher.update(bytes.fromhex(block))
    hasher.update(hashlib.sha256(tail).digest())
    hasher.update(str(length).encode())
    return hasher.hexdigest()


@dataclass
class BodyHash:
    """The block hashes of a body (the file from ``start``), extended as it grows."""

    start: int
    blocks: list[str] = field(default_factory=list)

    def covered(self) -> int:
        """File offset up to which the full blocks reach."""
        return self.start + len(self.blocks) * BLOCK

    def extend(self, handle: IO[bytes], end: int) -> bytes:
        """Hash the full blocks between :meth:`covered` and ``end`` (file offsets); returns the bytes after
        the last full block (less than one block), which the digest hashes as they are."""
        position = self.covered()
        handle.seek(position)
        while end - position >= BLOCK:
            block = handle.read(BLOCK)
            if len(block) < BLOCK:
                raise OSError(f"the file ends at {position + len(block)}, before {end}")
            self.blocks.append(hashlib.sha256(block).hexdigest())
            position += BLOCK
        tail = handle.read(end - position)
        if len(tail) < end - position:
            raise OSError(f"the file ends at {position + len(tail)}, before {end}")
        return tail

    def truncate(self, end: int) -> None:
        """Forget the blocks that reach past ``end`` (the file was cut or rewritten there)."""
        keep = max(0, (end - self.start) // BLOCK)
        del self.blocks[keep:]

    def digest(self, handle: IO[bytes], end: int) -> str:
        """The body hash of the file's ``[start, end)``, reusing the block hashes known."""
        if end < self.covered():
            self.truncate(end)
        tail = self.extend(handle, end)
        return body_digest(self.blocks, tail, end - self.start)
