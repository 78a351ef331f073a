"""The API tokens page: one's personal tokens (made, listed, revoked) and the default visibility of what one
pushes or uploads."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from treeview.access import local_user
from treeview.ingest import services
from treeview.ingest.models import ApiToken
from treeview.ingest.tokens import create_token, revoke_token
from treeview.models import AgentSession, Team

TEMPLATE = "ingest/tokens.html"
MAX_DAYS = 3650


class TokenForm(forms.Form):
    name = forms.CharField(
        max_length=100, required=False, help_text="What it is for: the laptop's name, say."
    )
    expires = forms.IntegerField(
        min_value=1, max_value=MAX_DAYS, required=False, help_text="Days until it expires (empty: never)."
    )


class DefaultsForm(forms.Form):
    visibility = forms.ChoiceField(choices=AgentSession.Visibility.choices)
    team = forms.ModelChoiceField(queryset=Team.objects.none(), required=False)

    def __init__(self, user: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only a team of one's own: what one pushes is never shown to strangers by one's default.
        self.fields["team"].queryset = Team.objects.filter(memberships__user=user).order_by("name")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("visibility") == AgentSession.Visibility.TEAMS and not data.get("team"):
            self.add_error("team", "Choose the team that sees what you push.")
        return data


def _user(request: HttpRequest) -> Any:
    user = request.user
    # Single-user mode acts as "local" (a lazy object): tokens belong to that real row.
    return user if getattr(user, "pk", None) is not None else local_user()


def _page(
    request: HttpRequest,
    *,
    form: TokenForm | None = None,
    defaults: DefaultsForm | None = None,
    new_token: str = "",
    status: int = 200,
) -> TemplateResponse:
    user = _user(request)
    visibility, team = services.default_visibility(user)
    context = {
        "tokens": ApiToken.objects.filter(user=user),
        "form": form or TokenForm(),
        "defaults_form": defaults
        or DefaultsForm(user, initial={"visibility": visibility, "team": team.pk if team else None}),
        "new_token": new_token,
        "server_url": request.build_absolute_uri("/").rstrip("/"),
    }
    return TemplateResponse(request, TEMPLATE, context, status=status)


@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _page(request)
    form = TokenForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    _, token = create_token(_user(request), form.cleaned_data["name"], form.cleaned_data["expires"])
    # Shown once, in this answer only (never stored, never in a URL).
    response = _page(request, new_token=token)
    response["Cache-Control"] = "no-store"
    return response


@require_POST
def revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = ApiToken.objects.filter(pk=pk, user=_user(request)).first()
    if token is None:
        raise Http404("no such token")
    revoke_token(token)
    return HttpResponseRedirect(reverse("tokens"))


@require_POST
def defaults(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    form = DefaultsForm(user, request.POST)
    if not form.is_valid():
        return _page(request, defaults=form, status=400)
    services.set_defaults(user, form.cleaned_data["visibility"], form.cleaned_data["team"])
    return HttpResponseRedirect(reverse("tokens"))
