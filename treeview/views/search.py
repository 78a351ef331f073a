"""Search across all sessions: the results page, and opening a hit on the branch that holds it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from treeview import explorer
from treeview.access import session_scope, visible_sessions
from treeview.interactive import QueryTimeout, run_interactive
from treeview.models import AgentSession
from treeview.search import (
    MAX_HITS,
    EntryHits,
    Hit,
    SearchQuery,
    branch_target,
    matching_sessions,
    parse_query,
    snippet,
)
from treeview.views.common import SessionLinks, copy_note, htmx_target, session_links, shared_ids

SEARCH_TEMPLATE = "treeview/search.html"
HITS_PER_PAGE = 50
SESSIONS_SHOWN = 20


class SearchForm(forms.Form):
    """``?q=…&page=N``: the query and the page of entry hits."""

    q = forms.CharField(required=False, max_length=500)
    page = forms.IntegerField(min_value=1, required=False)


class OpenHitForm(forms.Form):
    """``?session=<pk>&entry=<entry id>``: a hit of the results page."""

    session = forms.IntegerField(min_value=1)
    entry = forms.CharField(max_length=64, strip=False)


@dataclass(frozen=True)
class HitItem:
    hit: Hit
    url: str
    snippet: str

    @property
    def kind(self) -> str:
        """What the entry is: the message's role, else the entry type in words."""
        entry = self.hit.entry
        return entry.role if entry.type == "message" and entry.role else entry.type.replace("_", " ")


@dataclass
class HitGroup:
    """The hits of one session on this page (a session's hits are next to each other in the order)."""

    session: AgentSession
    links: SessionLinks
    items: list[HitItem] = field(default_factory=list)
    copy: str = ""  # which copy, when the user sees this session id more than once


@dataclass(frozen=True)
class SessionMatch:
    session: AgentSession
    links: SessionLinks
    copy: str = ""


def _open_url(hit: Hit) -> str:
    query = urlencode({"session": hit.session.pk, "entry": hit.entry.entry_id})
    return f"{reverse('treeview:search_open')}?{query}"


def _page_url(query: SearchQuery, number: int) -> str:
    return f"{reverse('treeview:search')}?{urlencode({'q': query.text, 'page': number})}"


def _groups(hits: list[Hit], query: SearchQuery, shared: set[str]) -> list[HitGroup]:
    groups: list[HitGroup] = []
    for hit in hits:
        if not groups or groups[-1].session.pk != hit.session.pk:
            session = hit.session
            is_copy = session.session_id in shared
            groups.append(
                HitGroup(
                    session,
                    session_links(session, pick_copy=is_copy),
                    copy=copy_note(session) if is_copy else "",
                )
            )
        # The full text first (the row text stops at 200 characters): the snippet shows its first match.
        texts = [hit.entry.body_text, hit.entry.text]
        groups[-1].items.append(HitItem(hit, _open_url(hit), snippet(texts, query.words)))
    return groups


def _duration(ms: int) -> str:
    """``5 s``, ``0.2 s``, ``50 ms`` (a non-breaking space before the unit)."""
    return f"{ms / 1000:g}\u00a0s" if ms >= 100 else f"{ms}\u00a0ms"


def _results(user: Any, query: SearchQuery, page_number: int) -> dict[str, Any]:
    """What the results page shows (every query run here: the caller runs this in a worker thread)."""
    scope = session_scope(user)  # only the sessions this user may see
    hits_found = EntryHits(query, sessions=scope, limit=MAX_HITS)
    page = Paginator(hits_found, HITS_PER_PAGE).get_page(page_number)
    hits: list[Hit] = list(page.object_list)
    sessions = list(matching_sessions(query, scope)[: SESSIONS_SHOWN + 1]) if page.number == 1 else []
    shared = shared_ids([hit.session.session_id for hit in hits] + [s.session_id for s in sessions], user)
    return {
        "page_obj": page,
        "more_hits": hits_found.more,
        "groups": _groups(hits, query, shared),
        "session_matches": [
            SessionMatch(
                match,
                session_links(match, pick_copy=match.session_id in shared),
                copy=copy_note(match) if match.session_id in shared else "",
            )
            for match in sessions[:SESSIONS_SHOWN]
        ],
        "more_sessions": len(sessions) > SESSIONS_SHOWN,
        "previous_url": _page_url(query, page.previous_page_number()) if page.has_previous() else None,
        "next_url": _page_url(query, page.next_page_number()) if page.has_next() else None,
    }


@require_safe
@vary_on_headers("HX-Request")
async def search(request: HttpRequest) -> TemplateResponse:
    """Entries (title, directory and id of sessions too) matching every word of ``q``, grouped by session.

    Async, so that a client who leaves stops the search: the queries run in a worker thread under the
    interactive time limit (treeview/interactive.py) and are cancelled with the request. A search stopped by
    the limit gets a page that says so (503; 200 to htmx, which swaps only successful answers).
    """
    form = SearchForm(request.GET)
    if not form.is_valid():
        if "q" in form.errors:
            raise BadRequest("malformed query: too long, or a NUL character")
        form = SearchForm({"q": request.GET.get("q", "")})
        form.is_valid()
    query = parse_query(form.cleaned_data["q"] or "")
    context: dict[str, Any] = {"form": form, "query": query, "max_hits": f"{MAX_HITS:,}"}
    status = 200
    page = form.cleaned_data.get("page") or 1
    if query:
        try:
            context |= await run_interactive(_results, request.user, query, page)
        except QueryTimeout as stopped:
            context["timed_out_after"] = _duration(stopped.timeout_ms)
            status = 200 if htmx_target(request) is not None else 503
    template = SEARCH_TEMPLATE if htmx_target(request) is None else SEARCH_TEMPLATE + "#session-list"
    return TemplateResponse(request, template, context, status=status)


@require_safe
def search_open(request: HttpRequest) -> HttpResponseRedirect:
    """The session page on the branch that holds the entry, with the entry selected.

    Resolved when the hit is opened (from the cached tree, so the session page reuses it): the results page
    never builds a session's tree, and the link stays right if the session moved on since the search.
    """
    form = OpenHitForm(request.GET)
    if not form.is_valid():
        raise Http404("malformed hit")
    session = visible_sessions(request.user).filter(pk=form.cleaned_data["session"]).first()
    if session is None:
        raise Http404("no imported session has this id")
    tree = explorer.explorer_tree(session, session.leaf_id)
    target = branch_target(tree.flat, form.cleaned_data["entry"])
    if target is None:
        raise Http404("no entry with this id in the session")
    links = session_links(
        session, pick_copy=session.session_id in shared_ids([session.session_id], request.user)
    )
    if links.detail is None:
        raise Http404("this session's id cannot be put in a URL")
    params = {"leafId": target.leaf_id, "targetId": target.target_id}
    query = urlencode({key: value for key, value in params.items() if value is not None})
    separator = "&" if "?" in links.detail else "?"
    return HttpResponseRedirect(f"{links.detail}{separator}{query}")
