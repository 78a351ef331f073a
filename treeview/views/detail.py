"""The session page: the tree, the conversation, labels, the Context tab and long blocks on demand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property, partial
from typing import Any, cast
from urllib.parse import quote, urlencode

import orjson
from django.conf import settings
from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from treeview import access, context_tab, conversation, explorer
from treeview.access import can_view
from treeview.forms import (
    LabelForm,
    SessionViewForm,
    TreeRowsForm,
)
from treeview.llm import summarizer_status
from treeview.models import AgentSession
from treeview.render import full_block_text, render_full_text
from treeview.services import append
from treeview.services import comments as comment_service
from treeview.services import fork as fork_service
from treeview.services import review as review_service
from treeview.session.selector import FilterMode, Row
from treeview.views import fork, subagents
from treeview.views.comments import comment_panel, place_query
from treeview.views.common import (
    copy_param,
    htmx_target,
    refusal,
    reverse_or_none,
    session_links,
    session_or_404,
)
from treeview.views.rules import rules_context
from treeview.views.tree_rows import row_html

# -- the session page --------------------------------------------------------------------------------------

DETAIL_TEMPLATE = "treeview/session_detail.html"


@dataclass(frozen=True)
class PageState:
    """What the session page shows: the parsed query, resolved against the session's tree."""

    session: AgentSession
    mode: FilterMode
    query: str
    leaf_id: str | None  # the leaf the tree is drawn for
    leaf_param: str  # ``leafId`` as given ("" for the stored leaf)
    target_id: str | None
    start: int | None
    end: int | None
    copy: int | None
    tab: str = ""  # "context" while the Context tab is open: kept in every link so a selection keeps it

    def url(self, **changes: Any) -> str:
        """This page's address with some parameters changed (``None`` drops one); defaults are left out."""
        params: dict[str, Any] = {
            "copy": self.copy,
            "filter": None if self.mode == "default" else self.mode,
            "q": self.query or None,
            "leafId": self.leaf_param or None,
            "targetId": self.target_id,
            "tab": self.tab or None,
        }
        params.update(changes)
        query = urlencode({key: value for key, value in params.items() if value is not None and value != ""})
        return f"{self.base_url}?{query}" if query else self.base_url

    @cached_property
    def base_url(self) -> str:
        """The page's path (reversed once: a page asks for hundreds of its addresses)."""
        return reverse("treeview:session_detail", kwargs={"session_id": self.session.session_id})


def _page_state(request: HttpRequest, session: AgentSession) -> tuple[PageState, explorer.ExplorerTree]:
    """The page's query, checked against the session: unknown ``leafId``/``targetId`` are a 404."""
    form = SessionViewForm(request.GET)
    if not form.is_valid():
        if "leafId" in form.errors or "targetId" in form.errors:
            raise Http404("no entry with this id in the session")
        raise BadRequest("malformed query")
    data = form.cleaned_data
    stored = explorer.explorer_tree(session, session.leaf_id)
    leaf_param = data["leafId"] or ""
    if leaf_param and leaf_param not in stored.flat.by_id:
        raise Http404("no entry with this id in the session")
    target = data["targetId"] or None
    if target is not None and target not in stored.flat.by_id:
        raise Http404("no entry with this id in the session")
    leaf_id = leaf_param or session.leaf_id
    tree = stored if leaf_id == session.leaf_id else explorer.explorer_tree(session, leaf_id)
    # A big session's first search is made ahead while the person reads the page (once per tree).
    explorer.prepare_search(tree, session.rules.agent)
    state = PageState(
        session=session,
        mode=cast(FilterMode, data["filter"]),
        query=data["q"],
        leaf_id=leaf_id,
        leaf_param=leaf_param,
        target_id=target,
        start=data["start"],
        end=data["end"],
        copy=copy_param(request),
        tab="context" if request.GET.get("tab") == "context" else "",
    )
    return state, tree


@dataclass(frozen=True)
class RowItem:
    row: Row
    url: str
    prefix: str  # the last explorer.TREE_LEVELS levels of the row's tree prefix
    comments: comment_service.EntryCounts | None = None  # the badge: comments and open threads on the entry
    index: int = 0  # the row's place among the visible rows
    folded: int = 0  # levels left out before the prefix (the depth badge)
    html: str = ""  # the row's <li> (tree_rows.row_html)


def _row_items(
    state: PageState,
    window: explorer.TreeWindow,
    counts: dict[str, comment_service.EntryCounts],
    statuses: Mapping[str, str] | None,
) -> list[RowItem]:
    items = []
    for offset, row in enumerate(window.rows):
        folded, prefix = row.folded_prefix(explorer.TREE_LEVELS)
        url = state.url(targetId=row.id)
        item = RowItem(row, url, prefix, counts.get(row.id), window.start + offset, folded)
        items.append(replace(item, html=row_html(item, window.selected_id, statuses)))
    return items


def _rows_url(state: PageState) -> str:
    """The rows endpoint's address for this page state (explorer.js adds ``start`` and ``count``)."""
    params = {
        "copy": state.copy,
        "filter": None if state.mode == "default" else state.mode,
        "q": state.query or None,
        "leafId": state.leaf_param or None,
        "tab": state.tab or None,
    }
    query = urlencode({key: value for key, value in params.items() if value is not None and value != ""})
    base = reverse("treeview:session_rows", kwargs={"session_id": state.session.session_id})
    return f"{base}?{query}" if query else base


@dataclass(frozen=True)
class EntryItem:
    entry: explorer.ConversationEntry
    permalink: str
    previous_url: str | None
    next_url: str | None
    subagents: tuple[subagents.SubagentLink, ...] = ()  # the transcripts its task call spawned


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


# -- the context tab ---------------------------------------------------------------------------------------

CONTEXT_TEMPLATE = "treeview/_context.html"
#: The parts of the page that describe the selected entry, swapped out of band after a new selection.
SELECTION_PARTS = (
    DETAIL_TEMPLATE + "#branch-header",
    DETAIL_TEMPLATE + "#pane-tabs",
    DETAIL_TEMPLATE + "#conversation",
    CONTEXT_TEMPLATE + "#context",
)


def _context_url(state: PageState, **changes: Any) -> str:
    """The context fragment's address for this page state (the page's parameters and ``end``; opening the tab
    redraws the tree too, so the filter and the search go along)."""
    params: dict[str, Any] = {
        "copy": state.copy,
        "filter": None if state.mode == "default" else state.mode,
        "q": state.query or None,
        "leafId": state.leaf_param or None,
        "targetId": state.target_id,
    }
    params.update(changes)
    query = urlencode({key: value for key, value in params.items() if value is not None and value != ""})
    base = reverse("treeview:session_context", kwargs={"session_id": state.session.session_id})
    return f"{base}?{query}" if query else base


def _context_tab_context(state: PageState, tree: explorer.ExplorerTree) -> dict[str, Any]:
    """The Context tab's data: the LLM context at the target (default: the leaf), one page of its cards."""
    target = state.target_id or state.leaf_id
    llm = tree.memo(
        ("llm", state.session.rules.agent, target),
        lambda: context_tab.llm_context(state.session, tree, target),
    )
    cards, start, stop = llm.page(state.end)
    later = min(len(llm.cards), stop + context_tab.CONTEXT_PAGE)
    return {
        "llm_page_url": state.url(),
        "llm": llm,
        # The entry in words (its row text, shortened): its id goes in the tooltip.
        "llm_target_text": conversation.entry_text(tree, llm.target_id, state.session.rules.agent),
        "llm_cards": cards,
        "llm_start": start,
        "llm_stop": stop,
        "llm_earlier_url": _context_url(state, end=start) if start else None,
        "llm_earlier_link": state.url(tab="context", end=start) if start else None,
        "llm_later_url": _context_url(state, end=later) if stop < len(llm.cards) else None,
        "llm_later_link": state.url(tab="context", end=later) if stop < len(llm.cards) else None,
        "llm_later": len(llm.cards) - stop,
    }


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
