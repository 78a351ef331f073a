"""What a ``SessionManager`` hands out: entries, tree nodes, usage totals, ``EntryNotFound``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Entry = dict[str, Any]


class EntryNotFound(KeyError):
    """An id that is not in the session. ``str()`` is the original's message: ``Entry <id> not found``."""

    def __init__(self, entry_id: object) -> None:
        super().__init__(entry_id)
        self.entry_id = entry_id

    def __str__(self) -> str:
        return f"Entry {self.entry_id} not found"


@dataclass(slots=True)
class TreeNode:
    """A node of :meth:`SessionManager.get_tree`: the live entry, its sorted children, its label."""

    entry: Entry
    children: list[TreeNode] = field(default_factory=list)
    label: str | None = None


@dataclass(slots=True)
class UsageStatistics:
    """Token and cost totals (see :meth:`SessionManager.usage_statistics`)."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    premium_requests: float = 0
    cost: float = 0

    def add(self, usage: Any) -> None:
        if not isinstance(usage, dict):
            return
        self.input += _number(usage.get("input"))
        self.output += _number(usage.get("output"))
        self.cache_read += _number(usage.get("cacheRead"))
        self.cache_write += _number(usage.get("cacheWrite"))
        self.premium_requests += _number(usage.get("premiumRequests"))
        cost = usage.get("cost")
        self.cost += _number(cost.get("total")) if isinstance(cost, dict) else 0


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<timestamp with : and . replaced by ->_<id>.jsonl`` (§1.2)."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"
