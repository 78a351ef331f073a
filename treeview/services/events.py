""" "Session changed" events on the channel layer, so that open pages refresh without a reload."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

__all__ = [
    "ACCESS_CHANGED",
    "SESSIONS_GROUP",
    "publish_access_changed",
    "publish_session_changed",
    "session_group",
]

log = logging.getLogger(__name__)

#: Every page that lists sessions listens here.
SESSIONS_GROUP = "sessions"
#: The reason of a change of who may see a session: open sockets check their user again.
ACCESS_CHANGED = "access"


def session_group(session_pk: int) -> str:
    """The group of the pages showing one session."""
    return f"session-{session_pk}"


def publish_session_changed(session_pk: int, session_id: str, reason: str, **extra: Any) -> None:
    """After the current transaction commits, tell the listeners that a session changed (best effort)."""

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        message = {"type": "session.changed", "session": session_id, "reason": reason, **extra}
        try:
            async_to_sync(layer.group_send)(session_group(session_pk), message)
            async_to_sync(layer.group_send)(SESSIONS_GROUP, message)
        except Exception:  # a missing Redis must not fail an import or a label
            log.warning("could not publish a change of session %s", session_id, exc_info=True)

    transaction.on_commit(send)


def publish_access_changed(sessions: Iterable[tuple[int, str]]) -> None:
    """After commit: who may see these ``(pk, session id)`` sessions changed; open pages check again."""
    for session_pk, session_id in sessions:
        publish_session_changed(session_pk, session_id, ACCESS_CHANGED)
