"""Defaults for pushed sessions: the visibility a user's pushes get, and setting it."""

from __future__ import annotations

from typing import Any

from treeview.ingest.models import PushDefaults
from treeview.models import AgentSession, Membership


def default_visibility(user: Any) -> tuple[str, Any]:
    """(visibility, team or None) for a session ``user`` pushes or uploads: their setting, else private. The
    team of a ``teams`` setting counts only while ``user`` is still one of its members (the setting was made
    when they were): a team they left gets none of their new sessions, which stay private instead."""
    defaults = PushDefaults.objects.filter(user=user).select_related("team").first()
    if defaults is None:
        return AgentSession.Visibility.PRIVATE, None
    team = defaults.team if defaults.visibility == AgentSession.Visibility.TEAMS else None
    if defaults.visibility == AgentSession.Visibility.TEAMS and (
        team is None or not Membership.objects.filter(team=team, user=user.pk).exists()
    ):
        return AgentSession.Visibility.PRIVATE, None
    return defaults.visibility, team


def set_defaults(user: Any, visibility: str, team: Any) -> PushDefaults:
    """Set ``user``'s default visibility (``team`` only counts for the ``teams`` visibility)."""
    if visibility not in AgentSession.Visibility.values:
        raise ValueError(f"unknown visibility {visibility!r}")
    chosen = team if visibility == AgentSession.Visibility.TEAMS else None
    defaults, _ = PushDefaults.objects.update_or_create(
        user=user, defaults={"visibility": visibility, "team": chosen}
    )
    return defaults
