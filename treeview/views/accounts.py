"""Accounts: invites (a staff user creates a link, a new person picks a username and password), and a
session's visibility (who may see it). Login, logout and password change are django.contrib.auth's views."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.contrib.auth import login
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.forms import UserCreationForm
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import resolve_url
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from treeview.access import can_manage, invite_teams, may_invite, may_invite_into
from treeview.models import AgentSession, Invite, Membership, Team
from treeview.services.visibility import set_visibility
from treeview.views.common import htmx_target, session_or_404

VISIBILITY_TEMPLATE = "treeview/_visibility.html"

# -- invites -----------------------------------------------------------------------------------------------


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_invite(
    created_by: Any, note: str = "", team: Team | None = None, role: str = Membership.Role.MEMBER
) -> tuple[Invite, str]:
    """A new invite and its token (shown once: only the token's hash is stored). With ``team``, the new
    account joins it with ``role``."""
    token = secrets.token_urlsafe(32)  # 256 bits
    invite = Invite.objects.create(
        token_hash=token_hash(token),
        note=note,
        created_by=created_by if created_by.pk else None,
        expires_at=timezone.now() + timedelta(days=settings.ARBOR_INVITE_DAYS),
        team=team,
        role=role,
    )
    return invite, token


def _usable_invite(token: str, *, lock: bool = False) -> Invite | None:
    """The unused, unexpired invite this token opens, else ``None`` (whatever the reason: no oracle)."""
    if not token or len(token) > 200:
        return None
    digest = token_hash(token)
    invites = Invite.objects.select_related("created_by", "team")
    invites = invites.select_for_update(of=("self",)) if lock else invites
    invite = invites.filter(token_hash=digest).first()
    if invite is None or not hmac.compare_digest(invite.token_hash, digest):
        return None
    if invite.used_at is not None or invite.expires_at <= timezone.now():
        return None
    if not settings.ARBOR_SINGLE_USER and not may_invite_into(invite.created_by, invite.team):
        return None  # its maker could not make it now (treeview/access.py)
    return invite


class InviteForm(forms.Form):
    note = forms.CharField(max_length=200, required=False, help_text="Who it is for (only staff see it).")
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(), required=False, help_text="The new account joins this team."
    )
    role = forms.ChoiceField(
        choices=Membership.Role.choices,
        initial=Membership.Role.MEMBER,
        required=False,
        help_text="In that team.",
    )

    def clean_role(self) -> str:
        return self.cleaned_data.get("role") or Membership.Role.MEMBER

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = invite_teams(user)
        self.staff = bool(user.is_staff or user.is_superuser)
        if not self.staff:
            # A team admin's invite always brings the person into one of their teams.
            self.fields["team"].required = True
            self.fields["team"].empty_label = None


@require_http_methods(["GET", "HEAD", "POST"])
def invite_create(request: HttpRequest) -> TemplateResponse:
    """Staff and team admins: create an invite link, shown once."""
    if not may_invite(request.user):
        raise PermissionDenied("only staff and team admins create invites")
    link = None
    invite = None
    form = InviteForm(request.POST if request.method == "POST" else None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        invite, token = create_invite(request.user, data["note"], data["team"], data["role"])
        link = request.build_absolute_uri(reverse("invite_accept", kwargs={"token": token}))
        form = InviteForm(user=request.user)
    response = TemplateResponse(
        request, "registration/invite_create.html", {"form": form, "link": link, "invite": invite}
    )
    response["Cache-Control"] = "no-store"
    return response


def _invite_response(request: HttpRequest, context: dict[str, Any], status: int = 200) -> TemplateResponse:
    response = TemplateResponse(request, "registration/invite_accept.html", context, status=status)
    # The token is in this page's URL: never send it anywhere, never keep the page.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    return response


@login_not_required
@require_http_methods(["GET", "HEAD", "POST"])
def invite_accept(request: HttpRequest, token: str) -> HttpResponse:
    """Open to anyone holding a valid link: choose a username and password, then be signed in."""
    if _usable_invite(token) is None:
        return _invite_response(request, {"invalid": True}, status=404)
    if request.method != "POST":
        return _invite_response(request, {"form": UserCreationForm()})
    form = UserCreationForm(request.POST)
    if not form.is_valid():
        return _invite_response(request, {"form": form}, status=400)
    with transaction.atomic():
        # Locked and checked again: two submissions of one link create one account.
        invite = _usable_invite(token, lock=True)
        if invite is None:
            return _invite_response(request, {"invalid": True}, status=404)
        user = form.save()
        if invite.team_id is not None:
            Membership.objects.create(team_id=invite.team_id, user=user, role=invite.role)
        invite.used_at = timezone.now()
        invite.used_by = user
        invite.save(update_fields=["used_at", "used_by"])
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return HttpResponseRedirect(resolve_url(settings.LOGIN_REDIRECT_URL))


# -- a session's visibility --------------------------------------------------------------------------------


def shareable_teams(user: Any, session: AgentSession) -> QuerySet[Team]:
    """The teams ``user`` may share ``session`` with: their own (superusers: all), plus those it has."""
    if user.is_superuser or settings.ARBOR_SINGLE_USER:
        return Team.objects.order_by("name")
    return Team.objects.filter(Q(memberships__user=user) | Q(sessions=session.pk)).distinct().order_by("name")


class VisibilityForm(forms.Form):
    visibility = forms.ChoiceField(choices=AgentSession.Visibility.choices, widget=forms.RadioSelect)
    teams = forms.ModelMultipleChoiceField(
        queryset=Team.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, teams: QuerySet[Team], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["teams"].queryset = teams

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("visibility") == AgentSession.Visibility.TEAMS and not data.get("teams"):
            self.add_error("teams", "Choose at least one team.")
        return data


@dataclass(frozen=True)
class VisibilityState:
    """What the session header shows: who sees the session, and the form when the user may change it."""

    session: AgentSession
    label: str
    team_names: list[str]
    form: VisibilityForm | None
    url: str


def visibility_state(request: HttpRequest, session: AgentSession, form: VisibilityForm | None = None) -> Any:
    if settings.ARBOR_SINGLE_USER:
        return None
    user = request.user
    manage = can_manage(user, session)
    if manage and form is None:
        initial = {"visibility": session.visibility, "teams": list(session.teams.all())}
        form = VisibilityForm(initial=initial, teams=shareable_teams(user, session))
    url = (
        reverse("treeview:set_visibility", kwargs={"session_id": session.session_id}) + f"?copy={session.pk}"
    )
    return VisibilityState(
        session=session,
        label=session.get_visibility_display(),
        team_names=list(session.teams.order_by("name").values_list("name", flat=True)),
        form=form if manage else None,
        url=url,
    )


@require_POST
@vary_on_headers("HX-Request")
def set_session_visibility(request: HttpRequest, session_id: str) -> HttpResponse:
    """Change who sees a session: its owner, a team admin of a team it is shared with, or a superuser."""
    session = session_or_404(request, session_id)
    if not can_manage(request.user, session):
        raise PermissionDenied("only the owner or a team admin changes who sees this session")
    form = VisibilityForm(request.POST, teams=shareable_teams(request.user, session))
    if not form.is_valid():
        state = visibility_state(request, session, form)
        context = {"session": session, "visibility": state}
        return TemplateResponse(request, VISIBILITY_TEMPLATE, context, status=400)
    set_visibility(session, form.cleaned_data["visibility"], form.cleaned_data["teams"])
    if htmx_target(request) is not None:
        context = {"session": session, "visibility": visibility_state(request, session)}
        return TemplateResponse(request, VISIBILITY_TEMPLATE, context)
    return HttpResponseRedirect(
        reverse("treeview:session_detail", kwargs={"session_id": session.session_id}) + f"?copy={session.pk}"
    )
