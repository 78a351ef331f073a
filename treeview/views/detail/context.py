"""The session page's template context (tree window, fork, navigation, conversation) and its rendering."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse

from treeview import access, conversation, explorer
from treeview.access import can_view
from treeview.llm import summarizer_status
from treeview.models import AgentSession
from treeview.services import comments as comment_service
from treeview.services import fork as fork_service
from treeview.services import review as review_service
from treeview.views import fork, subagents
from treeview.views.comments import comment_panel, place_query
from treeview.views.common import (
    htmx_target,
    reverse_or_none,
    session_links,
)
from treeview.views.detail.context_pane import CONTEXT_TEMPLATE, _context_tab_context, _context_url
from treeview.views.detail.state import DETAIL_TEMPLATE, EntryItem, PageState, _row_items, _rows_url
from treeview.views.rules import rules_context


def _detail_context(
    request: HttpRequest,
    state: PageState,
    tree: explorer.ExplorerTree,
    with_rows: bool = True,
    count: int = explorer.TREE_WINDOW,
) -> dict[str, Any]:
    """The page's context; ``with_rows=False`` (a selection in the tree the browser already has): no window
    of rows, only what describes the selected entry; ``count``: the rows around the selection."""
    session = state.session
    window: explorer.TreeWindow | None = None
    if with_rows:
        # Comment counts of the whole session in one query: the rows' badges and the "commented" filter.
        counts = comment_service.comment_counts(session)
        commented = frozenset(counts) if state.mode == explorer.COMMENTED else None
        window = explorer.tree_window(
            tree,
            state.mode,
            state.query,
            state.target_id,
            state.start,
            commented,
            count,
            agent=session.rules.agent,
        )
        selected = window.selected_id if state.target_id is None else state.target_id
    else:
        selected = state.target_id
    pick_copy = state.copy is not None
    parent = session.parent()
    if parent is not None and not can_view(request.user, parent):
        parent = None
    node = tree.flat.by_id.get(selected)
    # The branch the conversation shows (through the selection, down to its leaf): the header describes it.
    branch = conversation.branch_on_screen(tree, selected, session.rules.agent)
    allowed = access.rights(request.user, session)
    review = review_service.page_review(
        session, tree.flat, branch.leaf_id if branch is not None else state.leaf_id
    )
    return {
        "session": session,
        # What this user may do here (treeview/access.py): the page offers only those controls.
        "rights": allowed,
        "refusals": access.REFUSALS,
        "state": state,
        **(_window_context(state, window, counts, review.statuses) if window is not None else {}),
        "page_url": state.url(),
        # The entry asked for (the conversation and the label form).
        "selected_id": selected,
        "filter_modes": explorer.VIEW_MODES,
        "links": session_links(session, pick_copy=pick_copy),
        "branch_download": (
            reverse_or_none(
                "treeview:download_branch",
                f"?copy={session.pk}" if pick_copy else "",
                session_id=session.session_id,
                entry_id=selected,
            )
            if selected
            else None
        ),
        # A subagent transcript: the sessions above it, each at the task call that spawned the next.
        "breadcrumb": (
            subagents.breadcrumb(session, request.user)
            if session.subagent_of_id and htmx_target(request) is None
            else []
        ),
        "viewer": request.user,
        # Every transcript it spawned (advisors and /tan clones have no task call to open them from).
        "spawned": subagents.direct_links(session, request.user) if htmx_target(request) is None else [],
        "parent": parent,
        "parent_links": session_links(parent, pick_copy=False) if parent is not None else None,
        # /branch: the sessions branched from this one, the picker, and the text to continue from.
        **(
            _fork_context(request, state, parent, access.FORK in allowed)
            if htmx_target(request) is None
            else {}
        ),
        "label_value": (node.node.label or "") if node is not None else "",
        # Whose rules the session is read by, and the owner's form to switch them.
        **rules_context(request, session),
        "branch": branch,
        # Totals of the branch on screen, from the cached tree (no query).
        "branch_totals": branch.totals if branch is not None else None,
        "oob": False,
        "context_tab_url": state.url(tab="context", end=None),
        "context_fragment_url": _context_url(state),
        "conversation_tab_url": state.url(tab=None, end=None),
        "navigation": _navigation_context(state),
        # Review statuses (one query): the tree's badges, and the control for the branch drawn.
        "review": review,
        # The selected entry's comment threads: a callable, so only a page that shows the entry queries them.
        "comment_panel": (
            partial(
                comment_panel,
                request,
                session,
                selected,
                place_query(
                    {"copy": state.copy, "filter": state.mode, "q": state.query, "leafId": state.leaf_param}
                ),
            )
            if selected
            else None
        ),
    }


def _window_context(
    state: PageState,
    window: explorer.TreeWindow,
    counts: dict[str, comment_service.EntryCounts],
    statuses: Mapping[str, str] | None,
) -> dict[str, Any]:
    """The tree pane's rows: the window drawn, its rows, and the addresses that load more."""
    return {
        "window": window,
        "rows": _row_items(state, window, counts, statuses),
        "rows_url": _rows_url(state),
        "earlier_url": state.url(start=window.earlier_start) if window.earlier else None,
        "later_url": state.url(start=window.end) if window.later else None,
        # The row the tree selects for the entry asked for.
        "tree_selected_id": window.selected_id,
    }


def _fork_context(
    request: HttpRequest, state: PageState, parent: AgentSession | None, may_fork: bool
) -> dict[str, Any]:
    """The header's forks, the branch picker's address (for who may branch) and the "continue from here" text
    (full pages)."""
    return {
        "forks": fork.fork_links(state.session, request.user),
        "branch_picker_url": fork.picker_url(state.session, state.copy) if may_fork else None,
        "continue_text": fork.continue_text(parent, request.GET.get("continueFrom")),
        # A fork: where its file is and how to go on with it in the agent.
        # (a subagent's transcript is not resumed: its session is, and the breadcrumb leads there)
        "resume": (
            fork_service.resume_hint(state.session)
            if state.session.parent_session and state.session.subagent_kind in ("", "clone")
            else None
        ),
        "write_back": settings.ARBOR_WRITE_BACK,
    }


def _navigation_context(state: PageState) -> dict[str, Any]:
    """What the navigator needs: its websocket, whether summaries can run (and why not), double Escape."""
    query = f"?copy={state.copy}" if state.copy is not None else ""
    return {
        "ws_path": f"/ws/s/{quote(state.session.session_id, safe='')}/{query}",
        "summary": summarizer_status(),
        "double_escape": settings.ARBOR_DOUBLE_ESCAPE_ACTION,
    }


def _conversation_context(context: dict[str, Any], tree: explorer.ExplorerTree) -> dict[str, Any]:
    state: PageState = context["state"]
    page = conversation.conversation_page(state.session, tree, context["selected_id"], state.end)
    spawned = subagents.task_links(state.session, [e.entry_id for e in page.entries], context["viewer"])
    items = []
    for entry in page.entries:
        siblings = entry.siblings
        items.append(
            EntryItem(
                entry,
                state.url(targetId=entry.entry_id, tab=None),
                state.url(targetId=siblings.previous_id) if siblings and siblings.previous_id else None,
                state.url(targetId=siblings.next_id) if siblings and siblings.next_id else None,
                tuple(spawned.get(entry.entry_id, ())),
            )
        )
    return {
        **context,
        "conversation": page,
        "entries": items,
        "conversation_earlier_url": state.url(end=page.earlier_end) if page.earlier else None,
        "conversation_later_url": state.url(end=page.later_end) if page.later else None,
    }


def _render_detail(request: HttpRequest, state: PageState, tree: explorer.ExplorerTree) -> HttpResponse:
    target = htmx_target(request)
    if target == "selection" and state.target_id is not None and state.start is None:
        # A row selected in the tree the browser already holds (explorer.js: a click, or the keys' preview):
        # only what describes the entry, out of band (no rows: the tree stays, and so does its scroll).
        context = _detail_context(request, state, tree, with_rows=False)
        if state.tab == "context":
            context.update(_context_tab_context(state, tree))
        pane_context = {**_conversation_context(context, tree), "oob": True}
        parts = (DETAIL_TEMPLATE + "#selection-forms", *SELECTION_PARTS)
        return HttpResponse("".join(render_to_string(name, pane_context, request) for name in parts))
    filtered = request.headers.get("HX-Trigger") in FILTER_TRIGGERS and state.start is None
    context = _detail_context(request, state, tree, count=FILTER_WINDOW if filtered else explorer.TREE_WINDOW)
    if target == "conversation":
        pane = _conversation_context(context, tree)
        return TemplateResponse(request, DETAIL_TEMPLATE + "#conversation", pane)
    if target == "tree" and state.start is not None:
        # Scrolling the tree window: the conversation stays as it is.
        return TemplateResponse(request, DETAIL_TEMPLATE + "#tree", context)
    if state.tab == "context":
        context.update(_context_tab_context(state, tree))
    if target is None:
        return TemplateResponse(request, DETAIL_TEMPLATE, _conversation_context(context, tree))
    # A new selection, filter, search or tab: the tree, and the reading pane swapped out of band (the Context
    # tab follows the selection while it is open, and closes when the URL has no ``tab=context``).
    tree_html = render_to_string(DETAIL_TEMPLATE + "#tree", context, request)
    if _keeps_reading(request, state):
        # A filter or search with a selection: the reading pane shows the same entry, so the tree comes alone
        # and at once (the browser does not parse and lay out the conversation again before the tree shows);
        # explorer.js then loads the pane again for its links, which carry the filter and the search
        # (HX-Trigger-After-Settle).
        response = HttpResponse(tree_html)
        response["HX-Trigger-After-Settle"] = READING_STALE
        return response
    pane_context = {**_conversation_context(context, tree), "oob": True}
    pane_html = "".join(render_to_string(name, pane_context, request) for name in SELECTION_PARTS)
    return HttpResponse(tree_html + pane_html)


#: The event that tells explorer.js to load the reading pane again (its links are the previous filter's).
READING_STALE = "arbor:reading-stale"
#: The ids of the tree's filter form and search box (htmx sends the requesting element's id as HX-Trigger).
FILTER_TRIGGERS = frozenset({"tree-filter", "tree-search"})
#: The rows around the selection in the answer to a filter or a search from the tree's form (explorer.js's
#: virtual tree: it keeps the selected row where it was in the pane, about 40 rows high at 900 px, and loads
#: the rows beyond as the pane scrolls): fewer rows than a page's window, to parse, lay out and render.
FILTER_WINDOW = 80


def _keeps_reading(request: HttpRequest, state: PageState) -> bool:
    """Whether a tree answer may leave the reading pane out: a filter or search from the tree's own form (not
    a tab, a link or a selection) with a selection. The pane shows the selected entry whatever the filter
    (``_detail_context``: the entry asked for, even when the tree selects its nearest visible ancestor), so
    only its links change."""
    trigger = request.headers.get("HX-Trigger")
    return trigger in FILTER_TRIGGERS and state.target_id is not None and state.end is None


#: The parts of the page that describe the selected entry, swapped out of band after a new selection.
SELECTION_PARTS = (
    DETAIL_TEMPLATE + "#branch-header",
    DETAIL_TEMPLATE + "#pane-tabs",
    DETAIL_TEMPLATE + "#conversation",
    CONTEXT_TEMPLATE + "#context",
)
