"""A public link lives only while its creator could make it (issue 11, "links and rights"): a link serves
nothing once its creator lost the right to make public links to its session, however they lost it: the site
no longer lets viewers make them (``ARBOR_VIEWER_RIGHTS``, links viewers made before rights existed), "can
write" taken back, the team that gave access left. The share page then says the link was revoked (410), the
downloads too, and the link stays revoked should the right come back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.test_share import ShareWorld, body, make_link, make_share_world, share_url
from treeview.models import AgentSession, Membership, SessionGrant, ShareLink
from treeview.services import share
from treeview.services.rights import grant_write, revoke_write

SUFFIXES = ("", "branch.jsonl", "branch.md")
VIEWER_SHARES = ["comment", "review", "share_public"]


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def sw(db: Any, tmp_path: Path) -> ShareWorld:
    return make_share_world(tmp_path)


def _served(token: str) -> list[int]:
    return [Client().get(share_url(token, suffix)).status_code for suffix in SUFFIXES]


def _says_revoked(token: str) -> None:
    for suffix in SUFFIXES:
        response = Client().get(share_url(token, suffix))
        assert response.status_code == 410, suffix
        text = body(response)
        assert "This link was revoked." in text, suffix
        assert "Arbor" in text, suffix  # Arbor's own page, not a bare error
        assert "m4" not in text and "Connect to" not in text, suffix  # nothing of the branch


def _viewer(sw: ShareWorld) -> Any:
    """A team member without "can write" on the share session (``_world`` calls them "grantee": their grant is
    on other sessions)."""
    user = sw.users["grantee"]
    assert not SessionGrant.objects.filter(session=sw.session, user=user).exists()
    return user


def test_a_viewers_link_dies_when_the_site_stops_letting_viewers_share(sw: ShareWorld, settings: Any) -> None:
    settings.ARBOR_VIEWER_RIGHTS = VIEWER_SHARES
    _, token = share.create_link(_viewer(sw), sw.session, leaf_id="m4")
    assert _served(token) == [200, 200, 200]
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review"]
    _says_revoked(token)
    assert ShareLink.objects.get().revoked_at is not None
    settings.ARBOR_VIEWER_RIGHTS = VIEWER_SHARES
    assert _served(token) == [410, 410, 410]  # revoked for good


def test_a_link_a_viewer_made_before_rights_existed_stops_serving(sw: ShareWorld) -> None:
    # Before rights per action, everyone who saw a session could share it: such a link is in the database
    # with a creator who is a plain viewer under today's default rights.
    link, token = make_link(sw, "owner")
    ShareLink.objects.filter(pk=link.pk).update(created_by=_viewer(sw))
    assert share.creator_may_share(ShareLink.objects.get(pk=link.pk)) is False
    _says_revoked(token)


def test_a_link_made_under_a_grant_dies_when_the_grant_is_taken_back(sw: ShareWorld) -> None:
    link, token = make_link(sw, "member")  # the member may write (make_share_world)
    _, other_token = make_link(sw, "team_admin")
    assert _served(token) == [200, 200, 200]
    assert revoke_write(sw.session, sw.users["member"].pk)
    link.refresh_from_db()
    assert link.revoked_at is not None  # at once, by the signal
    _says_revoked(token)
    assert _served(other_token) == [200, 200, 200]  # someone else's grant, someone else's link
    grant_write(sw.session, sw.users["member"], sw.users["owner"])
    assert _served(token) == [410, 410, 410]  # given again, it does not bring the link back


def test_a_grant_deleted_without_signals_still_stops_the_link(sw: ShareWorld) -> None:
    _, token = make_link(sw, "member")
    grants = SessionGrant.objects.filter(session=sw.session, user=sw.users["member"])
    grants._raw_delete(grants.db)  # no signal ran
    assert ShareLink.objects.get().revoked_at is None
    _says_revoked(token)


def test_a_grant_on_another_session_keeps_nothing_alive(sw: ShareWorld) -> None:
    # "grantee" may write to the access fixtures, not to the share session: no link to it
    with pytest.raises(share.ShareError, match="cannot share"):
        share.create_link(_viewer(sw), sw.session, leaf_id="m4")


def test_a_member_removed_from_the_team_without_signals_loses_the_link(sw: ShareWorld) -> None:
    _, token = make_link(sw, "member")  # the team gives the member access; the owner lets them write
    memberships = Membership.objects.filter(user=sw.users["member"], team=sw.world.team)
    memberships._raw_delete(memberships.db)  # no signal ran
    _says_revoked(token)


def test_the_owner_making_the_session_private_kills_the_others_links(sw: ShareWorld) -> None:
    _, member_token = make_link(sw, "member")
    _, owner_token = make_link(sw, "owner")
    AgentSession.objects.filter(pk=sw.session.pk).update(visibility="private")
    _says_revoked(member_token)
    assert _served(owner_token) == [200, 200, 200]


def test_the_shared_links_page_shows_a_dead_link_revoked(sw: ShareWorld, settings: Any) -> None:
    settings.ARBOR_VIEWER_RIGHTS = VIEWER_SHARES
    link, _ = share.create_link(_viewer(sw), sw.session, leaf_id="m4")
    page = body(sw.client("grantee").get("/shared/"))
    assert f'<tr id="share-{link.pk}" class="share-state-active">' in page
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review"]
    page = body(sw.client("grantee").get("/shared/"))
    assert f'<tr id="share-{link.pk}" class="share-state-revoked">' in page
    assert ShareLink.objects.get().revoked_at is not None
