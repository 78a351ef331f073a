"""``/branch`` from the browser: a new session from the path before a user message (spec §14).

The core does the work (``branch_from_user_message`` on the session loaded from the database, with a manager
that persists), so the new file is byte for byte what the agent writes: the path up to the message's parent
with its labels re-created as fresh label entries, or, for a root message, an empty session whose
``parentSession`` names the file branched from. Then the file is imported, so the new session is an
``AgentSession`` whose ``parent()`` is the original.

Where the file goes: next to the original when that is an agent file under ``ARBOR_SESSION_DIRS`` and
``ARBOR_WRITE_BACK`` is on (the agent then lists it in its session picker); otherwise in
``ARBOR_DATA_DIR/forks``. The original file is never touched.

Extensions get ``session_before_branch`` (which may cancel: nothing is written) and, once the new session is
imported, ``session_branch``.
"""

from __future__ import annotations

import logging
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from asgiref.sync import async_to_sync
from django.conf import settings

from treeview.extensions import hook_context, hook_runner
from treeview.models import AgentSession, ImportIssue
from treeview.services.append import UnknownEntry
from treeview.services.export import load_manager
from treeview.services.sync import is_archive, sync_file
from treeview.session.hooks import SESSION_BRANCH, HookRunner, result_field
from treeview.session.navigation import (
    BranchResult,
    InvalidBranchEntry,
    branch_from_user_message,
    extract_user_message_text,
)
from treeview.session.session_manager import EntryNotFound, SessionManager

__all__ = [
    "BranchChoice",
    "ForkFailed",
    "ForkResult",
    "InvalidBranchEntry",
    "ResumeHint",
    "UnknownEntry",
    "fork_dir",
    "fork_session",
    "resume_hint",
    "user_message_text",
    "user_messages",
]

log = logging.getLogger(__name__)

FORKS_SUBDIR = "forks"
#: Characters of a message the picker shows (whitespace collapsed); the whole text goes to the editor.
PREVIEW_CHARS = 300


class ForkFailed(RuntimeError):
    """The new session could not be written or imported; nothing is left behind."""


@dataclass(frozen=True)
class ForkResult:
    """What ``/branch`` did. ``editor_text`` is the selected message's text (for the "continue" box), also
    when an extension cancelled (then ``new_session`` is None)."""

    new_session: AgentSession | None
    editor_text: str
    cancelled: bool


@dataclass(frozen=True, slots=True)
class BranchChoice:
    """One row of the ``/branch`` picker: a user message with text, and the start of that text."""

    entry_id: str
    preview: str


def _user_text(raw: str) -> str:
    try:
        entry = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    message = entry.get("message") if isinstance(entry, dict) else None
    return extract_user_message_text(message.get("content")) if isinstance(message, dict) else ""


def _preview(text: str) -> str:
    flat = " ".join(text[: PREVIEW_CHARS * 4].split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def user_messages(session: AgentSession) -> list[BranchChoice]:
    """Every user message with non-empty text, all branches, in file order (the picker; the core's
    ``user_messages_for_branching`` over the stored rows, without loading the whole session)."""
    rows = (
        session.entries.filter(type="message", role="user")
        .exclude(entry_id="")
        .order_by("seq")
        .values_list("entry_id", "raw")
    )
    choices = []
    for entry_id, raw in rows.iterator(chunk_size=500):
        text = _user_text(raw)
        if text:
            choices.append(BranchChoice(entry_id, _preview(text)))
    return choices


def user_message_text(session: AgentSession, entry_id: str) -> str | None:
    """The text of the user message ``entry_id`` of ``session`` (None when it is not one)."""
    raw = (
        session.entries.filter(entry_id=entry_id, type="message", role="user")
        .order_by("-seq")
        .values_list("raw", flat=True)
        .first()
    )
    return _user_text(raw) if raw is not None else None


def _inside(path: Path, directory: Path) -> bool:
    try:
        return path.is_relative_to(directory.expanduser().resolve())
    except OSError:
        return False


def fork_dir(session: AgentSession) -> Path:
    """The directory the new session file of a ``/branch`` of ``session`` goes to (see the module doc).

    Next to the original only when the stored path is still the real one (no symbolic link in it now) and
    inside a session directory: a new file is never written through a link, nor anywhere a link leads.
    """
    stored = Path(session.source_path)
    source = stored.resolve()
    if (
        settings.ARBOR_WRITE_BACK
        and not is_archive(stored)
        and source == stored
        and any(_inside(source, Path(d)) for d in settings.ARBOR_SESSION_DIRS)
    ):
        return source.parent
    return Path(settings.ARBOR_DATA_DIR) / FORKS_SUBDIR


#: The agents' command lines that open a session file (pi 1.6: ``--session <path|id>``; oh-my-pi 18:
#: ``--resume <id prefix|path>``).
RESUME_FLAGS = {AgentSession.Agent.PI: ("pi", "--session"), AgentSession.Agent.OMP: ("omp", "--resume")}


@dataclass(frozen=True)
class ResumeHint:
    """Where a session's file is and the command that resumes it in its agent. ``in_agent_dir``: the file is
    among the agent's sessions (write-back put it next to its original); else it is in Arbor's data
    directory, which the agent does not list."""

    path: str
    command: str
    agent: str
    in_agent_dir: bool


def resume_hint(session: AgentSession) -> ResumeHint | None:
    """How to go on with ``session`` in its agent (``None``: it has no file)."""
    if not session.source_path:
        return None
    program, flag = RESUME_FLAGS.get(session.agent, RESUME_FLAGS[AgentSession.Agent.OMP])
    path = Path(session.source_path)
    in_agent_dir = any(_inside(path.resolve(), Path(d)) for d in settings.ARBOR_SESSION_DIRS)
    return ResumeHint(
        str(path), f"{program} {flag} {shlex.quote(str(path))}", session.get_agent_display(), in_agent_dir
    )


class _HoldBranchEvent(HookRunner):
    """Passes everything to ``runner`` but keeps ``session_branch`` back until the new session is imported."""

    def __init__(self, runner: HookRunner) -> None:
        super().__init__(timeout=runner.timeout)
        self.runner = runner
        self.branch_event: Any = None

    def has_handlers(self, event: str) -> bool:
        return self.runner.has_handlers(event)

    async def emit(self, event: object) -> Any:
        if result_field(event, "type") == SESSION_BRANCH:
            self.branch_event = event
            return None
        return await self.runner.emit(event)


def fork_session(session: AgentSession, entry_id: str) -> ForkResult:
    """Branch ``session`` at the user message ``entry_id`` into a new, imported session (``/branch``).

    Raises :class:`UnknownEntry` (no such entry), :class:`InvalidBranchEntry` (not a user message: the
    original's ``Invalid entry ID for branching``), :class:`ForkFailed`, and ImproperlyConfigured for
    extensions that cannot be loaded.
    """
    if not session.source_path:
        raise ForkFailed("this session has no file to branch from")
    runner = hook_runner()
    manager = load_manager(session)
    if not entry_id or manager.get_entry(entry_id) is None:
        raise UnknownEntry(entry_id)
    # The header's parentSession is the file branched from (the stored path, manager.session_file); the new
    # file goes to fork_dir.
    manager.session_dir = str(fork_dir(session))
    manager.persist = True
    hooks = _HoldBranchEvent(runner)
    labels, entries = dict(manager.labels), manager.by_id

    async def branch() -> BranchResult:
        with hook_context(session, labels, entries=entries):
            return await branch_from_user_message(manager, entry_id, hooks=hooks)

    try:
        # A loop of its own: the file write and the handlers never hold up the server's event loop.
        result = async_to_sync(branch, force_new_loop=True)()
    except EntryNotFound as error:
        # An orphan: its parent is not in the session, so there is no path to copy (the original throws too).
        raise ForkFailed(f"{error}: the message's parent is missing, so there is no path to copy") from None
    except OSError as error:
        raise ForkFailed(f"cannot write the new session in {manager.session_dir}: {error}") from None
    if result.cancelled:
        return ForkResult(None, result.selected_text, cancelled=True)

    new_session = _import(manager, Path(str(result.new_session_file)))
    log.info("branched %s at %s into %s", session.source_path, entry_id, new_session.source_path)

    if hooks.branch_event is not None:
        with hook_context(session, labels, entries=entries, new_session=new_session):
            async_to_sync(runner.emit, force_new_loop=True)(hooks.branch_event)
    return ForkResult(new_session, result.selected_text, cancelled=False)


def _import(manager: SessionManager, path: Path) -> AgentSession:
    """Write the new session if the core has not yet (a root message), and import it."""
    try:
        if not manager.entries:
            # A root message: the agent writes the empty session at its first answer (§9.2); Arbor needs the
            # file now to show the session, so it writes the header as omp's ensureOnDisk does.
            manager.ensure_on_disk()
    except OSError as error:
        path.unlink(missing_ok=True)
        raise ForkFailed(f"cannot write {path}: {error.strerror or error}") from None
    imported = sync_file(path)
    if imported.session is not None:
        return imported.session
    # A watcher importing the new file at the same moment wins the race: use its import.
    existing = AgentSession.objects.filter(source_path=imported.path).first()
    ImportIssue.objects.filter(source_path=imported.path).delete()
    if existing is not None:
        return existing
    path.unlink(missing_ok=True)
    raise ForkFailed(f"the new session {path} could not be imported: {imported.error}")
