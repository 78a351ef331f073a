"""Choosing whose rules a session is read by (oh-my-pi 18, pi 1.6, or detected from the file); the check of
who may is in treeview/access.py (``can_choose_rules``), the view asks before calling.

The choice changes no entry: the tree's filters and search, the Context tab and the conversation read it
from ``AgentSession.rules`` and keep what they derive keyed by the rules, so nothing cached goes stale.
"""

from __future__ import annotations

from treeview.models import AgentSession
from treeview.session.agents import AGENTS

#: The form's value for "detect from the file" (stored as "").
DETECT = "detect"


def set_rules(session: AgentSession, choice: str) -> None:
    """Read ``session`` by ``choice``'s rules from now on: ``"omp"``, ``"pi"`` or :data:`DETECT`."""
    if choice != DETECT and choice not in AGENTS:
        raise ValueError(f"unknown rules {choice!r} (expected one of {', '.join((*AGENTS, DETECT))})")
    stored = "" if choice == DETECT else choice
    AgentSession.objects.filter(pk=session.pk).update(agent_rules=stored)
    session.agent_rules = stored
