"""Snapshots: a big session's rows (or the forest they make) in a file under ``ARBOR_DATA_DIR/cache/forests``,
so that a server start need not read them from the table."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import connections, router

from treeview.models import AgentSession, Entry

logger = logging.getLogger(__name__)


#: 2: the rows, or (kept by a server process that has the forest: Forest.snapshot_parts) the forest they make
#: as columns, with its links and its tree flattened for the session's leaf (1, rows only, is still read).
SNAPSHOT_VERSION = 2
#: Snapshot files kept (the most recently written); each is about 360 bytes a row.
SNAPSHOTS_KEPT = 12


def snapshot_dir() -> Path:
    return Path(settings.ARBOR_DATA_DIR) / "cache" / "forests"


def _snapshot_key(session: AgentSession) -> str:
    """Names one session of one database: rows with ``seq < next_seq`` never change, so a snapshot stays
    true for it (rows deleted since show in the count, see :meth:`Forest.refresh`)."""
    database = connections[router.db_for_read(Entry)].settings_dict.get("NAME")
    stamp = session.imported_at.isoformat() if session.imported_at is not None else ""
    return f"{database}|{session.pk}|{stamp}|{session.session_id}"


def _snapshot_path(key: str) -> Path:
    pk = key.split("|")[1]
    return snapshot_dir() / f"{pk}-{hashlib.blake2b(key.encode(), digest_size=12).hexdigest()}.json"


def _write_snapshot(
    key: str,
    stop: int,
    rows: Sequence[Sequence[Any]] | None,
    links: dict[str, Any] | None = None,
    flat: dict[str, Any] | None = None,
    columns: dict[str, Any] | None = None,
) -> None:
    """Write the snapshot (atomically: readers see the old file or the new one); a failure is only logged.
    The rows with ``seq < stop``, or instead the forest they make as ``columns`` (``Forest.columns``: read
    without a step per row); ``links``: the forest's roots and children (``Forest.links``), ``flat``: its
    tree flattened for the session's leaf (``Forest.snapshot_parts``): a start then neither links nor
    flattens."""
    path = _snapshot_path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = orjson.dumps(
            {
                "version": SNAPSHOT_VERSION,
                "key": key,
                "next_seq": stop,
                "rows": rows,
                "columns": columns,
                "forest": links,
                "flat": flat,
            }
        )
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        _prune_snapshots(path)
    except (OSError, TypeError, orjson.JSONEncodeError):
        logger.warning("could not save the forest snapshot %s", path, exc_info=True)


def _save_snapshot(key: str, stop: int, rows: list[tuple[Any, ...]]) -> None:
    """Write the snapshot in a thread of its own (the request does not wait)."""
    # Not a daemon: a process that ends meanwhile finishes writing first.
    threading.Thread(target=_write_snapshot, args=(key, stop, rows), name="forest-snapshot").start()


def snapshot_sessions(limit: int) -> list[AgentSession]:
    """Up to ``limit`` sessions of this database whose snapshot fits them, the most recently opened first."""
    try:
        files = sorted(snapshot_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return []
    found: list[AgentSession] = []
    for path in files:
        if len(found) >= limit:
            break
        pk = path.name.split("-")[0]
        session = AgentSession.objects.filter(pk=int(pk)).first() if pk.isdigit() else None
        # Another database's session of that number, or an older import of it: not worth reading.
        if session is not None and _snapshot_path(_snapshot_key(session)) == path:
            found.append(session)
    return found


def _prune_snapshots(kept: Path) -> None:
    """Drop older snapshots of the same session id number and all but the newest ``SNAPSHOTS_KEPT``."""
    prefix = kept.name.split("-")[0] + "-"
    files = sorted(snapshot_dir().glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for number, path in enumerate(files):
        if path != kept and (number >= SNAPSHOTS_KEPT or path.name.startswith(prefix)):
            path.unlink(missing_ok=True)
            path.with_suffix(".fuzzy").unlink(missing_ok=True)
    for tmp in snapshot_dir().glob("*.tmp"):
        if time.time() - tmp.stat().st_mtime > 3600:
            tmp.unlink(missing_ok=True)
