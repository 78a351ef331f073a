"""The title slot: the fixed-size first line some session files reserve for their title."""

from __future__ import annotations

from typing import Any

from treeview.session.jsonl.stringify import dumps


def is_title_slot(value: Any) -> bool:
    """Whether a parsed first line is the omp v16+ title slot (§20.1)."""
    return (
        isinstance(value, dict)
        and value.get("type") == "title"
        and value.get("v") == 1
        and isinstance(value.get("title"), str)
        and isinstance(value.get("updatedAt"), str)
        and isinstance(value.get("pad"), str)
    )


TITLE_SLOT_BYTES = 256


def title_slot(title: str, updated_at: str, source: str | None = None) -> dict[str, Any]:
    """oh-my-pi's title slot: a first line padded to exactly 256 bytes (newline included), rewritten in
    place on every rename. A title too long for the slot is cut at a code point."""

    def slot(text: str, pad: str) -> dict[str, Any]:
        value: dict[str, Any] = {"type": "title", "v": 1, "title": text}
        if source is not None:
            value["source"] = source
        value["updatedAt"] = updated_at
        value["pad"] = pad
        return value

    def size(value: dict[str, Any]) -> int:
        return len((dumps(value) + "\n").encode("utf-8", "surrogatepass"))

    low, high, best = 0, len(title), ""
    while low <= high:
        middle = (low + high) // 2
        if size(slot(title[:middle], "")) <= TITLE_SLOT_BYTES:
            best, low = title[:middle], middle + 1
        else:
            high = middle - 1
    padding = TITLE_SLOT_BYTES - size(slot(best, ""))
    if padding < 0:
        raise ValueError("title slot metadata exceeds the slot size")
    return slot(best, " " * padding)
