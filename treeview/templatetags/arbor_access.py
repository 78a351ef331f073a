"""``{% session_visibility session as visibility %}``: who sees a session, and the form to change it."""

from __future__ import annotations

from typing import Any

from django import template

from treeview.views.accounts import visibility_state

register = template.Library()


@register.simple_tag(takes_context=True)
def session_visibility(context: dict[str, Any], session: Any) -> Any:
    request = context.get("request")
    if request is None or session is None:
        return None
    return visibility_state(request, session)
