"""Where session files are: the session directories, archives, symbolic links that leave them."""

from __future__ import annotations

import gzip
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from django.conf import settings

from treeview.session.jsonl import CHUNK_SIZE

log = logging.getLogger(__name__)


def default_session_dirs() -> list[Path]:
    """The session directories to import by default (settings.ARBOR_SESSION_DIRS) that exist here."""
    return [Path(directory) for directory in settings.ARBOR_SESSION_DIRS if Path(directory).is_dir()]


#: Session files, and oh-my-pi's gzip archives of old ones (``agent/archive/sessions``, read, never written).
SESSION_PATTERNS = ("*.jsonl", "*.jsonl.gz")


def is_archive(path: str | os.PathLike[str]) -> bool:
    """A gzip archive of a session file: read without unpacking it to disk, never written."""
    return str(path).endswith(".jsonl.gz")


def is_session_file_name(path: str) -> bool:
    return path.endswith(".jsonl") or is_archive(path)


def _archive_size_hint(path: str) -> int:
    """The uncompressed size a gzip file's trailer states (modulo 2**32; -1 when unreadable)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(-4, os.SEEK_END)
            return int.from_bytes(handle.read(4), "little")
    except OSError:
        return -1


def _open_source(source: str, stat: os.stat_result) -> tuple[IO[bytes], Any]:
    """The file to read and its stat; for an archive, the decompressed stream and its real size."""
    if not is_archive(source):
        return open(source, "rb"), stat
    handle: IO[bytes] = gzip.open(source, "rb")  # noqa: SIM115 (the caller closes it)
    try:
        size = 0
        while chunk := handle.read(CHUNK_SIZE):
            size += len(chunk)
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return handle, SimpleNamespace(st_size=size, st_mtime_ns=stat.st_mtime_ns)


def find_session_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Every ``*.jsonl`` (or archived ``*.jsonl.gz``) file named, or found (recursively, sorted) under the
    directories named.

    A symbolic link found in a directory is followed only when it leads to a file inside that directory:
    ``passwd.jsonl -> /etc/passwd`` in a session directory is skipped (and logged), never read.
    """
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            root = path.resolve()
            found_files = [p for pattern in SESSION_PATTERNS for p in path.rglob(pattern) if p.is_file()]
            for found in sorted(found_files):
                if found.is_symlink() and not _inside(found.resolve(), root):
                    log.warning("%s: a symbolic link leading outside %s is not followed", found, path)
                    continue
                yield found
        else:
            yield path


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or path.is_relative_to(directory)


def _resolved_dirs(directories: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Path]]:
    """(absolute, resolved) of each directory: a path is under a directory by its absolute spelling and
    really inside it by its resolved one."""
    pairs = []
    for directory in directories:
        absolute = Path(os.path.abspath(Path(directory).expanduser()))
        try:
            pairs.append((absolute, absolute.resolve()))
        except OSError:
            continue
    return pairs


def _link_out_of(path: Path, roots: Iterable[str | os.PathLike[str]]) -> Path | None:
    """The directory of ``roots`` that ``path`` is spelled under but that its resolved path leaves (a symbolic
    link out of a session directory), or None."""
    absolute = Path(os.path.abspath(path))
    for spelled, real in _resolved_dirs(roots):
        if _inside(absolute, spelled):
            return None if _inside(absolute.resolve(), real) else spelled
    return None


def in_session_dirs(path: str | os.PathLike[str]) -> bool:
    """Is the (resolved) file ``path`` inside one of the agents' session directories (never inside Arbor's
    own data directory: uploads, pushed files and forks are not the agents' files)."""
    source = Path(path)
    data = Path(settings.ARBOR_DATA_DIR).resolve()
    if _inside(source, data):
        return False
    return any(_inside(source, real) for _, real in _resolved_dirs(settings.ARBOR_SESSION_DIRS))


def _in_data_dir(path: str) -> bool:
    """Is ``path`` one of Arbor's own files (its data directory, uploads included)?"""
    own = (settings.ARBOR_DATA_DIR, settings.ARBOR_UPLOAD_DIR)
    return any(_inside(Path(path), Path(directory).resolve()) for directory in own)
