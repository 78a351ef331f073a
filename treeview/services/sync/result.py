"""What a sync reports (``SyncResult``) and the progress callback it takes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from treeview.models import AgentSession

Progress = Callable[[int, int], None]  # (bytes read since the last call, entries stored since the last call)


@dataclass
class SyncResult:
    """What one sync did to one file."""

    path: str
    status: str  # new, grown, unchanged, rewritten, failed
    session: AgentSession | None = None
    entries_added: int = 0
    entries_removed: int = 0
    bytes_read: int = 0
    warnings: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
