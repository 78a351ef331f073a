"""Who sees what and who may do what (treeview/access.py): every URL of treeview/urls.py and the websocket,
for a signed-out visitor, a signed-in outsider, a team member, a team member the owner let write (grantee), a
team admin, the owner and a superuser; no foreign content in any refused answer; CSRF on every POST;
single-user mode on and off."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.reference import DATA, import_fixture
from tests.sockets import signed_in_socket
from tests.test_entry_block import _session_with_long_output
from treeview import access
from treeview.models import (
    AgentSession,
    Comment,
    Membership,
    ReviewStatus,
    SessionGrant,
    ShareLink,
    SiteSettings,
    Team,
)
from treeview.routing import websocket_urlpatterns
from treeview.services import comments as comment_service
from treeview.services import share as share_service
from treeview.services.sync import sync_file
from treeview.services.visibility import inherit_access, set_visibility

FIXTURE = "v3_branching_labels.jsonl"
UPLOADED = "v3_compaction.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
#: What no refused answer may contain: the session's title (its first prompt) and an entry's text.
SECRETS = ("Write a CLI argument parser in Python.", "Here is a first version using argparse.")
HTMX = {"HX-Request": "true"}
ROLES = ("anonymous", "outsider", "member", "grantee", "team_admin", "owner", "superuser")
ALLOWED = {"member", "grantee", "team_admin", "owner", "superuser"}
#: Who may write to the session (move its leaf, label, fork, public links): not every viewer.
WRITERS = {"grantee", "owner", "superuser"}
#: The right each session URL needs beyond seeing the session (treeview/access.py); the rest need to see it.
GET_RIGHTS = {"branch_picker": access.FORK, "share_create": access.SHARE_PUBLIC}
POST_RIGHTS = {
    "set_label": access.LABEL,
    "persist_position": access.NAVIGATE,
    "fork_session": access.FORK,
    "share_create": access.SHARE_PUBLIC,
    "set_review_status": access.REVIEW,
    "entry_comments": access.COMMENT,
    "comment_resolve": access.COMMENT,
    "comment_reopen": access.COMMENT,
    "comment_edit": access.COMMENT,
    "comment_delete": access.COMMENT,
}


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@dataclass
class World:
    session: AgentSession
    long: AgentSession
    team: Team
    users: dict[str, User]

    def client(self, role: str, **kwargs: Any) -> Client:
        client = Client(**kwargs)
        if role != "anonymous":
            client.force_login(self.users[role])
        return client


def _world(tmp_path: Path) -> World:
    users = {
        name: User.objects.create_user(name, password="pw-" + name)
        for name in ("outsider", "member", "grantee", "team_admin", "owner")
    }
    users["superuser"] = User.objects.create_superuser("superuser", password="pw-superuser")
    team = Team.objects.create(name="reviewers")
    Membership.objects.create(team=team, user=users["member"])
    Membership.objects.create(team=team, user=users["grantee"])
    Membership.objects.create(team=team, user=users["team_admin"], role=Membership.Role.ADMIN)
    Membership.objects.create(team=Team.objects.create(name="others"), user=users["outsider"])
    session = import_fixture(tmp_path, FIXTURE)
    sync_file(_session_with_long_output(tmp_path))
    long = AgentSession.objects.get(session_id="long-output")
    for each in (session, long):
        AgentSession.objects.filter(pk=each.pk).update(owner=users["owner"], visibility="teams")
        each.teams.set([team])
        SessionGrant.objects.create(session=each, user=users["grantee"], granted_by=users["owner"])
    return World(AgentSession.objects.get(pk=session.pk), AgentSession.objects.get(pk=long.pk), team, users)


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return _world(tmp_path)


def _body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def _block_url(world: World) -> str:
    page = world.client("owner").get("/s/long-output/?targetId=t1").content.decode()
    found = re.search(r'href="(/s/long-output/entry/t1/block/\d+/)"', page)
    assert found, "the owner sees the show-all link"
    return found.group(1)


def _get_urls(world: World) -> dict[str, str]:
    return {
        "session_detail": f"/s/{SID}/",
        "session_context": f"/s/{SID}/context/",
        "session_rows": f"/s/{SID}/rows/?start=0&count=5&filter=all",
        "entry_block": _block_url(world),
        "download_session": f"/s/{SID}/download.jsonl",
        "download_branch": f"/s/{SID}/branch/{world.session.leaf_id}.jsonl",
        "branch_picker": f"/s/{SID}/branch-picker/",
        "search_open": f"/search/open/?session={world.session.pk}&entry=b2000002",
        "entry_comments": f"/s/{SID}/entry/b2000002/comments/",
        "share_create": f"/s/{SID}/share/?leafId={world.session.leaf_id}",
    }


#: Only a comment's author (the member, in :func:`_comment`) edits or deletes it; other viewers get 403.
AUTHOR_ONLY = {"comment_edit", "comment_delete"}


def _comment(world: World) -> int:
    """A comment of the member's on the session (made once per world)."""
    existing = Comment.objects.filter(session=world.session, author=world.users["member"]).first()
    if existing is not None:
        return existing.pk
    return comment_service.add(world.session, world.users["member"], "b2000002", "A first remark.").pk


def _post_requests(world: World) -> dict[str, tuple[str, dict[str, str]]]:
    comment = f"/s/{SID}/entry/b2000002/comments/{_comment(world)}"
    return {
        "set_label": (f"/s/{SID}/label/", {"target_id": "b2000001", "label": "reviewed"}),
        "persist_position": (f"/s/{SID}/persist-position/", {}),
        "fork_session": (f"/s/{SID}/fork/", {"entry_id": "b2000003"}),
        "set_visibility": (f"/s/{SID}/visibility/", {"visibility": "signed_in"}),
        "entry_comments": (f"/s/{SID}/entry/b2000002/comments/", {"body": "Looks right to me."}),
        "comment_resolve": (f"{comment}/resolve/", {}),
        "comment_reopen": (f"{comment}/reopen/", {}),
        "comment_edit": (f"{comment}/edit/", {"body": "A first remark, edited."}),
        "set_review_status": (f"/s/{SID}/review/", {"leaf_id": world.session.leaf_id, "status": "approved"}),
        "share_create": (
            f"/s/{SID}/share/?leafId={world.session.leaf_id}",
            {"leafId": world.session.leaf_id, "expires": "7d", "follows": "frozen"},
        ),
        "session_rights": (f"/s/{SID}/rights/", {"username": "member"}),
        "set_rules": (f"/s/{SID}/rules/", {"rules": "pi"}),
        "comment_delete": (f"{comment}/delete/", {}),  # last: the comment is gone afterwards
    }


def _assert_no_secrets(response: Any) -> None:
    body = _body(response)
    for secret in SECRETS:
        assert secret not in body


# -- the matrix: session URLs ------------------------------------------------------------------------------


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("role", ROLES)
def test_every_session_get_url_answers_by_role(world: World, role: str, htmx: bool) -> None:
    client = world.client(role)
    for name, url in _get_urls(world).items():
        response = client.get(url, headers=HTMX if htmx else {})
        if role == "anonymous":
            assert response.status_code == (401 if htmx else 302), name
            if not htmx:
                assert response["Location"].startswith("/accounts/login/?next="), name
            _assert_no_secrets(response)
        elif name in GET_RIGHTS and role not in WRITERS and role != "outsider":
            # Sees the session, may not use this tool: told why, and shown nothing of it.
            assert response.status_code == 403, (name, role, response.status_code)
            assert "owner" in _body(response)
        elif role in ALLOWED:
            assert response.status_code in (200, 302, 303), (name, response.status_code)
            if name == "search_open":
                assert response["Location"].startswith(f"/s/{SID}/"), name
        else:
            assert response.status_code == 404, (name, response.status_code)
            _assert_no_secrets(response)


def test_the_owner_sees_the_session_content(world: World) -> None:
    body = _body(world.client("owner").get(f"/s/{SID}/?targetId=b2000002"))
    assert all(secret in body for secret in SECRETS)
    assert all(secret in _body(world.client("member").get(f"/s/{SID}/download.jsonl")) for secret in SECRETS)


def test_a_refused_fragment_is_a_404_for_htmx_too(world: World) -> None:
    client = world.client("outsider")
    for name, url in _get_urls(world).items():
        response = client.get(url, headers=HTMX)
        assert response.status_code == 404, name
        _assert_no_secrets(response)


def test_the_signed_out_htmx_request_gets_401_and_a_redirect_header(world: World) -> None:
    response = Client().get(
        f"/s/{SID}/context/", headers={**HTMX, "HX-Current-URL": f"http://testserver/s/{SID}/"}
    )
    assert response.status_code == 401
    assert response["HX-Redirect"] == f"/accounts/login/?next=%2Fs%2F{SID}%2F"
    _assert_no_secrets(response)


def _post_expected(role: str, name: str) -> str:
    """ "login", "hidden" (404), "refused" (403) or "done" for ``role`` posting to ``name``."""
    if role == "anonymous":
        return "login"
    if role == "outsider":
        return "hidden"
    if name == "set_visibility":
        return "done" if role in ("team_admin", "owner", "superuser") else "refused"
    if name in ("session_rights", "set_rules"):
        return "done" if role in ("owner", "superuser") else "refused"
    if name in AUTHOR_ONLY:
        return "done" if role == "member" else "refused"
    if POST_RIGHTS.get(name) in (access.COMMENT, access.REVIEW):
        return "done"  # every viewer comments and reviews by default (ARBOR_VIEWER_RIGHTS)
    return "done" if role in WRITERS else "refused"


@pytest.mark.parametrize("htmx", [False, True])
@pytest.mark.parametrize("role", ROLES)
def test_every_session_post_url_answers_by_role(world: World, role: str, htmx: bool) -> None:
    for name, (url, data) in _post_requests(world).items():
        if name == "set_visibility" and role == "owner":
            continue  # last: it opens the session to everyone
        client = world.client(role)
        response = client.post(url, data, headers=HTMX if htmx else {})
        expected = _post_expected(role, name)
        if expected == "login":
            if htmx:
                assert response.status_code == 401 and "/accounts/login/" in response["HX-Redirect"], name
            else:
                assert response.status_code == 302 and "/accounts/login/" in response["Location"], name
        elif expected == "hidden":
            assert response.status_code == 404, (name, response.status_code)
        elif expected == "refused":
            assert response.status_code == 403, (name, role, response.status_code)
        else:
            assert response.status_code in (200, 302, 303), (name, role, response.status_code)
        if expected in ("login", "hidden"):
            _assert_no_secrets(response)


def test_refused_writes_write_nothing(world: World) -> None:
    entries = world.session.entries.count()
    leaf = world.session.leaf_id
    for role in ("anonymous", "outsider"):
        for _name, (url, data) in _post_requests(world).items():
            world.client(role).post(url, data)
    # Viewers who may not write: every write that is not a comment or a review.
    for role in ("member", "team_admin"):
        for name, (url, data) in _post_requests(world).items():
            if _post_expected(role, name) == "refused":
                world.client(role).post(url, data)
    world.client("member").post(f"/s/{SID}/visibility/", {"visibility": "signed_in"})
    session = AgentSession.objects.get(pk=world.session.pk)
    assert session.entries.count() == entries and session.leaf_id == leaf  # no label, no marker
    assert AgentSession.objects.count() == 2  # no fork
    assert session.visibility == "teams"
    assert list(SessionGrant.objects.filter(session=session).values_list("user__username", flat=True)) == [
        "grantee"
    ]
    # One comment (the member's, unchanged and open), no review status, no share link.
    comment = Comment.objects.get()
    assert comment.body == "A first remark." and comment.resolved_at is None
    assert not ReviewStatus.objects.exists() and not ShareLink.objects.exists()


def test_the_owner_and_a_team_admin_change_visibility(world: World) -> None:
    owner = world.client("owner")
    response = owner.post(f"/s/{SID}/visibility/", {"visibility": "private"})
    assert response.status_code == 302
    assert AgentSession.objects.get(pk=world.session.pk).visibility == "private"
    assert not world.session.teams.exists()
    # Private now: the member and the team admin lose it.
    assert world.client("member").get(f"/s/{SID}/").status_code == 404
    assert (
        world.client("team_admin").post(f"/s/{SID}/visibility/", {"visibility": "signed_in"}).status_code
        == 404
    )

    share = {"visibility": "teams", "teams": [world.team.pk]}
    # Only a team the owner belongs to (or one the session already has) can be chosen.
    assert owner.post(f"/s/{SID}/visibility/", share, headers=HTMX).status_code == 400
    Membership.objects.create(team=world.team, user=world.users["owner"])
    fragment = owner.post(f"/s/{SID}/visibility/", share, headers=HTMX)
    assert fragment.status_code == 200 and 'id="visibility"' in fragment.content.decode()
    admin = world.client("team_admin")
    assert admin.post(f"/s/{SID}/visibility/", {"visibility": "signed_in"}).status_code == 302
    assert world.client("outsider").get(f"/s/{SID}/").status_code == 200


def test_teams_visibility_needs_a_team(world: World) -> None:
    response = world.client("owner").post(f"/s/{SID}/visibility/", {"visibility": "teams"})
    assert response.status_code == 400
    assert AgentSession.objects.get(pk=world.session.pk).teams.count() == 1


def test_the_visibility_form_shows_only_to_who_may_change_it(world: World) -> None:
    owner_page = world.client("owner").get(f"/s/{SID}/").content.decode()
    member_page = world.client("member").get(f"/s/{SID}/").content.decode()
    # The partial is included by the session page once the lead adds the include line; the tag decides alone.
    from django.template.loader import render_to_string
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = world.users["owner"]
    owner_partial = render_to_string("treeview/_visibility.html", {"session": world.session}, request)
    request.user = world.users["member"]
    member_partial = render_to_string("treeview/_visibility.html", {"session": world.session}, request)
    assert 'name="visibility"' in owner_partial and "reviewers" in owner_partial
    assert 'name="visibility"' not in member_partial and "Visible to:" in member_partial
    assert 'id="visibility"' in owner_page and 'name="visibility"' in owner_page
    assert 'id="visibility"' in member_page and 'name="visibility"' not in member_page


# -- the list and the search -------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["outsider", "member"])
def test_the_list_shows_only_visible_sessions(world: World, role: str) -> None:
    body = _body(world.client(role).get("/"))
    assert (SECRETS[0] in body) is (role == "member")
    assert ("run it" in body) is (role == "member")


@pytest.mark.parametrize("role", ["outsider", "member", "superuser"])
def test_search_finds_only_visible_sessions(world: World, role: str) -> None:
    client = world.client(role)
    hits = _body(client.get("/search/?q=argparse"))
    by_title = _body(client.get("/search/?q=proj"))  # the working directory: a session match
    visible = role != "outsider"
    assert (SECRETS[1] in hits or "argparse</mark>" in hits) is visible
    assert (f"/s/{SID}/" in hits) is visible
    assert (f"/s/{SID}/" in by_title) is visible


def test_uploads_belong_to_the_uploader_and_start_private(
    world: World, settings: Any, tmp_path: Path
) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    text = (DATA / "handmade" / UPLOADED).read_bytes()
    upload = SimpleUploadedFile("mine.jsonl", text)
    response = world.client("outsider").post("/upload/", {"files": upload})
    assert response.status_code == 200
    uploaded = AgentSession.objects.exclude(pk__in=[world.session.pk, world.long.pk]).get()
    assert uploaded.owner == world.users["outsider"] and uploaded.visibility == "private"
    assert access.can_view(world.users["outsider"], uploaded)
    assert not access.can_view(world.users["member"], uploaded)
    assert access.can_view(world.users["superuser"], uploaded)
    assert Client().post("/upload/", {"files": SimpleUploadedFile("x.jsonl", text)}).status_code == 302


def test_the_same_bytes_uploaded_by_two_people_are_two_private_copies(
    world: World, settings: Any, tmp_path: Path
) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    text = (DATA / "handmade" / UPLOADED).read_bytes()
    first = world.client("outsider").post("/upload/", {"files": SimpleUploadedFile("a.jsonl", text)})
    assert first.status_code == 200
    mine = AgentSession.objects.get(owner=world.users["outsider"])
    second = world.client("member").post("/upload/", {"files": SimpleUploadedFile("a.jsonl", text)})
    theirs = AgentSession.objects.get(owner=world.users["member"])
    assert theirs.pk != mine.pk and theirs.visibility == "private"
    # The member's upload answer links to their own copy, never to the outsider's private one.
    body = second.content.decode()
    assert f"copy={mine.pk}" not in body and f"u{world.users['outsider'].pk}-" not in body
    assert world.client("member").get(f"/s/{theirs.session_id}/").context["session"].pk == theirs.pk
    assert world.client("outsider").get(f"/s/{mine.session_id}/").context["session"].pk == mine.pk
    # The same person uploading again gets the same session back.
    world.client("member").post("/upload/", {"files": SimpleUploadedFile("a.jsonl", text)})
    assert AgentSession.objects.filter(owner=world.users["member"]).count() == 1


def test_a_copy_one_may_not_see_does_not_show_in_links(world: World, settings: Any, tmp_path: Path) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    text = (DATA / "handmade" / FIXTURE).read_bytes()
    # The outsider uploads a private copy of the team's session (same session id).
    world.client("outsider").post("/upload/", {"files": SimpleUploadedFile("copy.jsonl", text)})
    copy = AgentSession.objects.get(owner=world.users["outsider"])
    assert copy.session_id == SID
    listing = world.client("member").get("/").content.decode()
    assert f"/s/{SID}/" in listing and "copy=" not in listing
    assert "copy=" not in world.client("member").get("/search/?q=argparse").content.decode()


def test_sessions_without_owner_are_visible_to_everyone_signed_in(world: World) -> None:
    AgentSession.objects.filter(pk=world.session.pk).update(owner=None, visibility="signed_in")
    session = AgentSession.objects.get(pk=world.session.pk)
    assert access.can_view(world.users["outsider"], session)
    assert not access.can_view(AnonymousUser(), session)
    assert not access.can_manage(world.users["outsider"], session)
    assert access.can_manage(world.users["superuser"], session)


def test_an_inactive_user_sees_nothing(world: World) -> None:
    owner = world.users["owner"]
    owner.is_active = False
    owner.save()
    assert not access.can_view(owner, world.session)
    assert not access.visible_sessions(owner).exists()


# -- a share-token holder and the site-wide pages ----------------------------------------------------------


def test_a_share_token_holder_sees_the_shared_branch_and_nothing_else(world: World) -> None:
    leaf = world.session.leaf_id
    _, token = share_service.create_link(world.users["grantee"], world.session, leaf_id=leaf)
    holder = Client()
    for url in (f"/share/{token}/", f"/share/{token}/branch.jsonl", f"/share/{token}/branch.md"):
        body = _body(holder.get(url))
        assert "Rewrote it with click groups." in body and SECRETS[0] in body, url
        # b2000003..b2000006 are the other branch (argparse subcommands): none of it is shared (its summary,
        # on the shared branch, is).
        assert not any(f"b200000{n}" in body for n in range(3, 7)), url
        assert "Added `init` and `run` subcommands." not in body, url
    for name, url in _get_urls(world).items():
        response = holder.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], name
        _assert_no_secrets(response)
    for name, (url, data) in _post_requests(world).items():
        response = holder.post(url, data)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], name
    for url in ("/", "/search/?q=argparse", "/review/", "/shared/", "/teams/", "/admin/"):
        response = holder.get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url
    # Another session's branch cannot be reached with this token.
    assert holder.get(f"/share/{token}x/").status_code == 404


@pytest.mark.parametrize("role", ROLES)
def test_the_site_wide_pages_show_no_foreign_sessions(world: World, role: str) -> None:
    _, token = share_service.create_link(world.users["grantee"], world.session, leaf_id=world.session.leaf_id)
    link = ShareLink.objects.get()
    client = world.client(role)
    for url in ("/review/", "/shared/", "/teams/"):
        response = client.get(url)
        if role == "anonymous":
            assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
        else:
            assert response.status_code == 200, (url, response.status_code)
        if role in ("anonymous", "outsider"):
            _assert_no_secrets(response)
    shared = _body(client.get("/shared/"))
    # The Shared links page: one's own links; a superuser sees everyone's.
    # (the link is the grantee's: only those the owner lets write make public links, treeview/access.py)
    assert (f"/shared/{link.pk}/revoke/" in shared) is (role in ("grantee", "superuser"))
    revoke = client.post(f"/shared/{link.pk}/revoke/")
    if role == "anonymous":
        assert revoke.status_code == 302 and "/accounts/login/" in revoke["Location"]
    elif role in ("outsider", "member"):
        # Seeing a session is not being able to revoke someone else's link to it.
        assert revoke.status_code == 404
    elif role in ("grantee", "team_admin", "owner", "superuser"):
        # The sharer, the session's managers (its owner, an admin of its team) and superusers revoke.
        assert revoke.status_code in (200, 302, 303), (role, revoke.status_code)
    revoked = ShareLink.objects.get().revoked_at is not None
    assert revoked is (role not in ("anonymous", "outsider", "member"))
    assert (Client().get(f"/share/{token}/").status_code == 200) is not revoked
    switch = client.post("/shared/sharing/", {"public_sharing": ""})
    if role == "superuser":
        assert switch.status_code in (200, 302, 303)
    elif role == "anonymous":
        assert switch.status_code == 302 and "/accounts/login/" in switch["Location"]
    else:
        assert switch.status_code in (403, 404), (role, switch.status_code)
    assert SiteSettings.current().public_sharing is (role != "superuser")


def test_every_url_of_the_app_is_in_the_matrix(world: World) -> None:
    """A new URL must join the matrix above (or the list of pages tested by role elsewhere here)."""
    from treeview.urls import urlpatterns

    session_urls = set(_get_urls(world)) | set(_post_requests(world))
    site_pages = {"session_list", "upload", "search", "review", "team_list", "add_team_secret"}
    site_pages |= {"remove_team_secret", "shared_links", "revoke_link", "sharing_switch"}
    share_token = {"share_view", "share_jsonl", "share_markdown"}
    missing = {p.name for p in urlpatterns} - session_urls - site_pages - share_token
    assert not missing


# -- CSRF ----------------------------------------------------------------------------------------------------


def test_every_post_needs_the_csrf_token(world: World) -> None:
    # A superuser may do all of them: a 403 can only be the missing token.
    client = world.client("superuser", enforce_csrf_checks=True)
    posts = dict(_post_requests(world))
    posts["upload"] = ("/upload/", {"files": SimpleUploadedFile("a.jsonl", b"{}\n")})
    posts["logout"] = ("/accounts/logout/", {})
    posts["password_change"] = ("/accounts/password/", {})
    posts["invite_create"] = ("/accounts/invites/", {"note": "x"})
    posts["add_team_secret"] = (f"/teams/{world.team.pk}/secrets/", {"value": "secret-string"})
    link, _ = share_service.create_link(world.users["owner"], world.session, leaf_id=world.session.leaf_id)
    posts["revoke_link"] = (f"/shared/{link.pk}/revoke/", {})
    posts["sharing_switch"] = ("/shared/sharing/", {"public_sharing": ""})
    for name, (url, data) in posts.items():
        assert client.post(url, data).status_code == 403, name
    assert AgentSession.objects.get(pk=world.session.pk).visibility == "teams"
    assert world.session.entries.count() == AgentSession.objects.get(pk=world.session.pk).entry_count
    assert ShareLink.objects.get().revoked_at is None and SiteSettings.current().public_sharing
    assert Comment.objects.get().body == "A first remark." and not ReviewStatus.objects.exists()


# -- single-user mode ----------------------------------------------------------------------------------------


def test_single_user_mode_asks_no_login_and_acts_as_local(
    world: World, settings: Any, tmp_path: Path
) -> None:
    settings.ARBOR_SINGLE_USER = True
    client = Client()
    for name, url in _get_urls(world).items():
        assert client.get(url).status_code in (200, 302), name
    assert SECRETS[0] in _body(client.get("/"))
    assert client.post(f"/s/{SID}/label/", {"target_id": "b2000001", "label": "x"}).status_code in (200, 302)
    assert "Log out" not in _body(client.get("/"))
    # The user "local" is made when a request needs a user: an upload's owner.
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    upload = SimpleUploadedFile("mine.jsonl", (DATA / "handmade" / UPLOADED).read_bytes())
    assert client.post("/upload/", {"files": upload}).status_code == 200
    local = User.objects.get(username="local")
    assert local.is_superuser and not local.has_usable_password()
    assert AgentSession.objects.get(owner=local).visibility == "private"


def test_multi_user_mode_redirects_every_page_to_login(world: World) -> None:
    for url in ("/", "/search/?q=x", "/admin/", "/accounts/invites/", "/accounts/password/"):
        response = Client().get(url)
        assert response.status_code == 302 and "/login/" in response["Location"], url


# -- the websocket -----------------------------------------------------------------------------------------

# Every socket below goes through the real stack (origin check, cookie session, AuthMiddlewareStack), as a
# browser's does: the consumer sees the middleware's lazy user, not a model instance a test put in the scope.


async def _connect(user: Any, path: str = f"/ws/s/{SID}/") -> tuple[bool, Any]:
    communicator = await signed_in_socket(path, None if isinstance(user, AnonymousUser) else user)
    ok, code = await communicator.connect(timeout=5)
    if ok:
        await communicator.send_json_to({"type": "ping"})
        assert await communicator.receive_json_from(timeout=5) == {"type": "pong"}
        await communicator.disconnect()
    return ok, code


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
async def test_the_socket_admits_only_who_may_see_the_session(
    tmp_path: Path, settings: Any, role: str
) -> None:
    world = await sync_to_async(_world)(tmp_path)
    user = AnonymousUser() if role == "anonymous" else world.users[role]
    ok, code = await _connect(user)
    if role in ALLOWED:
        assert ok, code
    else:
        assert not ok and code == 4403
    # A missing session looks the same as a hidden one to whoever does not see everything.
    ok, code = await _connect(user, "/ws/s/no-such-session/")
    assert not ok and code == (4404 if role == "superuser" else 4403)


@pytest.mark.django_db(transaction=True)
async def test_the_socket_without_a_scope_user_is_refused_unless_single_user(
    tmp_path: Path, settings: Any
) -> None:
    await sync_to_async(_world)(tmp_path)
    bare = URLRouter(websocket_urlpatterns)  # no middleware at all: no user in the scope
    for single_user in (False, True):
        settings.ARBOR_SINGLE_USER = single_user
        communicator = WebsocketCommunicator(bare, f"/ws/s/{SID}/")
        ok, code = await communicator.connect(timeout=5)
        assert ok == single_user, code
        if ok:
            await communicator.disconnect()
    settings.ARBOR_SINGLE_USER = False
    ok, code = await _connect(AnonymousUser())  # the real stack without a session cookie
    assert not ok and code == 4403


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ["grantee", "owner", "superuser"])
async def test_a_signed_in_user_navigates_over_the_real_stack(tmp_path: Path, role: str) -> None:
    world = await sync_to_async(_world)(tmp_path)
    socket = await _open(world.users[role])
    await socket.send_json_to({"type": "start", "target": "b2000006", "summarize": False})
    message = await socket.receive_json_from(timeout=5)
    while message["type"] == "progress":
        message = await socket.receive_json_from(timeout=5)
    assert message["type"] == "done", message
    assert message["leafId"] == "b2000006"
    assert (await sync_to_async(AgentSession.objects.get)(pk=world.session.pk)).leaf_id == "b2000006"
    await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_an_access_change_keeps_the_sockets_of_those_who_still_see_the_session(tmp_path: Path) -> None:
    world = await sync_to_async(_world)(tmp_path)
    roles = ("member", "team_admin", "owner", "superuser")
    sockets = {role: await _open(world.users[role]) for role in roles}
    # Shared with everyone signed in: nobody loses access, every socket hears "access" and stays open.
    await sync_to_async(set_visibility)(world.session, "signed_in", [])
    for role, socket in sockets.items():
        changed = await socket.receive_json_from(timeout=5)
        assert changed["type"] == "changed" and changed["reason"] == "access", role
        await socket.send_json_to({"type": "ping"})
        assert await socket.receive_json_from(timeout=5) == {"type": "pong"}, role
    # Removed from the team: the member's socket hears "access" (signed_in still admits them) and stays.
    await sync_to_async(Membership.objects.filter(user=world.users["member"]).delete)()
    for socket in sockets.values():
        await socket.send_json_to({"type": "ping"})
        message = await socket.receive_json_from(timeout=5)
        if message["type"] == "changed":
            message = await socket.receive_json_from(timeout=5)
        assert message == {"type": "pong"}
        await socket.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_a_deactivated_user_loses_the_socket_at_the_next_navigation(tmp_path: Path) -> None:
    world = await sync_to_async(_world)(tmp_path)
    member = await _open(world.users["member"])
    await sync_to_async(User.objects.filter(pk=world.users["member"].pk).update)(is_active=False)
    await member.send_json_to({"type": "start", "target": "b2000006", "summarize": False})
    assert await member.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert (await sync_to_async(AgentSession.objects.get)(pk=world.session.pk)).leaf_id != "b2000006"


async def _open(user: Any) -> Any:
    communicator = await signed_in_socket(f"/ws/s/{SID}/", user)
    ok, code = await communicator.connect(timeout=5)
    assert ok, code
    return communicator


@pytest.mark.django_db(transaction=True)
async def test_an_open_socket_is_closed_when_the_session_is_made_private(tmp_path: Path) -> None:
    world = await sync_to_async(_world)(tmp_path)
    member = await _open(world.users["member"])
    owner = await _open(world.users["owner"])
    await sync_to_async(set_visibility)(world.session, "private", [])
    assert await member.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    # The owner still sees it: told that it changed, and the socket stays.
    changed = await owner.receive_json_from(timeout=5)
    assert changed["type"] == "changed" and changed["reason"] == "access"
    await owner.send_json_to({"type": "ping"})
    assert await owner.receive_json_from(timeout=5) == {"type": "pong"}
    await owner.disconnect()


@pytest.mark.django_db(transaction=True)
async def test_an_open_socket_is_closed_when_its_user_leaves_the_team(tmp_path: Path) -> None:
    world = await sync_to_async(_world)(tmp_path)
    member = await _open(world.users["member"])
    await sync_to_async(Membership.objects.filter(user=world.users["member"]).delete)()
    assert await member.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}


@pytest.mark.django_db(transaction=True)
async def test_a_navigation_started_after_access_was_lost_is_refused(tmp_path: Path) -> None:
    world = await sync_to_async(_world)(tmp_path)
    member = await _open(world.users["member"])
    # Taken away without an event reaching the socket (e.g. another process without a shared channel layer).
    await sync_to_async(AgentSession.objects.filter(pk=world.session.pk).update)(visibility="private")
    leaf = world.session.leaf_id
    await member.send_json_to({"type": "start", "target": "b2000001", "summarize": False})
    assert await member.receive_output(timeout=5) == {"type": "websocket.close", "code": 4403}
    assert (await sync_to_async(AgentSession.objects.get)(pk=world.session.pk)).leaf_id == leaf


def test_a_fork_can_inherit_the_parents_access(world: World) -> None:
    fork = AgentSession.objects.get(pk=world.long.pk)
    AgentSession.objects.filter(pk=fork.pk).update(owner=None, visibility="signed_in")
    fork.teams.clear()
    inherit_access(fork, world.session, world.users["member"])
    fork = AgentSession.objects.get(pk=fork.pk)
    assert fork.owner == world.users["member"] and fork.visibility == "teams"
    assert list(fork.teams.all()) == [world.team]
    assert not access.can_view(world.users["outsider"], fork)


# -- forks: as private as their original, and no title of a session one may not see ------------------------


def test_a_fork_made_by_a_member_is_theirs_and_seen_by_the_original_teams(world: World) -> None:
    member = world.client("grantee")  # a member the owner lets write
    response = member.post(f"/s/{SID}/fork/", {"entry_id": "b2000003"})
    assert response.status_code == 303
    fork = AgentSession.objects.exclude(pk__in=[world.session.pk, world.long.pk]).get()
    assert fork.owner == world.users["grantee"]
    assert fork.visibility == "teams"
    assert list(fork.teams.all()) == [world.team]
    assert world.client("outsider").get(f"/s/{fork.session_id}/").status_code == 404
    assert world.client("team_admin").get(f"/s/{fork.session_id}/").status_code == 200


def test_links_between_fork_and_original_name_only_sessions_one_may_see(world: World) -> None:
    world.client("owner").post(f"/s/{SID}/fork/", {"entry_id": "b2000003"})
    fork = AgentSession.objects.exclude(pk__in=[world.session.pk, world.long.pk]).get()
    # The fork is made public to every signed-in user; the original stays with its team.
    AgentSession.objects.filter(pk=fork.pk).update(visibility="signed_in")
    outsider = world.client("outsider").get(f"/s/{fork.session_id}/")
    assert outsider.status_code == 200
    assert "Forked from" not in _body(outsider)
    assert f"/s/{SID}/" not in _body(outsider)
    owner = world.client("owner").get(f"/s/{fork.session_id}/")
    assert "Forked from" in _body(owner)
    # And the original lists the fork only to those who see it.
    AgentSession.objects.filter(pk=fork.pk).update(visibility="private")
    member_view = world.client("member").get(f"/s/{SID}/")
    assert f"/s/{fork.session_id}/" not in _body(member_view)
    assert f"/s/{fork.session_id}/" in _body(world.client("owner").get(f"/s/{SID}/"))
