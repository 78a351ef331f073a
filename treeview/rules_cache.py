"""The detected rules of a session kept on disk (``ARBOR_DATA_DIR/cache/rules``), so that a server process
need not scan the session's rows again after a restart (0.3 s on a 100,000-entry session) nor after rows
were appended (only the new rows are scanned).

One small JSON file per session: what the decision was made from (``base``: database, session, header and
title slot), the rows it covered (``next_seq``, ``entry_count``) and the decision. A file that does not fit
(another session, another header, rows deleted since, unreadable) is ignored and written again.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings

from treeview.session.agents import AGENTS, AgentDecision

logger = logging.getLogger(__name__)

__all__ = ["MIN_ROWS", "UNDECIDED_REASON", "StoredDecision", "load", "save"]

#: Sessions with at least this many rows keep their decision on disk (as many as keep a forest snapshot).
MIN_ROWS = 20_000

#: The reason ``detect_agent`` gives when no row decided: rows appended later may still decide.
UNDECIDED_REASON = "nothing agent-specific"
VERSION = 1


@dataclass(frozen=True, slots=True)
class StoredDecision:
    decision: AgentDecision
    #: The rows the decision read: every row with ``seq < next_seq``, ``entry_count`` of them.
    next_seq: int
    entry_count: int


def rules_dir() -> Path:
    return Path(settings.ARBOR_DATA_DIR) / "cache" / "rules"


def base_key(
    database: Any, pk: int, imported_at: str, session_id: str, header_raw: str, title_slot: bool
) -> str:
    """What a decision depends on besides the rows (the header by its digest)."""
    header = hashlib.blake2b(header_raw.encode(), digest_size=16).hexdigest()
    return f"{database}|{pk}|{imported_at}|{session_id}|{header}|{int(title_slot)}"


def _path(pk: int) -> Path:
    return rules_dir() / f"{pk}.json"


def load(pk: int, base: str) -> StoredDecision | None:
    """The stored decision for this session, if one was made from the same header and session."""
    try:
        data = orjson.loads(_path(pk).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or data.get("base") != base:
        return None
    agent, reason = data.get("agent"), data.get("reason")
    next_seq, count = data.get("next_seq"), data.get("entry_count")
    if agent not in AGENTS or not isinstance(reason, str):
        return None
    if not isinstance(next_seq, int) or not isinstance(count, int) or next_seq < 0 or count < 0:
        return None
    return StoredDecision(AgentDecision(agent, reason), next_seq, count)


def save(pk: int, base: str, stored: StoredDecision) -> None:
    """Write the decision (atomically: another process reads the old file or the new one, whole)."""
    path = _path(pk)
    data = {
        "version": VERSION,
        "base": base,
        "agent": stored.decision.agent,
        "reason": stored.decision.reason,
        "next_seq": stored.next_seq,
        "entry_count": stored.entry_count,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(orjson.dumps(data))
        os.replace(tmp, path)
    except OSError:
        logger.warning("could not save the detected rules %s", path, exc_info=True)
