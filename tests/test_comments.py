"""Comments on entries (treeview/services/comments.py, treeview/views/comments.py): threads, replies, edits,
deletes, resolve/reopen, mentions, the tree's badges and "commented" filter, access and CSRF, safe Markdown,
and comments kept across a re-import of a rewritten session file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from tests.test_access import HTMX, SECRETS, SID, World, _world
from treeview import explorer
from treeview.models import AgentSession, Comment
from treeview.render.comments import render_comment
from treeview.services import comments as service
from treeview.services.sync import sync_file

ENTRY = "b2000002"  # "Here is a first version using argparse."
OTHER = "b2000006"


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return _world(tmp_path)


def comments_url(entry_id: str = ENTRY, suffix: str = "") -> str:
    return f"/s/{SID}/entry/{entry_id}/comments/{suffix}"


def body(response: Any) -> str:
    return response.content.decode()


def add(world: World, role: str = "member", text: str = "Looks good", **kwargs: Any) -> Comment:
    return service.add(world.session, world.users[role], kwargs.pop("entry_id", ENTRY), text, **kwargs)


# -- the service -------------------------------------------------------------------------------------------


def test_a_reply_to_a_reply_joins_the_thread_root(world: World) -> None:
    root = add(world, text="Why argparse?")
    reply = add(world, "owner", "Because stdlib.", reply_to=root.pk)
    again = add(world, "member", "Fair.", reply_to=reply.pk)
    assert reply.parent_id == root.pk and again.parent_id == root.pk
    (thread,) = service.threads(world.session, ENTRY)
    assert thread.root == root and thread.replies == [reply, again]


def test_a_comment_on_an_unknown_entry_or_a_blank_or_long_body_is_refused(world: World) -> None:
    with pytest.raises(service.UnknownEntry):
        add(world, entry_id="nope0000")
    with pytest.raises(service.InvalidComment):
        add(world, text="   \n ")
    with pytest.raises(service.InvalidComment):
        add(world, text="x" * (service.BODY_MAX_CHARS + 1))
    assert not Comment.objects.exists()


def test_a_quote_comment_keeps_its_range_and_replies_do_not(world: World) -> None:
    root = add(world, quote="first version", quote_start=10)
    assert (root.quote, root.quote_start) == ("first version", 10)
    reply = add(world, "owner", "ok", quote="ignored", quote_start=3, reply_to=root.pk)
    assert (reply.quote, reply.quote_start) == ("", None)


def test_only_the_author_edits_or_deletes(world: World) -> None:
    comment = add(world)
    with pytest.raises(service.NotAuthor):
        service.edit(comment, world.users["owner"], "changed")
    with pytest.raises(service.NotAuthor):
        service.delete(comment, world.users["superuser"])
    service.edit(comment, world.users["member"], "Changed it")
    comment.refresh_from_db()
    assert comment.body == "Changed it" and comment.edited_at is not None


def test_deleting_a_root_with_replies_leaves_a_placeholder_until_the_last_reply_goes(world: World) -> None:
    root = add(world, text="root text", quote="argparse")
    reply = add(world, "owner", "a reply", reply_to=root.pk)
    service.delete(root, world.users["member"])
    root.refresh_from_db()
    assert root.deleted_at is not None and root.body == "" and root.quote == ""
    assert service.comment_counts(world.session) == {ENTRY: service.EntryCounts(1, 1)}
    service.delete(reply, world.users["owner"])
    assert not Comment.objects.exists()


def test_deleting_a_lone_comment_removes_it(world: World) -> None:
    service.delete(add(world), world.users["member"])
    assert not Comment.objects.exists()


def test_resolve_and_reopen_act_on_the_thread_root(world: World) -> None:
    root = add(world)
    reply = add(world, "owner", "reply", reply_to=root.pk)
    service.resolve(reply, world.users["team_admin"])
    root.refresh_from_db()
    assert root.resolved_at is not None and root.resolved_by == world.users["team_admin"]
    assert service.comment_counts(world.session) == {ENTRY: service.EntryCounts(2, 0)}
    service.reopen(root, world.users["member"])
    root.refresh_from_db()
    assert root.resolved_at is None and root.resolved_by is None


def test_mentions_are_stored_only_for_users_who_can_view(world: World) -> None:
    User.objects.create_user("inactive", is_active=False)
    text = "@owner and @outsider, @nobody, @inactive and mail@member.org; thanks @team_admin."
    comment = add(world, text=text)
    assert {user.username for user in comment.mentions.all()} == {"owner", "team_admin"}
    service.edit(comment, world.users["member"], "only @superuser now")
    assert [user.username for user in comment.mentions.all()] == ["superuser"]


def test_counts_and_commented_ids_come_from_one_query(world: World, django_assert_num_queries: Any) -> None:
    first = add(world)
    add(world, "owner", "second thread")
    add(world, "owner", "reply", reply_to=first.pk)
    service.resolve(first, world.users["owner"])
    add(world, entry_id=OTHER)
    with django_assert_num_queries(1):
        counts = service.comment_counts(world.session)
    assert counts == {ENTRY: service.EntryCounts(3, 1), OTHER: service.EntryCounts(1, 1)}
    assert service.commented_entry_ids(world.session) == {ENTRY, OTHER}


# -- rendering ---------------------------------------------------------------------------------------------


def assert_inert(html: str) -> None:
    """No element of ``html`` runs anything: every ``<`` of the text is escaped, so each one starts a tag."""
    for tag in re.findall(r"<[^>]*>", html):
        lowered = tag.lower()
        assert not lowered.startswith(("<script", "<img", "<iframe", "<svg")), tag
        assert "onerror" not in lowered and "javascript:" not in lowered, tag


def test_hostile_markdown_comes_out_inert() -> None:
    html = str(
        render_comment(
            '<script>alert(1)</script> <img src=x onerror="alert(2)"> [click](javascript:alert(3)) '
            "[ok](https://example.org) **bold** @alice",
            ["alice"],
        )
    )
    assert_inert(html)
    assert "&lt;script&gt;" in html  # shown as text
    assert 'href="https://example.org"' in html and "<strong>bold</strong>" in html
    assert '<span class="mention">@alice</span>' in html


def test_mention_chips_only_in_text_and_only_for_mentioned_names() -> None:
    html = str(render_comment("[me](https://e.org/@alice) `@alice` @alice. @bob", ["alice"]))
    assert 'href="https://e.org/@alice"' in html
    assert "<code>@alice</code>" in html
    assert '<span class="mention">@alice</span>.' in html
    assert "@bob" in html and 'mention">@bob' not in html


# -- the views ---------------------------------------------------------------------------------------------


def test_posting_a_comment_without_htmx_redirects_to_the_entry(world: World) -> None:
    client = world.client("member")
    response = client.post(comments_url() + "?filter=all", {"body": "Nice **work**"})
    assert response.status_code == 302
    assert response["Location"] == f"/s/{SID}/?filter=all&targetId={ENTRY}#comments"
    page = body(client.get(f"/s/{SID}/?targetId={ENTRY}"))
    assert "Nice <strong>work</strong>" in page
    assert 'class="comment-author">member<' in page


def test_posting_with_htmx_answers_the_panel(world: World) -> None:
    response = world.client("member").post(comments_url(), {"body": "hello @owner"}, headers=HTMX)
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    html = body(response)
    assert html.lstrip().startswith('<section id="comments"')
    assert '<span class="mention">@owner</span>' in html
    assert 'data-comments="1"' in html and 'data-open-threads="1"' in html


def test_get_without_htmx_redirects_and_with_htmx_shows_the_threads(world: World) -> None:
    add(world, text="a thread")
    client = world.client("owner")
    assert client.get(comments_url())["Location"] == f"/s/{SID}/?targetId={ENTRY}#comments"
    html = body(client.get(comments_url(), headers=HTMX))
    assert "a thread" in html and "<html" not in html


def test_a_blank_comment_is_refused_with_the_form_again(world: World) -> None:
    client = world.client("member")
    response = client.post(comments_url(), {"body": "  "})
    assert response.status_code == 400
    assert "<html" in body(response) and 'role="alert"' in body(response)
    response = client.post(comments_url(), {"body": ""}, headers=HTMX)
    assert response.status_code == 200 and 'role="alert"' in body(response)
    assert not Comment.objects.exists()


def test_unknown_entry_or_comment_is_a_404(world: World) -> None:
    client = world.client("member")
    assert client.post(comments_url("nope0000"), {"body": "x"}).status_code == 404
    comment = add(world)
    assert client.post(comments_url(OTHER, f"{comment.pk}/resolve/")).status_code == 404


def test_edit_and_delete_by_someone_else_are_403(world: World) -> None:
    comment = add(world, text="mine")
    client = world.client("owner")
    assert client.post(comments_url(suffix=f"{comment.pk}/edit/"), {"body": "theirs"}).status_code == 403
    assert client.post(comments_url(suffix=f"{comment.pk}/delete/")).status_code == 403
    comment.refresh_from_db()
    assert comment.body == "mine"
    # Only the author sees the edit and delete forms.
    assert f"{comment.pk}/edit/" not in body(client.get(comments_url(), headers=HTMX))
    assert f"{comment.pk}/edit/" in body(world.client("member").get(comments_url(), headers=HTMX))


def test_the_author_edits_and_deletes(world: World) -> None:
    comment = add(world, text="first")
    client = world.client("member")
    html = body(client.post(comments_url(suffix=f"{comment.pk}/edit/"), {"body": "second"}, headers=HTMX))
    assert "second" in html and "(edited)" in html
    response = client.post(comments_url(suffix=f"{comment.pk}/delete/"))
    assert response.status_code == 302
    assert not Comment.objects.exists()


def test_a_deleted_root_with_replies_shows_a_placeholder(world: World) -> None:
    root = add(world, text="the root words")
    add(world, "owner", "the reply words", reply_to=root.pk)
    html = body(world.client("member").post(comments_url(suffix=f"{root.pk}/delete/"), headers=HTMX))
    assert "(comment deleted)" in html and "the reply words" in html and "the root words" not in html


def test_anyone_who_views_resolves_and_reopens(world: World) -> None:
    root = add(world)
    client = world.client("team_admin")
    html = body(client.post(comments_url(suffix=f"{root.pk}/resolve/"), headers=HTMX))
    assert "Resolved by team_admin" in html and "comment-thread resolved" in html
    html = body(client.post(comments_url(suffix=f"{root.pk}/reopen/"), headers=HTMX))
    assert "Resolved by" not in html and "comment-thread open" in html


def test_in_single_user_mode_the_local_user_comments(world: World, settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = True
    client = Client()
    assert client.post(comments_url(), {"body": "solo"}).status_code == 302
    html = body(client.get(comments_url(), headers=HTMX))
    assert 'class="comment-author">local<' in html and "/edit/" in html


def test_replies_through_the_view_join_the_thread(world: World) -> None:
    root = add(world)
    world.client("owner").post(comments_url(), {"body": "answer", "reply_to": root.pk})
    assert Comment.objects.get(body="answer").parent_id == root.pk


@pytest.mark.parametrize("role", ["outsider"])
def test_someone_who_cannot_view_gets_404_and_nothing(world: World, role: str) -> None:
    root = add(world, text="private remark")
    client = world.client(role)
    for response in (
        client.get(comments_url(), headers=HTMX),
        client.post(comments_url(), {"body": "intrusion"}),
        client.post(comments_url(suffix=f"{root.pk}/edit/"), {"body": "x"}),
        client.post(comments_url(suffix=f"{root.pk}/delete/")),
        client.post(comments_url(suffix=f"{root.pk}/resolve/")),
        client.post(comments_url(suffix=f"{root.pk}/reopen/")),
    ):
        assert response.status_code == 404
        assert "private remark" not in body(response)
        for secret in SECRETS:
            assert secret not in body(response)
    root.refresh_from_db()
    assert root.resolved_at is None and Comment.objects.count() == 1


def test_signed_out_visitors_are_sent_to_the_login(world: World) -> None:
    root = add(world)
    client = world.client("anonymous")
    for response in (
        client.get(comments_url()),
        client.post(comments_url(), {"body": "x"}),
        client.post(comments_url(suffix=f"{root.pk}/resolve/")),
    ):
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")
    assert client.post(comments_url(), {"body": "x"}, headers=HTMX).status_code == 401
    assert Comment.objects.count() == 1


def test_every_post_needs_the_csrf_token(world: World) -> None:
    root = add(world)
    client = world.client("member", enforce_csrf_checks=True)
    posts = [
        (comments_url(), {"body": "no token"}),
        (comments_url(suffix=f"{root.pk}/edit/"), {"body": "no token"}),
        (comments_url(suffix=f"{root.pk}/resolve/"), {}),
        (comments_url(suffix=f"{root.pk}/reopen/"), {}),
        (comments_url(suffix=f"{root.pk}/delete/"), {}),
    ]
    for url, data in posts:
        assert client.post(url, data).status_code == 403, url
        assert client.post(url, data, headers=HTMX).status_code == 403, url
    root.refresh_from_db()
    assert root.body == "Looks good" and root.resolved_at is None and Comment.objects.count() == 1
    # With the token from the page, the same post goes through.
    page = body(client.get(f"/s/{SID}/?targetId={ENTRY}"))
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token
    response = client.post(comments_url(), {"body": "with token", "csrfmiddlewaretoken": token.group(1)})
    assert response.status_code == 302


def test_hostile_markdown_in_a_comment_is_inert_on_the_page(world: World) -> None:
    add(world, text='<script>alert("x")</script><img src=x onerror=alert(1)> [a](javascript:alert(2))')
    page = body(world.client("owner").get(f"/s/{SID}/?targetId={ENTRY}"))
    panel = page[page.index('<section id="comments"') : page.index("</section>", page.index('id="comments"'))]
    assert_inert(panel)
    assert "&lt;script&gt;" in panel


def test_the_author_is_shown_by_username_never_by_email(world: World) -> None:
    member = world.users["member"]
    member.email = "member@example.org"
    member.save()
    add(world)
    assert "member@example.org" not in body(world.client("owner").get(f"/s/{SID}/?targetId={ENTRY}"))


# -- the session page: badges and the "commented" filter ---------------------------------------------------


def tree_rows(html: str) -> list[str]:
    return re.findall(r'<li role="treeitem" data-entry-id="([^"]+)"', html)


def test_tree_rows_show_comment_badges(world: World) -> None:
    root = add(world)
    add(world, "owner", "reply", reply_to=root.pk)
    service.resolve(add(world, entry_id=OTHER), world.users["owner"])
    html = body(world.client("owner").get(f"/s/{SID}/"))
    assert re.search(rf'data-entry-id="{ENTRY}"[^\n]*"comment-count comment-count-open"[^>]*>💬 2<', html)
    assert re.search(rf'data-entry-id="{OTHER}"[^\n]*class="comment-count"[^>]*>💬 1<', html)


def test_the_page_asks_for_the_counts_once(world: World) -> None:
    for entry_id in (ENTRY, OTHER, "b2000001", "b2000003"):
        add(world, entry_id=entry_id)
    client = world.client("owner")
    client.get(f"/s/{SID}/?filter=all")  # warms the tree cache
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/s/{SID}/?filter=all&targetId={ENTRY}", headers={**HTMX, "HX-Target": "tree"})
    html = body(response)
    assert html.count('class="comment-count comment-count-open"') == 4
    on_comments = [q["sql"] for q in queries.captured_queries if '"treeview_comment"' in q["sql"]]
    # The counts of every row in one query, and the selected entry's threads.
    assert len(on_comments) == 2 and sum("GROUP BY" in sql for sql in on_comments) == 1


def test_the_commented_filter_shows_only_commented_entries(world: World) -> None:
    add(world)
    add(world, entry_id="b2000003")
    client = world.client("owner")
    html = body(client.get(f"/s/{SID}/", {"filter": "commented"}))
    assert tree_rows(html) == [ENTRY, "b2000003"]
    assert '<option value="commented" selected>' in html
    assert "[commented]" in html
    # The filter's answer follows the comments (they are not part of the cached tree).
    add(world, entry_id="b2000001")
    html = body(client.get(f"/s/{SID}/", {"filter": "commented"}))
    assert tree_rows(html) == ["b2000001", ENTRY, "b2000003"]


def test_the_commented_filter_with_nothing_commented_is_empty(world: World) -> None:
    html = body(world.client("owner").get(f"/s/{SID}/", {"filter": "commented"}))
    assert tree_rows(html) == [] and "No entries found" in html


def test_the_five_original_modes_are_unchanged_by_comments(world: World) -> None:
    session = world.session
    tree = explorer.explorer_tree(session, session.leaf_id)
    before = {
        mode: [n.id for n in tree.visible(mode, "", agent="omp15").nodes] for mode in explorer.VIEW_MODES[:5]
    }
    add(world)
    explorer.clear_caches()
    tree = explorer.explorer_tree(AgentSession.objects.get(pk=session.pk), session.leaf_id)
    for mode, ids in before.items():
        assert [n.id for n in tree.visible(mode, "", agent="omp15").nodes] == ids
        assert [n.id for n in tree.visible(mode, "", frozenset({ENTRY}), agent="omp15").nodes] == ids


def test_the_label_form_keeps_the_commented_filter(world: World) -> None:
    add(world)
    response = world.client("owner").post(
        f"/s/{SID}/label/", {"target_id": ENTRY, "label": "seen", "filter": "commented"}
    )
    assert response.status_code == 302 and "filter=commented" in response["Location"]


# -- re-import -----------------------------------------------------------------------------------------


def test_comments_survive_a_reimport_of_a_rewritten_file(world: World) -> None:
    add(world, text="kept across imports")
    path = Path(world.session.source_path)
    # Rewritten as omp v16+ does when the title changes: a title slot before the header, the entries the same.
    slot = '{"type":"title","v":1,"title":"Renamed","updatedAt":"2026-05-02T00:00:00.000Z","pad":"    "}\n'
    path.write_text(slot + path.read_text())
    result = sync_file(path)
    assert result.status == "rewritten", result
    assert AgentSession.objects.get(session_id=SID).pk == world.session.pk
    html = body(world.client("owner").get(f"/s/{SID}/?targetId={ENTRY}"))
    assert "kept across imports" in html
