"""The session page's views: the page, the rows of the tree, labels, the Context tab and one entry block."""

from __future__ import annotations

from dataclasses import replace
from typing import cast

import orjson
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from treeview import access, explorer
from treeview.forms import (
    LabelForm,
    TreeRowsForm,
)
from treeview.render import full_block_text, render_full_text
from treeview.services import append
from treeview.services import comments as comment_service
from treeview.services import review as review_service
from treeview.session.selector import FilterMode
from treeview.views.common import (
    copy_param,
    htmx_target,
    refusal,
    session_or_404,
)
from treeview.views.detail.context import _detail_context, _render_detail
from treeview.views.detail.context_pane import CONTEXT_TEMPLATE, _context_tab_context
from treeview.views.detail.state import DETAIL_TEMPLATE, PageState, _page_state, _row_items


@require_safe
@vary_on_headers("HX-Request")
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    """The tree of a session and the conversation of the selected entry (deep links as pi's HTML export)."""
    session = session_or_404(request, session_id)
    state, tree = _page_state(request, session)
    # ``tab=context`` (a link to the tab, or any selection made while it is open) renders the tab open.
    return _render_detail(request, state, tree)


@require_safe
def tree_rows(request: HttpRequest, session_id: str) -> HttpResponse:
    """A slice of the tree's visible rows (the page's filter and search): ``count`` rows from ``start``, or
    around ``targetId`` without ``start``; the same fragment with and without htmx (explorer.js asks for it
    as the tree pane scrolls, and when the session changes; treeview/gate.py lets a burst in a few at a time).
    """
    session = session_or_404(request, session_id)
    state, tree = _page_state(request, session)
    form = TreeRowsForm(request.GET)
    if not form.is_valid():
        raise BadRequest("malformed count")
    count = form.cleaned_data["count"] or explorer.TREE_WINDOW
    counts = comment_service.comment_counts(session)
    commented = frozenset(counts) if state.mode == explorer.COMMENTED else None
    window = explorer.tree_window(
        tree,
        state.mode,
        state.query,
        state.target_id,
        state.start,
        commented,
        count=count,
        agent=session.rules.agent,
    )
    statuses = review_service.statuses_for_session(session)
    context = {"window": window, "rows": _row_items(state, window, counts, statuses)}
    return TemplateResponse(request, DETAIL_TEMPLATE + "#tree-slice", context)


@require_POST
@vary_on_headers("HX-Request")
def set_label(request: HttpRequest, session_id: str) -> HttpResponse:
    """Label the entry (an empty label clears it), then show the tree again (no JS: redirect back)."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, access.LABEL)) is not None:
        return refused
    form = LabelForm(request.POST)
    if not form.is_valid():
        raise BadRequest("malformed label form")
    data = form.cleaned_data
    try:
        append.set_label(session, data["target_id"], data["label"])
    except append.UnknownEntry:
        raise Http404("no entry with this id in the session") from None
    except append.WriteBackRefused as error:
        return HttpResponse(f"Label not saved: {error}", status=409, content_type="text/plain")
    session.refresh_from_db()
    state = PageState(
        session=session,
        mode=cast(FilterMode, data["filter"] or "default"),
        query=data["q"],
        leaf_id=data["leafId"] or session.leaf_id,
        leaf_param=data["leafId"] or "",
        target_id=data["target_id"],
        start=None,
        end=None,
        copy=copy_param(request),
        tab="context" if request.POST.get("tab") == "context" else "",
    )
    if htmx_target(request) is None:
        return HttpResponseRedirect(state.url())
    tree = explorer.explorer_tree(session, state.leaf_id)
    if state.leaf_id is not None and state.leaf_id not in tree.flat.by_id:
        raise Http404("no entry with this id in the session")
    return TemplateResponse(request, DETAIL_TEMPLATE + "#tree", _detail_context(request, state, tree))


@require_safe
@vary_on_headers("HX-Request")
def session_context(request: HttpRequest, session_id: str) -> HttpResponse:
    """The Context tab: exactly what the LLM would receive at ``targetId`` (default: the leaf); htmx gets
    the fragment, a plain request the session page with the tab open."""
    session = session_or_404(request, session_id)
    state, tree = _page_state(request, session)
    state = replace(state, tab="context")
    if htmx_target(request) is None:
        return _render_detail(request, state, tree)
    tab = _context_tab_context(state, tree)
    fragment = render_to_string(
        CONTEXT_TEMPLATE + "#context", {"session": session, "state": state, **tab}, request
    )
    if state.end is not None:
        return HttpResponse(fragment)  # paging through the context: only the tab changes
    # Opening the tab: the tab list and the tree (its links now keep the tab open) out of band.
    context = {**_detail_context(request, state, tree), **tab, "oob": True}
    tabs = render_to_string(DETAIL_TEMPLATE + "#pane-tabs", context, request)
    return HttpResponse(fragment + tabs + render_to_string(DETAIL_TEMPLATE + "#tree", context, request))


@require_safe
def entry_block(request: HttpRequest, session_id: str, entry_id: str, index: int) -> HttpResponse:
    """The whole text of one block of an entry (a long output shown cut on the page), loaded on demand."""
    session = session_or_404(request, session_id)
    row = session.entries.filter(entry_id=entry_id).exclude(type="session").order_by("-seq").first()
    if row is None:
        raise Http404("no entry with this id in the session")
    try:
        entry = orjson.loads(row.raw)
    except orjson.JSONDecodeError:
        raise Http404("this entry cannot be read") from None
    text = full_block_text(entry, index) if isinstance(entry, dict) else None
    if text is None:
        raise Http404("no such block")
    return HttpResponse(render_full_text(text))
