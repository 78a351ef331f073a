"""The session row of a file: which agent wrote it, a moved file's row, subagent family links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from treeview.models import AgentSession
from treeview.services.sync.paths import in_session_dirs


def _no_header_message(size: int) -> str:
    if size == 0:
        return "not a session file: the file is empty"
    return "not a session file: no JSON object in it, so no session header"


def _earlier_row(header: dict[str, Any], source: str) -> AgentSession | None:
    """The row of a file the header's ``previousSessionFiles`` lists, when that file is gone and was in a
    session directory (never an upload's or a pushed file's row), or None."""
    earlier = header.get("previousSessionFiles")
    if not isinstance(earlier, list):
        return None
    paths = [p for p in earlier if isinstance(p, str) and p and p != source]
    for path in reversed(paths):  # the latest move last
        row = AgentSession.objects.filter(source_path=path).first()
        if row is not None and in_session_dirs(row.source_path) and not os.path.exists(row.source_path):
            return AgentSession.objects.select_for_update().get(pk=row.pk)
    return None


def _link_family(session: AgentSession) -> None:
    """Tie a subagent transcript to the session that spawned it, and a session to the transcripts imported
    before it (a folder sorts after its transcripts' parent file, or not: both ways, idempotent). Only
    sessions of the same owner are tied (the agents' own files have none)."""
    parent = None
    if session.spawned_from_path:
        parent = (
            AgentSession.objects.filter(source_path=session.spawned_from_path, owner_id=session.owner_id)
            .exclude(pk=session.pk)
            .only("pk")
            .first()
        )
    session.subagent_of = parent
    if session.pk is not None and session.source_path:
        AgentSession.objects.filter(spawned_from_path=session.source_path, owner_id=session.owner_id).exclude(
            pk=session.pk
        ).exclude(subagent_of=session).update(subagent_of=session)


def guess_agent(path: str, header: dict[str, Any], slot: bool) -> str:
    """pi or oh-my-pi: by directory first (§1.1), then by what only omp writes."""
    parts = Path(path).parts
    if ".pi" in parts:
        return AgentSession.Agent.PI
    if ".omp" in parts or slot or "title" in header or "titleSource" in header:
        return AgentSession.Agent.OMP
    if header.get("version", 1) == 1 or "provider" in header:
        return AgentSession.Agent.PI
    return AgentSession.Agent.OMP
