"""Share links: the form with its redaction preview, the public read-only branch and its downloads, and the
Shared links page (revoke, and the site-wide switch for superusers)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from functools import wraps
from typing import Any

from csp.decorators import csp
from django import forms
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from treeview import explorer
from treeview.access import SHARE_PUBLIC, sees_everything, visible_sessions
from treeview.models import AgentSession, Entry, ShareLink
from treeview.redaction import Hit, mask_for
from treeview.render import build_tool_call_map, render_entry
from treeview.render.transcript import transcript_pieces
from treeview.services import review as review_service
from treeview.services import share, share_scan
from treeview.services.export import header_line
from treeview.session.jsonl import dumps, loads
from treeview.session.selector import FILTER_MODES
from treeview.tree_index import row_texts_of
from treeview.views.common import htmx_target, refusal, session_or_404
from treeview.views.downloads import streamed

CREATE_TEMPLATE = "treeview/share_create.html"
PUBLIC_TEMPLATE = "treeview/share_view.html"
LINKS_TEMPLATE = "treeview/shared_links.html"
NDJSON = "application/x-ndjson"
#: Entries of a shared branch drawn on its page at most (the downloads hold them all).
SHARE_PAGE = 500
#: Characters of context shown on each side of a hit in the preview.
CONTEXT_CHARS = 60

EXPIRY_CHOICES = [
    ("1h", "1 hour", timedelta(hours=1)),
    ("1d", "1 day", timedelta(days=1)),
    ("7d", "7 days", timedelta(days=7)),
    ("30d", "30 days", timedelta(days=30)),
    ("90d", "90 days", timedelta(days=90)),
]
EXPIRIES = {key: delta for key, _, delta in EXPIRY_CHOICES}

# Share pages show session content to anyone holding the link: nothing runs, nothing is framed or posted.
PUBLIC_CSP = {
    "default-src": ["'none'"],
    "style-src": ["'self'"],
    "img-src": ["'self'", "data:"],
    "script-src": ["'none'"],
    "base-uri": ["'none'"],
    "form-action": ["'none'"],
    "frame-ancestors": ["'none'"],
}


# -- forms -------------------------------------------------------------------------------------------------


class BranchForm(forms.Form):
    """Which branch the form shares: the session page's deep-link parameters."""

    leafId = forms.CharField(required=False, max_length=64)  # noqa: N815 (the session page's names)
    targetId = forms.CharField(required=False, max_length=64)  # noqa: N815
    filter = forms.ChoiceField(choices=[(m, m) for m in FILTER_MODES], required=False)
    q = forms.CharField(required=False, max_length=share.QUERY_MAX, strip=False)


class ShareForm(forms.Form):
    expires = forms.ChoiceField(
        choices=[(key, label) for key, label, _ in EXPIRY_CHOICES], initial="7d", label="Expires after"
    )
    max_views = forms.IntegerField(
        required=False, min_value=1, max_value=1_000_000, label="View limit", help_text="empty: no limit"
    )
    follows = forms.ChoiceField(
        choices=[
            ("frozen", "frozen at this moment"),
            ("follows", "follows new entries below this branch"),
        ],
        initial="frozen",
        widget=forms.RadioSelect,
        label="Content",
    )
    note = forms.CharField(
        required=False, max_length=share.NOTE_MAX, widget=forms.Textarea(attrs={"rows": 2})
    )
    unmask = forms.MultipleChoiceField(required=False, choices=[], widget=forms.CheckboxSelectMultiple)

    def __init__(self, *args: Any, hit_ids: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["unmask"].choices = [(hit_id, hit_id) for hit_id in hit_ids]


# -- creating a link ---------------------------------------------------------------------------------------


def _branch(request: HttpRequest, session: AgentSession, data: Any) -> tuple[str, str, str, str, int]:
    """(leaf, target, filter, search, branch length) from the query: unknown entries are a 404; a target off
    the leaf's branch shares the branch to the target (what the session page shows for it)."""
    form = BranchForm(data)
    if not form.is_valid():
        raise Http404("malformed branch")
    leaf = form.cleaned_data["leafId"] or session.leaf_id or ""
    target = form.cleaned_data["targetId"] or ""
    if not leaf:
        raise Http404("the session has no entries")
    path = share.branch_path(session, leaf)
    if not path:
        raise Http404("no entry with this id in the session")
    if target and target not in path:
        path = share.branch_path(session, target)
        if not path:
            raise Http404("no entry with this id in the session")
        leaf = target
    mode = form.cleaned_data["filter"] or "default"
    return leaf, target, mode, form.cleaned_data["q"], len(path)


def _hit_views(titles: dict[str, Any], hits: list[Hit]) -> list[dict[str, Any]]:
    """The preview's hits grouped by entry, each with a little context and its mask."""
    groups: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    for hit in hits:
        if hit.id in seen:
            continue  # the same secret again in the same entry: one hit id, one checkbox
        seen.add(hit.id)
        entry = titles.get(hit.entry_id)
        group = groups.setdefault(
            hit.entry_id,
            {"entry_id": hit.entry_id, "title": render_entry(entry).title if entry else None, "hits": []},
        )
        group["hits"].append(
            {
                "hit": hit,
                "before": hit.before[-CONTEXT_CHARS:],
                "after": hit.after[:CONTEXT_CHARS],
                "mask": mask_for(hit),
            }
        )
    return list(groups.values())


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


@require_http_methods(["GET", "HEAD", "POST"])
def share_create(request: HttpRequest, session_id: str) -> HttpResponse:
    """The share form for one branch, with the redaction preview; POST makes the link and shows it once."""
    session = session_or_404(request, session_id)
    if (refused := refusal(request, session, SHARE_PUBLIC)) is not None:
        return refused
    data = request.POST if request.method == "POST" else request.GET
    leaf, target, mode, query, length = _branch(request, session, data)
    strings = share.team_strings(request.user, session)
    hits = share_scan.cached_branch_hits(session, leaf, strings)
    inline = (
        length <= share_scan.INLINE_ENTRIES or request.GET.get("scan") == "now"
    )  # "now": without JavaScript
    if hits is None and (request.method == "POST" or inline):
        hits = share_scan.branch_hits(session, leaf, strings)
    scanning = hits is None  # the page runs the scan over its socket, shows progress, then reloads
    hits = hits or []
    hit_ids = [hit.id for hit in hits]
    enabled = share.sharing_enabled()
    form = ShareForm(request.POST if request.method == "POST" else None, hit_ids=hit_ids)
    branch_query = {"leafId": leaf, "targetId": target, "filter": mode, "q": query}
    # The branch in words, as the session page's header names it (a trailing label: the entry above names it).
    anchor = review_service.branch_leaf(session, leaf)
    context: dict[str, Any] = {
        "session": session,
        "leaf_id": leaf,
        "branch_name": review_service.branch_names(session, [anchor]).get(anchor, ""),
        "target_id": target,
        "mode": mode,
        "query": query,
        "entry_count": length,
        "scanning": scanning,
        "scan_now_url": "?" + urlencode({**branch_query, "copy": session.pk, "scan": "now"}),
        "groups": _hit_views(share_scan.hit_titles(session, hits), hits),
        "hit_count": len(hits),
        "enabled": enabled,
        "form": form,
        "error": None,
        "link_url": None,
        "copy_query": f"?copy={session.pk}",
        "session_url": reverse("treeview:session_detail", kwargs={"session_id": session.session_id})
        + "?"
        + urlencode({"copy": session.pk, "leafId": leaf}),
    }
    status = 200
    if request.method == "POST":
        if not form.is_valid():
            status = 400
        else:
            data = form.cleaned_data
            try:
                link, token = share.create_link(
                    request.user,
                    session,
                    leaf_id=leaf,
                    target_id=target,
                    filter_mode=mode,
                    query=query,
                    expires_in=EXPIRIES[data["expires"]],
                    max_views=data["max_views"],
                    follows=data["follows"] == "follows",
                    note=data["note"],
                    unmasked=data["unmask"],
                )
            except share.ShareError as error:
                context["error"] = str(error)
                status = 400
            else:
                context["link"] = link
                context["link_url"] = request.build_absolute_uri(
                    reverse("treeview:share_view", kwargs={"token": token})
                )
    return _no_store(TemplateResponse(request, CREATE_TEMPLATE, context, status=status))


# -- the public view ---------------------------------------------------------------------------------------


def public(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page anyone holding a link may open: no login, not indexed, never cached, no referrer, strict CSP."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        response["X-Robots-Tag"] = "noindex, nofollow"
        response["Referrer-Policy"] = "no-referrer"
        response["Cache-Control"] = "no-store"
        return response

    return login_not_required(require_GET(csp(PUBLIC_CSP)(wrapped)))


def _refused(request: HttpRequest, refusal: share.ShareRefused) -> HttpResponse:
    return TemplateResponse(request, PUBLIC_TEMPLATE, {"refusal": refusal}, status=refusal.status)


def _open(token: str) -> ShareLink:
    """The link, with this view counted. Raises ``ShareRefused``."""
    return share.count_view(share.resolve(token))


def _title(link: ShareLink) -> str:
    session = AgentSession.objects.with_first_prompt().get(pk=link.session_id)
    return str(share.redact_value(link, {"title": session.display_title}).get("title", ""))


@public
def share_view(request: HttpRequest, token: str) -> HttpResponse:
    """The shared branch, read-only: its entries (redacted) under the link's filter and search, the target
    highlighted; nothing that leads to the rest of the session."""
    try:
        link = _open(token)
    except share.ShareRefused as refusal:
        return _refused(request, refusal)
    # Only the page's entries are read, scanned and drawn: a branch can hold 100,000 entries.
    leaf, path = share.link_path(link)
    shown = share.shown_ids(link, leaf, path)
    total = len(shown)
    stop = total
    if link.target_id in shown:
        stop = min(total, max(shown.index(link.target_id) + SHARE_PAGE // 2, SHARE_PAGE))
    start = max(0, stop - SHARE_PAGE)
    window = shown[start:stop]
    redacted = list(share.redact_entries(link, share.load_entries(link, _with_calls(link, path, window))))
    tool_calls = build_tool_call_map([item.entry for item in redacted])
    on_page = set(window)
    views = [
        (item.entry_id, render_entry(item.entry, tool_calls)) for item in redacted if item.entry_id in on_page
    ]
    context = {
        "link": link,
        "title": _title(link),
        "shared_by": link.created_by.get_username() if link.created_by else "",
        "items": views,
        "start": start,
        "stop": stop,
        "shown": total,
        "branch_length": len(path),
        "filtered": link.filter_mode != "default" or bool(link.query),
        "redaction_count": sum(1 for item in redacted if item.changed),
        "jsonl_url": reverse("treeview:share_jsonl", kwargs={"token": token}),
        "md_url": reverse("treeview:share_markdown", kwargs={"token": token}),
    }
    return TemplateResponse(request, PUBLIC_TEMPLATE, context)


def _with_calls(link: ShareLink, path: list[str], window: list[str]) -> list[str]:
    """The window's ids, plus the path entry before each (where a tool result's call is), in path order."""
    index = {entry_id: i for i, entry_id in enumerate(path)}
    wanted = {i for entry_id in window if (i := index.get(entry_id)) is not None}
    wanted |= {i - 1 for i in wanted if i > 0}
    return [path[i] for i in sorted(wanted)]


def _file_stem(link: ShareLink) -> str:
    return f"shared-branch-{link.lookup}"


@public
def share_jsonl(request: HttpRequest, token: str) -> HttpResponse:
    """The shared branch as a session file: the session's header (redacted), then the branch's entries; a
    line redaction left alone is the stored line byte for byte."""
    try:
        link = _open(token)
    except share.ShareRefused as refusal:
        return _refused(request, refusal)
    header_raw = header_line(link.session)  # (a header-less file's made-up header: the download opens)
    try:
        header = loads(header_raw)
    except ValueError:
        header = None
    if isinstance(header, dict):
        redacted_header = share.redact_value(link, header)
        if redacted_header != header:
            header_raw = dumps(redacted_header)

    def lines() -> Iterator[str]:
        yield header_raw + "\n"
        for batch in share.redacted_batches(link):
            yield "".join(item.raw + "\n" for item in batch)

    # Streamed a batch at a time, at the reader's pace: the whole branch is never held in memory.
    return streamed(request, lines(), NDJSON, _file_stem(link) + ".jsonl")


@public
def share_markdown(request: HttpRequest, token: str) -> HttpResponse:
    """The shared branch as a readable Markdown transcript (redacted), streamed like the session file."""
    try:
        link = _open(token)
    except share.ShareRefused as refusal:
        return _refused(request, refusal)
    entries = (item.entry for batch in share.redacted_batches(link) for item in batch)
    pieces = transcript_pieces(entries, title=_title(link), note=link.note)
    return streamed(request, pieces, "text/markdown; charset=utf-8", _file_stem(link) + ".md")


# -- the Shared links page ---------------------------------------------------------------------------------


#: How much of a branch's last entry names the branch on the Shared links page.
BRANCH_NAME_CHARS = 70


def _branch_names(links: list[ShareLink], sessions: dict[int, AgentSession]) -> dict[tuple[int, str], str]:
    """(session pk, leaf id) → the leaf entry's row text as the session's tree words it (its agent's rules),
    shortened: a branch named by words, not its id. Only for the sessions the user still sees; one query per
    chunk of links, and the lines of the leaves whose agent words them otherwise than the stored text."""
    pairs = sorted({(link.session_id, link.leaf_id) for link in links if link.session_id in sessions})
    rows = []
    for chunk in share.chunks(pairs):
        query = Entry.objects.filter(
            session_id__in={pk for pk, _ in chunk}, entry_id__in={leaf for _, leaf in chunk}
        )
        rows += list(query.values_list("session_id", "entry_id", "text"))
    texts = {(session_pk, entry_id): text for session_pk, entry_id, text in rows}
    by_session: dict[int, list[str]] = {}
    for session_pk, entry_id in texts:
        by_session.setdefault(session_pk, []).append(entry_id)
    for session_pk, entry_ids in by_session.items():
        session = sessions[session_pk]
        worded = row_texts_of(session, session.rules.agent, entry_ids, explorer.cached_forest(session))
        texts.update({(session_pk, entry_id): text for entry_id, text in worded.items()})
    names = {}
    for key, text in texts.items():
        words = " ".join(text.split())
        if len(words) > BRANCH_NAME_CHARS:
            words = words[: BRANCH_NAME_CHARS - 1].rstrip() + "…"
        names[key] = words
    return names


def _links_context(request: HttpRequest) -> dict[str, Any]:
    user = request.user
    links = list(share.links_for(user))
    # Titles (a first prompt, maybe) only of the sessions the user still sees.
    seen: dict[int, AgentSession] = {}
    for chunk in share.chunks(sorted({link.session_id for link in links})):
        visible = visible_sessions(user, AgentSession.objects.with_first_prompt().filter(pk__in=chunk))
        seen.update((session.pk, session) for session in visible)
    titles = {pk: session.display_title for pk, session in seen.items()}
    branches = _branch_names(links, seen)
    return {
        "rows": [
            {
                "link": link,
                "title": titles.get(link.session_id),
                "branch": branches.get((link.session_id, link.leaf_id), ""),
                "state": share.current_state(link),
                "can_revoke": share.may_revoke(user, link),
            }
            for link in links
        ],
        "all_links": sees_everything(user),
        "may_switch": sees_everything(user),
        "enabled": share.sharing_enabled(),
    }


def _links_response(request: HttpRequest) -> HttpResponse:
    if htmx_target(request) is not None:
        return TemplateResponse(request, LINKS_TEMPLATE + "#shared-links", _links_context(request))
    return HttpResponseRedirect(reverse("treeview:shared_links"))


@require_GET
@vary_on_headers("HX-Request")
def shared_links(request: HttpRequest) -> HttpResponse:
    """My links (superusers: everyone's, with who shared): branch, note, dates, views, state; revoke."""
    template = LINKS_TEMPLATE + "#shared-links" if htmx_target(request) is not None else LINKS_TEMPLATE
    return _no_store(TemplateResponse(request, template, _links_context(request)))


@require_POST
@vary_on_headers("HX-Request")
def revoke_link(request: HttpRequest, pk: int) -> HttpResponse:
    """Revoke a link (its creator, a manager of its session, a superuser); anyone else gets a 404."""
    link = get_object_or_404(ShareLink.objects.select_related("session"), pk=pk)
    try:
        share.revoke(request.user, link)
    except PermissionError:
        raise Http404("no such link") from None
    return _links_response(request)


class SwitchForm(forms.Form):
    public_sharing = forms.BooleanField(required=False)


@require_POST
@vary_on_headers("HX-Request")
def sharing_switch(request: HttpRequest) -> HttpResponse:
    """Superusers: turn public sharing on or off for the whole site."""
    if not sees_everything(request.user):
        raise PermissionDenied("only superusers turn sharing on or off")
    form = SwitchForm(request.POST)
    if not form.is_valid():
        raise PermissionDenied("malformed form")
    share.set_sharing(form.cleaned_data["public_sharing"])
    return _links_response(request)
