"""``manage.py export_session SESSION_ID -o FILE [--branch ENTRY_ID]``: a session out as a .jsonl file."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from treeview.models import AgentSession
from treeview.services.export import export_branch_lines, export_lines
from treeview.session.session_manager import EntryNotFound


class Command(BaseCommand):
    help = (
        "Write an imported session as a .jsonl file: for an untouched import the source file byte for byte, "
        "then the entries Arbor appended. With --branch, the new session file the agent's /branch writes for "
        "the path from the root to ENTRY_ID. SESSION_ID is the id in the session's header."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("session_id", metavar="SESSION_ID", help="the id in the session header")
        parser.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="FILE",
            help="file to write; - for standard output; an existing directory: the session's file name in it",
        )
        parser.add_argument("--branch", metavar="ENTRY_ID", help="only root → ENTRY_ID, as /branch writes it")
        parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")

    def handle(self, *args: Any, **options: Any) -> None:
        session_id: str = options["session_id"]
        session = AgentSession.objects.by_session_id(session_id)
        if session is None:
            raise CommandError(
                f"no imported session has the id {session_id!r} (import its file first: import_sessions FILE)"
            )
        copies = AgentSession.objects.filter(session_id=session_id).exclude(pk=session.pk)
        if copies.exists():
            others = ", ".join(copy.source_path or "an upload" for copy in copies)
            self.stderr.write(
                f"warning: {copies.count() + 1} imported files hold session {session_id}; exporting the one "
                f"synced last, {session.source_path or 'an upload'} (also in: {others})",
                style_func=self.style.WARNING,
            )
        chunks: Iterable[str]
        if options["branch"]:
            try:
                # written as it is read, like the web download: the branch is never held whole
                name, chunks = export_branch_lines(session, options["branch"])
            except EntryNotFound:
                raise CommandError(f"session {session_id} has no entry {options['branch']!r}") from None
        else:
            name = Path(session.source_path).name if session.source_path else f"{session_id}.jsonl"
            chunks = export_lines(session)
        if options["output"] == "-":
            self._write_stdout(chunks)
            return
        target = Path(options["output"]).expanduser()
        if target.is_dir():
            target = target / name
        _write_file(target, chunks, force=options["force"])
        if options["verbosity"] >= 1:
            self.stdout.write(f"Wrote {target} ({target.stat().st_size:,} bytes)")

    def _write_stdout(self, chunks: Iterable[str]) -> None:
        # Bytes straight to the real stream when there is one: no newline translation, no locale encoding.
        buffer = getattr(self.stdout, "buffer", None)
        if buffer is None:
            for chunk in chunks:
                self.stdout.write(chunk, ending="")
            return
        self.stdout.flush()
        try:
            for chunk in chunks:
                buffer.write(chunk.encode("utf-8", "surrogatepass"))
            buffer.flush()
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, and keep Python from failing on the final flush.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(1) from None


def _write_file(target: Path, chunks: Iterable[str], *, force: bool) -> None:
    """Write ``chunks`` to ``target``; never leaves half a file (nor half-overwrites one) behind."""
    if not target.parent.is_dir():
        raise CommandError(f"cannot write {target}: directory {target.parent} does not exist")
    if target.exists() and not force:
        raise CommandError(f"{target} exists (use --force to overwrite it)")
    # With --force, written beside the target and renamed over it at the end; otherwise created exclusively.
    path = target.with_name(f".{target.name}.{os.getpid()}.part") if force else target
    try:
        handle = open(path, "x", encoding="utf-8", errors="surrogatepass", newline="")  # noqa: SIM115
    except FileExistsError:
        raise CommandError(f"{path} exists (use --force to overwrite it)") from None
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        with handle:
            handle.writelines(chunks)
        if path != target:
            os.replace(path, target)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
