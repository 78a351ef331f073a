"""Format migrations v1 → v2 → v3 (§7).

They run on load, before indexing, and mutate the parsed objects in place. New keys are appended at the end
of an object (Python dicts keep insertion order like JavaScript objects), so a migrated file is written with
the same bytes oh-my-pi writes, ids aside.

:class:`Migrator` works one object at a time, so a file can be migrated while it streams through (the
database import never holds a whole session); :func:`migrate_to_current_version` runs it over a list.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from .ids import generate_id

__all__ = ["CURRENT_SESSION_VERSION", "IdMaker", "Migrator", "migrate_to_current_version", "stable_id_maker"]

CURRENT_SESSION_VERSION = 3

#: Makes the id of the entry at a position, avoiding ``used`` (the original draws random ids).
IdMaker = Callable[[int, set[str]], str]


def _random_id(position: int, used: set[str]) -> str:
    return generate_id(used)


def stable_id_maker(session_id: str) -> IdMaker:
    """Ids for migrated v1 entries that come out the same at every load (the original draws random ones).

    A store that reads the same v1 file again (Arbor's database) needs the same ids to recognise the entries.
    """

    def make(position: int, used: set[str]) -> str:
        salt = 0
        while True:
            seed = f"{session_id}:{position}:{salt}".encode()
            candidate = hashlib.blake2b(seed, digest_size=4).hexdigest()
            if candidate not in used:
                return candidate
            salt += 1

    return make


def _version_of(header: dict[str, Any] | None) -> int | float:
    version = header.get("version", 1) if header is not None else 1
    if not isinstance(version, int | float) or isinstance(version, bool):
        return 1
    return version


class Migrator:
    """Migrates the objects of one file in file order: the header first, then every entry."""

    def __init__(self, header: dict[str, Any] | None, make_id: IdMaker = _random_id) -> None:
        self.version = _version_of(header)
        self.make_id = make_id
        # The original's collision set is never filled; filling it makes collisions impossible.
        self._used: set[str] = set()
        self._previous_id: str | None = None
        # Position in the parsed array (the header is 0) → (type, id), for firstKeptEntryIndex.
        self._positions: list[tuple[Any, Any]] = []

    @property
    def needed(self) -> bool:
        return self.version < CURRENT_SESSION_VERSION

    def migrate(self, obj: dict[str, Any]) -> bool:
        """Migrate the next object of the file (header or entry) in place. Returns whether it changed."""
        if not self.needed:
            return False
        changed = False
        kind = obj.get("type")
        if kind == "session":
            # v1→v2 appends `version`; v2→v3 then overwrites it where it stands.
            obj["version"] = CURRENT_SESSION_VERSION
            self._positions.append((kind, None))
            return True
        if self.version < 2:
            entry_id = self.make_id(len(self._positions), self._used)
            self._used.add(entry_id)
            obj["id"] = entry_id
            obj["parentId"] = self._previous_id
            self._previous_id = entry_id
            changed = True
        self._positions.append((kind, obj.get("id")))
        if self.version < 2 and kind == "compaction" and "firstKeptEntryIndex" in obj:
            self._resolve_first_kept(obj)
        message = obj.get("message")
        if kind == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
            message["role"] = "custom"
            changed = True
        return changed

    def _resolve_first_kept(self, compaction: dict[str, Any]) -> None:
        index = compaction["firstKeptEntryIndex"]
        if isinstance(index, int | float) and not isinstance(index, bool) and float(index).is_integer():
            # Counted in the parsed array with the header at 0; skipped lines shift it, as upstream.
            position = int(index)
            if 0 <= position < len(self._positions):
                kind, entry_id = self._positions[position]
                if kind != "session":
                    compaction["firstKeptEntryId"] = entry_id
        del compaction["firstKeptEntryIndex"]


def migrate_to_current_version(file_entries: list[dict[str, Any]], make_id: IdMaker = _random_id) -> set[int]:
    """Bring header and entries (header first, file order) to version 3 in place.

    Returns the positions of the objects that changed (empty when the file was already current). The version
    is read from the first header, ``1`` when it has none.
    """
    header = next((e for e in file_entries if e.get("type") == "session"), None)
    migrator = Migrator(header, make_id)
    return {index for index, obj in enumerate(file_entries) if migrator.migrate(obj)}
