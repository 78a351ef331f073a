"""Format migrations v1 → v2 → v3 (§7).

They run on load, before indexing, and mutate the parsed objects in place. New keys are appended at the end
of an object (Python dicts keep insertion order like JavaScript objects), so a migrated file is written with
the same bytes oh-my-pi writes, ids aside.
"""

from __future__ import annotations

from typing import Any

from .ids import generate_id

__all__ = ["CURRENT_SESSION_VERSION", "migrate_to_current_version"]

CURRENT_SESSION_VERSION = 3


def _migrate_v1_to_v2(file_entries: list[dict[str, Any]], changed: set[int]) -> None:
    # The original passes an empty collision set that it never fills; filling it makes collisions impossible.
    ids: set[str] = set()
    previous_id: str | None = None
    for index, entry in enumerate(file_entries):
        changed.add(index)
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        entry_id = generate_id(ids)
        ids.add(entry_id)
        # Assigning to an existing key keeps its position, exactly like the JS property assignment.
        entry["id"] = entry_id
        entry["parentId"] = previous_id
        previous_id = entry_id
        if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
            index_value = entry["firstKeptEntryIndex"]
            if isinstance(index_value, int | float) and not isinstance(index_value, bool):
                # The index counts the header as 0, in the parsed array (skipped lines shift it, as upstream).
                target = (
                    file_entries[int(index_value)]
                    if float(index_value).is_integer() and 0 <= index_value < len(file_entries)
                    else None
                )
                if target is not None and target.get("type") != "session":
                    entry["firstKeptEntryId"] = target.get("id")
                del entry["firstKeptEntryIndex"]


def _migrate_v2_to_v3(file_entries: list[dict[str, Any]], changed: set[int]) -> None:
    for index, entry in enumerate(file_entries):
        if entry.get("type") == "session":
            entry["version"] = 3
            changed.add(index)
            continue
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, dict):
            continue
        if message.get("role") == "hookMessage":
            message["role"] = "custom"
            changed.add(index)


def migrate_to_current_version(file_entries: list[dict[str, Any]]) -> set[int]:
    """Bring header and entries (header first, file order) to version 3 in place.

    Returns the positions of the objects that changed (empty when the file was already current). The version
    is read from the first header, ``1`` when it has none.
    """
    header = next((e for e in file_entries if e.get("type") == "session"), None)
    version = header.get("version", 1) if header is not None else 1
    if not isinstance(version, int | float) or isinstance(version, bool):
        version = 1
    changed: set[int] = set()
    if version >= CURRENT_SESSION_VERSION:
        return changed
    if version < 2:
        _migrate_v1_to_v2(file_entries, changed)
    if version < 3:
        _migrate_v2_to_v3(file_entries, changed)
    return changed
