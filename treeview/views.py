"""The session list, the session page, labels, uploads, downloads and the position marker: thin glue over
``treeview.services`` and ``treeview.explorer``."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

import orjson
from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import BadRequest
from django.core.files.uploadedfile import UploadedFile
from django.core.handlers.asgi import ASGIRequest
from django.core.paginator import Page, Paginator
from django.db.models import Count, F, OuterRef, Subquery
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, StreamingHttpResponse
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.http import content_disposition_header
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from treeview import context_tab, explorer
from treeview.forms import (
    UPLOAD_FIELD,
    CopyForm,
    LabelForm,
    ListPageForm,
    SessionUploadHandler,
    SessionViewForm,
    UploadForm,
)
from treeview.models import AgentSession, ImportIssue
from treeview.render import full_block_text, render_full_text
from treeview.services import append
from treeview.services.export import export_branch, export_lines
from treeview.services.sync import SyncResult, import_upload
from treeview.session.selector import FILTER_MODES, FilterMode, Row
from treeview.session.session_manager import EntryNotFound

SESSIONS_PER_PAGE = 50
IMPORT_ISSUES_SHOWN = 100
WARNINGS_SHOWN = 50
NDJSON = "application/x-ndjson"
# Downloads go out in pieces of about this many characters (a session file can be hundreds of MB).
DOWNLOAD_CHUNK = 256 * 1024
# import_upload stores an upload as "<name>-<12 hex digits of its sha256>.jsonl".
UPLOAD_DIGEST_SUFFIX = re.compile(r"-[0-9a-f]{12}(\.jsonl)$")

LIST_TEMPLATE = "treeview/session_list.html"


# -- the session list --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionLinks:
    """Where a session's actions live; ``None`` when its id cannot be put in a URL (an empty id)."""

    detail: str | None
    download: str | None
    download_branch: str | None
    persist: str | None


@dataclass(frozen=True)
class SessionRow:
    session: AgentSession
    links: SessionLinks
    parent: AgentSession | None = None
    parent_links: SessionLinks | None = None

    @property
    def warnings_shown(self) -> list[dict[str, Any]]:
        return list(self.session.warnings[:WARNINGS_SHOWN])

    @property
    def warnings_hidden(self) -> int:
        return max(0, len(self.session.warnings) - WARNINGS_SHOWN)


@dataclass(frozen=True)
class ProjectGroup:
    cwd: str
    rows: list[SessionRow]


@dataclass(frozen=True)
class Notice:
    """A one-off message at the top of the list (the project does not use django.contrib.messages)."""

    text: str
    error: bool = False


@dataclass
class UploadOutcome:
    """One uploaded file: new, updated, unchanged or failed (with the reason)."""

    name: str
    status: str
    reason: str = ""
    row: SessionRow | None = None
    entries_added: int = 0
    warnings: int = 0


@dataclass
class ListExtras:
    notice: Notice | None = None
    upload_results: list[UploadOutcome] = field(default_factory=list)


def _listed_sessions() -> Any:
    """Every session, grouped by project (cwd), the project with the latest activity first, newest first."""
    latest_in_project = (
        AgentSession.objects.filter(cwd=OuterRef("cwd"))
        .order_by(F("last_timestamp").desc(nulls_last=True))
        .values("last_timestamp")[:1]
    )
    return (
        AgentSession.objects.defer("header_raw", "prefix_raw", "title_slot_raw", "tail_raw", "pending_raw")
        .annotate(project_last=Subquery(latest_in_project))
        .order_by(
            F("project_last").desc(nulls_last=True),
            "cwd",
            F("last_timestamp").desc(nulls_last=True),
            "-id",
        )
    )


def _url(name: str, query: str, **kwargs: str) -> str | None:
    try:
        return reverse(name, kwargs=kwargs) + query
    except NoReverseMatch:
        return None


def session_links(session: AgentSession, *, pick_copy: bool) -> SessionLinks:
    """The URLs of a session's actions; ``pick_copy`` names this copy when its session id is shared."""
    query = f"?copy={session.pk}" if pick_copy else ""
    sid = session.session_id
    return SessionLinks(
        detail=_url("treeview:session_detail", query, session_id=sid),
        download=_url("treeview:download_session", query, session_id=sid),
        download_branch=(
            _url("treeview:download_branch", query, session_id=sid, entry_id=session.leaf_id)
            if session.leaf_id
            else None
        ),
        persist=_url("treeview:persist_position", query, session_id=sid) if session.leaf_id else None,
    )


def _shared_ids(session_ids: Iterable[str]) -> set[str]:
    """Which of these session ids are imported more than once (two files of one session)."""
    shared = (
        AgentSession.objects.filter(session_id__in=set(session_ids))
        .values("session_id")
        .annotate(copies=Count("id"))
        .filter(copies__gt=1)
        .values_list("session_id", flat=True)
    )
    return set(shared)


def _rows(sessions: list[AgentSession]) -> list[SessionRow]:
    shared = _shared_ids(session.session_id for session in sessions)
    rows = []
    for session in sessions:
        # Only a few sessions are forks, so resolving their parents one by one stays cheap.
        parent = session.parent() if session.parent_session else None
        rows.append(
            SessionRow(
                session=session,
                links=session_links(session, pick_copy=session.session_id in shared),
                parent=parent,
                parent_links=(
                    session_links(parent, pick_copy=parent.session_id in _shared_ids([parent.session_id]))
                    if parent is not None
                    else None
                ),
            )
        )
    return rows


def _groups(page: Page[AgentSession]) -> list[ProjectGroup]:
    groups: list[ProjectGroup] = []
    for row in _rows(list(page.object_list)):
        if not groups or groups[-1].cwd != row.session.cwd:
            groups.append(ProjectGroup(row.session.cwd, []))
        groups[-1].rows.append(row)
    return groups


def _template(request: HttpRequest) -> str:
    htmx = getattr(request, "htmx", None)
    if htmx and not htmx.history_restore_request:
        return LIST_TEMPLATE + "#session-list"
    return LIST_TEMPLATE


def _render_list(
    request: HttpRequest, page_number: int, extras: ListExtras | None = None, *, status: int = 200
) -> TemplateResponse:
    page = Paginator(_listed_sessions(), SESSIONS_PER_PAGE).get_page(page_number)
    issues = ImportIssue.objects.order_by("-seen_at", "source_path")
    context = {
        "page_obj": page,
        "groups": _groups(page),
        "issues": issues[:IMPORT_ISSUES_SHOWN],
        "issue_count": issues.count(),
        "write_back": settings.ARBOR_WRITE_BACK,
        "upload_form": UploadForm(),
        "upload_max_mb": settings.ARBOR_UPLOAD_MAX_MB,
        "upload_max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        "extras": extras or ListExtras(),
    }
    return TemplateResponse(request, _template(request), context, status=status)


@require_GET
@vary_on_headers("HX-Request")
def session_list(request: HttpRequest) -> TemplateResponse:
    return _render_list(request, ListPageForm(request.GET).page_number())


def _session_or_404(request: HttpRequest, session_id: str) -> AgentSession:
    """The session with this header id: the copy ``?copy=<pk>`` names, else the one synced last."""
    form = CopyForm(request.GET)
    if not form.is_valid():
        raise Http404("malformed copy")
    copy = form.cleaned_data["copy"]
    if copy is not None:
        session = AgentSession.objects.filter(session_id=session_id, pk=copy).first()
    else:
        session = AgentSession.objects.by_session_id(session_id)
    if session is None:
        raise Http404("no imported session has this id")
    return session


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

    def url(self, **changes: Any) -> str:
        """This page's address with some parameters changed (``None`` drops one); defaults are left out."""
        params: dict[str, Any] = {
            "copy": self.copy,
            "filter": None if self.mode == "default" else self.mode,
            "q": self.query or None,
            "leafId": self.leaf_param or None,
            "targetId": self.target_id,
        }
        params.update(changes)
        query = urlencode({key: value for key, value in params.items() if value is not None and value != ""})
        base = reverse("treeview:session_detail", kwargs={"session_id": self.session.session_id})
        return f"{base}?{query}" if query else base


def _copy_param(request: HttpRequest) -> int | None:
    form = CopyForm(request.GET)
    return form.cleaned_data["copy"] if form.is_valid() else None


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
    state = PageState(
        session=session,
        mode=cast(FilterMode, data["filter"]),
        query=data["q"],
        leaf_id=leaf_id,
        leaf_param=leaf_param,
        target_id=target,
        start=data["start"],
        end=data["end"],
        copy=_copy_param(request),
    )
    return state, tree


@dataclass(frozen=True)
class RowItem:
    row: Row
    url: str
    prefix: str


@dataclass(frozen=True)
class EntryItem:
    entry: explorer.ConversationEntry
    permalink: str
    previous_url: str | None
    next_url: str | None


def _detail_context(request: HttpRequest, state: PageState, tree: explorer.ExplorerTree) -> dict[str, Any]:
    window = explorer.tree_window(tree, state.mode, state.query, state.target_id, state.start)
    selected = window.selected_id if state.target_id is None else state.target_id
    session = state.session
    pick_copy = state.copy is not None
    parent = session.parent()
    node = tree.flat.by_id.get(selected)
    return {
        "session": session,
        "state": state,
        "window": window,
        "rows": [RowItem(row, state.url(targetId=row.id), row.prefix()) for row in window.rows],
        "earlier_url": state.url(start=window.earlier_start) if window.earlier else None,
        "later_url": state.url(start=window.end) if window.later else None,
        "page_url": state.url(),
        # The entry asked for (the conversation and the label form), and the row the tree selects for it.
        "selected_id": selected,
        "tree_selected_id": window.selected_id,
        "filter_modes": FILTER_MODES,
        "links": session_links(session, pick_copy=pick_copy),
        "branch_download": (
            _url(
                "treeview:download_branch",
                f"?copy={session.pk}" if pick_copy else "",
                session_id=session.session_id,
                entry_id=selected,
            )
            if selected
            else None
        ),
        "parent": parent,
        "parent_links": session_links(parent, pick_copy=False) if parent is not None else None,
        "label_value": (node.node.label or "") if node is not None else "",
        "oob": False,
        "context_tab_url": state.url(tab="context", end=None),
        "context_fragment_url": _context_url(state),
    }


def _conversation_context(context: dict[str, Any], tree: explorer.ExplorerTree) -> dict[str, Any]:
    state: PageState = context["state"]
    page = explorer.conversation_page(state.session, tree, context["selected_id"], state.end)
    items = []
    for entry in page.entries:
        siblings = entry.siblings
        items.append(
            EntryItem(
                entry,
                state.url(targetId=entry.entry_id),
                state.url(targetId=siblings.previous_id) if siblings and siblings.previous_id else None,
                state.url(targetId=siblings.next_id) if siblings and siblings.next_id else None,
            )
        )
    return {
        **context,
        "conversation": page,
        "entries": items,
        "conversation_earlier_url": state.url(end=page.earlier_end) if page.earlier else None,
        "conversation_later_url": state.url(end=page.later_end) if page.later else None,
    }


def _htmx_target(request: HttpRequest) -> str | None:
    htmx = getattr(request, "htmx", None)
    if not htmx or htmx.history_restore_request:
        return None
    return str(htmx.target or "")


def _render_detail(request: HttpRequest, state: PageState, tree: explorer.ExplorerTree) -> HttpResponse:
    context = _detail_context(request, state, tree)
    target = _htmx_target(request)
    if target is None:
        return TemplateResponse(request, DETAIL_TEMPLATE, _conversation_context(context, tree))
    if target == "conversation":
        pane = _conversation_context(context, tree)
        return TemplateResponse(request, DETAIL_TEMPLATE + "#conversation", pane)
    if target == "tree" and state.start is not None:
        # Scrolling the tree window: the conversation stays as it is.
        return TemplateResponse(request, DETAIL_TEMPLATE + "#tree", context)
    # A new selection, filter or search: the tree, and the conversation swapped out of band.
    tree_html = render_to_string(DETAIL_TEMPLATE + "#tree", context, request)
    pane_context = {**_conversation_context(context, tree), "oob": True}
    pane_html = render_to_string(DETAIL_TEMPLATE + "#conversation", pane_context, request)
    return HttpResponse(tree_html + pane_html)


@require_safe
@vary_on_headers("HX-Request")
def session_detail(request: HttpRequest, session_id: str) -> HttpResponse:
    """The tree of a session and the conversation of the selected entry (deep links as pi's HTML export)."""
    session = _session_or_404(request, session_id)
    state, tree = _page_state(request, session)
    response = _render_detail(request, state, tree)
    # The Context tab without JavaScript (or a shared link to it): the same page with the tab open.
    opened = request.GET.get("tab") == "context" and _htmx_target(request) is None
    if opened and isinstance(response, TemplateResponse) and response.context_data is not None:
        response.context_data.update(_context_tab_context(state, tree))
    return response


@require_POST
@vary_on_headers("HX-Request")
def set_label(request: HttpRequest, session_id: str) -> HttpResponse:
    """Label the entry (an empty label clears it), then show the tree again (no JS: redirect back)."""
    session = _session_or_404(request, session_id)
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
        copy=_copy_param(request),
    )
    if _htmx_target(request) is None:
        return HttpResponseRedirect(state.url())
    tree = explorer.explorer_tree(session, state.leaf_id)
    if state.leaf_id is not None and state.leaf_id not in tree.flat.by_id:
        raise Http404("no entry with this id in the session")
    return TemplateResponse(request, DETAIL_TEMPLATE + "#tree", _detail_context(request, state, tree))


# -- upload ------------------------------------------------------------------------------------------------


def _outcome(name: str, result: SyncResult) -> UploadOutcome:
    if result.status == "failed" or result.session is None:
        return UploadOutcome(name, "failed", result.error or "the file could not be imported")
    session = result.session
    if result.status == "new":
        status = "new"
    elif result.entries_added or result.entries_removed:
        status = "updated"
    else:
        # The same bytes again (import_upload stores identical content under the same name).
        status = "unchanged"
    row = SessionRow(session, session_links(session, pick_copy=bool(_shared_ids([session.session_id]))))
    return UploadOutcome(
        name, status, row=row, entries_added=result.entries_added, warnings=len(result.warnings)
    )


def _import_uploads(handler: SessionUploadHandler, files: list[UploadedFile]) -> list[UploadOutcome]:
    stored = iter(files)
    outcomes = []
    for part in handler.parts:
        upload = None if part.skipped else next(stored, None)
        if part.refusal is not None:
            outcomes.append(UploadOutcome(part.name, "failed", part.refusal))
        elif upload is None:
            outcomes.append(UploadOutcome(part.name, "failed", "the file did not arrive whole"))
        elif upload.size is not None and upload.size > handler.max_bytes:
            outcomes.append(
                UploadOutcome(part.name, "failed", f"too big: over the {handler.max_mb} MB limit")
            )
        else:
            try:
                result = import_upload(part.name, upload.chunks())
            except OSError as error:
                outcomes.append(UploadOutcome(part.name, "failed", f"could not store the upload: {error}"))
            else:
                outcomes.append(_outcome(part.name, result))
    return outcomes


# The CSRF check reads the body, so it runs in _checked_upload, after the size-limiting handler is in place
# (Django's documented pattern for changing upload handlers in a view).
@csrf_exempt
@require_POST
@vary_on_headers("HX-Request")
def upload(request: HttpRequest) -> TemplateResponse:
    handler = SessionUploadHandler(request, settings.ARBOR_UPLOAD_MAX_MB)
    request.upload_handlers.insert(0, handler)
    return _checked_upload(request, handler)


@csrf_protect
def _checked_upload(request: HttpRequest, handler: SessionUploadHandler) -> TemplateResponse:
    files = request.FILES.getlist(UPLOAD_FIELD)
    if not handler.parts:
        extras = ListExtras(notice=Notice("Choose one or more .jsonl session files to upload.", error=True))
        return _render_list(request, 1, extras, status=400)
    return _render_list(request, 1, ListExtras(upload_results=_import_uploads(handler, files)))


# -- downloads ---------------------------------------------------------------------------------------------


def download_name(session: AgentSession) -> str:
    """The source file's name (without the digest an upload was stored under), or ``<session id>.jsonl``."""
    if session.source_path:
        path = Path(session.source_path)
        name = path.name
        if path.parent == Path(settings.ARBOR_UPLOAD_DIR).resolve():
            name = UPLOAD_DIGEST_SUFFIX.sub(r"\1", name)
        if name.endswith(".jsonl") and len(name) > len(".jsonl"):
            return name
    return f"{session.session_id or 'session'}.jsonl"


def _encoded(pieces: Iterator[str]) -> Iterator[bytes]:
    """UTF-8 chunks of about DOWNLOAD_CHUNK characters (one per database batch, not one per line)."""
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= DOWNLOAD_CHUNK:
            yield "".join(buffer).encode("utf-8", errors="surrogatepass")
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode("utf-8", errors="surrogatepass")


async def _async_chunks(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    # Under ASGI, Django would read a synchronous iterator whole into memory before sending it; this one
    # fetches the next chunk (a database query now and then) in the thread the sync ORM uses.
    take = sync_to_async(next, thread_sensitive=True)
    while True:
        chunk = await take(chunks, None)
        if chunk is None:
            return
        yield chunk


@require_safe
def download_session(request: HttpRequest, session_id: str) -> StreamingHttpResponse:
    """The session file as imported (byte for byte), followed by the entries Arbor appended."""
    session = _session_or_404(request, session_id)
    chunks = _encoded(export_lines(session))
    content = _async_chunks(chunks) if isinstance(request, ASGIRequest) else chunks
    response = StreamingHttpResponse(content, content_type=NDJSON)
    response["Content-Disposition"] = content_disposition_header(True, download_name(session))
    return response


@require_safe
def download_branch(request: HttpRequest, session_id: str, entry_id: str) -> HttpResponse:
    """A new session file holding the path root → ``entry_id``, as ``/branch`` writes it."""
    session = _session_or_404(request, session_id)
    try:
        name, text = export_branch(session, entry_id)
    except EntryNotFound:
        raise Http404("no entry with this id in the session") from None
    response = HttpResponse(text.encode("utf-8", errors="surrogatepass"), content_type=NDJSON)
    response["Content-Disposition"] = content_disposition_header(True, name)
    return response


@require_safe
def entry_block(request: HttpRequest, session_id: str, entry_id: str, index: int) -> HttpResponse:
    """The whole text of one block of an entry (a long output shown cut on the page), loaded on demand."""
    session = _session_or_404(request, session_id)
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


# -- the position marker -----------------------------------------------------------------------------------


@require_POST
@vary_on_headers("HX-Request")
def persist_position(request: HttpRequest, session_id: str) -> TemplateResponse:
    """Append the marker that makes the agent resume at Arbor's leaf (the agent takes the last line)."""
    session = _session_or_404(request, session_id)
    page = ListPageForm(request.POST).page_number()
    title = session.display_title
    if session.leaf_id is None:
        notice = Notice(f"“{title}” has no entries yet: there is no position to persist.", error=True)
        return _render_list(request, page, ListExtras(notice=notice), status=409)
    leaf = session.leaf_id
    try:
        marker = append.persist_position(session)
    except append.WriteBackRefused as error:
        notice = Notice(f"Position not persisted for “{title}”: {error}", error=True)
        return _render_list(request, page, ListExtras(notice=notice), status=409)
    if marker.in_file:
        where = "appended to the agent's file: it resumes there"
    else:
        where = "in Arbor's copy and the downloaded file (write-back is off: the agent's file is unchanged)"
    notice = Notice(f"Position persisted for “{title}”: marker {marker.entry_id} at entry {leaf}, {where}.")
    return _render_list(request, page, ListExtras(notice=notice))


# -- the context tab ---------------------------------------------------------------------------------------

CONTEXT_TEMPLATE = "treeview/_context.html"


def _context_url(state: PageState, **changes: Any) -> str:
    """The context fragment's address for this page state (``copy``, ``leafId``, ``targetId``, ``end``)."""
    params: dict[str, Any] = {
        "copy": state.copy,
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
    llm = context_tab.llm_context(state.session, tree, target)
    cards, start, stop = llm.page(state.end)
    later = min(len(llm.cards), stop + context_tab.CONTEXT_PAGE)
    return {
        "llm_page_url": state.url(),
        "llm": llm,
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
    session = _session_or_404(request, session_id)
    state, tree = _page_state(request, session)
    tab = _context_tab_context(state, tree)
    if _htmx_target(request) is not None:
        return TemplateResponse(
            request, CONTEXT_TEMPLATE + "#context", {"session": session, "state": state, **tab}
        )
    response = _render_detail(request, state, tree)
    if isinstance(response, TemplateResponse) and response.context_data is not None:
        response.context_data.update(tab)
    return response
