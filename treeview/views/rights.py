"""People and rights: the owner of a session lets others write to it ("can write"), or takes it back.

Who may do what is decided in treeview/access.py; this is the form on the session page and its view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from treeview import access
from treeview.models import AgentSession, Membership, SessionGrant
from treeview.services import rights as rights_service
from treeview.views.common import htmx_target, session_or_404

__all__ = ["GrantForm", "RightsState", "rights_state", "session_rights"]

RIGHTS_TEMPLATE = "treeview/_rights.html"
#: Names offered in the form's list of suggestions (typing any username works).
MAX_SUGGESTIONS = 200


class GrantForm(forms.Form):
    """Grant "can write" to ``username``, or take it back from ``revoke`` (a user id)."""

    username = forms.CharField(max_length=150, required=False, strip=True)
    revoke = forms.IntegerField(min_value=1, required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if not data.get("username") and not data.get("revoke"):
            raise forms.ValidationError("Name someone to let write, or choose whose right to take back.")
        return data


@dataclass(frozen=True)
class Grantee:
    pk: int
    username: str
    sees_it: bool  # under the session's visibility now; a grant gives no sight of it


@dataclass(frozen=True)
class RightsState:
    """What the "People and rights" box shows: what the user may do, and for the owner the grants and form."""

    allowed: frozenset[str]
    viewer: frozenset[str]
    can_grant: bool
    grants: list[Grantee]
    suggestions: list[str]
    form: GrantForm | None
    url: str
    message: str = ""

    @property
    def viewer_words(self) -> str:
        """What every viewer may do, in words ("read, comment and review")."""
        extra = self.viewer - {access.VIEW}
        words = ["read"] + [_WORDS[action] for action in access.ACTIONS if action in extra]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

    @property
    def writes(self) -> bool:
        return access.NAVIGATE in self.allowed and access.LABEL in self.allowed


_WORDS = {
    access.COMMENT: "comment",
    access.REVIEW: "review",
    access.NAVIGATE: "move the leaf",
    access.LABEL: "label",
    access.FORK: "branch",
    access.SHARE_PUBLIC: "make public links",
}


def _suggestions(session: AgentSession, taken: set[int]) -> list[str]:
    """Usernames the owner probably means: the members of the session's teams and of the owner's teams."""
    teams = list(session.teams.values_list("pk", flat=True))
    if session.owner_id is not None:
        teams += list(Membership.objects.filter(user=session.owner_id).values_list("team_id", flat=True))
    users = (
        get_user_model()
        .objects.filter(is_active=True, memberships__team__in=teams)
        .exclude(pk__in=taken)
        .distinct()
        .order_by("username")
        .values_list("username", flat=True)[:MAX_SUGGESTIONS]
    )
    return list(users)


def rights_state(
    request: HttpRequest, session: AgentSession, form: GrantForm | None = None, message: str = ""
) -> RightsState | None:
    """``None`` in single-user mode (one user may do everything: nothing to show)."""
    if settings.ARBOR_SINGLE_USER:
        return None
    user = request.user
    granting = access.can_grant(user, session)
    grantees: list[Grantee] = []
    suggestions: list[str] = []
    if granting:
        grants = SessionGrant.objects.filter(session=session).select_related("user")
        for grant in grants.order_by("user__username"):
            sees_it = access.can_view(grant.user, session)
            grantees.append(Grantee(grant.user.pk, grant.user.get_username(), sees_it))
        taken = {grantee.pk for grantee in grantees} | ({session.owner_id} if session.owner_id else set())
        suggestions = _suggestions(session, taken)
    base = reverse("treeview:session_rights", kwargs={"session_id": session.session_id})
    url = f"{base}?copy={session.pk}"
    return RightsState(
        allowed=access.rights(user, session),
        viewer=access.viewer_rights(),
        can_grant=granting,
        grants=grantees,
        suggestions=suggestions,
        form=(form or GrantForm()) if granting else None,
        url=url,
        message=message,
    )


def _answer(
    request: HttpRequest, session: AgentSession, form: GrantForm | None, message: str, status: int
) -> Any:
    if htmx_target(request) is None and status == 200:
        url = reverse("treeview:session_detail", kwargs={"session_id": session.session_id})
        return HttpResponseRedirect(f"{url}?copy={session.pk}")
    context = {"session": session, "people": rights_state(request, session, form, message)}
    # htmx swaps only 2xx answers: a refused form comes back as 200 with its reason (a plain post gets 400).
    if htmx_target(request) is not None:
        status = 200
    return TemplateResponse(request, RIGHTS_TEMPLATE, context, status=status)


@require_POST
@vary_on_headers("HX-Request")
def session_rights(request: HttpRequest, session_id: str) -> HttpResponse:
    """Grant "can write" to a user by name, or take it back (the owner and superusers)."""
    session = session_or_404(request, session_id)
    if not access.can_grant(request.user, session):
        return HttpResponse(
            "Only the session's owner decides who may write to it.", status=403, content_type="text/plain"
        )
    form = GrantForm(request.POST)
    if not form.is_valid():
        return _answer(request, session, form, "", 400)
    data = form.cleaned_data
    if data.get("revoke"):
        rights_service.revoke_write(session, data["revoke"])
        return _answer(request, session, None, "Taken back.", 200)
    user = get_user_model().objects.filter(username=data["username"]).first()
    if user is None:
        form.add_error("username", f"No account is named {data['username']!r}.")
        return _answer(request, session, form, "", 400)
    try:
        rights_service.grant_write(session, user, request.user)
    except rights_service.NotGrantable as error:
        form.add_error("username", str(error))
        return _answer(request, session, form, "", 400)
    return _answer(request, session, None, f"{user.get_username()} can write now.", 200)
