"""``SessionManager``: one session, built from the layers of this package, and its constructors."""

from __future__ import annotations

import os
from pathlib import Path

from ..agents import Agent
from ..headerless import headerless_session_id
from ..jsonl import parse_session_bytes, parse_session_file
from ..migrations import IdMaker
from .branching import _Branching
from .index import _gc_paused


class SessionManager(_Branching):
    """One session: its header, entries in file order, the id index, resolved labels and the leaf."""

    # ------------------------------------------------------------------------------------------------------
    # Construction

    @classmethod
    def create(
        cls, cwd: str, session_dir: str | None = None, parent_session: str | None = None
    ) -> SessionManager:
        """A new, empty session, written under ``session_dir`` (if given) once it has an assistant message."""
        manager = cls(cwd, session_dir, persist=session_dir is not None)
        manager.new_session(parent_session)
        return manager

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, persist: bool = False, agent: Agent | None = None
    ) -> SessionManager:
        """Load a session file. ``persist=True`` appends new entries to it (only while it is unchanged).

        ``agent`` picks whose rules apply (default: detected from the file). A file whose first object is not
        a header is read with a made-up one (its id from the file's name or path; a warning) and never
        appended to: the agents do not open it (treeview/session/headerless.py).
        """
        file_path = Path(path).resolve()
        with _gc_paused():
            parsed = parse_session_file(file_path, headerless_session_id(file_path))
            if parsed.header_line is None:
                persist = False
            manager = cls(persist=persist, agent=agent)
            manager._load(parsed, str(file_path))
        manager._file_size = parsed.size
        return manager

    @classmethod
    def from_text(cls, text: str, path: str | None = None, *, agent: Agent | None = None) -> SessionManager:
        """Load a session from its text (nothing is ever written)."""
        return cls.from_bytes(text.encode("utf-8", errors="surrogatepass"), path=path, agent=agent)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        path: str | None = None,
        *,
        persist: bool = False,
        make_id: IdMaker | None = None,
        agent: Agent | None = None,
        headerless_id: str | None = None,
    ) -> SessionManager:
        """Load a session from a file's bytes. Raises ``SessionFileError`` when there is no valid header,
        unless ``headerless_id`` is given (the id of a header-less file, treeview/session/headerless.py)."""
        with _gc_paused():
            parsed = parse_session_bytes(data, headerless_id)
            if parsed.header_line is None:
                persist = False
            manager = cls(persist=persist, agent=agent)
            manager._load(parsed, path, make_id)
        return manager
