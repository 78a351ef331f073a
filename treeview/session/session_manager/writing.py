"""Writing a session: its lines byte for byte, and appends to its file while it is unchanged."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ..jsonl import ParsedLine, SessionFileChanged, dumps
from .reading import _Reading
from .values import Entry


class _Writing(_Reading):
    """The session's lines: serialized exactly, and new entries written to its file."""

    # ------------------------------------------------------------------------------------------------------
    # Writing

    def raw_line(self, index: int) -> str:
        """The exact text of entry ``index`` as it is (or will be) in the file, without the newline."""
        parsed = self._lines[index]
        if parsed is not None and self._source is not None and index not in self._changed:
            return self._source.raw(parsed)
        return dumps(self.entries[index])

    def header_line(self) -> str:
        if self._header_line is not None and self._source is not None and not self._header_changed:
            return self._source.raw(self._header_line)
        return dumps(self.header)

    def iter_lines(self, *, title_slot: bool = True) -> Iterator[str]:
        """Every line of the file (title slot, header, entries), each ending in a newline."""
        source = self._source
        data = source.load_data() if source is not None else b""

        def text(parsed: ParsedLine | None, changed: bool, value: Entry) -> str:
            if parsed is None or changed or source is None:
                return dumps(value)
            return source.raw_from(data, parsed)

        if title_slot and self.title_slot is not None:
            slot_line = source.title_slot_line if source is not None else None
            yield text(slot_line, False, self.title_slot) + "\n"
        yield text(self._header_line, self._header_changed, self.header) + "\n"
        changed = self._changed
        for index, entry in enumerate(self.entries):
            yield text(self._lines[index], index in changed, entry) + "\n"

    def serialize(self, *, title_slot: bool = True) -> str:
        """The whole file: untouched lines byte for byte, migrated or new entries as omp writes them."""
        return "".join(self.iter_lines(title_slot=title_slot))

    def write_to(self, path: str | os.PathLike[str], *, title_slot: bool = True) -> None:
        """Write the whole session to a new file (refuses to overwrite an existing one)."""
        with open(path, "x", encoding="utf-8", newline="", errors="surrogatepass") as handle:
            handle.writelines(self.iter_lines(title_slot=title_slot))

    @property
    def pending_entries(self) -> list[Entry]:
        """Entries appended in memory that are not in the file yet."""
        return self.entries[self._written :]

    def ensure_on_disk(self) -> None:
        """Write a new session now instead of waiting for its first assistant message (§9.2)."""
        if self.session_file is None:
            raise ValueError("this session has no file")
        if not self._on_disk:
            self._write_new_file()
        else:
            self.flush()

    def _persist(self) -> None:
        if not self.persist or self.session_file is None:
            return
        if self._on_disk:
            self.flush()
        elif any(_is_assistant(entry) for entry in self.entries):
            self._write_new_file()

    def _write_new_file(self) -> None:
        assert self.session_file is not None
        Path(self.session_file).parent.mkdir(parents=True, exist_ok=True)
        data = "".join(self.iter_lines()).encode("utf-8", errors="surrogatepass")
        with open(self.session_file, "xb") as handle:
            handle.write(data)
        self._on_disk = True
        self._written = len(self.entries)
        self._file_size = len(data)

    def flush(self) -> None:
        """Append the pending entries to the file, only if it still ends exactly where it was read."""
        if self.session_file is None or self._written >= len(self.entries):
            return
        if self.migrated:
            raise SessionFileChanged(
                f"{self.session_file} is in an older format (version {self._source_version()}); Arbor "
                "does not rewrite it in place. Write a migrated copy instead."
            )
        data = "".join(self.raw_line(i) + "\n" for i in range(self._written, len(self.entries))).encode(
            "utf-8", errors="surrogatepass"
        )
        with open(self.session_file, "r+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            if self._file_size is not None and size != self._file_size:
                raise SessionFileChanged(
                    f"{self.session_file} changed on disk ({self._file_size} bytes when read, {size} now); "
                    "re-read it before appending"
                )
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    raise SessionFileChanged(
                        f"{self.session_file} does not end with a newline (a write may be in progress); "
                        "re-read it before appending"
                    )
            handle.write(data)
        self._written = len(self.entries)
        self._file_size = (self._file_size or 0) + len(data)


def _is_assistant(entry: Entry) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "assistant"
