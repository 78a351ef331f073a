"""What a share link masks does not depend on what happens to its creator later (issue 11, finding 4), and
what it masks includes secrets used as keys and as tool names (finding 5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from tests.test_share import (
    GITHUB_TOKEN,
    TEAM_SECRET,
    ShareWorld,
    _line,
    _message,
    _text,
    body,
    make_link,
    make_share_world,
    share_url,
)
from treeview.models import AgentSession, Membership, ShareLink
from treeview.services import share
from treeview.services.sync import sync_file

PRIVATE_SID = "share-private-0001"


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def sw(db: Any, tmp_path: Path) -> ShareWorld:
    return make_share_world(tmp_path)


def _private_session(sw: ShareWorld, tmp_path: Path, owner: str) -> AgentSession:
    """A private session of ``owner`` (not shared with any team) that mentions the team's secret string."""
    header = {"type": "session", "version": 3, "id": PRIVATE_SID, "timestamp": "2026-05-01T10:00:00.000Z"}
    lines = [
        _line(header),
        _message("p1", None, "user", _text(f"Connect to {TEAM_SECRET} now."), 1),
        _message("p2", "p1", "assistant", _text("Connected."), 2),
    ]
    path = tmp_path / "private.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    result = sync_file(path)
    assert result.session is not None, result.error
    AgentSession.objects.filter(pk=result.session.pk).update(owner=sw.users[owner], visibility="private")
    return AgentSession.objects.get(pk=result.session.pk)


def _page(token: str, suffix: str = "") -> tuple[int, str]:
    response = Client().get(share_url(token, suffix))
    return response.status_code, body(response)


def test_leaving_the_team_unmasks_nothing_in_links_made_before(sw: ShareWorld, tmp_path: Path) -> None:
    session = _private_session(sw, tmp_path, "member")
    _, token = share.create_link(sw.users["member"], session, leaf_id="p2")
    for suffix in ("", "branch.jsonl", "branch.md"):
        status, text = _page(token, suffix)
        assert status == 200 and TEAM_SECRET not in text, suffix
    Membership.objects.filter(user=sw.users["member"], team=sw.world.team).delete()
    # the member still owns and sees the session: the link lives on, masking what it masked
    for suffix in ("", "branch.jsonl", "branch.md"):
        status, text = _page(token, suffix)
        assert status == 200, suffix
        assert TEAM_SECRET not in text and "[REDACTED: Team secret]" in text, suffix


def test_a_session_leaving_the_team_unmasks_nothing(sw: ShareWorld) -> None:
    _, token = make_link(sw, "owner")  # the owner is in no team: the mask comes from the session's team
    sw.session.teams.clear()
    status, text = _page(token, "branch.jsonl")
    assert status == 200 and TEAM_SECRET not in text


def test_the_mask_set_is_stored_with_the_link(sw: ShareWorld) -> None:
    link, _ = make_link(sw, "member")
    assert link.masked_strings == [TEAM_SECRET]


def test_a_member_removed_from_the_team_loses_their_links_to_its_sessions(sw: ShareWorld) -> None:
    link, token = make_link(sw, "member")  # a team session the member does not own
    assert _page(token)[0] == 200
    Membership.objects.filter(user=sw.users["member"], team=sw.world.team).delete()
    link.refresh_from_db()
    assert link.revoked_at is not None
    assert _page(token)[0] == 410


def test_a_deactivated_users_links_stop_working(sw: ShareWorld) -> None:
    link, token = make_link(sw, "owner")
    user = sw.users["owner"]
    user.is_active = False
    user.save()
    link.refresh_from_db()
    assert link.revoked_at is not None and share.link_state(link) == "revoked"
    for suffix in ("", "branch.jsonl", "branch.md"):
        assert _page(token, suffix)[0] == 410, suffix


def test_a_bulk_deactivation_without_signals_also_stops_the_links(sw: ShareWorld) -> None:
    _, token = make_link(sw, "owner")
    User.objects.filter(pk=sw.users["owner"].pk).update(is_active=False)
    assert ShareLink.objects.get().revoked_at is None  # no signal ran
    assert _page(token)[0] == 410


def test_a_deleted_users_links_stop_working(sw: ShareWorld) -> None:
    _, token = make_link(sw, "member")
    sw.users["member"].delete()
    link = ShareLink.objects.get()
    assert link.created_by is None and link.revoked_at is not None
    assert _page(token)[0] == 410


def test_other_users_links_survive_a_removal(sw: ShareWorld) -> None:
    _, token = make_link(sw, "team_admin")
    Membership.objects.filter(user=sw.users["member"], team=sw.world.team).delete()
    assert _page(token)[0] == 200


# -- keys and tool names (finding 5) ---------------------------------------------------------------


def test_secrets_as_argument_keys_and_tool_names_are_masked_everywhere(
    sw: ShareWorld, tmp_path: Path
) -> None:
    header = {
        "type": "session",
        "version": 3,
        "id": "share-keys-0001",
        "timestamp": "2026-05-01T10:00:00.000Z",
    }
    call = {
        "type": "toolCall",
        "id": "call1",
        "name": f"deploy_{TEAM_SECRET}",
        "arguments": {GITHUB_TOKEN: "push", "hosts": {TEAM_SECRET: True}},
    }
    result = {
        "role": "toolResult",
        "toolCallId": "call1",
        "toolName": f"deploy_{TEAM_SECRET}",
        "content": _text("done"),
        "isError": False,
        "timestamp": 1777629600003,
    }
    lines = [
        _line(header),
        _message("k1", None, "user", _text("Deploy."), 1),
        _message("k2", "k1", "assistant", [call], 2),
        _line(
            {
                "type": "message",
                "id": "k3",
                "parentId": "k2",
                "timestamp": "2026-05-01T10:00:03.000Z",
                "message": result,
            }
        ),
    ]
    path = tmp_path / "keys.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    synced = sync_file(path)
    assert synced.session is not None
    AgentSession.objects.filter(pk=synced.session.pk).update(owner=sw.users["owner"], visibility="teams")
    synced.session.teams.set([sw.world.team])
    _, token = share.create_link(
        sw.users["owner"], AgentSession.objects.get(pk=synced.session.pk), leaf_id="k3"
    )
    for suffix in ("", "branch.jsonl", "branch.md"):
        status, text = _page(token, suffix)
        assert status == 200, suffix
        assert TEAM_SECRET not in text and GITHUB_TOKEN not in text, suffix
    _, jsonl = _page(token, "branch.jsonl")
    entries = [json.loads(line) for line in jsonl.splitlines()]
    arguments = entries[2]["message"]["content"][0]["arguments"]
    assert arguments == {"[REDACTED: GitHub token]": "push", "hosts": {"[REDACTED: Team secret]": True}}


# -- the downloads stream (finding 8) ------------------------------------------------------------------


def test_share_downloads_stream_under_asgi_at_the_readers_pace(sw: ShareWorld) -> None:
    """Under ASGI both downloads are async iterators (Django reads a sync one whole into memory first, and the
    Markdown was built whole), and they serve the same bytes as the plain client."""
    _, token = make_link(sw, "owner")

    async def fetch(suffix: str) -> tuple[bool, bytes]:
        response = await AsyncClient().get(share_url(token, suffix))
        assert response.status_code == 200
        return response.is_async, b"".join([chunk async for chunk in response.streaming_content])

    for suffix in ("branch.jsonl", "branch.md"):
        is_async, content = async_to_sync(fetch)(suffix)
        assert is_async, suffix
        assert content.decode() == body(Client().get(share_url(token, suffix))), suffix
        assert TEAM_SECRET not in content.decode()
