"""oh-my-pi's normalized search haystacks of a big session's nodes, kept in a file next to its snapshot."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from treeview.tree_index.snapshot_files import _snapshot_path

logger = logging.getLogger(__name__)


# -- oh-my-pi's normalized search haystacks of a big session's nodes, kept next to its snapshot ------------

FUZZY_VERSION = 1
#: Seconds the thread that writes them waits first: the search that made them is answered before.
FUZZY_SAVE_DELAY = 1.0
#: Estimated bytes of one ``Forest.fuzzy_texts`` entry besides its normalized text's characters (dict slot,
#: tuple, string and int headers), and of one row of a flattened tree's kept haystacks (list slots, a mask,
#: a start offset): tracemalloc on the 100,000-entry session measured 75 MB for both, these give 74.
FUZZY_ENTRY_BYTES = 320
FUZZY_FLAT_ROW_BYTES = 160


def _fuzzy_path(key: str) -> Path:
    return _snapshot_path(key).with_suffix(".fuzzy")


def _write_fuzzy(key: str, items: list[tuple[Any, tuple[str, str | None, str, int]]]) -> None:
    """One header line (version, snapshot key, the rows' digest), then the rows by column: ids, texts, labels,
    normalized texts, masks (read back by C-level zips); written atomically, a failure only logged."""
    path = _fuzzy_path(key)
    time.sleep(FUZZY_SAVE_DELAY)
    try:
        ids = [node_id for node_id, _ in items]
        columns = [list(column) for column in zip(*(item for _, item in items), strict=True)] or [[]] * 4
        rows = orjson.dumps([ids, *columns])
        digest = hashlib.blake2b(rows, digest_size=16).hexdigest()
        header = orjson.dumps({"version": FUZZY_VERSION, "key": key, "digest": digest})
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(header + b"\n" + rows)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError, orjson.JSONEncodeError):
        logger.warning("could not save the search texts %s", path, exc_info=True)


def _read_fuzzy(key: str) -> dict[Any, tuple[str, str | None, str, int]]:
    """What :func:`_write_fuzzy` wrote for ``key``; empty when there is no such file, or it is another
    session's or version's, or damaged (its rows do not hash to the digest, or are not of that shape)."""
    try:
        header, _, rows = _fuzzy_path(key).read_bytes().partition(b"\n")
        meta = orjson.loads(header)
        if not isinstance(meta, dict) or meta.get("version") != FUZZY_VERSION or meta.get("key") != key:
            return {}
        if hashlib.blake2b(rows, digest_size=16).hexdigest() != meta.get("digest"):
            return {}
        data = orjson.loads(rows)
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(data, list) or len(data) != 5 or not all(isinstance(column, list) for column in data):
        return {}
    ids, texts, labels, normals, masks = data
    if len({len(column) for column in data}) != 1:
        return {}
    # Checked by type, a column at a time (in C): the digest tells damage, this a file of other shape.
    if not (
        set(map(type, ids)) <= {str}
        and set(map(type, texts)) <= {str}
        and set(map(type, labels)) <= {str, type(None)}
        and set(map(type, normals)) <= {str}
        and set(map(type, masks)) <= {int}
    ):
        return {}
    return dict(zip(ids, zip(texts, labels, normals, masks, strict=True), strict=True))
