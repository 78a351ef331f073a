"""Whose rules a session is read by: the session page shows the decision and why, and its owner switches it
(oh-my-pi 18, pi 1.6, or detected from the file). Who may is decided in treeview/access.py."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from treeview import access
from treeview.forms import RulesForm
from treeview.models import AgentSession
from treeview.services.rules import set_rules
from treeview.views.common import htmx_target, session_or_404

__all__ = ["rules_context", "set_session_rules"]

RULES_TEMPLATE = "treeview/_rules.html"


def rules_context(
    request: HttpRequest, session: AgentSession, form: RulesForm | None = None
) -> dict[str, Any]:
    """What ``_rules.html`` draws: the session, and the form when the user may switch the rules."""
    allowed = access.can_choose_rules(request.user, session)
    url = reverse("treeview:set_rules", kwargs={"session_id": session.session_id}) + f"?copy={session.pk}"
    return {
        "session": session,
        "rules_form": (form or RulesForm.for_session(session)) if allowed else None,
        "rules_url": url,
    }


@require_POST
@vary_on_headers("HX-Request")
def set_session_rules(request: HttpRequest, session_id: str) -> HttpResponse:
    """Read the session by the chosen rules. With htmx the page reloads (its tree, conversation and Context
    tab all change); without, a redirect back to the session."""
    session = session_or_404(request, session_id)
    if not access.can_choose_rules(request.user, session):
        raise PermissionDenied("only the session's owner chooses whose rules it is read by")
    form = RulesForm(request.POST)
    if not form.is_valid():
        return TemplateResponse(request, RULES_TEMPLATE, rules_context(request, session, form), status=400)
    set_rules(session, form.cleaned_data["rules"])
    if htmx_target(request) is not None:
        response = TemplateResponse(request, RULES_TEMPLATE, rules_context(request, session))
        response["HX-Refresh"] = "true"
        return response
    return HttpResponseRedirect(
        reverse("treeview:session_detail", kwargs={"session_id": session.session_id}) + f"?copy={session.pk}"
    )
