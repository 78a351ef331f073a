"""Comments on an entry: the thread panel under the selected entry, and the forms that add, edit, delete,
resolve and reopen. htmx gets the panel again; a plain form post goes back to the session page at the entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from treeview.access import COMMENT, REFUSALS, can
from treeview.forms import CommentEditForm, CommentForm, CommentPlaceForm
from treeview.models import AgentSession, Comment
from treeview.render.comments import render_comment
from treeview.services import comments as service
from treeview.views.common import htmx_target, refusal, session_or_404

__all__ = [
    "CommentPanel",
    "comment_panel",
    "place_query",
    "delete_comment",
    "edit_comment",
    "entry_comments",
    "reopen_thread",
    "resolve_thread",
]

PANEL_TEMPLATE = "treeview/_comments.html"
PANEL_FRAGMENT = PANEL_TEMPLATE + "#comments"


@dataclass(frozen=True)
class CommentItem:
    comment: Comment
    html: SafeString  # the body, rendered and sanitized ("" for a deleted placeholder)
    author: str  # a username, never an e-mail address
    mine: bool
    edit_url: str
    delete_url: str


@dataclass(frozen=True)
class ThreadItem:
    root: CommentItem
    replies: list[CommentItem]
    resolved: bool
    resolved_by: str
    resolve_url: str
    reopen_url: str


@dataclass(frozen=True)
class CommentPanel:
    """What ``_comments.html#comments`` shows for one entry."""

    entry_id: str
    url: str  # where the forms post (with the page's query, to come back to it)
    threads: list[ThreadItem]
    comments: int  # live comments, for the tree row's badge
    open_threads: int
    form: CommentForm
    error: str = ""
    may_comment: bool = True  # comment, reply, resolve (treeview/access.py); else ``refusal`` says why not
    refusal: str = ""


def place_query(params: Mapping[str, Any]) -> str:
    """``?copy=…&filter=…`` of the page the panel sits on (empty values and the default filter left out)."""
    form = CommentPlaceForm(params)
    form.is_valid()
    data = form.cleaned_data  # the valid fields, even when another one is not
    values = {
        "copy": data.get("copy"),
        "filter": None if data.get("filter") in (None, "", "default") else data.get("filter"),
        "q": data.get("q") or None,
        "leafId": data.get("leafId") or None,
    }
    query = urlencode({key: value for key, value in values.items() if value is not None})
    return f"?{query}" if query else ""


def _username(user: Any) -> str:
    return user.get_username() if user is not None else "(deleted user)"


def comment_panel(
    request: HttpRequest,
    session: AgentSession,
    entry_id: str,
    query: str,
    *,
    form: CommentForm | None = None,
    error: str = "",
) -> CommentPanel:
    """The threads on ``entry_id`` with their actions' addresses; ``query``: the page's (``place_query``)."""
    sid = session.session_id
    base = reverse("treeview:entry_comments", kwargs={"session_id": sid, "entry_id": entry_id})
    me = request.user.pk
    may = can(request.user, session, COMMENT)

    def action(pk: int, name: str) -> str:
        return f"{base}{pk}/{name}/{query}"

    def item(comment: Comment) -> CommentItem:
        deleted = comment.deleted_at is not None
        names = [user.get_username() for user in comment.mentions.all()]
        return CommentItem(
            comment=comment,
            html=SafeString("") if deleted else render_comment(comment.body, names),
            author=_username(comment.author),
            mine=may and not deleted and comment.author_id is not None and comment.author_id == me,
            edit_url=action(comment.pk, "edit"),
            delete_url=action(comment.pk, "delete"),
        )

    threads = []
    live = open_threads = 0
    for thread in service.threads(session, entry_id):
        root = thread.root
        replies = [item(reply) for reply in thread.replies]
        live += len(replies) + (root.deleted_at is None)
        open_threads += not thread.resolved
        threads.append(
            ThreadItem(
                root=item(root),
                replies=replies,
                resolved=thread.resolved,
                resolved_by=_username(root.resolved_by) if thread.resolved else "",
                resolve_url=action(root.pk, "resolve"),
                reopen_url=action(root.pk, "reopen"),
            )
        )
    return CommentPanel(
        entry_id=entry_id,
        url=base + query,
        threads=threads,
        comments=live,
        open_threads=open_threads,
        form=form if form is not None else CommentForm(),
        error=error,
        may_comment=may,
        refusal="" if may else REFUSALS[COMMENT],
    )


def _session_page(session: AgentSession, entry_id: str, query: str) -> str:
    """The session page at the entry, its comments in view (where a plain form post returns)."""
    target = urlencode({"targetId": entry_id})
    base = reverse("treeview:session_detail", kwargs={"session_id": session.session_id})
    return f"{base}{query}{'&' if query else '?'}{target}#comments"


def _answer(
    request: HttpRequest,
    session: AgentSession,
    entry_id: str,
    *,
    form: CommentForm | None = None,
    error: str = "",
) -> HttpResponse:
    """htmx: the panel again. A plain request: back to the session page, or (a refused form) the panel as a
    page of its own with the message and the text typed, status 400."""
    query = place_query(request.GET)
    if htmx_target(request) is None and not error:
        return HttpResponseRedirect(_session_page(session, entry_id, query))
    panel = comment_panel(request, session, entry_id, query, form=form, error=error)
    context = {"session": session, "panel": panel, "back_url": _session_page(session, entry_id, query)}
    if htmx_target(request) is None:
        return TemplateResponse(request, PANEL_TEMPLATE, context, status=400)
    return TemplateResponse(request, PANEL_FRAGMENT, context)


def _entry_or_404(session: AgentSession, entry_id: str) -> None:
    if not service.entry_exists(session, entry_id):
        raise Http404("no entry with this id in the session")


def _comment_or_404(session: AgentSession, entry_id: str, pk: int) -> Comment:
    try:
        return service.find(session, entry_id, pk)
    except Comment.DoesNotExist:
        raise Http404("no such comment") from None


@require_http_methods(["GET", "HEAD", "POST"])
@vary_on_headers("HX-Request")
def entry_comments(request: HttpRequest, session_id: str, entry_id: str) -> HttpResponse:
    """GET: the entry's threads (htmx; otherwise the session page at the entry). POST: a new comment, or a
    reply (``reply_to``)."""
    session = session_or_404(request, session_id)
    _entry_or_404(session, entry_id)
    if request.method != "POST":
        return _answer(request, session, entry_id)
    if (refused := refusal(request, session, COMMENT)) is not None:
        return refused
    form = CommentForm(request.POST)
    if not form.is_valid():
        return _answer(request, session, entry_id, form=form, error=_form_error(form))
    data = form.cleaned_data
    try:
        service.add(
            session,
            request.user,
            entry_id,
            data["body"],
            quote=data["quote"] or "",
            quote_start=data["quote_start"],
            reply_to=data["reply_to"],
        )
    except service.UnknownEntry:
        raise Http404("no entry with this id in the session") from None
    except service.InvalidComment as refused:
        return _answer(request, session, entry_id, form=form, error=str(refused))
    return _answer(request, session, entry_id)


def _form_error(form: CommentForm | CommentEditForm) -> str:
    return " ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())


@require_POST
@vary_on_headers("HX-Request")
def edit_comment(request: HttpRequest, session_id: str, entry_id: str, pk: int) -> HttpResponse:
    """Change one's own comment (anyone else: 403)."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, COMMENT)) is not None:
        return refused
    comment = _comment_or_404(session, entry_id, pk)
    form = CommentEditForm(request.POST)
    if not form.is_valid():
        if not service.is_author(comment, request.user):
            raise PermissionDenied("only the author edits a comment")
        return _answer(request, session, entry_id, error=_form_error(form))
    try:
        service.edit(comment, request.user, form.cleaned_data["body"])
    except service.NotAuthor:
        raise PermissionDenied("only the author edits a comment") from None
    except service.InvalidComment as refused:
        return _answer(request, session, entry_id, error=str(refused))
    return _answer(request, session, entry_id)


@require_POST
@vary_on_headers("HX-Request")
def delete_comment(request: HttpRequest, session_id: str, entry_id: str, pk: int) -> HttpResponse:
    """Delete one's own comment (anyone else: 403); a thread's first comment with replies leaves a marker."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, COMMENT)) is not None:
        return refused
    comment = _comment_or_404(session, entry_id, pk)
    try:
        service.delete(comment, request.user)
    except service.NotAuthor:
        raise PermissionDenied("only the author deletes a comment") from None
    return _answer(request, session, entry_id)


@require_POST
@vary_on_headers("HX-Request")
def resolve_thread(request: HttpRequest, session_id: str, entry_id: str, pk: int) -> HttpResponse:
    """Mark the thread resolved (anyone who sees the session)."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, COMMENT)) is not None:
        return refused
    service.resolve(_comment_or_404(session, entry_id, pk), request.user)
    return _answer(request, session, entry_id)


@require_POST
@vary_on_headers("HX-Request")
def reopen_thread(request: HttpRequest, session_id: str, entry_id: str, pk: int) -> HttpResponse:
    """Open a resolved thread again (anyone who sees the session)."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, COMMENT)) is not None:
        return refused
    service.reopen(_comment_or_404(session, entry_id, pk), request.user)
    return _answer(request, session, entry_id)
