"""Changing who sees a session (the checks are in treeview/access.py; the view asks before calling)."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from treeview.models import AgentSession, Membership, Team
from treeview.services.events import publish_access_changed


def set_visibility(session: AgentSession, visibility: str, teams: Iterable[Team]) -> None:
    """Set ``session``'s visibility; its teams only count (and are only kept) for ``teams`` visibility."""
    if visibility not in AgentSession.Visibility.values:
        raise ValueError(f"unknown visibility {visibility!r}")
    chosen = list(teams) if visibility == AgentSession.Visibility.TEAMS else []
    with transaction.atomic():
        AgentSession.objects.filter(pk=session.pk).update(visibility=visibility)
        session.visibility = visibility
        session.teams.set(chosen)
        publish_access_changed([(session.pk, session.session_id)])


def inherit_access(new: AgentSession, parent: AgentSession, owner: object) -> None:
    """A session made from ``parent`` (a fork) belongs to ``owner`` and is seen by whoever saw the parent."""
    owner_pk = getattr(owner, "pk", None)
    with transaction.atomic():
        AgentSession.objects.filter(pk=new.pk).update(owner_id=owner_pk, visibility=parent.visibility)
        new.owner_id = owner_pk
        new.visibility = parent.visibility
        new.teams.set(parent.teams.all())


def membership_changed(sender: object, instance: Membership, **kwargs: object) -> None:
    """Signal receiver: someone joined or left a team, or changed role; the team's sessions check again."""
    sessions = AgentSession.objects.filter(teams=instance.team_id).values_list("pk", "session_id")
    publish_access_changed(list(sessions))
