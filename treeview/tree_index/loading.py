"""The middle layer of :class:`~treeview.tree_index.forest.Forest`: reading it from the table or from its
snapshot and keeping it current (:meth:`_Loading.refresh`), and the snapshot an import writes
(:func:`prepare_snapshot`)."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from contextlib import suppress
from typing import Any, cast

import orjson

from treeview.models import AgentSession
from treeview.session.selector import FlatTree
from treeview.session.selector_tree import flat_from_columns, flat_to_columns
from treeview.tree_index.building import _Building
from treeview.tree_index.gc_pause import gc_paused
from treeview.tree_index.rows import _rows
from treeview.tree_index.snapshot_files import (
    SNAPSHOT_VERSION,
    _save_snapshot,
    _snapshot_key,
    _snapshot_path,
    _write_snapshot,
)

logger = logging.getLogger(__name__)

#: Sessions with at least this many rows keep a snapshot (smaller ones load from the table in a blink).
SNAPSHOT_MIN_ROWS = 20_000


class _Loading(_Building):
    """Reading the forest from the table or its snapshot, keeping it current, and keeping it on disk."""

    def reload(self, session: AgentSession) -> None:
        """Read everything again, up to the session's ``next_seq``; a big session's rows are saved as its
        snapshot for the next start of the server."""
        stop = session.next_seq
        with gc_paused():  # a hundred thousand row tuples: no collection while they pile up
            rows = list(_rows(self.session_pk, 0, stop))
            self._build(rows, stop)
        if len(rows) >= SNAPSHOT_MIN_ROWS:
            self.snapshot_key = _snapshot_key(session)
            self.snapshot_full = False
            _save_snapshot(self.snapshot_key, stop, rows)

    def _restore(self, session: AgentSession) -> bool:
        """Build from the session's snapshot, then bring it up to the session; ``False`` when there is no
        usable snapshot (none, another session's, newer than the session, or too far behind it)."""
        if session.next_seq < SNAPSHOT_MIN_ROWS:
            return False
        key = _snapshot_key(session)
        try:
            with gc_paused():
                data = orjson.loads(_snapshot_path(key).read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return False
        if not isinstance(data, dict) or data.get("version") not in (1, SNAPSHOT_VERSION):
            return False
        if data.get("key") != key:
            return False
        stop, rows, columns = data.get("next_seq"), data.get("rows"), data.get("columns")
        if not isinstance(columns, dict):
            columns = None
        if not isinstance(stop, int) or stop > session.next_seq:
            return False
        if columns is not None:
            count = columns.get("row_count")
        else:
            count = len(rows) if isinstance(rows, list) else None
        if not isinstance(count, int):
            return False
        if session.next_seq - stop > max(SNAPSHOT_MIN_ROWS // 4, count // 5):
            return False  # reading the table (and saving a new snapshot) is about as fast
        links = data.get("forest")
        links = links if isinstance(links, dict) else None
        if columns is not None:
            try:
                self._build_columns(columns, stop, links)
            except (KeyError, TypeError, ValueError, IndexError):
                logger.warning("the forest snapshot %s does not fit its session", key, exc_info=True)
                return False
        else:
            self._build(cast(list[Sequence[Any]], rows), stop, links)
        with suppress(OSError):
            os.utime(_snapshot_path(key))  # the most recently opened first (prewarm_sessions, pruning)
        self.snapshot_key = key
        flat = data.get("flat")
        if isinstance(flat, dict):
            self._kept_flat = (self.generation, {**flat, "next_seq": stop})
        self.snapshot_full = columns is not None
        # Only the rows added since are read; a deletion since (a rewritten file) reads everything.
        self.refresh(session)
        return True

    def refresh(self, session: AgentSession) -> bool:
        """Bring the forest up to ``session`` (its ``next_seq`` and ``entry_count``). Returns whether that was
        done by appending the new rows; otherwise (rows were deleted, or a new row would move existing
        nodes) everything was read again."""
        stop = session.next_seq
        if stop < self.next_seq:
            return True  # an older view of the session: this forest is newer
        if stop == self.next_seq:
            if session.entry_count == self.row_count:
                return True
            self.reload(session)
            return False
        rows = list(_rows(self.session_pk, self.next_seq, stop))
        # Rows are never updated, only appended or (a rewritten file) deleted: the count tells a deletion.
        if self.cycles or self.row_count + len(rows) != session.entry_count or not self._append(rows, stop):
            self.reload(session)
            return False
        return True

    def snapshot_parts(self, flat: FlatTree | None, leaf_index: int | None) -> dict[str, Any]:
        """What a snapshot keeps besides rows, for this forest as it is: its nodes as columns (``columns``),
        its links (``links``) and ``flat``, its tree flattened for a leaf at ``leaf_index`` (made from this
        forest in this state; ``None``: not kept). The caller holds the session's lock (nothing changes the
        forest meanwhile); writing is :meth:`save_snapshot_parts`, without it."""
        kept: dict[str, Any] | None = None
        if flat is not None and leaf_index is not None and not self.cycles:
            place = {id(node): i for i, node in enumerate(self.nodes.values())}
            kept = flat_to_columns(flat, place)
            if kept is not None:
                kept["leaf_index"] = leaf_index
        return {"next_seq": self.next_seq, "columns": self.columns(), "links": self.links(), "flat": kept}

    def save_snapshot_parts(self, parts: dict[str, Any]) -> None:
        """Write the snapshot :meth:`snapshot_parts` made (here, in the caller's thread): the next server
        start then neither reads rows one by one, links nor (for that leaf) flattens."""
        if self.snapshot_key is None:
            return
        _write_snapshot(
            self.snapshot_key, parts["next_seq"], None, parts["links"], parts["flat"], parts["columns"]
        )
        self.snapshot_full = True

    def take_flat(self, leaf_id: str | None) -> tuple[FlatTree, int] | None:
        """The flattened tree the snapshot kept, with its leaf's place, when it is the one for ``leaf_id`` of
        this forest as it is now (read from that snapshot, no row added since: a label, an appended entry or
        a moved leaf mean flattening again). Given once; ``None`` otherwise."""
        kept, self._kept_flat = self._kept_flat, None
        if kept is None or self.cycles:
            return None
        generation, data = kept
        if generation != self.generation or data.get("next_seq") != self.next_seq:
            return None
        if data.get("leaf_id") != leaf_id or leaf_id is None:
            return None
        try:
            with gc_paused():
                flat = flat_from_columns(data, list(self.nodes.values()))
            leaf_index = data["leaf_index"]
        except (KeyError, TypeError, ValueError):
            logger.warning("the flattened tree of the snapshot does not fit its forest", exc_info=True)
            return None
        if not isinstance(leaf_index, int) or not 0 <= leaf_index < len(flat.nodes):
            return None
        if flat.nodes[leaf_index].node.entry.get("id") != leaf_id:
            return None
        return flat, leaf_index


def prepare_snapshot(session: AgentSession, *, rewritten: bool, added: int) -> bool:
    """After an import: write a big session's snapshot now, so that the first page of it (in any server
    process) reads that file instead of the table, when the snapshot it may have would not do (a new or
    rewritten file, or more rows appended than a restore reads from the table). Returns whether it wrote."""
    if session.next_seq < SNAPSHOT_MIN_ROWS:
        return False
    if not rewritten and added <= SNAPSHOT_MIN_ROWS // 4:
        return False  # the snapshot it has (if any) is brought up to date from the table when it is read
    stop = session.next_seq
    with gc_paused():
        rows = list(_rows(session.pk, 0, stop))
    # The rows only: the first server process that opens it keeps the forest itself (Forest.snapshot_parts).
    _write_snapshot(_snapshot_key(session), stop, rows)
    return True
