"""Pushing one session file: ask what the server holds, send only what it lacks.

The server answers its length, title slot and body hash (``treeview/session/prefix.py``). Same body up to
that length: the bytes after it travel (and a renamed title slot, alone). A different body: the whole file
travels as a rewrite, which the server reconciles as ``sync`` reconciles a rewritten file. The block hashes of
a file are kept between pushes while the file keeps its inode and only grows, so following a growing 250 MB
file reads only what is new (and the first block again: omp rewrites its title slot in place).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from treeview.push.api import Api, ApiError, SourceState
from treeview.session.headerless import headerless_session_id
from treeview.session.prefix import BLOCK, BodyHash, read_head

__all__ = ["FileResult", "Pusher", "find_files"]

#: Largest chunk sent in one request (the server's limit may be lower): a few of them in memory at once.
CHUNK = 8 * 1024 * 1024
#: 409s (someone else pushed the same file meanwhile) survived before giving up on a file.
CONFLICTS = 4


def find_files(paths: Iterable[Path]) -> Iterator[Path]:
    """Every ``*.jsonl`` file named, or found (recursively, sorted) under the directories named."""
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*.jsonl") if p.is_file())
        elif path.suffix == ".jsonl" and path.is_file():
            yield path


@dataclass
class FileResult:
    """One file's outcome: ``sent`` (new bytes), ``unchanged``, ``waiting`` (no complete header yet) or
    ``failed`` (``reason``)."""

    path: Path
    status: str
    sent: int = 0
    entries_added: int = 0
    reason: str = ""
    url: str | None = None


@dataclass
class _Known:
    """Block hashes of one file's body, valid while the file keeps this identity."""

    device: int
    inode: int
    slot_length: int
    body: BodyHash
    #: What the server answered last: the file's key, the length it holds (this file up to there), the slot.
    state: SourceState | None = None
    slot_sha256: str = ""


@dataclass
class Pusher:
    """Pushes files to one server as ``machine``; ``on_bytes(n)`` hears of every chunk sent."""

    api: Api
    machine: str
    on_bytes: Callable[[int], None] = lambda n: None
    known: dict[Path, _Known] = field(default_factory=dict)

    def push(self, path: Path) -> FileResult:
        """Push one file. Raises :class:`~treeview.push.api.Offline` (try later) and fatal ApiErrors."""
        for _ in range(CONFLICTS):
            try:
                return self._push_once(path)
            except ApiError as error:
                if error.fatal:
                    raise
                if error.status != 409:
                    return FileResult(path, "failed", reason=error.detail)
        return FileResult(path, "failed", reason="the file kept changing on the server: try again")

    def _push_once(self, path: Path) -> FileResult:
        try:
            handle = open(path, "rb")  # noqa: SIM115 -- closed below
        except OSError as error:
            return FileResult(path, "failed", reason=f"cannot read it: {error.strerror or error}")
        with handle:
            stat = os.fstat(handle.fileno())
            size = stat.st_size
            # A file without a session header travels too: the server reads it with the id the import here
            # would give it (from the file's name or path, treeview/session/headerless.py).
            head = read_head(handle, headerless_id=headerless_session_id(path.resolve()))
            if head is None:
                return FileResult(path, "waiting", reason="no complete session header yet")
            known = self._known(path, stat, head.slot_length, handle)
            last = known.state
            if last is not None and size >= last.length and head.slot_sha256 == known.slot_sha256:
                # Following a file this process pushed, which only grew since: no need to ask first (a server
                # that lost bytes meanwhile answers 409, and the next try asks).
                if size == last.length:
                    return FileResult(path, "unchanged", url=last.session_url)
                known.state = None
                sent, added = self._send(handle, last, last.length, size, rewrite=False)
                self._remember(known, last, head.slot_sha256, size, handle)
                return FileResult(path, "sent", sent, added, url=last.session_url)
            state = self.api.source(self.machine, str(path), head.session_id)
            same = (
                state.length > 0
                and size >= state.length
                and head.slot_length == state.slot_length
                and known.body.digest(handle, state.length) == state.body_sha256
            )
            sent = 0
            added = 0
            if same:
                if head.slot_sha256 != state.slot_sha256:
                    answer = self.api.put_slot(state.key, head.slot)
                    sent += len(head.slot)
                    added += int(answer.get("entries_added", 0))
                if size == state.length and not sent:
                    if not state.imported:
                        # Stored by a push that stopped before its last chunk: ask for the import.
                        answer = self.api.append(state.key, state.length, b"")
                        self._remember(known, state, head.slot_sha256, size, handle)
                        return FileResult(
                            path, "sent", 0, int(answer.get("entries_added", 0)), url=state.session_url
                        )
                    self._remember(known, state, head.slot_sha256, size, handle)
                    return FileResult(path, "unchanged", url=state.session_url)
                sent_now, added_now = self._send(handle, state, state.length, size, rewrite=False)
            elif state.length == 0:
                sent_now, added_now = self._send(handle, state, 0, size, rewrite=False)
            else:
                sent_now, added_now = self._send(handle, state, 0, size, rewrite=True)
            self._remember(known, state, head.slot_sha256, size, handle)
            return FileResult(path, "sent", sent + sent_now, added + added_now, url=state.session_url)

    @staticmethod
    def _remember(known: _Known, state: SourceState, slot_sha256: str, size: int, handle: object) -> None:
        """The server holds this file up to ``size`` now: keep its block hashes and that state."""
        assert hasattr(handle, "seek") and hasattr(handle, "read")
        known.body.digest(handle, size)
        known.state = dataclasses.replace(state, length=size)
        known.slot_sha256 = slot_sha256

    def _known(self, path: Path, stat: os.stat_result, slot_length: int, handle: object) -> _Known:
        known = self.known.get(path)
        fresh = _Known(stat.st_dev, stat.st_ino, slot_length, BodyHash(slot_length))
        if known is None or (known.device, known.inode, known.slot_length) != (
            stat.st_dev,
            stat.st_ino,
            slot_length,
        ):
            self.known[path] = fresh
            return fresh
        # Same file, maybe grown: the block hashes stand if the first block is unchanged.
        if known.body.blocks:
            assert hasattr(handle, "seek") and hasattr(handle, "read")
            handle.seek(slot_length)
            if hashlib.sha256(handle.read(BLOCK)).hexdigest() != known.body.blocks[0]:
                self.known[path] = fresh
                return fresh
        return known

    def _send(
        self, handle: object, state: SourceState, start: int, end: int, *, rewrite: bool
    ) -> tuple[int, int]:
        chunk = max(1, min(CHUNK, state.max_request))
        offset = start
        sent = 0
        added = 0
        assert hasattr(handle, "seek") and hasattr(handle, "read")
        if rewrite and start == end:
            return 0, 0
        while offset < end:
            handle.seek(offset)
            data = handle.read(min(chunk, end - offset))
            if not data:
                break
            if rewrite:
                answer = self.api.rewrite(state.key, offset, end, data)
            else:
                # The import waits for the last chunk (one read of them all on the server).
                answer = self.api.append(state.key, offset, data, more=offset + len(data) < end)
            offset += len(data)
            sent += len(data)
            added += int(answer.get("entries_added", 0))
            self.on_bytes(len(data))
        return sent, added
