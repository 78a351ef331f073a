"""What every view needs: finding the session a URL names, its action links, and reading htmx requests."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import NoReverseMatch, reverse

from treeview.access import REFUSALS, can, visible_sessions
from treeview.forms import (
    CopyForm,
)
from treeview.models import AgentSession


@dataclass(frozen=True)
class SessionLinks:
    """Where a session's actions live; ``None`` when its id cannot be put in a URL (an empty id)."""

    detail: str | None
    download: str | None
    download_branch: str | None
    persist: str | None


def reverse_or_none(name: str, query: str, **kwargs: str) -> str | None:
    try:
        return reverse(name, kwargs=kwargs) + query
    except NoReverseMatch:
        return None


def session_links(session: AgentSession, *, pick_copy: bool) -> SessionLinks:
    """The URLs of a session's actions; ``pick_copy`` names this copy when its session id is shared."""
    query = f"?copy={session.pk}" if pick_copy else ""
    sid = session.session_id
    return SessionLinks(
        detail=reverse_or_none("treeview:session_detail", query, session_id=sid),
        download=reverse_or_none("treeview:download_session", query, session_id=sid),
        download_branch=(
            reverse_or_none("treeview:download_branch", query, session_id=sid, entry_id=session.leaf_id)
            if session.leaf_id
            else None
        ),
        persist=(
            reverse_or_none("treeview:persist_position", query, session_id=sid) if session.leaf_id else None
        ),
    )


def project_name(cwd: str) -> str:
    """A working directory's readable name: its last component (``/home/dev/arbor`` → ``arbor``)."""
    name = cwd.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return name or cwd or "No working directory"


def copy_note(session: AgentSession) -> str:
    """What tells this copy of a session id from the others: its file (name and folder), else its owner."""
    if session.source_path:
        return "/".join(session.source_path.replace("\\", "/").rsplit("/", 2)[-2:])
    owner = session.owner.get_username() if session.owner_id and session.owner else ""
    return f"uploaded by {owner}" if owner else f"copy {session.pk}"


def shared_ids(session_ids: Iterable[str], user: Any) -> set[str]:
    """Which of these session ids ``user`` sees imported more than once (two files of one session): a copy the
    user may not see neither counts nor shows."""
    shared = (
        visible_sessions(user, AgentSession.objects.filter(session_id__in=set(session_ids)))
        .values("session_id")
        .annotate(copies=Count("id"))
        .filter(copies__gt=1)
        .values_list("session_id", flat=True)
    )
    return set(shared)


def session_or_404(request: HttpRequest, session_id: str) -> AgentSession:
    """The session with this header id: the copy ``?copy=<pk>`` names, else the one synced last.

    Only the sessions the user may see (treeview/access.py): any other is a 404, as if it did not exist.
    """
    form = CopyForm(request.GET)
    if not form.is_valid():
        raise Http404("malformed copy")
    copy = form.cleaned_data["copy"]
    sessions = visible_sessions(request.user, AgentSession.objects.with_first_prompt())
    if copy is not None:
        session = sessions.filter(session_id=session_id, pk=copy).first()
    else:
        session = sessions.by_session_id(session_id)  # type: ignore[attr-defined]
    if session is None:
        raise Http404("no imported session has this id")
    return session


def refusal(request: HttpRequest, session: AgentSession, action: str) -> HttpResponse | None:
    """``None`` when the user may take ``action`` on ``session`` (treeview/access.py), else the 403 that says
    why (the user sees the session: it is no secret that it exists)."""
    if can(request.user, session, action):
        return None
    return HttpResponse(REFUSALS[action], status=403, content_type="text/plain; charset=utf-8")


def copy_param(request: HttpRequest) -> int | None:
    form = CopyForm(request.GET)
    return form.cleaned_data["copy"] if form.is_valid() else None


def htmx_target(request: HttpRequest) -> str | None:
    htmx = getattr(request, "htmx", None)
    if not htmx or htmx.history_restore_request:
        return None
    return str(htmx.target or "")
