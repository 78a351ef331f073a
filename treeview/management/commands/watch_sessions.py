"""``manage.py watch_sessions [PATH…]``: keep the database in step with session files as agents write them.

An initial sync of everything, then the directories are followed with watchfiles and each added or changed
``*.jsonl`` file is synced (``sync_file`` publishes the "session changed" event open pages listen to).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections, connection
from watchfiles import Change, watch

from treeview.management.commands._reporting import (
    Summary,
    changed_something,
    describe,
    existing_session_dirs,
    no_session_dir_message,
)
from treeview.services.sync import SyncResult, find_session_files, is_session_file_name, sync_file

log = logging.getLogger(__name__)

#: How long the watcher may wait without changes before it yields (and so how soon it notices a stop).
IDLE_TIMEOUT_MS = 1000
#: Grace for coarse file-system clocks when catching up with files written during the initial sync.
MTIME_SLACK = 2.0


def is_session_file(change: Change, path: str) -> bool:
    """The changes worth a sync: added or modified ``*.jsonl`` files (a deleted file keeps its session)."""
    return change != Change.deleted and is_session_file_name(path)


class SessionWatcher:
    """Syncs session files under ``roots``: once at start, then on every batch of changes."""

    def __init__(
        self,
        roots: list[Path],
        *,
        out: Callable[[str], None],
        err: Callable[[str], None],
        verbosity: int = 1,
    ) -> None:
        self.roots = roots
        self.out = out
        self.err = err
        self.verbosity = verbosity
        # A file that fails again for the same reason is reported once, not at every write.
        self._last_error: dict[str, str] = {}

    def sync(self, path: str | os.PathLike[str], *, report: bool = True) -> SyncResult:
        """Sync one file and report it; never raises (a watcher must survive any file and any hiccup)."""
        try:
            result = sync_file(path)
        except Exception as error:  # sync_file records bad files itself: this is the database failing
            log.exception("sync of %s failed", path)
            result = SyncResult(str(path), "failed", error=f"{type(error).__name__}: {error}")
        if report:
            self.report(result)
        elif result.status == "failed":
            self._last_error[result.path] = result.error or ""
        return result

    def report(self, result: SyncResult) -> None:
        """One line for a sync that changed something (-v 2: for every sync), one per new failure."""
        if result.status == "failed":
            if self._last_error.get(result.path) != result.error:
                self.err(_stamp(describe(result)))
            self._last_error[result.path] = result.error or ""
            return
        self._last_error.pop(result.path, None)
        if (changed_something(result) and self.verbosity >= 1) or self.verbosity >= 2:
            self.out(_stamp(describe(result)))

    def sync_all(self, stop_event: threading.Event | None = None) -> Summary:
        """The initial sync of every session file under the roots: one summary (-v 2: a line per file)."""
        summary = Summary()
        started = time.monotonic()
        for path in find_session_files(self.roots):
            if stop_event is not None and stop_event.is_set():
                break
            summary.add([self.sync(path, report=self.verbosity >= 2)])
        summary.seconds = time.monotonic() - started
        return summary

    def handle_changes(self, changes: Iterable[tuple[Change, str]]) -> list[SyncResult]:
        """Sync the files of one batch of changes, each once, in path order."""
        _drop_stale_connection()
        paths = sorted({path for change, path in changes if is_session_file(change, path)})
        # Gone again by now (a temporary file renamed away): nothing to read.
        return [self.sync(path) for path in paths if os.path.isfile(path)]

    def catch_up(self, since: float) -> list[SyncResult]:
        """Sync the files modified since ``since`` (epoch seconds): written before the watcher was running."""
        changed = []
        for path in find_session_files(self.roots):
            try:
                if path.stat().st_mtime >= since - MTIME_SLACK:
                    changed.append((Change.modified, str(path)))
            except OSError:
                continue
        return self.handle_changes(changed)

    def run(
        self,
        stop_event: threading.Event,
        *,
        debounce_ms: int = 300,
        ready: threading.Event | None = None,
        initial: Callable[[Summary], None] | None = None,
    ) -> None:
        """Initial sync, then follow the roots until ``stop_event`` is set."""
        started = time.time()
        summary = self.sync_all(stop_event)
        if initial is not None:
            initial(summary)
        first = True
        for changes in watch(
            *self.roots,
            watch_filter=is_session_file,
            debounce=debounce_ms,
            stop_event=stop_event,
            rust_timeout=IDLE_TIMEOUT_MS,
            yield_on_timeout=True,
        ):
            if first:
                # The watcher is running now; what was written while the initial sync ran is picked up here.
                first = False
                self.catch_up(started)
                if ready is not None:
                    ready.set()
            if changes:
                self.handle_changes(changes)
        _drop_stale_connection()


def _drop_stale_connection() -> None:
    """A long-running process: drop a connection the database closed meanwhile (Django does this around each
    request; a command must do it itself). Not inside a transaction, where it would close a live one."""
    if not connection.in_atomic_block:
        close_old_connections()


def _stamp(text: str) -> str:
    return f"{time.strftime('%H:%M:%S')} {text}"


class Command(BaseCommand):
    help = (
        "Sync session files once, then follow their directories and sync every added or changed *.jsonl "
        "file as it is written. With no PATH, the directories of ARBOR_SESSION_DIRS (by default the agents' "
        "own). Stops on Ctrl-C or SIGTERM."
    )
    # For tests and embedding: run the command in a thread and stop it from outside.
    stealth_options = ("stop_event", "ready")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", metavar="PATH", help="session directories or files")
        parser.add_argument(
            "--debounce",
            type=int,
            default=300,
            metavar="MS",
            help="collect changes for up to MS milliseconds before syncing (default 300)",
        )
        parser.add_argument("-q", "--quiet", action="store_true", help="report only the files that fail")

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity = 0 if options["quiet"] else options["verbosity"]
        paths = [Path(path).expanduser() for path in options["paths"]] or existing_session_dirs()
        if not paths:
            raise CommandError(no_session_dir_message())
        if options["debounce"] < 0:
            raise CommandError("--debounce must be 0 or more milliseconds")
        missing = [path for path in paths if not path.exists()]
        if missing:
            raise CommandError("cannot watch what does not exist: " + ", ".join(map(str, missing)))
        stop_event: threading.Event = options.get("stop_event") or threading.Event()
        if threading.current_thread() is threading.main_thread():
            # `./arbor run` stops the watcher with SIGTERM: finish the sync under way, then leave.
            signal.signal(signal.SIGTERM, lambda signum, frame: stop_event.set())
        watcher = SessionWatcher(paths, out=self.stdout.write, err=self.stderr.write, verbosity=verbosity)

        def initial(summary: Summary) -> None:
            if verbosity >= 1:
                self.stdout.write(_stamp(summary.headline()))
                self.stdout.write(_stamp("Watching " + ", ".join(map(str, paths)) + " (Ctrl-C stops)"))
            for line in summary.failure_lines():
                self.stderr.write(_stamp(line))

        with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: a normal way to stop
            watcher.run(
                stop_event, debounce_ms=options["debounce"], ready=options.get("ready"), initial=initial
            )
        if verbosity >= 1:
            self.stdout.write(_stamp("Stopped watching."))
