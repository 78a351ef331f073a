"""``{% session_visibility session as visibility %}``: who sees a session, and the form to change it;
``{% session_people session as people %}``: who may write to it."""

from __future__ import annotations

from typing import Any

from django import template

from treeview.views.accounts import visibility_state
from treeview.views.rights import rights_state

register = template.Library()


@register.simple_tag(takes_context=True)
def session_visibility(context: dict[str, Any], session: Any) -> Any:
    request = context.get("request")
    if request is None or session is None:
        return None
    return visibility_state(request, session)


@register.simple_tag(takes_context=True)
def session_people(context: dict[str, Any], session: Any) -> Any:
    """``{% session_people session as people %}``: what the user may do, and the owner's grant form."""
    request = context.get("request")
    if request is None or session is None:
        return None
    return rights_state(request, session)
