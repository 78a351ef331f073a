"""``/branch`` in the browser: the user-message picker and the form that branches a new session from one."""

from __future__ import annotations

from typing import Any, NamedTuple
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from treeview.access import FORK, visible_sessions
from treeview.models import AgentSession
from treeview.services import fork as fork_service
from treeview.services.visibility import inherit_access
from treeview.views.common import (
    copy_param,
    htmx_target,
    refusal,
    reverse_or_none,
    session_or_404,
    shared_ids,
)

__all__ = ["branch_picker", "continue_text", "fork_links", "fork_session", "picker_url"]

PICKER_PAGE = "treeview/branch_picker.html"
CHOICES_FRAGMENT = "treeview/_branch.html#branch-choices"
#: User messages per picker page; the last page (the newest messages) comes first.
CHOICES_PER_PAGE = 200


class ForkForm(forms.Form):
    """Branch at this user message; ``page`` is the picker page to show again if an extension cancels."""

    entry_id = forms.CharField(max_length=64)
    page = forms.IntegerField(min_value=1, required=False)


class PickerPageForm(forms.Form):
    page = forms.IntegerField(min_value=1, required=False)


class ForkLink(NamedTuple):
    """A session branched from this one, for the page header (``url`` is None when it cannot be linked)."""

    title: str
    url: str | None


def _copy_query(copy: int | None) -> str:
    return f"?copy={copy}" if copy is not None else ""


def picker_url(session: AgentSession, copy: int | None, page: int | None = None) -> str | None:
    """The picker's address (a fragment for htmx, a page without JavaScript)."""
    url = reverse_or_none("treeview:branch_picker", _copy_query(copy), session_id=session.session_id)
    if url is None or page is None:
        return url
    return url + ("&" if "?" in url else "?") + urlencode({"page": page})


def _picker_context(
    request: HttpRequest, session: AgentSession, page_number: int | None, notice: str = ""
) -> dict[str, Any]:
    copy = copy_param(request)
    query = _copy_query(copy)
    paginator = Paginator(fork_service.user_messages(session), CHOICES_PER_PAGE)
    page = paginator.get_page(page_number or paginator.num_pages)
    return {
        "session": session,
        "session_url": reverse_or_none("treeview:session_detail", query, session_id=session.session_id),
        "branch_picker_url": picker_url(session, copy),
        "branch_inline": True,
        "branch_page": page,
        "branch_notice": notice,
        "fork_url": reverse_or_none("treeview:fork_session", query, session_id=session.session_id),
        "branch_earlier_url": picker_url(session, copy, page.previous_page_number())
        if page.has_previous()
        else None,
        "branch_later_url": picker_url(session, copy, page.next_page_number()) if page.has_next() else None,
    }


def _render_picker(
    request: HttpRequest, session: AgentSession, page_number: int | None, notice: str = "", status: int = 200
) -> TemplateResponse:
    context = _picker_context(request, session, page_number, notice)
    template = CHOICES_FRAGMENT if htmx_target(request) is not None else PICKER_PAGE
    return TemplateResponse(request, template, context, status=status)


@require_safe
@vary_on_headers("HX-Request")
def branch_picker(request: HttpRequest, session_id: str) -> HttpResponse:
    """Every user message with text, in file order, the last one selected (the ``/branch`` picker, §14)."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, FORK)) is not None:
        return refused
    form = PickerPageForm(request.GET)
    if not form.is_valid():
        raise BadRequest("malformed page")
    return _render_picker(request, session, form.cleaned_data["page"])


@require_POST
@vary_on_headers("HX-Request")
def fork_session(request: HttpRequest, session_id: str) -> HttpResponse:
    """Branch a new session at a user message, then open it with the message's text to continue from."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, FORK)) is not None:
        return refused
    form = ForkForm(request.POST)
    if not form.is_valid():
        raise BadRequest("malformed branch form")
    entry_id = form.cleaned_data["entry_id"]
    try:
        result = fork_service.fork_session(session, entry_id)
    except fork_service.UnknownEntry:
        raise Http404("no entry with this id in the session") from None
    except fork_service.InvalidBranchEntry as error:
        return HttpResponse(
            f"{error}: {entry_id} is not a user message; only a user message can start a branch.",
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    except fork_service.ForkFailed as error:
        return HttpResponse(f"Not branched: {error}", status=409, content_type="text/plain; charset=utf-8")
    if result.cancelled or result.new_session is None:
        notice = "An extension cancelled the branch; nothing was written."
        return _render_picker(request, session, form.cleaned_data["page"], notice, status=409)
    new = result.new_session
    # The fork is as private as its original (and the one who forked it owns it).
    inherit_access(new, session, request.user)
    url = reverse_or_none("treeview:session_detail", "", session_id=new.session_id)
    if url is None:
        raise Http404("the new session cannot be shown")
    url += "?" + urlencode({"continueFrom": entry_id})
    if htmx_target(request) is not None:
        return HttpResponseClientRedirect(url)
    response = HttpResponseRedirect(url)
    response.status_code = 303  # See Other: the new session is shown with a GET
    return response


# -- for the session page ------------------------------------------------------------------------------------


def continue_text(parent: AgentSession | None, entry_id: str | None) -> str:
    """The text of the user message ``entry_id`` of the session branched from, for the "continue" box."""
    if parent is None or not entry_id:
        return ""
    return fork_service.user_message_text(parent, entry_id) or ""


def fork_links(session: AgentSession, user: Any) -> list[ForkLink]:
    """The sessions branched or forked from ``session`` that ``user`` may see, oldest first."""
    forks = list(visible_sessions(user, session.forks()).only("pk", "session_id", "title"))
    shared = shared_ids((fork.session_id for fork in forks), user)
    links = []
    for fork in forks:
        query = _copy_query(fork.pk) if fork.session_id in shared else ""
        links.append(
            ForkLink(
                fork.display_title,
                reverse_or_none("treeview:session_detail", query, session_id=fork.session_id),
            )
        )
    return links
