"""Rights per action (treeview/access.py, treeview/views/rights.py): seeing a session is not writing to it.

A team member who sees a session reads, comments and reviews it; moving its leaf, labels, forks and public
links are its owner's and theirs whom the owner lets write. One test per right, each with the agent's file
watched (write-back on): a refused write leaves it byte for byte as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client

from tests.test_access import HTMX, SID, World, _open, _world
from tests.test_settings import load_settings
from treeview import access
from treeview.models import AgentSession, Entry, ReviewStatus, SessionGrant, ShareLink


@pytest.fixture(autouse=True)
def _multi_user_write_back(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_WRITE_BACK = True
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review"]


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return _world(tmp_path)


def _file(world: World) -> bytes:
    return Path(AgentSession.objects.get(pk=world.session.pk).source_path).read_bytes()


def _stored(world: World) -> AgentSession:
    return AgentSession.objects.get(pk=world.session.pk)


# -- the rules ---------------------------------------------------------------------------------------------


def test_rights_by_role(world: World) -> None:
    everything = set(access.ACTIONS)
    viewer = {access.VIEW, access.COMMENT, access.REVIEW}
    expected = {
        "outsider": set(),
        "member": viewer,
        "team_admin": viewer,  # changes who sees it, does not write to it
        "grantee": everything,
        "owner": everything,
        "superuser": everything,
    }
    for role, rights in expected.items():
        assert set(access.rights(world.users[role], world.session)) == rights, role
        for action in access.ACTIONS:
            assert access.can(world.users[role], world.session, action) is (action in rights), (role, action)
    with pytest.raises(ValueError, match="unknown action"):
        access.can(world.users["owner"], world.session, "delete")


def test_a_grant_gives_no_sight_of_a_session(world: World) -> None:
    outsider = world.users["outsider"]
    SessionGrant.objects.create(session=world.session, user=outsider)
    assert not access.can_view(outsider, world.session)
    assert access.rights(outsider, world.session) == frozenset()
    assert (
        world.client("outsider").post(f"/s/{SID}/label/", {"target_id": "b2000001", "label": "x"}).status_code
        == 404
    )


def test_a_site_session_is_written_only_by_superusers_and_their_grantees(world: World) -> None:
    AgentSession.objects.filter(pk=world.session.pk).update(owner=None, visibility="signed_in")
    session = _stored(world)
    assert not access.can(world.users["owner"], session, access.NAVIGATE)  # no longer its owner
    assert access.can(world.users["outsider"], session, access.COMMENT)
    assert not access.can(world.users["outsider"], session, access.SHARE_PUBLIC)
    assert access.can(world.users["grantee"], session, access.SHARE_PUBLIC)
    assert access.can(world.users["superuser"], session, access.LABEL)
    assert not access.can_grant(world.users["owner"], session)
    assert access.can_grant(world.users["superuser"], session)


def test_a_deactivated_grantee_writes_nothing(world: World) -> None:
    User.objects.filter(pk=world.users["grantee"].pk).update(is_active=False)
    grantee = User.objects.get(pk=world.users["grantee"].pk)
    assert access.rights(grantee, world.session) == frozenset()


def test_the_site_setting_widens_or_narrows_what_viewers_may_do(world: World, settings: Any) -> None:
    member = world.client("member")
    settings.ARBOR_VIEWER_RIGHTS = []
    comment = member.post(f"/s/{SID}/entry/b2000002/comments/", {"body": "Read only?"})
    assert comment.status_code == 403
    review = member.post(f"/s/{SID}/review/", {"leaf_id": world.session.leaf_id, "status": "approved"})
    assert review.status_code == 403 and not ReviewStatus.objects.exists()
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review", "label"]
    assert member.post(f"/s/{SID}/label/", {"target_id": "b2000001", "label": "ok"}).status_code == 302
    assert _stored(world).resolved_labels()["b2000001"] == "ok"
    assert access.writable(world.users["member"], AgentSession.objects.all(), access.LABEL) == {
        world.session.pk,
        world.long.pk,
    }
    assert access.writable(world.users["member"], AgentSession.objects.all(), access.NAVIGATE) == set()


def test_the_viewer_rights_setting_is_checked_at_start_up(monkeypatch: Any) -> None:
    assert load_settings(monkeypatch)["ARBOR_VIEWER_RIGHTS"] == ["comment", "review"]
    assert load_settings(monkeypatch, ARBOR_VIEWER_RIGHTS="none")["ARBOR_VIEWER_RIGHTS"] == []
    config = load_settings(monkeypatch, ARBOR_VIEWER_RIGHTS="View, Comment,navigate")
    assert config["ARBOR_VIEWER_RIGHTS"] == ["comment", "navigate"]
    with pytest.raises(ImproperlyConfigured, match="ARBOR_VIEWER_RIGHTS"):
        load_settings(monkeypatch, ARBOR_VIEWER_RIGHTS="comment,write")


# -- one test per right: refused to a viewer, the file untouched; allowed to a grantee ---------------------


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["plain", "htmx"])
def test_a_viewer_may_not_label_but_a_grantee_may(world: World, headers: dict[str, str]) -> None:
    before = _file(world)
    refused = world.client("member").post(
        f"/s/{SID}/label/", {"target_id": "b2000001", "label": "mine"}, headers=headers
    )
    assert refused.status_code == 403 and "label" in refused.content.decode()
    assert _file(world) == before and "b2000001" not in _stored(world).resolved_labels()
    allowed = world.client("grantee").post(
        f"/s/{SID}/label/", {"target_id": "b2000001", "label": "mine"}, headers=headers
    )
    assert allowed.status_code in (200, 302)
    assert _stored(world).resolved_labels()["b2000001"] == "mine"
    assert b'"label":"mine"' in _file(world)[len(before) :]


def test_a_viewer_may_not_persist_the_position(world: World) -> None:
    before = _file(world)
    entries = Entry.objects.filter(session=world.session).count()
    refused = world.client("member").post(f"/s/{SID}/persist-position/", {})
    assert refused.status_code == 403 and "move its leaf" in refused.content.decode()
    assert _file(world) == before and Entry.objects.filter(session=world.session).count() == entries
    assert world.client("grantee").post(f"/s/{SID}/persist-position/", {}).status_code == 200
    assert len(_file(world)) > len(before)


def test_a_viewer_may_not_fork(world: World, settings: Any, tmp_path: Path) -> None:
    settings.ARBOR_SESSION_DIRS = [tmp_path]  # a fork would go next to the agent's file
    listing = sorted(path.name for path in tmp_path.iterdir())
    for url in (f"/s/{SID}/fork/", f"/s/{SID}/branch-picker/"):
        member = world.client("member")
        response = member.post(url, {"entry_id": "b2000003"}) if url.endswith("fork/") else member.get(url)
        assert response.status_code == 403, url
    assert sorted(path.name for path in tmp_path.iterdir()) == listing
    assert AgentSession.objects.count() == 2
    assert world.client("grantee").post(f"/s/{SID}/fork/", {"entry_id": "b2000003"}).status_code == 303
    assert AgentSession.objects.get(owner=world.users["grantee"]).parent() == _stored(world)


def test_a_team_member_may_not_publish_a_team_session(world: World) -> None:
    leaf = world.session.leaf_id
    data = {"leafId": leaf, "expires": "7d", "follows": "frozen"}
    member = world.client("member")
    assert member.get(f"/s/{SID}/share/?leafId={leaf}").status_code == 403
    refused = member.post(f"/s/{SID}/share/?leafId={leaf}", data)
    assert refused.status_code == 403 and "public links" in refused.content.decode()
    assert not ShareLink.objects.exists()
    assert world.client("grantee").post(f"/s/{SID}/share/?leafId={leaf}", data).status_code == 200
    assert ShareLink.objects.get().created_by == world.users["grantee"]


def test_a_viewers_review_keeps_the_status_and_leaves_the_file_alone(world: World) -> None:
    before = _file(world)
    # A branch whose leaf has no label of its own (the stored leaf's branch ends at b2000008, labeled).
    leaf = "b2000006"
    response = world.client("member").post(
        f"/s/{SID}/review/", {"leaf_id": leaf, "status": "approved"}, headers=HTMX
    )
    assert response.status_code == 200
    assert "label in the session is left" in response.content.decode()
    assert ReviewStatus.objects.get().status == "approved"
    assert _file(world) == before and not any(
        label.startswith("review:") for label in _stored(world).resolved_labels().values()
    )
    # The owner's review writes the mirror label, as before.
    world.client("owner").post(f"/s/{SID}/review/", {"leaf_id": leaf, "status": "needs_changes"})
    assert b"review: needs changes" in _file(world)[len(before) :]


def test_a_viewer_may_comment_but_not_once_the_site_says_no(world: World, settings: Any) -> None:
    member = world.client("member")
    assert member.post(f"/s/{SID}/entry/b2000002/comments/", {"body": "Fine."}).status_code == 302
    settings.ARBOR_VIEWER_RIGHTS = ["review"]
    page = member.get(f"/s/{SID}/entry/b2000002/comments/", headers=HTMX).content.decode()
    assert "Fine." in page and 'name="body"' not in page and "may comment" in page
    assert member.post(f"/s/{SID}/entry/b2000002/comments/", {"body": "Again."}).status_code == 403


# -- the websocket ------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_viewer_may_not_navigate_over_the_socket_but_a_grantee_may(
    tmp_path: Path, settings: Any
) -> None:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_WRITE_BACK = True
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review"]
    world = await sync_to_async(_world)(tmp_path)
    before = await sync_to_async(_file)(world)
    leaf = world.session.leaf_id
    member = await _open(world.users["member"])
    for summarize in (False, True):
        await member.send_json_to({"type": "start", "target": "b2000006", "summarize": summarize})
        refused = await member.receive_json_from(timeout=5)
        assert refused["type"] == "error" and refused["code"] == "forbidden", refused
        assert "move its leaf" in refused["message"]
    # The socket stays open for the page's live updates.
    await member.send_json_to({"type": "ping"})
    assert await member.receive_json_from(timeout=5) == {"type": "pong"}
    assert (await sync_to_async(_stored)(world)).leaf_id == leaf
    assert await sync_to_async(_file)(world) == before
    grantee = await _open(world.users["grantee"])
    await grantee.send_json_to({"type": "start", "target": "b2000006", "summarize": False})
    message = await grantee.receive_json_from(timeout=5)
    while message["type"] == "progress":
        message = await grantee.receive_json_from(timeout=5)
    assert message["type"] == "done", message
    assert (await sync_to_async(_stored)(world)).leaf_id == "b2000006"
    # Taken back while the page is open: the next navigation is refused.
    await sync_to_async(SessionGrant.objects.filter(user=world.users["grantee"]).delete)()
    await grantee.send_json_to({"type": "start", "target": leaf, "summarize": False})
    while (message := await grantee.receive_json_from(timeout=5))["type"] == "changed":
        pass
    assert message["type"] == "error" and message["code"] == "forbidden", message
    assert (await sync_to_async(_stored)(world)).leaf_id == "b2000006"
    for socket in (member, grantee):
        await socket.disconnect()


# -- the page and the grant form ---------------------------------------------------------------------------


def _page(world: World, role: str) -> str:
    return world.client(role).get(f"/s/{SID}/?targetId=b2000002").content.decode()


def test_a_viewers_page_offers_no_write_action(world: World) -> None:
    page = _page(world, "member")
    assert 'class="label-form"' not in page
    assert "Share this branch" not in page
    assert "data-branch-picker-open" not in page
    assert '<button type="button" id="go-here" disabled' in page
    assert "data-refused=" in page
    assert "People and rights" not in page and "Its owner decides" in page
    # Comments and reviews stay.
    assert 'class="comment-form comment-new"' in page and 'name="status"' in page
    for role in ("grantee", "owner"):
        page = _page(world, role)
        assert 'class="label-form"' in page and "Share this branch" in page, role
        assert "data-branch-picker-open" in page and "data-refused=" not in page, role
        assert ("People and rights" in page) is (role == "owner"), role


def test_the_session_list_offers_persist_only_to_writers(world: World) -> None:
    persist = f"/s/{SID}/persist-position/"
    assert persist not in world.client("member").get("/").content.decode()
    assert persist in world.client("grantee").get("/").content.decode()


def test_the_owner_grants_and_takes_back(world: World) -> None:
    owner = world.client("owner")
    url = f"/s/{SID}/rights/"
    page = _page(world, "owner")
    assert '<option value="member">' in page and "grantee</span> can write" in page
    response = owner.post(url, {"username": "member"}, headers=HTMX)
    assert response.status_code == 200 and "member can write now" in response.content.decode()
    assert access.can(world.users["member"], world.session, access.NAVIGATE)
    # Unknown names, the owner, and no name at all are refused with the reason; nothing changes.
    for data, reason in (
        ({"username": "nobody"}, "No account is named"),
        ({"username": "owner"}, "owns this session"),
        ({}, "Name someone"),
    ):
        refused = owner.post(url, data)
        assert refused.status_code == 400 and reason in refused.content.decode(), data
        fragment = owner.post(url, data, headers=HTMX)  # htmx swaps it: 200, with the reason
        assert fragment.status_code == 200 and reason in fragment.content.decode(), data
    assert SessionGrant.objects.filter(session=world.session).count() == 2
    # Someone who cannot see it: granted, and the owner is told it gives no sight of it.
    assert owner.post(url, {"username": "outsider"}).status_code == 302
    assert "cannot see this session now" in _page(world, "owner")
    back = owner.post(url, {"revoke": world.users["member"].pk}, headers=HTMX)
    assert back.status_code == 200 and "member</span>" not in back.content.decode()
    assert not access.can(world.users["member"], world.session, access.NAVIGATE)


@pytest.mark.parametrize("role", ["member", "grantee", "team_admin"])
def test_only_the_owner_grants(world: World, role: str) -> None:
    response = world.client(role).post(f"/s/{SID}/rights/", {"username": "member"})
    assert response.status_code == 403
    assert not SessionGrant.objects.filter(user=world.users["member"]).exists()
    assert Client().post(f"/s/{SID}/rights/", {"username": "member"}).status_code == 302


def test_single_user_mode_allows_everything_and_shows_no_rights_box(world: World, settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = True
    client = Client()
    page = client.get(f"/s/{SID}/?targetId=b2000002").content.decode()
    assert 'class="label-form"' in page and "People and rights" not in page and "data-refused" not in page
    assert client.post(f"/s/{SID}/persist-position/", {}).status_code == 200


def test_the_admin_lists_a_sessions_grants(world: World) -> None:
    page = world.client("superuser").get(f"/admin/treeview/agentsession/{world.session.pk}/change/")
    assert page.status_code == 200 and "grantee" in page.content.decode()
