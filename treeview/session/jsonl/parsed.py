"""What parsing a session file yields: its lines, its warnings, and the errors it raises."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


class SessionFileError(ValueError):
    """A file that cannot be read as a session at all (no valid header). It is never rewritten."""


@dataclass(slots=True)
class ParseWarning:
    """A line that was skipped or repaired while reading, with its 1-based physical line number."""

    line: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass(slots=True)
class ParsedLine:
    """One JSON object read from the file; ``start``/``end`` locate its exact bytes in the file."""

    value: dict[str, Any]
    line: int
    start: int
    end: int


class SessionFileChanged(RuntimeError):
    """The file on disk is no longer what was read (or appending now could corrupt it): re-read it first."""


@dataclass(slots=True)
class ParsedFile:
    """The result of reading a session file leniently.

    The exact text of every line stays available: from ``data`` when the text was given in memory, else
    from the file itself, read again on demand (a 250 MB session is never held twice). A file that changed
    since it was read refuses to serve old offsets.
    """

    data: bytes | None = None
    path: str | None = None
    size: int = 0
    mtime_ns: int = 0
    title_slot: dict[str, Any] | None = None
    title_slot_line: ParsedLine | None = None
    header: dict[str, Any] | None = None
    header_line: ParsedLine | None = None
    entries: list[ParsedLine] = field(default_factory=list)
    warnings: list[ParseWarning] = field(default_factory=list)
    # True when the data does not end in a newline: the last line may still be being written.
    incomplete_tail: bool = False

    def load_data(self) -> bytes:
        """The whole text as it was read."""
        if self.data is not None:
            return self.data
        assert self.path is not None
        with open(self.path, "rb") as handle:
            self._check_unchanged(os.fstat(handle.fileno()))
            return handle.read(self.size)

    def _check_unchanged(self, stat: os.stat_result) -> None:
        # Agents only append, so lines already read stay where they were as long as the file did not shrink.
        if stat.st_size < self.size or (stat.st_size == self.size and stat.st_mtime_ns != self.mtime_ns):
            raise SessionFileChanged(f"{self.path} was rewritten since it was read; read it again")

    def raw(self, parsed: ParsedLine) -> str:
        """The exact text a value was read from (without its newline)."""
        if self.data is not None:
            chunk = self.data[parsed.start : parsed.end]
        else:
            assert self.path is not None
            with open(self.path, "rb") as handle:
                self._check_unchanged(os.fstat(handle.fileno()))
                handle.seek(parsed.start)
                chunk = handle.read(parsed.end - parsed.start)
        return chunk.decode("utf-8", errors="surrogateescape")

    def raw_from(self, data: bytes, parsed: ParsedLine) -> str:
        """Like :meth:`raw`, from the text returned by :meth:`load_data` (many lines, one read)."""
        return data[parsed.start : parsed.end].decode("utf-8", errors="surrogateescape")
