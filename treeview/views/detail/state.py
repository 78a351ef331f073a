"""What the session page shows: ``PageState`` from the query string, and the items of the tree and pane."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, cast
from urllib.parse import urlencode

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest
from django.urls import reverse

from treeview import explorer
from treeview.forms import (
    SessionViewForm,
)
from treeview.models import AgentSession
from treeview.services import comments as comment_service
from treeview.session.selector import FilterMode, Row
from treeview.views import subagents
from treeview.views.common import (
    copy_param,
)
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
