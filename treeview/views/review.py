"""Review: the status of a branch (set from the session page) and the Review page (what waits for me)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.core.exceptions import BadRequest
from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from treeview import explorer
from treeview.access import LABEL, REVIEW, can, sees_everything, visible_sessions
from treeview.forms import FILTER_CHOICES
from treeview.models import AgentSession, Comment, Entry, ReviewStatus, Team
from treeview.services import append
from treeview.services import review as review_service
from treeview.session.branches import CONVERSATIONAL_TYPES
from treeview.session.selector import FilterMode
from treeview.views.common import copy_note, copy_param, htmx_target, refusal, session_or_404, shared_ids
from treeview.views.detail import DETAIL_TEMPLATE, PageState, _detail_context
from treeview.views.subagents import MAX_DEPTH, SubagentNode, subagent_trees, top_level

__all__ = ["review_page", "set_review_status"]

STATUS_TEMPLATE = "treeview/_review_status.html"
REVIEW_TEMPLATE = "treeview/review.html"
#: Sessions with branches waiting for review shown at once, and branches listed per session.
WAITING_SESSIONS = 10
BRANCHES_PER_SESSION = 8
#: Sessions looked at per request to find those (each costs a look at its entries), whatever they hold.
WAITING_SCAN = 100
WAITING_ENTRIES = 500_000
WAITING_CHUNK = 20
#: Rows of the needs-changes and mentions sections per page.
SECTION_ROWS = 25
#: The fields a session's rules (``AgentSession.rules``) are decided from, and what reading its rows needs.
RULES_FIELDS = (
    "header_raw",
    "title_slot_raw",
    "agent_rules",
    "imported_at",
    "next_seq",
    "entry_count",
    "format_version",
)

Status = ReviewStatus.Status


class ReviewForm(forms.Form):
    """Set the review status of the branch ending at ``leaf_id``; the view fields say which page to return."""

    leaf_id = forms.CharField(max_length=64)
    status = forms.ChoiceField(choices=Status.choices)
    filter = forms.ChoiceField(choices=FILTER_CHOICES, required=False)
    q = forms.CharField(required=False, max_length=500, strip=False)
    leafId = forms.CharField(required=False, max_length=64)  # noqa: N815 (the page's parameter name)
    targetId = forms.CharField(required=False, max_length=64)  # noqa: N815
    tab = forms.CharField(required=False, max_length=16)


@require_POST
@vary_on_headers("HX-Request")
def set_review_status(request: HttpRequest, session_id: str) -> HttpResponse:
    """Set a branch's review status (who may review: treeview/access.py), then show the control again with
    the tree (htmx), or go back to the session page (no JavaScript). The mirror label goes into the session
    only for who may label it."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, REVIEW)) is not None:
        return refused
    form = ReviewForm(request.POST)
    if not form.is_valid():
        raise BadRequest("malformed review form")
    data = form.cleaned_data
    try:
        result = review_service.set_review_status(
            session,
            data["leaf_id"],
            data["status"],
            request.user,
            write_label=can(request.user, session, LABEL),
        )
    except append.UnknownEntry:
        raise Http404("no entry with this id in the session") from None
    session.refresh_from_db()
    state = PageState(
        session=session,
        mode=cast(FilterMode, data["filter"] or "default"),
        query=data["q"],
        leaf_id=data["leafId"] or session.leaf_id,
        leaf_param=data["leafId"] or "",
        target_id=data["targetId"] or None,
        start=None,
        end=None,
        copy=copy_param(request),
        tab="context" if data["tab"] == "context" else "",
    )
    if htmx_target(request) is None:
        return HttpResponseRedirect(state.url())
    tree = explorer.explorer_tree(session, state.leaf_id)
    if state.leaf_id is not None and state.leaf_id not in tree.flat.by_id:
        raise Http404("no entry with this id in the session")
    if state.target_id is not None and state.target_id not in tree.flat.by_id:
        raise Http404("no entry with this id in the session")
    context = {**_detail_context(request, state, tree), "review_result": result}
    control = render_to_string(STATUS_TEMPLATE + "#review-status", context, request)
    # The tree too: its badges, and the mirror label appended below the session's leaf.
    tree_html = render_to_string(DETAIL_TEMPLATE + "#tree", {**context, "oob": True}, request)
    return HttpResponse(control + tree_html)


# -- the Review page -----------------------------------------------------------------------------------------


class ReviewPageForm(forms.Form):
    """The Review page's query: one of my teams, and where each section's list goes on from."""

    team = forms.IntegerField(min_value=1, required=False)
    waiting = forms.IntegerField(min_value=0, required=False)
    changes = forms.IntegerField(min_value=1, required=False)
    mentions = forms.IntegerField(min_value=1, required=False)


@dataclass(frozen=True)
class BranchLink:
    leaf_id: str
    text: str
    url: str | None
    status: str = ""
    grown: bool = False  # the branch went on after its status was set

    @property
    def status_label(self) -> str:
        return str(Status(self.status).label) if self.status else ""


@dataclass(frozen=True)
class SessionBranches:
    session: AgentSession
    url: str | None
    branches: list[BranchLink]
    more: int
    copy: str = ""  # which copy, when the user sees this session id more than once
    #: The subagent transcripts below it with branches to list (nested, as the session list nests them).
    subagents: list[SessionBranches] = field(default_factory=list)
    #: For a subagent transcript listed on its own (its branch in "needs changes"): the session above it.
    parent: AgentSession | None = None
    parent_url: str | None = None


@dataclass(frozen=True)
class Mention:
    comment: Comment
    session: AgentSession
    url: str | None
    excerpt: str
    #: For a comment on a subagent transcript: the session of its own it was spawned under (the list's row).
    parent: AgentSession | None = None
    parent_url: str | None = None


def _session_url(session: AgentSession, shared: set[str], **params: str) -> str | None:
    query = {"copy": str(session.pk)} if session.session_id in shared else {}
    query.update(params)
    try:
        base = reverse("treeview:session_detail", kwargs={"session_id": session.session_id})
    except NoReverseMatch:
        return None
    return f"{base}?{urlencode(query)}" if query else base


def _newest_first(sessions: QuerySet[AgentSession]) -> QuerySet[AgentSession]:
    return sessions.order_by(F("last_timestamp").desc(nulls_last=True), "-id")


def _scope(user: Any, team: Team | None) -> QuerySet[AgentSession]:
    """The sessions the page may list: visible to ``user``, narrowed to those shared with ``team``."""
    sessions = visible_sessions(user, AgentSession.objects.all())
    if team is not None:
        sessions = sessions.filter(visibility=AgentSession.Visibility.TEAMS, teams=team)
    return sessions


def _waiting_candidates(user: Any, team: Team | None) -> QuerySet[AgentSession]:
    """Sessions others share with my teams or with everyone signed in (in single-user mode: every one)."""
    sessions = _scope(user, team)
    if not settings.ARBOR_SINGLE_USER:
        mine = AgentSession.teams.through.objects.filter(team__memberships__user=user).values(
            "agentsession_id"
        )
        sessions = sessions.filter(
            Q(visibility=AgentSession.Visibility.SIGNED_IN)
            | Q(visibility=AgentSession.Visibility.TEAMS, pk__in=mine)
        ).exclude(owner=user)
    return _newest_first(sessions)


def _waiting(user: Any, team: Team | None, offset: int) -> tuple[list[SessionBranches], int | None]:
    """Sessions with unreviewed branches from ``offset`` on, newest first, and where the next page starts
    (``None``: no more). Bounded: a request looks at ``WAITING_SCAN`` sessions at most, and at sessions of
    ``WAITING_ENTRIES`` entries in all, their subagent transcripts' included (at least one session): finding
    a session's branches reads its entries and its transcripts'."""
    # Sessions of their own: a subagent transcript is listed under the session that spawned it.
    candidates = (
        top_level(_waiting_candidates(user, team), user)
        .with_first_prompt()
        # (the header and the title slot decide the session's rules, which word its branches' names)
        .defer("prefix_raw", "tail_raw", "pending_raw", "warnings")
    )
    found: list[SessionBranches] = []
    position = offset
    scanned = entries = 0
    while len(found) < WAITING_SESSIONS and scanned < WAITING_SCAN and entries < WAITING_ENTRIES:
        chunk = list(candidates[position : position + WAITING_CHUNK])
        if not chunk:
            return found, None
        # A session's branches are found with those of the subagent transcripts below it: its entries and
        # theirs are read. The first session of a request is looked at whatever its size.
        trees = subagent_trees(chunk, user, with_rules=True)  # (their rules word their branches' names)
        take = 0
        while take < len(chunk):
            size = chunk[take].entry_count + sum(
                node.session.entry_count for node in _walk(trees.get(chunk[take].pk, []))
            )
            if (scanned or take) and entries + size > WAITING_ENTRIES:
                break
            entries += size
            take += 1
        if take == 0:
            break  # the next session waits for the next request
        chunk = chunk[:take]
        taken = {session.pk for session in chunk}
        trees = {pk: nodes for pk, nodes in trees.items() if pk in taken}
        below = [node.session for nodes in trees.values() for node in _walk(nodes)]
        everyone = [*chunk, *below]
        leaves = review_service.session_leaves(everyone)
        reviewed = set(
            ReviewStatus.objects.filter(session__in=everyone, status__in=review_service.REVIEWED).values_list(
                "session_id", "leaf_id"
            )
        )
        shared = shared_ids((s.session_id for s in everyone), user)

        for session in chunk:
            position += 1
            scanned += 1
            waiting = _waiting_group(session, trees.get(session.pk, []), leaves, reviewed, shared)
            if waiting is None:
                continue
            found.append(waiting)
            if len(found) >= WAITING_SESSIONS:
                break
    more = position if candidates[position : position + 1].exists() else None
    return found, more


def _waiting_group(
    session: AgentSession,
    nodes: list[SubagentNode],
    leaves: dict[int, list[review_service.Leaf]],
    reviewed: set[tuple[int, str]],
    shared: set[str],
) -> SessionBranches | None:
    """The session's open branches with those of its subagent transcripts (``nodes``) nested; ``None`` when
    nothing waits in any of them."""
    open_leaves = [leaf for leaf in leaves.get(session.pk, []) if (session.pk, leaf.entry_id) not in reviewed]
    nested = [
        found
        for node in nodes
        if (found := _waiting_group(node.session, node.children, leaves, reviewed, shared)) is not None
    ]
    if not open_leaves and not nested:
        return None
    branches = [
        BranchLink(leaf.entry_id, leaf.text, _session_url(session, shared, leafId=leaf.entry_id))
        # Named as the session's tree words its rows (only the branches shown are read).
        for leaf in review_service.worded(session, open_leaves[:BRANCHES_PER_SESSION])
    ]
    return SessionBranches(
        session,
        _session_url(session, shared),
        branches,
        max(0, len(open_leaves) - BRANCHES_PER_SESSION),
        copy_note(session) if session.session_id in shared else "",
        nested,
    )


def _walk(nodes: list[SubagentNode]) -> list[SubagentNode]:
    """Every node of these subagent trees (each before those below it)."""
    return [each for node in nodes for each in (node, *_walk(node.children))]


def _top_parents(sessions: list[AgentSession], user: Any) -> dict[int, AgentSession]:
    """Subagent transcript pk → the session of its own above it (up the ``subagent_of`` links, one query
    per level), or the outermost one ``user`` sees below an unseen one: the row the list nests it under."""
    pending: dict[int, int] = {s.pk: s.subagent_of_id for s in sessions if s.subagent_of_id is not None}
    top: dict[int, AgentSession] = {}
    for _ in range(MAX_DEPTH):
        if not pending:
            break
        rows = {
            p.pk: p
            for p in visible_sessions(user, AgentSession.objects.filter(pk__in=set(pending.values())))
            .with_first_prompt()
            .only("pk", "session_id", "title", "subagent_of")
        }
        going_on: dict[int, int] = {}
        for pk, parent_pk in pending.items():
            parent = rows.get(parent_pk)
            if parent is None:
                continue  # not visible: the outermost one seen stays
            top[pk] = parent
            if parent.subagent_of_id is not None:
                going_on[pk] = parent.subagent_of_id
        pending = going_on
    return top


def _needs_changes(user: Any, team: Team | None, page: int) -> tuple[list[SessionBranches], bool]:
    """Branches marked "needs changes" on my sessions (single-user mode: on every session), newest first."""
    sessions = _scope(user, team)
    if not settings.ARBOR_SINGLE_USER:
        sessions = sessions.filter(owner=user)
    grown = Entry.objects.filter(
        session=OuterRef("session"), parent_id=OuterRef("leaf_id"), type__in=CONVERSATIONAL_TYPES
    )
    rows = list(
        ReviewStatus.objects.filter(status=Status.NEEDS_CHANGES, session__in=sessions)
        .annotate(grown=Exists(grown))
        .order_by("-updated_at", "-pk")[(page - 1) * SECTION_ROWS : page * SECTION_ROWS + 1]
    )
    more = len(rows) > SECTION_ROWS
    rows = rows[:SECTION_ROWS]
    by_pk = {
        s.pk: s
        for s in AgentSession.objects.filter(pk__in={r.session_id for r in rows})
        .with_first_prompt()
        .only(
            "pk",
            "session_id",
            "title",
            "cwd",
            "last_timestamp",
            "agent_key",
            "subagent_kind",
            "subagent_of",
            # what the session's rules are decided from (they word the branches' names)
            *RULES_FIELDS,
        )
    }
    # A subagent transcript's branch is shown under the session of its own it was spawned under (its title
    # first), as "Mentioning me" shows a transcript's comments.
    parents = _top_parents(list(by_pk.values()), user)
    # Branches named by words: their last user prompt.
    texts: dict[tuple[int, str], str] = {}
    for pk in by_pk:
        leaf_ids = [r.leaf_id for r in rows if r.session_id == pk]
        names = review_service.branch_names(by_pk[pk], leaf_ids)
        texts.update({(pk, leaf): name for leaf, name in names.items()})
    shared = shared_ids((s.session_id for s in [*by_pk.values(), *parents.values()]), user)
    groups: list[SessionBranches] = []
    for row in rows:
        session = by_pk[row.session_id]
        link = BranchLink(
            row.leaf_id,
            texts.get((session.pk, row.leaf_id), ""),
            _session_url(session, shared, leafId=row.leaf_id),
            row.status,
            bool(getattr(row, "grown", False)),
        )
        if groups and groups[-1].session.pk == session.pk:
            groups[-1].branches.append(link)
        else:
            copy = copy_note(session) if session.session_id in shared else ""
            parent = parents.get(session.pk)
            parent_url = _session_url(parent, shared) if parent is not None else None
            groups.append(
                SessionBranches(
                    session,
                    _session_url(session, shared),
                    [link],
                    0,
                    copy,
                    parent=parent,
                    parent_url=parent_url,
                )
            )
    return groups, more


def _mentions(user: Any, team: Team | None, page: int) -> tuple[list[Mention], bool]:
    """Comments that mention me, in open threads of sessions I may see, newest first."""
    comments = (
        Comment.objects.filter(mentions=user, deleted_at=None, session__in=_scope(user, team))
        .filter(Q(parent=None, resolved_at=None) | Q(parent__isnull=False, parent__resolved_at=None))
        .select_related("author")
        .order_by("-created_at", "-pk")
    )
    rows = list(comments[(page - 1) * SECTION_ROWS : page * SECTION_ROWS + 1])
    more = len(rows) > SECTION_ROWS
    rows = rows[:SECTION_ROWS]
    by_pk = {
        s.pk: s
        for s in AgentSession.objects.filter(pk__in={c.session_id for c in rows})
        .with_first_prompt()
        .only("pk", "session_id", "title", "agent_key", "subagent_kind", "subagent_of")
    }
    # A comment on a subagent transcript is shown under the session it was spawned in, the transcript named.
    parents = _top_parents(list(by_pk.values()), user)
    shared = shared_ids((s.session_id for s in [*by_pk.values(), *parents.values()]), user)
    mentions = []
    for comment in rows:
        session = by_pk[comment.session_id]
        excerpt = " ".join(comment.body.split())
        if len(excerpt) > 160:
            excerpt = excerpt[:159].rstrip() + "…"
        parent = parents.get(session.pk)
        mentions.append(
            Mention(
                comment,
                session,
                _session_url(session, shared, targetId=comment.entry_id),
                excerpt,
                parent,
                _session_url(parent, shared) if parent is not None else None,
            )
        )
    return mentions, more


def _page_url(params: dict[str, Any], **changes: Any) -> str:
    merged = {**params, **changes}
    query = urlencode({k: v for k, v in merged.items() if v not in (None, "", 0)})
    base = reverse("treeview:review")
    return f"{base}?{query}" if query else base


@require_safe
@vary_on_headers("HX-Request")
def review_page(request: HttpRequest) -> HttpResponse:
    """What waits for the signed-in user: branches to review, changes asked on their sessions, mentions."""
    form = ReviewPageForm(request.GET)
    if not form.is_valid():
        raise BadRequest("malformed review query")
    data = form.cleaned_data
    user = request.user
    multi_user = not settings.ARBOR_SINGLE_USER
    my_teams = list(Team.objects.filter(memberships__user=user).order_by("name")) if multi_user else []
    team = None
    if data["team"] is not None:
        team = next((t for t in my_teams if t.pk == data["team"]), None)
        if team is None:
            raise Http404("not one of your teams")
    waiting, waiting_next = _waiting(user, team, data["waiting"] or 0)
    changes_page = data["changes"] or 1
    changes, changes_more = _needs_changes(user, team, changes_page)
    mentions_page = data["mentions"] or 1
    mentions, mentions_more = _mentions(user, team, mentions_page) if multi_user else ([], False)
    params = {"team": team.pk if team else None}
    context = {
        "multi_user": multi_user,
        "sees_everything": sees_everything(user),
        "teams": my_teams,
        "team": team,
        "waiting": waiting,
        "waiting_offset": data["waiting"] or 0,
        "waiting_more_url": _page_url(params, waiting=waiting_next) if waiting_next is not None else None,
        "waiting_first_url": _page_url(params) if data["waiting"] else None,
        "changes": changes,
        "changes_more_url": _page_url(params, changes=changes_page + 1) if changes_more else None,
        "changes_first_url": _page_url(params) if changes_page > 1 else None,
        "mentions": mentions,
        "mentions_more_url": _page_url(params, mentions=mentions_page + 1) if mentions_more else None,
        "mentions_first_url": _page_url(params) if mentions_page > 1 else None,
    }
    target = htmx_target(request)
    template = REVIEW_TEMPLATE + "#review-lists" if target == "review-lists" else REVIEW_TEMPLATE
    return TemplateResponse(request, template, context)
