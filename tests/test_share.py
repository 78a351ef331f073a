"""Share links (treeview/services/share/, treeview/views/share.py): the form and its redaction preview, the
public read-only branch and its downloads (masked, opaque payloads dropped, no other branch, strict headers),
frozen and following links, revoking, the site-wide switch, the Shared links page per role, CSRF."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.test_access import World, _world
from treeview.models import AgentSession, SessionGrant, ShareLink, SiteSettings, TeamSecret
from treeview.render.transcript import fence, transcript
from treeview.services import append, share
from treeview.services.sync import sync_file
from treeview.session.jsonl import dumps, loads

SHARE_SID = "share-test-0001"
#: A team's exact string (TeamSecret) and a GitHub token: both must be masked everywhere a link serves.
TEAM_SECRET = "db7.internal.acme-corp.example"
GITHUB_TOKEN = "ghp_" + "Zq3Xv9Lm2Kp8Rt5Wn7Yb4Hc6Jd1Fg0Se2Aa9"
SIGNATURE = "OPAQUE-SIGNATURE-Eo8DCkYIBRgCKkD2"
OTHER_BRANCH = "Question on the other branch, never shared."
HTMX = {"HX-Request": "true"}


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def _message(entry_id: str, parent: str | None, role: str, content: list[dict[str, Any]], n: int) -> str:
    message: dict[str, Any] = {"role": role, "content": content, "timestamp": 1777629600000 + n}
    if role == "assistant":
        message.update(provider="anthropic", model="claude-sonnet-4-5", stopReason="stop")
    return _line(
        {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2026-05-01T10:00:{n:02d}.000Z",
            "message": message,
        }
    )


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def share_session_file(tmp_path: Path) -> Path:
    """Two branches below m2: A (m3, m4) holds no secret of its own; B (m5, m6) is the stored leaf's."""
    header = {
        "type": "session",
        "version": 3,
        "id": SHARE_SID,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "cwd": "/home/dev/proj",
    }
    thinking = {"type": "thinking", "thinking": "Checking the deploy target.", "thinkingSignature": SIGNATURE}
    lines = [
        _line(header),
        _message("m1", None, "user", _text(f"Deploy the app to {TEAM_SECRET} please."), 1),
        _message("m2", "m1", "assistant", [thinking, *_text(f"Using the token {GITHUB_TOKEN} to push.")], 2),
        _message("m3", "m2", "user", _text("Branch A: now add a health check."), 3),
        _message("m4", "m3", "assistant", _text("Branch A: added /healthz."), 4),
        _message("m5", "m2", "user", _text(OTHER_BRANCH), 5),
        _message("m6", "m5", "assistant", _text("Answer on the other branch."), 6),
    ]
    path = tmp_path / "share-test.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@dataclass
class ShareWorld:
    world: World
    session: AgentSession

    @property
    def users(self) -> dict[str, User]:
        return self.world.users

    def client(self, role: str, **kwargs: Any) -> Client:
        return self.world.client(role, **kwargs)


def make_share_world(tmp_path: Path) -> ShareWorld:
    """``_world`` (users, team "reviewers") plus the share session, owned by "owner", shared with the team,
    whose secret is :data:`TEAM_SECRET`; the owner lets the member and the team admin write to it (make
    public links: ``SHARE_PUBLIC``)."""
    world = _world(tmp_path)
    result = sync_file(share_session_file(tmp_path))
    assert result.session is not None, result.error
    session = result.session
    AgentSession.objects.filter(pk=session.pk).update(owner=world.users["owner"], visibility="teams")
    session.teams.set([world.team])
    TeamSecret.objects.create(team=world.team, value=TEAM_SECRET, label="staging host")
    for name in ("member", "team_admin"):
        SessionGrant.objects.create(session=session, user=world.users[name], granted_by=world.users["owner"])
    return ShareWorld(world, AgentSession.objects.get(pk=session.pk))


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def sw(db: Any, tmp_path: Path) -> ShareWorld:
    return make_share_world(tmp_path)


def make_link(sw: ShareWorld, role: str = "owner", **kwargs: Any) -> tuple[ShareLink, str]:
    kwargs.setdefault("leaf_id", "m4")
    return share.create_link(sw.users[role], sw.session, **kwargs)


def body(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def share_url(token: str, suffix: str = "") -> str:
    return f"/share/{token}/{suffix}"


# -- creating: validations ---------------------------------------------------------------------------------


def test_a_link_is_made_for_the_branch_with_defaults(sw: ShareWorld) -> None:
    link, token = make_link(sw, target_id="m3")
    assert link.session == sw.session and link.leaf_id == "m4" and link.target_id == "m3"
    assert link.created_by == sw.users["owner"] and not link.follows
    assert link.frozen_seq == sw.session.next_seq
    assert timedelta(days=7) - timedelta(minutes=1) < link.expires_at - link.created_at <= timedelta(days=7)
    assert link.max_views is None and link.view_count == 0
    # Only the hash of the token is stored.
    assert token not in (link.lookup, link.token_hash) and link.token_hash == share.hash_token(token)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"leaf_id": "nope"}, "No entry"),
        ({"leaf_id": ""}, "No entry"),
        ({"target_id": "m6"}, "not on the shared branch"),
        ({"target_id": "nope"}, "not on the shared branch"),
        ({"expires_in": timedelta(minutes=59)}, "one hour"),
        ({"expires_in": timedelta(days=91)}, "90 days"),
        ({"max_views": 0}, "at least 1"),
        ({"note": "x" * 501}, "longer than 500"),
        ({"filter_mode": "everything"}, "Unknown filter"),
        ({"unmasked": ["not-a-hit"]}, "not in the branch"),
    ],
)
def test_creation_refuses_what_is_out_of_bounds(sw: ShareWorld, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(share.ShareError, match=message):
        make_link(sw, **kwargs)
    assert not ShareLink.objects.exists()


def test_bounds_are_inclusive(sw: ShareWorld) -> None:
    make_link(sw, expires_in=timedelta(hours=1), max_views=1, note="n" * 500)
    make_link(sw, expires_in=timedelta(days=90))
    assert ShareLink.objects.count() == 2


def test_only_someone_with_the_right_shares_it(sw: ShareWorld, settings: Any) -> None:
    with pytest.raises(share.ShareError, match="cannot share"):
        make_link(sw, role="outsider")
    for role in ("member", "team_admin", "owner", "superuser"):
        make_link(sw, role=role)
    SessionGrant.objects.filter(user=sw.users["member"]).delete()
    with pytest.raises(share.ShareError, match="cannot share"):
        make_link(sw, role="member")  # a viewer, without "can write"
    settings.ARBOR_VIEWER_RIGHTS = ["comment", "review", "share_public"]
    make_link(sw, role="member")  # every viewer may, by the site's setting


def test_nothing_is_shared_while_sharing_is_off(sw: ShareWorld) -> None:
    share.set_sharing(False)
    with pytest.raises(share.ShareError, match="turned off"):
        make_link(sw)


def test_an_entry_of_another_session_is_not_a_leaf(sw: ShareWorld) -> None:
    with pytest.raises(share.ShareError):
        make_link(sw, leaf_id=sw.world.session.leaf_id)


def test_what_was_masked_is_recorded_without_the_secret(sw: ShareWorld) -> None:
    link, _ = make_link(sw)
    assert link.redactions, "the team string and the token are masked"
    assert {item["entry_id"] for item in link.redactions} >= {"m1"}
    for item in link.redactions:
        assert {"entry_id", "kind", "fingerprint"} <= set(item) <= {"id", "entry_id", "kind", "fingerprint"}
    stored = json.dumps(link.redactions)
    assert TEAM_SECRET not in stored and GITHUB_TOKEN not in stored


# -- the form and its preview ------------------------------------------------------------------------------


def test_the_session_page_links_to_the_share_form(sw: ShareWorld) -> None:
    page = body(sw.client("owner").get(f"/s/{SHARE_SID}/?leafId=m4&targetId=m3&filter=all"))
    found = re.search(r'href="(/s/share-test-0001/share/\?[^"]+)"[^>]*>Share this branch', page)
    assert found
    url = found.group(1).replace("&amp;", "&")
    assert "leafId=m4" in url and "targetId=m3" in url and "filter=all" in url


def test_the_preview_shows_every_hit_masked_in_context(sw: ShareWorld) -> None:
    # The member's team strings are masked; the owner lets them make public links (make_share_world).
    assert SessionGrant.objects.filter(session=sw.session, user=sw.users["member"]).exists()
    response = sw.client("member").get(f"/s/{SHARE_SID}/share/?leafId=m4&targetId=m3")
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    page = body(response)
    _, hits = share.preview(sw.users["member"], sw.session, "m4")
    assert {hit.entry_id for hit in hits} >= {"m1", "m2"}
    for hit in hits:
        assert re.search(rf'name="unmask"\s+value="{hit.id}"', page)
        # Masked in its context line; in clear only inside the "reveal here" disclosure.
        assert share_mask(hit) in page
    assert "Deploy the app to " in page
    # The other branch is not part of the preview.
    assert OTHER_BRANCH not in page


def share_mask(hit: Any) -> str:
    from django.utils.html import escape

    from treeview.redaction import mask_for

    return str(escape(mask_for(hit)))


def test_a_target_off_the_leafs_branch_shares_the_branch_to_the_target(sw: ShareWorld) -> None:
    page = body(sw.client("owner").get(f"/s/{SHARE_SID}/share/?leafId=m4&targetId=m6"))
    assert 'name="leafId" value="m6"' in page


@pytest.mark.parametrize("query", ["leafId=nope", "targetId=nope", "leafId=b2000001"])
def test_the_form_answers_404_for_entries_not_in_the_session(sw: ShareWorld, query: str) -> None:
    assert sw.client("owner").get(f"/s/{SHARE_SID}/share/?{query}").status_code == 404


@pytest.mark.parametrize("role", ["outsider"])
def test_the_form_is_a_404_for_who_does_not_see_the_session(sw: ShareWorld, role: str) -> None:
    client = sw.client(role)
    assert client.get(f"/s/{SHARE_SID}/share/?leafId=m4").status_code == 404
    assert client.post(f"/s/{SHARE_SID}/share/", {"leafId": "m4", "expires": "7d"}).status_code == 404
    assert not ShareLink.objects.exists()


def test_the_form_sends_a_signed_out_visitor_to_the_login(sw: ShareWorld) -> None:
    response = Client().get(f"/s/{SHARE_SID}/share/?leafId=m4")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def _post_form(client: Client, **data: Any) -> Any:
    form = {
        "leafId": "m4",
        "targetId": "m3",
        "filter": "default",
        "q": "",
        "expires": "7d",
        "follows": "frozen",
    }
    form.update(data)
    return client.post(f"/s/{SHARE_SID}/share/", form)


def _token_of(page: str) -> str:
    found = re.search(r"http://testserver/share/([A-Za-z0-9_-]+)/", page)
    assert found, "the link is shown once"
    return found.group(1)


def test_posting_the_form_makes_the_link_and_shows_it_once(sw: ShareWorld) -> None:
    client = sw.client("owner")
    response = _post_form(client, note="for the on-call", max_views="3")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    token = _token_of(body(response))
    link = ShareLink.objects.get()
    assert link.note == "for the on-call" and link.max_views == 3 and link.target_id == "m3"
    assert link.token_hash == share.hash_token(token)
    # The Shared links page lists it, without the token.
    listing = body(client.get("/shared/"))
    assert "for the on-call" in listing and token not in listing


def test_the_form_refuses_bad_input_with_a_400(sw: ShareWorld) -> None:
    client = sw.client("owner")
    assert _post_form(client, expires="forever").status_code == 400
    assert _post_form(client, max_views="0").status_code == 400
    assert _post_form(client, note="x" * 501).status_code == 400
    assert _post_form(client, unmask="forged-hit-id").status_code == 400
    assert not ShareLink.objects.exists()


def test_unmasked_hits_are_shown_in_clear_one_by_one(sw: ShareWorld) -> None:
    client = sw.client("owner")
    _, hits = share.preview(sw.users["owner"], sw.session, "m4")
    team_hits = [hit for hit in hits if hit.secret == TEAM_SECRET]
    assert team_hits
    token = _token_of(body(_post_form(client, unmask=[hit.id for hit in team_hits])))
    link = ShareLink.objects.get()
    assert link.unmasked == sorted(hit.id for hit in team_hits)
    page = body(Client().get(share_url(token)))
    # The one unmasked is in clear; the other (the GitHub token) is still masked.
    assert TEAM_SECRET in page
    assert GITHUB_TOKEN not in page
    assert all(item["fingerprint"] != team_hits[0].fingerprint for item in link.redactions)


# -- the public page and its downloads ---------------------------------------------------------------------


def test_the_share_page_shows_the_branch_masked_to_anyone(sw: ShareWorld) -> None:
    _, token = make_link(sw, target_id="m3", note="Look at the health check")
    response = Client().get(share_url(token))
    assert response.status_code == 200
    page = body(response)
    assert "Branch A: now add a health check." in page and "Branch A: added /healthz." in page
    assert "Look at the health check" in page
    assert 'id="entry-m3"' in page and re.search(r'id="entry-m3"\s+class="[^"]*\bselected\b', page)
    for secret in (TEAM_SECRET, GITHUB_TOKEN, SIGNATURE):
        assert secret not in page
    # Nothing of the other branch, no way to the rest of the session, no email.
    assert OTHER_BRANCH not in page and "Answer on the other branch." not in page
    assert "/s/" not in page and 'href="/"' not in page
    assert "@" not in re.sub(r"<[^>]+>", "", page).replace("@media", "")
    assert "shared by owner" in page


def test_share_pages_send_noindex_no_referrer_no_store_and_a_strict_csp(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    for suffix in ("", "branch.jsonl", "branch.md"):
        response = Client().get(share_url(token, suffix))
        assert response.status_code == 200, suffix
        assert response["X-Robots-Tag"] == "noindex, nofollow"
        assert response["Referrer-Policy"] == "no-referrer"
        assert response["Cache-Control"] == "no-store"
        policy = {
            part.split()[0]: part.split()[1:]
            for part in response["Content-Security-Policy"].split(";")
            if part.strip()
        }
        assert policy["default-src"] == ["'none'"]
        assert policy["script-src"] == ["'none'"] and policy["style-src"] == ["'self'"]
        assert policy["form-action"] == ["'none'"] and policy["frame-ancestors"] == ["'none'"]
        assert policy["base-uri"] == ["'none'"]
    page = body(Client().get(share_url(token)))
    assert '<meta name="robots" content="noindex, nofollow">' in page
    assert "<script" not in page and " style=" not in page and "<form" not in page


def test_the_jsonl_download_is_the_branch_masked_and_byte_exact_elsewhere(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    response = Client().get(share_url(token, "branch.jsonl"))
    assert response["Content-Type"] == "application/x-ndjson"
    assert "attachment" in response["Content-Disposition"]
    text = body(response)
    for secret in (TEAM_SECRET, GITHUB_TOKEN, SIGNATURE):
        assert secret not in text
    lines = text.splitlines()
    header = loads(lines[0])
    assert header["type"] == "session" and header["id"] == SHARE_SID
    entries = [loads(line) for line in lines[1:]]
    assert [entry["id"] for entry in entries] == ["m1", "m2", "m3", "m4"]
    # Lines with nothing to mask are the stored lines, byte for byte; the others as the agent writes JSON.
    stored = dict(sw.session.entries.values_list("entry_id", "raw"))
    assert lines[3] == stored["m3"] and lines[4] == stored["m4"]
    assert lines[1] != stored["m1"] and lines[1] == dumps(entries[0])
    # The thinking text stays; its opaque signature does not.
    assert "Checking the deploy target." in lines[2]


def test_the_markdown_download_is_a_masked_transcript(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    response = Client().get(share_url(token, "branch.md"))
    assert response["Content-Type"].startswith("text/markdown")
    text = body(response)
    assert "## User" in text and "Branch A: added /healthz." in text
    for secret in (TEAM_SECRET, GITHUB_TOKEN, SIGNATURE, OTHER_BRANCH):
        assert secret not in text


def test_the_share_page_applies_the_filter_and_the_search(sw: ShareWorld) -> None:
    _, token = make_link(sw, filter_mode="user-only")
    page = body(Client().get(share_url(token)))
    assert "Branch A: now add a health check." in page and "Branch A: added /healthz." not in page
    # The session reads by oh-my-pi 18's rules, whose fuzzy search finds "health" for "healthz" too: the
    # role's word tells the two apart.
    _, token = make_link(sw, query="assistant healthz")
    page = body(Client().get(share_url(token)))
    assert "Branch A: added /healthz." in page and "Branch A: now add a health check." not in page


def test_query_parameters_cannot_widen_a_share(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    page = body(Client().get(share_url(token) + "?leafId=m6&targetId=m5&filter=all"))
    assert OTHER_BRANCH not in page and "Branch A: added /healthz." in page


# -- frozen and following ----------------------------------------------------------------------------------


def _append_below(sw: ShareWorld, parent: str, text: str) -> None:
    append.move_leaf(sw.session, parent)

    def make(leaf: str | None, ids: Any) -> dict[str, Any]:
        return {
            "type": "message",
            "id": "n" + str(len(text)) + "x" + parent,
            "parentId": leaf,
            "timestamp": "2026-05-01T11:00:00.000Z",
            "message": {"role": "user", "content": _text(text), "timestamp": 1777633200000},
        }

    append.append_entry(sw.session, make)


def test_a_frozen_link_shows_the_branch_as_it_was(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    _append_below(sw, "m4", f"A later question mentioning {TEAM_SECRET}.")
    page = body(Client().get(share_url(token)))
    assert "A later question" not in page and "Branch A: added /healthz." in page


def test_a_following_link_shows_new_entries_masked(sw: ShareWorld) -> None:
    _, token = make_link(sw, follows=True)
    _append_below(sw, "m4", f"A later question mentioning {TEAM_SECRET}.")
    page = body(Client().get(share_url(token)))
    assert "A later question mentioning" in page
    assert TEAM_SECRET not in page
    text = body(Client().get(share_url(token, "branch.jsonl")))
    assert "A later question mentioning" in text and TEAM_SECRET not in text
    # When the session's leaf moves to another branch, the link shows its own branch again.
    append.move_leaf(sw.session, "m6")
    page = body(Client().get(share_url(token)))
    assert "A later question" not in page and OTHER_BRANCH not in page


# -- revoking, the switch ----------------------------------------------------------------------------------


def test_revoking_takes_effect_on_the_next_request(sw: ShareWorld) -> None:
    link, token = make_link(sw)
    visitor = Client()
    assert visitor.get(share_url(token)).status_code == 200
    response = sw.client("owner").post(f"/shared/{link.pk}/revoke/")
    assert response.status_code == 302 and response["Location"] == "/shared/"
    for suffix in ("", "branch.jsonl", "branch.md"):
        refused = visitor.get(share_url(token, suffix))
        assert refused.status_code == 410
        assert "Branch A" not in body(refused) and "revoked" in body(refused)
    link.refresh_from_db()
    assert link.revoked_by == sw.users["owner"] and link.revoked_at is not None


def test_revoke_with_htmx_answers_the_list(sw: ShareWorld) -> None:
    link, _ = make_link(sw, note="the note")
    response = sw.client("owner").post(f"/shared/{link.pk}/revoke/", headers=HTMX)
    assert response.status_code == 200
    fragment = body(response)
    assert fragment.lstrip().startswith('<div id="shared-links">') and "revoked" in fragment
    assert "<html" not in fragment and "HX-Request" in response["Vary"]


@pytest.mark.parametrize(
    ("creator", "revoker", "allowed"),
    [
        ("member", "member", True),
        ("member", "owner", True),  # manages the session
        ("member", "superuser", True),
        ("owner", "member", False),
        ("owner", "team_admin", True),  # admin of a team the session is shared with: manages it
        ("owner", "outsider", False),
    ],
)
def test_who_may_revoke(sw: ShareWorld, creator: str, revoker: str, allowed: bool) -> None:
    link, _ = make_link(sw, role=creator)
    response = sw.client(revoker).post(f"/shared/{link.pk}/revoke/")
    link.refresh_from_db()
    if allowed:
        assert response.status_code == 302 and link.revoked_at is not None
    else:
        assert response.status_code == 404 and link.revoked_at is None


def test_the_site_wide_switch_turns_every_link_off_and_on(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    admin = sw.client("superuser")
    assert admin.post("/shared/sharing/", {}).status_code == 302
    assert SiteSettings.current().public_sharing is False
    refused = Client().get(share_url(token))
    assert refused.status_code == 404 and "Branch A" not in body(refused)
    page = body(sw.client("owner").get(f"/s/{SHARE_SID}/share/?leafId=m4"))
    assert "turned off" in page and 'name="expires"' not in page
    assert admin.post("/shared/sharing/", {"public_sharing": "on"}, headers=HTMX).status_code == 200
    assert Client().get(share_url(token)).status_code == 200


@pytest.mark.parametrize("role", ["owner", "team_admin", "member", "outsider"])
def test_only_superusers_switch_sharing(sw: ShareWorld, role: str) -> None:
    assert sw.client(role).post("/shared/sharing/", {}).status_code == 403
    assert SiteSettings.current().public_sharing is True


# -- the Shared links page ---------------------------------------------------------------------------------


def test_the_shared_links_page_lists_my_links_only(sw: ShareWorld) -> None:
    make_link(sw, role="member", note="member's note")
    make_link(sw, role="owner", note="owner's note", max_views=5)
    page = body(sw.client("member").get("/shared/"))
    assert "member&#x27;s note" in page and "owner&#x27;s note" not in page
    page = body(sw.client("owner").get("/shared/"))
    assert "owner&#x27;s note" in page and "member&#x27;s note" not in page and "0 / 5" in page
    assert "Turn public sharing off" not in page
    assert "owner&#x27;s note" not in body(sw.client("outsider").get("/shared/"))


def test_superusers_see_every_link_with_who_shared_it(sw: ShareWorld) -> None:
    make_link(sw, role="member", note="member's note")
    make_link(sw, role="owner", note="owner's note")
    page = body(sw.client("superuser").get("/shared/"))
    assert "member&#x27;s note" in page and "owner&#x27;s note" in page
    assert "Shared by" in page and "Turn public sharing off" in page
    assert "@" not in page.split('<table class="shared-links">', 1)[1]


def test_the_shared_links_page_shows_views_and_states(sw: ShareWorld) -> None:
    link, token = make_link(sw, max_views=1)
    Client().get(share_url(token))
    page = body(sw.client("owner").get("/shared/"))
    assert "1 / 1" in page and "exhausted" in page and "never" not in page


def test_the_shared_links_page_answers_htmx_with_its_fragment(sw: ShareWorld) -> None:
    make_link(sw)
    response = sw.client("owner").get("/shared/", headers=HTMX)
    assert body(response).lstrip().startswith('<div id="shared-links">')
    assert "HX-Request" in response["Vary"]


def test_the_header_links_to_shared_links(sw: ShareWorld) -> None:
    assert 'href="/shared/"' in body(sw.client("member").get("/"))


def test_the_shared_links_page_needs_a_sign_in(sw: ShareWorld) -> None:
    response = Client().get("/shared/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


# -- CSRF on every POST ------------------------------------------------------------------------------------


def test_every_share_post_needs_the_csrf_token(sw: ShareWorld) -> None:
    link, _ = make_link(sw)
    strict = sw.client("superuser", enforce_csrf_checks=True)
    posts = {
        f"/s/{SHARE_SID}/share/": {"leafId": "m4", "expires": "7d", "follows": "frozen"},
        f"/shared/{link.pk}/revoke/": {},
        "/shared/sharing/": {},
    }
    for url, data in posts.items():
        assert strict.post(url, data).status_code == 403, url
        assert strict.post(url, data, headers=HTMX).status_code == 403, url
    link.refresh_from_db()
    assert link.revoked_at is None and ShareLink.objects.count() == 1
    assert SiteSettings.current().public_sharing is True


# -- single-user mode ----------------------------------------------------------------------------------------


def test_sharing_works_in_single_user_mode(db: Any, tmp_path: Path, settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = True
    sync_file(share_session_file(tmp_path))
    client = Client()
    assert client.get(f"/s/{SHARE_SID}/share/?leafId=m4").status_code == 200
    token = _token_of(body(_post_form(client)))
    assert client.get(share_url(token)).status_code == 200
    assert "Deploy the app to" in body(client.get("/shared/"))


# -- the Markdown transcript (pure) ------------------------------------------------------------------------


def test_fences_are_longer_than_any_backtick_run_inside() -> None:
    assert fence("a ``` b") == "````\na ``` b\n````"
    assert fence("plain", "json") == "```json\nplain\n```"


def test_the_transcript_has_a_section_per_message_and_fenced_tools() -> None:
    entries = [
        {"type": "message", "id": "1", "message": {"role": "user", "content": "Hi"}},
        {
            "type": "message",
            "id": "2",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm"},
                    {"type": "toolCall", "name": "bash", "arguments": {"command": "ls"}},
                ],
            },
        },
        {
            "type": "message",
            "id": "3",
            "message": {
                "role": "toolResult",
                "toolName": "bash",
                "content": [{"type": "text", "text": "a.py"}],
            },
        },
        {"type": "custom", "id": "4", "data": {"x": 1}},
    ]
    text = transcript(entries, title="T", note="n")
    assert text.startswith("# T\n\n> n\n\n## User\n\nHi")
    assert (
        "**Thinking**\n\n> hm" in text
        and '**Tool call: bash**\n\n```json\n{\n  "command": "ls"\n}\n```' in text
    )
    assert "## Tool result: bash\n\n```\na.py\n```" in text
    assert '"x"' not in text


# -- a long branch: only a page of it is read and drawn ----------------------------------------------------


def test_the_share_page_draws_a_window_of_the_branch_around_the_target(
    sw: ShareWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from treeview.views import share as share_views

    monkeypatch.setattr(share_views, "SHARE_PAGE", 2)
    read: list[list[str]] = []
    load = share.load_entries

    def counting(link: ShareLink, ids: Any) -> Any:
        read.append(list(ids))
        return load(link, ids)

    monkeypatch.setattr(share, "load_entries", counting)
    _, token = make_link(sw, target_id="m3")
    page = body(Client().get(share_url(token)))
    assert "Branch A: now add a health check." in page  # the target, m3
    assert "Using the token" in page and "Branch A: added /healthz." not in page  # m2 shown, m4 not
    assert "Entries 2–3 of 4 are shown here" in page
    # Read: the window (m2, m3) and the entry before it (m1, where a tool result's call would be).
    assert read == [["m1", "m2", "m3"]]
    # The download still holds the whole branch.
    download = body(Client().get(share_url(token, "branch.jsonl")))
    assert all(f'"id":"m{n}"' in download for n in (1, 2, 3, 4))


def test_a_long_output_on_a_share_page_points_to_the_downloads_not_into_the_session(sw: ShareWorld) -> None:
    long = sw.world.long
    _, token = share.create_link(sw.users["owner"], long, leaf_id=long.leaf_id)
    page = body(Client().get(share_url(token)))
    assert "lines (" in page and "; the downloads hold all of it" in page
    assert "/block/" not in page and "show all" not in page
    # The session page keeps its "show all" link to the whole output.
    own = body(sw.client("owner").get(f"/s/{long.session_id}/?targetId=t1"))
    assert "show all</a>" in own and "/entry/t1/block/" in own


def test_the_shared_links_page_names_a_branch_by_its_last_entry(sw: ShareWorld) -> None:
    make_link(sw)  # to m4

    page = body(sw.client("owner").get("/shared/"))

    assert '<span title="to entry m4">assistant: Branch A: added /healthz.</span>' in page
