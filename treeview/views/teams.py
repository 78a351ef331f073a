"""The Teams page: my teams and their members (whom I can @mention), and for a team's admins the exact strings
every share link of its members masks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django import forms
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Prefetch
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from treeview.access import administers, may_invite, visible_teams
from treeview.models import Membership, Team, TeamSecret
from treeview.services import teams as team_service

TEMPLATE = "treeview/teams.html"


class SecretForm(forms.Form):
    value = forms.CharField(
        max_length=team_service.MAX_SECRET_CHARS,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Exact text, case-sensitive: a hostname, a customer's name, an internal URL.",
    )
    label = forms.CharField(max_length=100, required=False, help_text="What it is (shown instead of it).")


@dataclass(frozen=True)
class SecretRow:
    secret: TeamSecret
    shown: str


@dataclass
class TeamCard:
    team: Team
    role: str  # "admin", "member", or "" (a superuser who is not in the team)
    members: list[Membership]
    sessions: int
    manage: bool
    secrets: list[SecretRow]
    form: SecretForm | None


def _card(request: HttpRequest, team: Any, form: SecretForm | None = None) -> TeamCard:
    members = list(team.memberships.all())
    mine = next((m for m in members if m.user_id == request.user.pk), None)
    manage = administers(request.user, team)
    secrets = [SecretRow(s, team_service.masked(s.value)) for s in team.secrets.all()] if manage else []
    return TeamCard(
        team=team,
        role=mine.role if mine else "",
        members=members,
        sessions=team.session_count,
        manage=manage,
        secrets=secrets,
        form=(form or SecretForm()) if manage else None,
    )


def _teams(request: HttpRequest) -> Any:
    members = Membership.objects.select_related("user").order_by("user__username")
    return (
        visible_teams(request.user)
        .annotate(session_count=Count("sessions", distinct=True))
        .prefetch_related(
            Prefetch("memberships", queryset=members),
            Prefetch("secrets", queryset=TeamSecret.objects.order_by("label", "pk")),
        )
    )


def _team_or_404(request: HttpRequest, team_pk: int) -> Any:
    """A team the user sees; one they do not see is a 404, one they see but do not administer a 403."""
    team = _teams(request).filter(pk=team_pk).first()
    if team is None:
        raise Http404("no such team")
    if not administers(request.user, team):
        raise PermissionDenied("only the team's admins change its secret strings")
    return team


def _render(request: HttpRequest, cards: list[TeamCard], status: int = 200) -> TemplateResponse:
    return TemplateResponse(
        request, TEMPLATE, {"cards": cards, "may_invite_now": may_invite(request.user)}, status=status
    )


@require_safe
@vary_on_headers("HX-Request")
def team_list(request: HttpRequest) -> TemplateResponse:
    return _render(request, [_card(request, team) for team in _teams(request)])


def _after_change(request: HttpRequest, team: Any, form: SecretForm | None = None, status: int = 200) -> Any:
    if request.htmx:  # type: ignore[attr-defined]
        # htmx swaps only 2xx answers: the card with the form's errors comes back as a 200.
        card = _card(request, _teams(request).get(pk=team.pk), form)
        return TemplateResponse(request, f"{TEMPLATE}#team-card", {"card": card})
    if form is not None and status != 200:
        cards = [_card(request, t, form if t.pk == team.pk else None) for t in _teams(request)]
        return _render(request, cards, status=status)
    return HttpResponseRedirect(reverse("treeview:team_list") + f"#team-{team.pk}")


@require_POST
@vary_on_headers("HX-Request")
def add_secret(request: HttpRequest, team_pk: int) -> Any:
    team = _team_or_404(request, team_pk)
    form = SecretForm(request.POST)
    if form.is_valid():
        try:
            data = form.cleaned_data
            team_service.add_secret(team, data["value"], data["label"], request.user)
        except team_service.BadSecret as error:
            form.add_error("value", str(error))
    if form.errors:
        return _after_change(request, team, form, status=400)
    return _after_change(request, team)


@require_POST
@vary_on_headers("HX-Request")
def remove_secret(request: HttpRequest, team_pk: int, secret_pk: int) -> Any:
    team = _team_or_404(request, team_pk)
    if not team_service.remove_secret(team, secret_pk):
        raise Http404("no such secret string")
    return _after_change(request, team)
