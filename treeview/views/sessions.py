"""The session list: projects and sessions, uploads, and the position marker."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.paginator import Page, Paginator
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce, Lower, NullIf
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_GET, require_POST
from django.views.decorators.vary import vary_on_headers

from treeview.access import NAVIGATE, REFUSALS, can, can_view, sees_everything, visible_sessions, writable
from treeview.forms import (
    NO_PROJECT,
    UPLOAD_FIELD,
    ListFilters,
    ListPageForm,
    SessionUploadHandler,
    UploadForm,
)
from treeview.ingest.services import import_upload
from treeview.models import AgentSession, ImportIssue
from treeview.services import append
from treeview.services import review as review_service
from treeview.services.sync import SyncResult
from treeview.views.common import (
    SessionLinks,
    copy_note,
    project_name,
    session_links,
    session_or_404,
    shared_ids,
)
from treeview.views.subagents import SubagentNode, subagent_trees, top_level

SESSIONS_PER_PAGE = 50
IMPORT_ISSUES_SHOWN = 100
WARNINGS_SHOWN = 50

LIST_TEMPLATE = "treeview/session_list.html"


# -- the session list --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SessionRow:
    session: AgentSession
    links: SessionLinks
    copy: str = ""  # set when the user sees this session id more than once: which copy this row is
    parent: AgentSession | None = None
    parent_links: SessionLinks | None = None
    review: review_service.ReviewSummary | None = None  # counts of its branches per review status
    subagents: list[SubagentNode] = field(default_factory=list)  # the transcripts it spawned, nested

    @property
    def subagent_total(self) -> int:
        return sum(node.total for node in self.subagents)

    @property
    def project(self) -> str:
        return project_name(self.session.cwd)

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

    @property
    def name(self) -> str:
        return project_name(self.cwd)


@dataclass(frozen=True)
class ProjectChoice:
    value: str
    label: str


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


def _listed_sessions(user: Any, filters: ListFilters) -> Any:
    """The sessions ``user`` may see, narrowed by ``filters`` and in their order: by default grouped by
    project (cwd), the project with the latest activity first, newest first."""
    # One row per session of its own: subagent transcripts are listed under the session that spawned them.
    sessions = top_level(visible_sessions(user), user)
    if filters.project:
        sessions = sessions.in_project("" if filters.project == NO_PROJECT else filters.project)
    if filters.agent:
        sessions = sessions.filter(agent=filters.agent)
    sessions = sessions.active_between(filters.since, filters.until)
    if filters.min_cost is not None:
        sessions = sessions.costing_at_least(filters.min_cost)
    sessions = review_service.filter_sessions(sessions, filters.review)
    sessions = sessions.defer("header_raw", "prefix_raw", "title_slot_raw", "tail_raw", "pending_raw")
    sessions = sessions.with_first_prompt().select_related("owner")
    newest = F("last_timestamp").desc(nulls_last=True)
    if filters.sort == "newest":
        return sessions.order_by(newest, "-id")
    if filters.sort == "oldest":
        return sessions.order_by(F("last_timestamp").asc(nulls_last=True), "id")
    if filters.sort == "cost":
        return sessions.order_by("-cost", newest, "-id")
    if filters.sort == "entries":
        return sessions.order_by("-entry_count", newest, "-id")
    if filters.sort == "title":
        # Named sessions by name; unnamed ones by their first prompt (what the row shows).
        shown = Coalesce(NullIf("title", Value("")), "first_prompt", "session_id")
        return sessions.order_by(Lower(shown), "-id")
    latest_in_project = (
        visible_sessions(user)
        .filter(cwd=OuterRef("cwd"))
        .order_by(F("last_timestamp").desc(nulls_last=True))
        .values("last_timestamp")[:1]
    )
    return sessions.annotate(project_last=Subquery(latest_in_project)).order_by(
        F("project_last").desc(nulls_last=True), "cwd", newest, "-id"
    )


def _project_choices(user: Any, current: str) -> list[ProjectChoice]:
    # (a subagent that ran in a worktree has a directory of its own: not a project of the list)
    cwds = top_level(visible_sessions(user), user).projects()
    names = [project_name(cwd) for cwd in cwds]
    choices = []
    for cwd, name in zip(cwds, names, strict=True):
        # The name alone when it is unique; two projects of one name show their paths.
        label = name if names.count(name) == 1 else f"{name} ({cwd})"
        choices.append(ProjectChoice(cwd or NO_PROJECT, label if cwd else "No working directory"))
    if current and current not in {choice.value for choice in choices}:
        choices.append(ProjectChoice(current, project_name(current)))
    return choices


def _without_persist(links: SessionLinks, allowed: bool) -> SessionLinks:
    return links if allowed else replace(links, persist=None)


def _rows(sessions: list[AgentSession], user: Any) -> list[SessionRow]:
    shared = shared_ids((session.session_id for session in sessions), user)
    reviews = review_service.summaries(sessions)  # one aggregate query for the page
    # Who may persist the position (treeview/access.py): one query for the page.
    movable = writable(user, AgentSession.objects.filter(pk__in=[s.pk for s in sessions]), NAVIGATE)
    trees = subagent_trees(sessions, user)  # one query per level of nesting for the page
    rows = []
    for session in sessions:
        # Only a few sessions are forks, so resolving their parents one by one stays cheap.
        parent = session.parent() if session.parent_session else None
        if parent is not None and not can_view(user, parent):
            parent = None
        rows.append(
            SessionRow(
                session=session,
                links=_without_persist(
                    session_links(session, pick_copy=session.session_id in shared), session.pk in movable
                ),
                copy=copy_note(session) if session.session_id in shared else "",
                review=reviews.get(session.pk),
                subagents=trees.get(session.pk, []),
                parent=parent,
                parent_links=(
                    session_links(
                        parent, pick_copy=parent.session_id in shared_ids([parent.session_id], user)
                    )
                    if parent is not None
                    else None
                ),
            )
        )
    return rows


def _groups(page: Page[AgentSession], user: Any, *, grouped: bool) -> list[ProjectGroup]:
    """The page's rows under their projects; one group without a project when the order is not by project."""
    rows = _rows(list(page.object_list), user)
    if not grouped:
        return [ProjectGroup("", rows)] if rows else []
    groups: list[ProjectGroup] = []
    for row in rows:
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
    # The filters (GET for the list, POST for the actions that show it again).
    form = ListPageForm(request.GET if request.method == "GET" else request.POST)
    filters = form.filters()
    sessions = _listed_sessions(request.user, filters)
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(page_number)
    issues = ImportIssue.objects.order_by("-seen_at", "source_path")
    if not sees_everything(request.user):
        # The files that failed to import are the site's business (their paths), not every user's.
        issues = issues.none()
    context = {
        "page_obj": page,
        "groups": _groups(page, request.user, grouped=filters.grouped),
        "issues": issues[:IMPORT_ISSUES_SHOWN],
        "issue_count": issues.count(),
        "write_back": settings.ARBOR_WRITE_BACK,
        "upload_form": UploadForm(),
        "upload_max_mb": settings.ARBOR_UPLOAD_MAX_MB,
        "upload_max_files": settings.DATA_UPLOAD_MAX_NUMBER_FILES,
        "extras": extras or ListExtras(),
        "filters": filters,
        "filter_form": form,
        "project_choices": _project_choices(request.user, filters.project),
        "agent_choices": ListPageForm.base_fields["agent"].choices,
        "sort_choices": ListPageForm.base_fields["sort"].choices,
        "review_filter": filters.review,
        "review_choices": ListPageForm.base_fields["review"].choices,
        "list_query": filters.query(),
        "filter_pairs": filters.pairs(),
        "sort_label": filters.sort_label,
    }
    return TemplateResponse(request, _template(request), context, status=status)


@require_GET
@vary_on_headers("HX-Request")
def session_list(request: HttpRequest) -> TemplateResponse:
    return _render_list(request, ListPageForm(request.GET).page_number())


# -- upload ------------------------------------------------------------------------------------------------


def _outcome(name: str, result: SyncResult, user: Any) -> UploadOutcome:
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
    pick_copy = bool(shared_ids([session.session_id], user))
    row = SessionRow(session, session_links(session, pick_copy=pick_copy))
    return UploadOutcome(
        name, status, row=row, entries_added=result.entries_added, warnings=len(result.warnings)
    )


def _import_uploads(
    handler: SessionUploadHandler, files: list[UploadedFile], owner: Any
) -> list[UploadOutcome]:
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
                result = import_upload(part.name, upload.chunks(), owner=owner)
            except OSError as error:
                outcomes.append(UploadOutcome(part.name, "failed", f"could not store the upload: {error}"))
            else:
                outcomes.append(_outcome(part.name, result, owner))
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
    outcomes = _import_uploads(handler, files, request.user)
    return _render_list(request, 1, ListExtras(upload_results=outcomes))


# -- the position marker -----------------------------------------------------------------------------------


@require_POST
@vary_on_headers("HX-Request")
def persist_position(request: HttpRequest, session_id: str) -> TemplateResponse:
    """Append the marker that makes the agent resume at Arbor's leaf (the agent takes the last line)."""
    session = session_or_404(request, session_id)
    page = ListPageForm(request.POST).page_number()
    if not can(request.user, session, NAVIGATE):
        title = session.display_title
        notice = Notice(f"Position not persisted for “{title}”: {REFUSALS[NAVIGATE]}", error=True)
        return _render_list(request, page, ListExtras(notice=notice), status=403)
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
