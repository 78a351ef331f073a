"""New entries exactly as oh-my-pi v15 builds them (§4, §5, §9.1), for any store of entries.

``SessionManager`` appends with these, and so does the database layer, which keeps no manager in memory:
``existing`` is anything that answers ``id in existing`` for the ids already in the session.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

from .ids import generate_id, iso_now
from .jsonl import UNDEFINED

__all__ = [
    "DISCARDED_ENTRY_BRANCH",
    "base_entry",
    "branch_summary_entry",
    "defined",
    "label_entry",
    "position_marker",
]

Entry = dict[str, Any]

# omp v18's marker kind for an empty branch summary that only pins the leaf (§20.3, discardEntryDurably).
DISCARDED_ENTRY_BRANCH = "discarded-entry-branch"


def defined(entry: Entry) -> Entry:
    """Drop the keys left ``undefined`` (JSON.stringify omits them; the in-memory object never has them)."""
    return {key: value for key, value in entry.items() if value is not UNDEFINED}


def base_entry(kind: str, parent_id: str | None, existing: Container[str]) -> Entry:
    """``{type, id, parentId, timestamp}``: a fresh 8-hex id not in ``existing``, the time now."""
    return {"type": kind, "id": generate_id(existing), "parentId": parent_id, "timestamp": iso_now()}


def label_entry(parent_id: str | None, existing: Container[str], target_id: str, label: str | None) -> Entry:
    """A label entry; ``label=None`` clears (the key is then absent, as the original writes it)."""
    entry = base_entry("label", parent_id, existing)
    entry.update(targetId=target_id, label=UNDEFINED if label is None else label)
    return defined(entry)


def branch_summary_entry(
    branch_from_id: str | None,
    existing: Container[str],
    summary: str,
    details: Any = UNDEFINED,
    from_extension: Any = UNDEFINED,
) -> Entry:
    """A ``branch_summary`` hung at ``branch_from_id`` (``fromId`` is that id, or ``"root"``)."""
    entry = base_entry("branch_summary", branch_from_id, existing)
    entry.update(
        fromId="root" if branch_from_id is None else branch_from_id,
        summary=summary,
        details=details,
        fromExtension=from_extension,
    )
    return defined(entry)


def position_marker(leaf_id: str | None, existing: Container[str], discarded_entry_id: str | None) -> Entry:
    """An empty branch summary at ``leaf_id``: the agent takes the last line as its leaf, so it resumes there.

    Empty summaries never reach the LLM context, so the marker changes nothing but the position.
    """
    details: dict[str, Any] = {"kind": DISCARDED_ENTRY_BRANCH}
    if discarded_entry_id is not None:
        details["discardedEntryId"] = discarded_entry_id
    return branch_summary_entry(leaf_id, existing, "", details)
