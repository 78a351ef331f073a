"""``manage.py import_sessions [PATH…]``: import or re-sync session files into the database."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from treeview.management.commands._reporting import (
    ProgressLine,
    Summary,
    describe,
    existing_session_dirs,
    no_session_dir_message,
)
from treeview.services.sync import find_session_files, sync_file


class Command(BaseCommand):
    help = (
        "Import session files (*.jsonl, searched recursively in directories) into the database, or bring "
        "them up to date: unchanged files cost a stat, grown files only their new lines. With no PATH, "
        "the directories of ARBOR_SESSION_DIRS (by default the agents' own). Exits with status 1 if any "
        "file failed; files are never modified."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", metavar="PATH", help="session files or directories")
        parser.add_argument(
            "-q", "--quiet", action="store_true", help="no progress and no summary, only the failed files"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = 0 if options["quiet"] else options["verbosity"]
        paths = [Path(path) for path in options["paths"]]
        if not paths:
            paths = existing_session_dirs()
            if not paths:
                self.stderr.write(no_session_dir_message(), style_func=self.style.WARNING)
                return
            if verbosity >= 1:
                self.stdout.write("Importing from " + ", ".join(str(path) for path in paths))
        files = list(find_session_files(paths))
        progress = None
        if verbosity >= 1 and self.stderr.isatty():
            progress = ProgressLine(self._write_progress, len(files))
        summary = Summary()
        started = time.monotonic()
        try:
            for path in files:
                if progress is not None:
                    progress.start_file(path)
                result = sync_file(path, progress=progress)
                summary.add([result])
                if progress is not None:
                    progress.file_done()
                if verbosity >= 2 and result.status != "unchanged":
                    if progress is not None:
                        progress.clear()  # redrawn below the line at the next callback
                    self.stdout.write(describe(result))
        except KeyboardInterrupt:
            # The file being read is rolled back whole (one transaction per file); the others are in.
            self._finish(summary, started, progress, verbosity)
            done = len(summary.results)
            raise CommandError(f"interrupted after {done} of {len(files)} files", returncode=130) from None
        self._finish(summary, started, progress, verbosity)
        if summary.failed:
            raise CommandError(
                f"{len(summary.failed)} of {len(files)} files could not be imported", returncode=1
            )

    def _finish(
        self, summary: Summary, started: float, progress: ProgressLine | None, verbosity: int
    ) -> None:
        summary.seconds = time.monotonic() - started
        if progress is not None:
            progress.clear()
        if verbosity >= 1:
            style = self.style.SUCCESS if not summary.failed else self.style.WARNING
            self.stdout.write(summary.headline(), style_func=style)
            for line in summary.warning_lines(verbosity):
                self.stdout.write(line)
        for line in summary.failure_lines():
            self.stderr.write(line)

    def _write_progress(self, text: str) -> None:
        # Not in the error style that Django gives stderr on a terminal.
        self.stderr.write(text, style_func=lambda message: message, ending="")
        self.stderr.flush()
