"""Find session files on disk and read their headers, for the session list.

Plain Python and read-only: it opens each file for reading, reads at most HEADER_READ_LIMIT bytes and never
writes. (omp v15 and pi-mono rewrite a file whose header they cannot read; Arbor must never do that.)
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HEADER_READ_LIMIT = 8192


class HeaderError(ValueError):
    """The file has no readable session header in its first HEADER_READ_LIMIT bytes."""


@dataclass(frozen=True, slots=True)
class SessionFileRow:
    """One *.jsonl file: its header's id and cwd, or the reason they could not be read."""

    root: Path
    path: Path
    size: int | None
    session_id: str | None = None
    cwd: str | None = None
    error: str | None = None

    @property
    def name(self) -> str:
        """The path relative to the session directory it was found in (pi nests files per cwd)."""
        return self.path.relative_to(self.root).as_posix()


@dataclass(frozen=True, slots=True)
class SessionListing:
    rows: list[SessionFileRow]
    total: int  # files found, which can exceed len(rows) when the listing is capped


def _is_title_slot(obj: dict[str, Any]) -> bool:
    # Same test as omp >= v16 uses before stripping line 1 (spec §20.1).
    return (
        obj.get("type") == "title"
        and obj.get("v") == 1
        and all(isinstance(obj.get(key), str) for key in ("title", "updatedAt", "pad"))
    )


def read_session_header(path: Path, limit: int = HEADER_READ_LIMIT) -> dict[str, Any]:
    """Return the header object (`type: "session"`) of a session file, reading at most `limit` bytes.

    Parsing is lenient like the original loader: unparsable lines are skipped, and an omp title slot is
    skipped when it is the first object. The first other object must be the header with a string `id`.
    Raises HeaderError when it is not, and OSError when the file cannot be read.
    """
    with path.open("rb") as handle:
        chunk = handle.read(limit)
    # Only newline-terminated lines count: the piece after the last newline may be cut by the limit, and a
    # final line without a newline is skipped by the original loader too.
    lines = chunk.split(b"\n")[:-1]
    first_object = True
    for raw in lines:
        try:
            obj = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if not isinstance(obj, dict):
            continue
        if first_object and _is_title_slot(obj):
            first_object = False
            continue
        if obj.get("type") == "session" and isinstance(obj.get("id"), str):
            return obj
        raise HeaderError("the first entry is not a session header")
    if len(chunk) == limit:
        raise HeaderError(f"no session header in the first {limit} bytes")
    raise HeaderError("no session header")


def _row_for(root: Path, path: Path) -> SessionFileRow:
    try:
        size = path.stat().st_size
        header = read_session_header(path)
    except OSError as error:
        return SessionFileRow(root, path, None, error=f"cannot read: {error.strerror or error}")
    except HeaderError as error:
        return SessionFileRow(root, path, size, error=str(error))
    cwd = header.get("cwd")
    cwd = cwd if isinstance(cwd, str) else None
    return SessionFileRow(root, path, size, session_id=header["id"], cwd=cwd)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def list_session_files(dirs: Iterable[Path], limit: int) -> SessionListing:
    """List the *.jsonl files under `dirs` (recursively), newest first, reading headers of the first `limit`.

    Missing directories are skipped: most machines have only some of the default locations.
    """
    found: list[tuple[float, Path, Path]] = []
    for root in dirs:
        if not root.is_dir():
            continue
        for path in root.rglob("*.jsonl"):
            found.append((_mtime(path), path, root))
    found.sort(key=lambda item: (-item[0], str(item[1])))
    rows = [_row_for(root, path) for _, path, root in found[:limit]]
    return SessionListing(rows=rows, total=len(found))
