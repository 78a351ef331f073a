"""What import_sessions and watch_sessions share: where to look, the live progress line, the summary.

The leading underscore keeps Django from taking this module for a command.
"""

from __future__ import annotations

import math
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings

from treeview.services.sync import SyncResult

STATUSES = ("new", "grown", "unchanged", "rewritten", "failed")
MB = 1_000_000


def configured_session_dirs() -> list[Path]:
    """The directories named by ``ARBOR_SESSION_DIRS``, whether they exist or not.

    Its default is the agents' own directories (``default_session_dirs()`` before the existence check:
    ``~/.pi/agent/sessions``, ``~/.omp/agent/sessions``, ``$XDG_DATA_HOME/omp/sessions``).
    """
    return [Path(directory).expanduser() for directory in settings.ARBOR_SESSION_DIRS]


def existing_session_dirs() -> list[Path]:
    return [directory for directory in configured_session_dirs() if directory.is_dir()]


def no_session_dir_message() -> str:
    looked = ", ".join(str(directory) for directory in configured_session_dirs()) or "(none configured)"
    return (
        f"No session directory exists (looked for: {looked}). "
        "Name files or directories to use, or set ARBOR_SESSION_DIRS."
    )


def changed_something(result: SyncResult) -> bool:
    """Whether a sync changed the database (a grown file whose only new text is a half line did not)."""
    return result.status in ("new", "rewritten") or bool(result.entries_added or result.entries_removed)


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def describe(result: SyncResult) -> str:
    """One line for one synced file: status, path, what changed."""
    if result.status == "failed":
        return f"failed     {result.path}: {result.error}"
    parts = []
    if result.entries_added:
        parts.append(f"+{entries(result.entries_added)}")
    if result.entries_removed:
        parts.append(f"-{result.entries_removed:,} removed")
    if result.warnings:
        parts.append(plural(len(result.warnings), "warning"))
    detail = f" ({', '.join(parts)})" if parts else ""
    return f"{result.status:<10} {result.path}{detail}"


def entries(count: int) -> str:
    return f"{count:,} entry" if count == 1 else f"{count:,} entries"


def warning_text(warning: dict[str, Any]) -> str:
    """``line N: message``; warnings about the file as a whole (line 0) have no line."""
    line = warning.get("line")
    return f"line {line}: {warning.get('message')}" if line else str(warning.get("message"))


class ProgressLine:
    """A status line redrawn in place (``\\r``) on a terminal: files done/total, entries, MB read, MB/s.

    It is fed by ``sync_file``'s ``progress(bytes_delta, entries_delta)`` callback, which can fire thousands
    of times a second, so it redraws at most every ``interval`` seconds.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        total_files: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        interval: float = 0.1,
        width: int | None = None,
    ) -> None:
        self.write = write
        self.total_files = total_files
        self.clock = clock
        self.interval = interval
        # One column short of the terminal: a line that wraps cannot be redrawn with \r.
        self.width = (width or shutil.get_terminal_size().columns) - 1
        self.files_done = 0
        self.entries = 0
        self.bytes = 0
        self.current = ""
        self.started = clock()
        self._drawn_at = -math.inf
        self._drawn_width = 0

    def __call__(self, bytes_delta: int, entries_delta: int) -> None:
        self.bytes += bytes_delta
        self.entries += entries_delta
        self.draw()

    def start_file(self, path: Path | str) -> None:
        self.current = Path(path).name
        self.draw()

    def file_done(self) -> None:
        self.files_done += 1
        self.draw()

    def text(self) -> str:
        elapsed = max(self.clock() - self.started, 1e-6)
        megabytes = self.bytes / MB
        text = (
            f"{self.files_done:,}/{self.total_files:,} files  {entries(self.entries)}  "
            f"{megabytes:.1f} MB  {megabytes / elapsed:.1f} MB/s"
        )
        if self.current:
            text += f"  {self.current}"
        return text[: self.width]

    def draw(self, *, force: bool = False) -> None:
        now = self.clock()
        if not force and now - self._drawn_at < self.interval:
            return
        self._drawn_at = now
        text = self.text()
        # Spaces over what is left of a longer previous line.
        self.write("\r" + text + " " * max(0, self._drawn_width - len(text)))
        self._drawn_width = len(text)

    def clear(self) -> None:
        if self._drawn_width:
            self.write("\r" + " " * self._drawn_width + "\r")
            self._drawn_width = 0


@dataclass
class Summary:
    """The outcome of syncing many files, as the end of import_sessions prints it."""

    results: list[SyncResult] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, results: Iterable[SyncResult]) -> None:
        self.results.extend(results)

    @property
    def counts(self) -> dict[str, int]:
        counter = Counter(result.status for result in self.results)
        return {status: counter.get(status, 0) for status in STATUSES}

    @property
    def failed(self) -> list[SyncResult]:
        return [result for result in self.results if result.status == "failed"]

    @property
    def warning_count(self) -> int:
        return sum(len(result.warnings) for result in self.results)

    def headline(self) -> str:
        counts = ", ".join(f"{count:,} {status}" for status, count in self.counts.items())
        added = sum(result.entries_added for result in self.results)
        removed = sum(result.entries_removed for result in self.results)
        megabytes = sum(result.bytes_read for result in self.results) / MB
        rate = f", {megabytes / self.seconds:.1f} MB/s" if self.seconds > 0 else ""
        changes = f"{entries(added)} added" + (f", {removed:,} removed" if removed else "")
        return (
            f"{plural(len(self.results), 'file')}: {counts}; {plural(self.warning_count, 'warning')}. "
            f"{changes}; {megabytes:.1f} MB read in {self.seconds:.1f} s{rate}."
        )

    def failure_lines(self) -> list[str]:
        return [f"failed: {result.path}: {result.error}" for result in self.failed]

    def warning_lines(self, verbosity: int) -> list[str]:
        lines = []
        for result in self.results:
            if not result.warnings:
                continue
            hint = "" if verbosity >= 2 else " (-v 2 lists them)"
            lines.append(f"{plural(len(result.warnings), 'warning')}: {result.path}{hint}")
            if verbosity >= 2:
                lines.extend(f"  {warning_text(warning)}" for warning in result.warnings)
        return lines
