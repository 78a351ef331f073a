"""New sessions from a session (§10.10, §10.11): an empty one, a branched copy, a branch export."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..ids import generate_id, iso_now, new_session_id
from ..jsonl import UNDEFINED, dumps, title_slot
from ..migrations import CURRENT_SESSION_VERSION
from .appending import _Appending
from .values import Entry, EntryNotFound, session_file_name


class _Branching(_Appending):
    """Replacing the session with a new one: an empty session, or one branch of this one."""

    # ------------------------------------------------------------------------------------------------------
    # New sessions

    def _new_header(self, parent_session: str | None) -> Entry:
        header: Entry = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": new_session_id(),
            "timestamp": iso_now(),
            "cwd": self.cwd,
        }
        if parent_session is not None:
            header["parentSession"] = parent_session
        return header

    def _replace(self, header: Entry, entries: list[Entry]) -> None:
        self.header = header
        self.title_slot = None
        self._source = None
        self._header_line = None
        self._header_changed = False
        self.entries = entries
        self._lines = [None] * len(entries)
        self._changed = set()
        self.warnings = []
        self.migrated = False
        self._written = 0
        self._file_size = None
        self._on_disk = False
        if self.session_dir is not None:
            file_name = session_file_name(header["timestamp"], header["id"])
            self.session_file = str(Path(self.session_dir) / file_name)
        else:
            self.session_file = None
        self._build_index()

    def new_session(self, parent_session: str | None = None) -> str | None:
        """Start an empty session (§10.11). Returns its future file path (None in memory)."""
        self._replace(self._new_header(parent_session), [])
        return self.session_file

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this session with a new one holding only the path to ``leaf_id`` (§10.10, ``/branch``).

        Label entries on the path are dropped and the labels of path entries re-created as fresh label
        entries at the end. When persisting, the new file is written at once; returns its path. What the
        newest agents add: oh-my-pi 18 starts the file with a title slot and keeps the title in the header;
        pi 1.6 re-links each kept entry to the one before it (an entry whose parent was a dropped label
        keeps its place) and gives the re-created labels their original timestamps.
        """
        path = self.get_branch(leaf_id)
        if not path:
            raise EntryNotFound(leaf_id)
        kept = _rechained(path) if self.agent == "pi" else [e for e in path if e.get("type") != "label"]
        header, label_entries, slot = self._branch_parts(
            {entry["id"] for entry in kept}, kept[-1]["id"] if kept else None
        )
        self._replace(header, kept + label_entries)
        self.title_slot = slot
        if self.persist and self.session_file is not None:
            # Written immediately, even without an assistant message (§10.10 step 6).
            self._write_new_file()
        return self.session_file

    def branch_export(
        self, path: Iterable[Entry], kept_ids: set[str], last_kept: str | None
    ) -> tuple[Entry, Iterator[str]]:
        """The file :meth:`create_branched_session` writes, made lazily from ``path`` (the entries root →
        leaf, read as they are needed) without loading or changing this session: (new header, its lines).
        ``kept_ids`` are the ids of the path's entries that are not labels, ``last_kept`` the last of them;
        this manager needs only its header, title slot, cwd, file and labels."""
        header, label_entries, slot = self._branch_parts(set(kept_ids), last_kept)

        def lines() -> Iterator[str]:
            if slot is not None:
                yield dumps(slot) + "\n"
            yield dumps(header) + "\n"
            if self.agent == "pi":
                kept: Iterable[Entry] = _rechain(path)
            else:
                kept = (entry for entry in path if entry.get("type") != "label")
            for entry in kept:
                yield dumps(entry) + "\n"
            for entry in label_entries:
                yield dumps(entry) + "\n"

        return header, lines()

    def _branch_parts(
        self, kept_ids: set[str], last_kept: str | None
    ) -> tuple[Entry, list[Entry], Entry | None]:
        """The /branch file's header, re-created labels and title slot (omp), for a path whose kept entries
        (labels dropped) have ``kept_ids``, the last being ``last_kept``; labels' ids are added."""
        pi = self.agent == "pi"
        labels = [(target, label) for target, label in self.labels.items() if target in kept_ids]
        label_times = dict(self.label_times)
        header = self._new_header(self.session_file)
        if self.agent == "omp":
            header = self._omp_branch_header(header)
        parent_id = last_kept
        label_entries: list[Entry] = []
        for target_id, label in labels:
            label_entry = {
                "type": "label",
                "id": generate_id(kept_ids),
                "parentId": parent_id,
                # pi keeps when the label was set; oh-my-pi stamps it with the new session's time.
                "timestamp": label_times.get(target_id, UNDEFINED) if pi else header["timestamp"],
                "targetId": target_id,
                "label": label,
            }
            kept_ids.add(label_entry["id"])
            label_entries.append(label_entry)
            parent_id = label_entry["id"]
        slot = self._branch_title_slot(header) if self.agent == "omp" else None
        return header, label_entries, slot

    def _omp_branch_header(self, header: Entry) -> Entry:
        # oh-my-pi 18 carries the title into the new header (undefined keys are left out).
        ordered: Entry = {key: header[key] for key in ("type", "version", "id", "timestamp", "cwd")}
        title = self.session_name if self.title_slot is not None else self.header.get("title")
        if isinstance(title, str):
            ordered["title"] = title
        source = self.header.get("titleSource")
        if self.title_slot is not None and isinstance(self.title_slot.get("source"), str):
            source = self.title_slot["source"]
        if isinstance(source, str):
            ordered["titleSource"] = source
        if "parentSession" in header:
            ordered["parentSession"] = header["parentSession"]
        return ordered

    @staticmethod
    def _branch_title_slot(header: Entry) -> Entry:
        title = header.get("title")
        source = header.get("titleSource")
        return title_slot(
            title if isinstance(title, str) else "",
            header["timestamp"],
            source if isinstance(source, str) else None,
        )


def _rechained(path: list[Entry]) -> list[Entry]:
    """pi's /branch: the path without its label entries, each entry re-linked to the kept one before it (a
    compaction whose first kept entry was a dropped label points at the entry that took its place)."""
    return list(_rechain(path))


def _rechain(path: Iterable[Entry]) -> Iterator[Entry]:
    """:func:`_rechained`, one entry at a time (a streamed /branch download)."""
    replacement: dict[Any, Any] = {}
    pending: list[Any] = []
    parent_id: Any = None
    for entry in path:
        if entry.get("type") == "label":
            pending.append(entry.get("id"))
            continue
        for label_id in pending:
            replacement[label_id] = entry.get("id")
        pending.clear()
        copy = {**entry, "parentId": parent_id}
        if entry.get("type") == "compaction":
            first = entry.get("firstKeptEntryId")
            if first != entry.get("id"):
                copy["firstKeptEntryId"] = replacement.get(first, first)
        yield copy
        parent_id = entry.get("id")
