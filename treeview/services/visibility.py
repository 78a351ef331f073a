"""Changing who sees a session (the checks are in treeview/access.py; the view asks before calling)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from treeview.models import AgentSession, Team


def set_visibility(session: AgentSession, visibility: str, teams: Iterable[Team]) -> None:
    """Set ``session``'s visibility; its teams only count (and are only kept) for ``teams`` visibility."""
    if visibility not in AgentSession.Visibility.values:
        raise ValueError(f"unknown visibility {visibility!r}")
    chosen = list(teams) if visibility == AgentSession.Visibility.TEAMS else []
    with transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(visibility=visibility)
        session.visibility = visibility
        session.teams.set(chosen)


def inherit_access(new: AgentSession, parent: AgentSession, owner: object) -> None:
    """A session made from ``parent`` (a fork) belongs to ``owner`` and is seen by whoever saw the parent."""
    owner_pk = getattr(owner, "pk", None)
    with transaction.atomic():
        AgentSession.objects.filter(pk=new.pk).update(owner_id=owner_pk, visibility=parent.visibility)
        new.owner_id = owner_pk
        new.visibility = parent.visibility
        new.teams.set(parent.teams.all())
