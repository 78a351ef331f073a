"""Giving and taking back "can write" on a session (treeview/access.py checks; the view asks first)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from treeview.models import AgentSession, SessionGrant

__all__ = ["NotGrantable", "grant_write", "revoke_write"]


class NotGrantable(ValueError):
    """This person cannot be given "can write" (the owner already has it; an inactive account)."""


def grant_write(session: AgentSession, user: Any, granted_by: Any) -> SessionGrant:
    """Let ``user`` write to ``session`` (move its leaf, label, fork, make public links); again: unchanged."""
    if not user.is_active:
        raise NotGrantable(f"{user.get_username()} cannot sign in")
    if session.owner_id is not None and session.owner_id == user.pk:
        raise NotGrantable(f"{user.get_username()} owns this session")
    by = granted_by if getattr(granted_by, "is_authenticated", False) else None
    with transaction.atomic():
        grant, _ = SessionGrant.objects.get_or_create(session=session, user=user, defaults={"granted_by": by})
    return grant


def revoke_write(session: AgentSession, user_pk: int) -> bool:
    """Take "can write" back from the user ``user_pk``; whether they had it."""
    deleted, _ = SessionGrant.objects.filter(session=session, user=user_pk).delete()
    return bool(deleted)
