"""The Review page (treeview/views/review.py review_page) per role: what waits for my review, the changes
asked on my sessions, the open threads mentioning me, narrowed to one of my teams; no session leaks to whoever
may not see it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tests.test_access import SECRETS, SID, World, _world
from treeview.models import AgentSession, Comment, Team
from treeview.services import review
from treeview.views import review as review_views

LONG_TITLE = "run it"  # the long-output session's first prompt


@pytest.fixture
def world(db: Any, tmp_path: Path, settings: Any) -> World:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_WRITE_BACK = False
    return _world(tmp_path)


def _page(world: World, role: str, query: str = "", **kwargs: Any) -> str:
    response = world.client(role).get(f"/review/{query}", **kwargs)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _section(body: str, name: str) -> str:
    """The part of the page under one section's heading (waiting, changes, mentions)."""
    start = body.index(f'id="{name}-heading"')
    end = body.find("<section", start)
    return body[start : end if end != -1 else len(body)]


def _mention(
    world: World, who: str, *, entry: str = "b2000002", body: str = "@owner have a look", **kw: Any
) -> Comment:
    comment = Comment.objects.create(
        session=kw.pop("session", world.session),
        entry_id=entry,
        author=world.users["member"],
        body=body,
        **kw,
    )
    comment.mentions.set([world.users[who]])
    return comment


def test_a_member_sees_the_team_sessions_unreviewed_branches(world: World) -> None:
    waiting = _section(_page(world, "member"), "waiting")
    assert SECRETS[0] in waiting and LONG_TITLE in waiting
    for leaf in ("b2000006", "b2000008"):
        assert f'href="/s/{SID}/?leafId={leaf}"' in waiting
    assert 'href="/s/long-output/?leafId=t1"' in waiting
    # A branch with a status no longer waits.
    review.set_review_status(world.session, "b2000006", "approved", world.users["team_admin"])
    waiting = _section(_page(world, "member"), "waiting")
    assert "leafId=b2000006" not in waiting and "leafId=b2000008" in waiting


def test_an_outsider_sees_none_of_them(world: World) -> None:
    body = _page(world, "outsider")
    assert all(secret not in body for secret in SECRETS)
    assert LONG_TITLE not in body and "leafId=" not in body and SID not in body
    assert "Nothing waits for review" in body


def test_the_owner_does_not_review_their_own_sessions_but_sees_changes_asked(world: World) -> None:
    body = _page(world, "owner")
    assert "leafId=" not in _section(body, "waiting")
    assert "No branch is marked" in _section(body, "changes")
    review.set_review_status(world.session, "b2000008", "needs_changes", world.users["member"])
    changes = _section(_page(world, "owner"), "changes")
    assert SECRETS[0] in changes and f'href="/s/{SID}/?leafId=b2000008"' in changes
    assert "needs changes" in changes
    # Not the member's session: not in their needs-changes list, and no longer waiting for them either.
    member = _page(world, "member")
    assert "leafId=b2000008" not in _section(member, "changes")
    assert "leafId=b2000008" not in _section(member, "waiting")


def test_a_needs_changes_branch_that_went_on_says_so(world: World) -> None:
    review.set_review_status(world.session, "b2000003", "needs_changes", world.users["member"])
    changes = _section(_page(world, "owner"), "changes")
    assert "leafId=b2000003" in changes and "continued since" in changes


def test_open_threads_mentioning_me(world: World) -> None:
    _mention(world, "owner", body="@owner please **look**")
    resolved = _mention(world, "owner", body="resolved one", resolved_at=timezone.now())
    _mention(world, "owner", body="reply in a resolved thread", parent=resolved)
    _mention(world, "owner", body="deleted one", deleted_at=timezone.now())
    open_root = Comment.objects.create(session=world.session, entry_id="b2000004", body="root", author=None)
    _mention(world, "owner", entry="b2000004", body="a reply that mentions", parent=open_root)
    mentions = _section(_page(world, "owner"), "mentions")
    assert "@owner please **look**" in mentions and "a reply that mentions" in mentions
    assert f'href="/s/{SID}/?targetId=b2000002"' in mentions and "member:" in mentions
    assert "resolved one" not in mentions and "reply in a resolved thread" not in mentions
    assert "deleted one" not in mentions
    assert "please" not in _section(_page(world, "member"), "mentions")


def test_a_mention_in_a_session_i_cannot_see_is_not_shown(world: World) -> None:
    _mention(world, "outsider", body="@outsider secret ping")
    body = _page(world, "outsider")
    assert "secret ping" not in body and all(secret not in body for secret in SECRETS)


def test_mention_text_is_escaped(world: World) -> None:
    _mention(world, "owner", body="<script>alert(1)</script>")
    mentions = _section(_page(world, "owner"), "mentions")
    assert "<script>" not in mentions and "&lt;script&gt;" in mentions


def test_the_team_selector_narrows_to_one_of_my_teams(world: World) -> None:
    other_owner = world.users["team_admin"]
    public = AgentSession.objects.get(pk=world.long.pk)
    AgentSession.objects.filter(pk=public.pk).update(visibility="signed_in", owner=other_owner)
    outsider = _page(world, "outsider")
    assert LONG_TITLE in _section(outsider, "waiting")  # shared with everyone signed in
    others = Team.objects.get(name="others")
    assert f'<option value="{others.pk}"' in outsider
    narrowed = _section(_page(world, "outsider", f"?team={others.pk}"), "waiting")
    assert LONG_TITLE not in narrowed
    member = _page(world, "member", f"?team={world.team.pk}")
    assert SECRETS[0] in _section(member, "waiting") and LONG_TITLE not in _section(member, "waiting")
    # Not my team, or no team at all: a 404.
    assert world.client("member").get(f"/review/?team={others.pk}").status_code == 404
    assert world.client("member").get("/review/?team=99999").status_code == 404
    assert world.client("member").get("/review/?team=x").status_code == 400


def test_signed_out_is_sent_to_the_login_page(world: World) -> None:
    response = world.client("anonymous").get("/review/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_the_header_links_to_the_review_page(world: World, settings: Any) -> None:
    assert 'href="/review/"' in _page(world, "member")
    assert 'href="/review/"' not in world.client("anonymous").get("/accounts/login/").content.decode()
    settings.ARBOR_SINGLE_USER = True
    assert 'href="/review/"' in Client().get("/").content.decode()


def test_the_lists_are_bounded_with_a_link_to_more(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review_views, "WAITING_SESSIONS", 1)
    first = _section(_page(world, "member"), "waiting")
    assert (SECRETS[0] in first) != (LONG_TITLE in first)
    assert 'href="/review/?waiting=1"' in first
    second = _section(_page(world, "member", "?waiting=1"), "waiting")
    assert (SECRETS[0] in second) != (LONG_TITLE in second)
    assert (SECRETS[0] in first) != (SECRETS[0] in second)
    assert "?waiting=2" not in second


def test_htmx_gets_the_lists_only(world: World) -> None:
    body = _page(world, "member", headers={"HX-Request": "true", "HX-Target": "review-lists"})
    assert body.lstrip().startswith('<div id="review-lists"') and "<html" not in body


def test_single_user_mode_lists_every_session(world: World, settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = True
    review.set_review_status(world.session, "b2000006", "needs_changes", None)
    body = Client().get("/review/").content.decode()
    waiting = _section(body, "waiting")
    assert "leafId=b2000008" in waiting and "leafId=t1" in waiting and "leafId=b2000006" not in waiting
    assert "leafId=b2000006" in _section(body, "changes")
    assert 'id="mentions-heading"' not in body


def test_a_request_reads_a_bounded_number_of_entries(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # Finding branches reads a session's entries: past the budget, the rest waits behind "older sessions".
    monkeypatch.setattr(review_views, "WAITING_ENTRIES", 1)
    first = _section(_page(world, "member"), "waiting")
    assert (SECRETS[0] in first) != (LONG_TITLE in first) and 'href="/review/?waiting=1"' in first


@pytest.mark.django_db
def test_copies_of_one_session_are_told_apart_by_file(client: Client, tmp_path: Path, settings: Any) -> None:
    from tests.reference import import_fixture

    settings.ARBOR_WRITE_BACK = False
    first = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    (tmp_path / "backup").mkdir()
    import_fixture(tmp_path / "backup", "v3_branching_labels.jsonl")

    waiting = _section(client.get("/review/").content.decode(), "waiting")

    assert f'<span class="copy-note muted">backup/{Path(first.source_path).name}</span>' in waiting
    assert f'<span class="copy-note muted">{tmp_path.name}/{Path(first.source_path).name}</span>' in waiting


@pytest.mark.django_db
def test_subagent_transcripts_are_listed_under_the_session_that_spawned_them(
    client: Client, tmp_path: Path, settings: Any
) -> None:
    from tests.subagent_tree import build_tree
    from treeview.services.sync import sync_paths

    settings.ARBOR_SINGLE_USER = True
    settings.ARBOR_WRITE_BACK = False
    build_tree(tmp_path)
    sync_paths([tmp_path])
    by_key = {s.agent_key or "session": s for s in AgentSession.objects.all()}
    anna = by_key["Anna"]
    review.set_review_status(anna, "b0000004", "needs_changes", None)

    body = client.get("/review/").content.decode()
    waiting = _section(body, "waiting")
    # One session of its own: the transcripts are nested in its group, not groups of their own.
    assert waiting.count('<article class="review-session">') == 1
    group = waiting[waiting.index('<article class="review-session">') :]
    assert by_key["session"].display_title in group[: group.index("</h3>")]
    nested = group[group.index('class="subagent-list review-subagents"') :]
    for key in ("Anna", "Bob", "__advisor", "Tan-1234"):
        assert f'data-agent-id="{key}"' in nested, key
    # Anna.Cy inside Anna's item, with its open branch; Anna's reviewed branch is not waiting.
    anna_item = nested[nested.index('data-agent-id="Anna"') : nested.index('data-agent-id="Bob"')]
    cy = by_key["Anna.Cy"]
    assert 'data-agent-id="Anna.Cy"' in anna_item
    assert f'href="/s/{cy.session_id}/?leafId=b0000002"' in anna_item
    assert f"/s/{anna.session_id}/?leafId=b0000004" not in waiting

    # Needs changes: the transcript's branch under its session's title.
    changes = _section(body, "changes")
    heading = changes[changes.index("<h3>") : changes.index("</h3>")]
    assert f'<a class="review-parent" href="/s/{by_key["session"].session_id}/">' in heading
    assert by_key["session"].display_title in heading and anna.display_title in heading
    assert f"/s/{anna.session_id}/?leafId=b0000004" in changes


@pytest.mark.django_db
def test_a_mention_on_a_subagent_transcript_is_under_its_sessions_title(
    tmp_path: Path, settings: Any
) -> None:
    from django.contrib.auth.models import User

    from tests.subagent_tree import build_tree
    from treeview.services.sync import sync_paths

    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_WRITE_BACK = False
    build_tree(tmp_path)
    sync_paths([tmp_path])
    me = User.objects.create_user("me", password="pw-me")
    AgentSession.objects.update(owner=me)
    by_key = {s.agent_key or "session": s for s in AgentSession.objects.with_first_prompt()}
    top, cy = by_key["session"], by_key["Anna.Cy"]
    # Each transcript's own title is its task prompt, not the session's.
    assert cy.display_title != top.display_title
    for session, body in ((cy, "@me look at Cy"), (top, "@me look at the session")):
        comment = Comment.objects.create(session=session, entry_id="b0000002", author=me, body=body)
        comment.mentions.set([me])
    client = Client()
    client.force_login(me)
    mentions = _section(client.get("/review/").content.decode(), "mentions")
    items = {
        "cy" if "look at Cy" in item else "top": item
        for item in re.findall(r"<li>(.*?)</li>", mentions, re.S)
    }
    # Anna.Cy (a subagent of a subagent): under the session of its own, the transcript named by its agent id.
    assert re.search(
        rf'<a class="review-parent" href="/s/{top.session_id}/">{re.escape(top.display_title)}</a>',
        items["cy"],
    )
    assert re.search(
        rf'<a class="review-transcript" href="/s/{cy.session_id}/\?targetId=b0000002"[^>]*>Anna\.Cy</a>',
        items["cy"],
    )
    assert "subagent" in items["cy"] and cy.display_title not in re.sub(r'title="[^"]*"', "", items["cy"])
    # The session's own comment: its title, no parent.
    assert "review-parent" not in items["top"]
    assert f'<a href="/s/{top.session_id}/?targetId=b0000002">{top.display_title}</a>' in items["top"]
    # A session the reader may not see is not named: the transcript goes under the outermost one they see.
    other = User.objects.create_user("other", password="pw-other")
    AgentSession.objects.filter(pk=top.pk).update(owner=other, visibility=AgentSession.Visibility.PRIVATE)
    mentions = _section(client.get("/review/").content.decode(), "mentions")
    anna = by_key["Anna"]
    assert top.display_title not in mentions and "look at the session" not in mentions
    assert f'<a class="review-parent" href="/s/{anna.session_id}/">{anna.display_title}</a>' in mentions


@pytest.mark.django_db
def test_the_entry_budget_counts_the_subagent_transcripts_entries(
    client: Client, tmp_path: Path, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.reference import import_fixture
    from tests.subagent_tree import build_tree
    from treeview.services.sync import sync_paths

    settings.ARBOR_SINGLE_USER = True
    settings.ARBOR_WRITE_BACK = False
    (tmp_path / "tree").mkdir()
    build_tree(tmp_path / "tree")
    sync_paths([tmp_path / "tree"])
    other = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    spawner = AgentSession.objects.get(subagent_of=None, subagent_kind="", pk__lt=other.pk)
    transcripts = AgentSession.objects.exclude(pk__in=[spawner.pk, other.pk])
    below = sum(transcripts.values_list("entry_count", flat=True))
    assert transcripts.count() == 5 and below > 0
    # The two sessions' own entries fit; with the transcripts below the spawner's, they do not.
    monkeypatch.setattr(review_views, "WAITING_ENTRIES", spawner.entry_count + other.entry_count)
    first = _section(client.get("/review/").content.decode(), "waiting")
    assert first.count('<article class="review-session">') == 1
    assert 'href="/review/?waiting=1"' in first
    second = _section(client.get("/review/?waiting=1").content.decode(), "waiting")
    assert second.count('<article class="review-session">') == 1
    titles = {s.pk: s.display_title for s in AgentSession.objects.with_first_prompt()}
    shown = [pk for pk in (spawner.pk, other.pk) if titles[pk] in first]
    assert len(shown) == 1 and titles[({spawner.pk, other.pk} - set(shown)).pop()] in second
    # With room for the transcripts too, one request lists both.
    monkeypatch.setattr(review_views, "WAITING_ENTRIES", spawner.entry_count + other.entry_count + below)
    both = _section(client.get("/review/").content.decode(), "waiting")
    assert both.count('<article class="review-session">') == 2 and "?waiting=" not in both
