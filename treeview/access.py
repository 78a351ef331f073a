"""Who may see and change which session: the one place the views, the search and the websocket ask.

Rules (issue 6): a session is visible to its owner, to superusers, and by its ``visibility`` to everyone
signed in (``signed_in``), to the members of its ``teams`` (``teams``) or to nobody else (``private``).
Sessions without an owner were imported from the agents' directories ("site" sessions); they start visible to
everyone signed in and only superusers manage them. The owner, superusers and the admins of a team the session
is shared with change its visibility. In single-user mode (``ARBOR_SINGLE_USER``) everything is allowed.

Seeing a session is not writing to it. What a user may do with a session they see is one of :data:`ACTIONS`,
asked with :func:`can`: everyone who sees it reads it, and by default comments and reviews
(``ARBOR_VIEWER_RIGHTS``); moving its leaf (and persisting the position), labelling entries, forking and
public share links change the agent's file or directory or publish the session, so they belong to its owner,
superusers and the people the owner grants "can write" (:class:`~treeview.models.SessionGrant`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.db.models import Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.utils.functional import SimpleLazyObject
from django.utils.http import urlencode

from treeview.models import AgentSession, Membership, SessionGrant, Team

#: The user every request acts as in single-user mode.
LOCAL_USERNAME = "local"


def local_user() -> Any:
    """The superuser "local" (created on first use, without a usable password: nobody logs in as it)."""
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(
        username=LOCAL_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def sees_everything(user: Any) -> bool:
    """Single-user mode, or an active superuser. Checked first, so the single-user case queries nothing."""
    return bool(settings.ARBOR_SINGLE_USER or (user.is_active and user.is_superuser))


def _signed_in(user: Any) -> bool:
    return bool(user is not None and user.is_authenticated and user.is_active)


def _visible(user: Any) -> Q:
    shared_with_my_teams = AgentSession.teams.through.objects.filter(team__memberships__user=user).values(
        "agentsession_id"
    )
    return (
        Q(owner=user)
        | Q(visibility=AgentSession.Visibility.SIGNED_IN)
        | Q(visibility=AgentSession.Visibility.TEAMS, pk__in=shared_with_my_teams)
    )


def session_scope(user: Any) -> QuerySet[AgentSession] | None:
    """The sessions ``user`` may see, or ``None`` when that is all of them (no filter needed)."""
    if sees_everything(user):
        return None
    if not _signed_in(user):
        return AgentSession.objects.none()
    return AgentSession.objects.filter(_visible(user))


def visible_sessions(user: Any, queryset: QuerySet[AgentSession] | None = None) -> QuerySet[AgentSession]:
    """``queryset`` (default: every session) narrowed to the sessions ``user`` may see."""
    queryset = AgentSession.objects.all() if queryset is None else queryset
    if sees_everything(user):
        return queryset
    if not _signed_in(user):
        return queryset.none()
    return queryset.filter(_visible(user))


def can_view(user: Any, session: AgentSession) -> bool:
    if sees_everything(user):
        return True
    if not _signed_in(user):
        return False
    if session.owner_id == user.pk or session.visibility == AgentSession.Visibility.SIGNED_IN:
        return True
    return visible_sessions(user).filter(pk=session.pk).exists()


# -- rights per action -------------------------------------------------------------------------------------

VIEW = "view"
COMMENT = "comment"
REVIEW = "review"
#: Move the leaf (``/tree`` over the websocket, a summary) and persist the position for the agent.
NAVIGATE = "navigate"
#: Label entries (written to the agent's file with write-back on); a review's mirror label too.
LABEL = "label"
#: Branch a new session (next to the agent's file with write-back on).
FORK = "fork"
#: Make a public share link.
SHARE_PUBLIC = "share_public"
ACTIONS = (VIEW, COMMENT, REVIEW, NAVIGATE, LABEL, FORK, SHARE_PUBLIC)
#: What "can write" grants (and what the owner always has) beyond what every viewer has.
WRITE_ACTIONS = frozenset({COMMENT, REVIEW, NAVIGATE, LABEL, FORK, SHARE_PUBLIC})
#: Why an action is refused, for the page (a disabled control's title) and the refusals.
REFUSALS = {
    VIEW: "You may not see this session.",
    COMMENT: "Only the session's owner and the people they let write may comment here.",
    REVIEW: "Only the session's owner and the people they let write may review branches here.",
    NAVIGATE: "Only the session's owner and the people they let write may move its leaf.",
    LABEL: "Only the session's owner and the people they let write may label its entries.",
    FORK: "Only the session's owner and the people they let write may branch it.",
    SHARE_PUBLIC: "Only the session's owner and the people they let write may make public links to it.",
}


def viewer_rights() -> frozenset[str]:
    """What everyone who sees a session may do (``ARBOR_VIEWER_RIGHTS``, read at each call)."""
    return frozenset({VIEW, *settings.ARBOR_VIEWER_RIGHTS})


def rights(user: Any, session: AgentSession) -> frozenset[str]:
    """Every action of :data:`ACTIONS` ``user`` may take on ``session`` (empty: they may not see it)."""
    if sees_everything(user):
        return frozenset(ACTIONS)
    if not _signed_in(user) or not can_view(user, session):
        return frozenset()
    if session.owner_id is not None and session.owner_id == user.pk:
        return frozenset(ACTIONS)
    if SessionGrant.objects.filter(session=session.pk, user=user.pk).exists():
        return viewer_rights() | WRITE_ACTIONS
    return viewer_rights()


def can(user: Any, session: AgentSession, action: str) -> bool:
    """May ``user`` take ``action`` (one of :data:`ACTIONS`) on ``session``?"""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    if action in viewer_rights():
        return can_view(user, session)
    return action in rights(user, session)


def writable(user: Any, sessions: QuerySet[AgentSession], action: str) -> set[int]:
    """The pks of ``sessions`` (already narrowed to what ``user`` sees) on which ``user`` may take ``action``:
    one query for a list of sessions."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}")
    if sees_everything(user) or action in viewer_rights():
        return set(sessions.values_list("pk", flat=True))
    if not _signed_in(user):
        return set()
    granted = SessionGrant.objects.filter(user=user.pk).values("session_id")
    return set(sessions.filter(Q(owner=user) | Q(pk__in=granted)).values_list("pk", flat=True))


def can_grant(user: Any, session: AgentSession) -> bool:
    """May ``user`` give or take back "can write" on ``session``: its owner and superusers (a session without
    an owner: superusers only)."""
    if sees_everything(user):
        return True
    return _signed_in(user) and session.owner_id is not None and session.owner_id == user.pk


def can_choose_rules(user: Any, session: AgentSession) -> bool:
    """May ``user`` choose whose rules ``session`` is read by (oh-my-pi, pi, or detected): its owner and
    superusers (a session without an owner: superusers only), as for :func:`can_grant`."""
    return can_grant(user, session)


def can_manage(user: Any, session: AgentSession) -> bool:
    """May ``user`` change who sees ``session``: its owner, a superuser, an admin of a team it is shared
    with."""
    if sees_everything(user):
        return True
    if not _signed_in(user):
        return False
    if session.owner_id is not None and session.owner_id == user.pk:
        return True
    return (
        session.visibility == AgentSession.Visibility.TEAMS
        and Membership.objects.filter(
            user=user, role=Membership.Role.ADMIN, team__sessions=session.pk
        ).exists()
    )


def invite_teams(user: Any) -> QuerySet[Team]:
    """The teams ``user`` may invite people into: every team for staff, else those they administer."""
    if user.is_active and (user.is_staff or user.is_superuser):
        return Team.objects.order_by("name")
    admin = Membership.Role.ADMIN
    return Team.objects.filter(memberships__user=user, memberships__role=admin).order_by("name")


def may_invite(user: Any) -> bool:
    """Staff invite anyone; a team admin invites into their teams."""
    if not (user.is_authenticated and user.is_active):
        return False
    return bool(user.is_staff or user.is_superuser or invite_teams(user).exists())


def may_invite_into(user: Any, team: Team | None) -> bool:
    """May ``user`` make an invite into ``team`` (``None``: into no team) now? Staff anywhere; a team admin
    into their teams only. Asked again when the invite is used: an invite lives only while its maker could
    still make it (demoted, removed from the team, deactivated or deleted: its invites open nothing)."""
    if user is None or not (user.is_authenticated and user.is_active):
        return False
    if user.is_staff or user.is_superuser:
        return True
    return team is not None and administers(user, team)


def visible_teams(user: Any) -> QuerySet[Team]:
    """The teams ``user`` sees on the Teams page: their own (everything for who sees everything)."""
    if sees_everything(user):
        return Team.objects.order_by("name")
    if not _signed_in(user):
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def administers(user: Any, team: Team) -> bool:
    """May ``user`` change ``team``'s settings (its secret strings): a team admin, a superuser."""
    if sees_everything(user):
        return True
    if not _signed_in(user):
        return False
    return Membership.objects.filter(user=user, team=team, role=Membership.Role.ADMIN).exists()


# -- requests ----------------------------------------------------------------------------------------------


class AccessMiddleware(LoginRequiredMiddleware):
    """Single-user mode: every request acts as "local". Otherwise a view needs a signed-in user unless it is
    marked ``login_not_required`` (login, invite); htmx requests get a 401 with ``HX-Redirect`` to the login
    page instead of the login page swapped into a fragment."""

    def process_request(self, request: HttpRequest) -> None:
        if settings.ARBOR_SINGLE_USER:
            # Lazy: a page that never looks at the user costs no query.
            request.user = SimpleLazyObject(local_user)

    def process_view(self, request: HttpRequest, view_func: Any, view_args: Any, view_kwargs: Any) -> Any:
        if settings.ARBOR_SINGLE_USER:
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    def handle_no_permission(self, request: HttpRequest, view_func: Any) -> HttpResponse:
        if request.headers.get("HX-Request") != "true":
            return super().handle_no_permission(request, view_func)
        # Back to the page the fragment was asked from, once signed in (a path on this site only).
        current = urlsplit(request.headers.get("HX-Current-URL", ""))
        next_url = (current.path or "/") + (f"?{current.query}" if current.query else "")
        if not next_url.startswith("/") or next_url.startswith("//"):
            next_url = "/"
        login = resolve_url(self.get_login_url(view_func))
        response = HttpResponse("Sign in to continue.", status=401, content_type="text/plain")
        response["HX-Redirect"] = f"{login}?{urlencode({self.redirect_field_name: next_url})}"
        return response


def context(request: HttpRequest) -> dict[str, Any]:
    """Template context: whether the site runs in single-user mode (no user menu, no sharing controls), and
    whether the user may invite people (asked only when a template looks)."""
    return {"single_user": settings.ARBOR_SINGLE_USER, "may_invite": lambda: may_invite(request.user)}
