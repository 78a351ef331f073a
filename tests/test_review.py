"""Review statuses (treeview/services/review.py, treeview/views/review.py): one per branch, mirrored into the
session as a label only where the user has none, kept across re-imports, set from the session page, shown in
the tree and the session list."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.reference import import_fixture
from tests.test_access import SECRETS, SID, World, _world
from treeview import explorer
from treeview.models import AgentSession, Entry, ReviewStatus
from treeview.services import append, review
from treeview.services.export import export_text
from treeview.services.sync import sync_file
from treeview.session.session_manager import SessionManager

FIXTURE = "v3_branching_labels.jsonl"
HTMX = {"HX-Request": "true", "HX-Target": "review-status"}
#: The fixture's branches: b2000006 (a label below it, nothing after) and b2000008 (labels and a custom entry
#: below it, the last of them the session's leaf: they belong to its branch).
LEAVES = {"b2000006", "b2000008"}


@pytest.fixture
def session(db: Any, tmp_path: Path, settings: Any) -> AgentSession:
    settings.ARBOR_WRITE_BACK = False
    return import_fixture(tmp_path, FIXTURE)


@pytest.fixture
def user(db: Any) -> User:
    return User.objects.create_user("reviewer", password="pw")


@pytest.fixture
def world(db: Any, tmp_path: Path, settings: Any) -> World:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_WRITE_BACK = False
    return _world(tmp_path)


def _labels(session: AgentSession) -> dict[str, str]:
    """The labels as the agent reads them from the exported file."""
    core = SessionManager.from_text(export_text(AgentSession.objects.get(pk=session.pk)))
    return {
        entry_id: label
        for entry_id in ("b2000006", "b2000008", "e5000001")
        if (label := core.get_label(entry_id))
    }


def _label_rows(session: AgentSession, target: str) -> list[Entry]:
    return list(Entry.objects.filter(session=session, type="label", label_target=target).order_by("seq"))


# -- the service ---------------------------------------------------------------------------------------------


def test_a_status_is_stored_and_mirrored_as_a_real_label_entry(session: AgentSession, user: User) -> None:
    result = review.set_review_status(session, "b2000006", "approved", user)
    assert (result.leaf_id, result.status, result.label) == ("b2000006", "approved", "written")
    row = ReviewStatus.objects.get(session=session, leaf_id="b2000006")
    assert (row.status, row.updated_by) == ("approved", user)
    [label] = _label_rows(session, "b2000006")
    entry = json.loads(label.raw)
    assert (entry["type"], entry["targetId"], entry["label"]) == ("label", "b2000006", "review: approved")
    assert label.origin == Entry.Origin.ARBOR
    assert _labels(session) == {"b2000006": "review: approved", "b2000008": "click-version"}


def test_a_new_status_upserts_the_row_and_replaces_its_own_label(session: AgentSession, user: User) -> None:
    review.set_review_status(session, "b2000006", "approved", user)
    result = review.set_review_status(session, "b2000006", "needs_changes", user)
    assert result.label == "written"
    assert list(ReviewStatus.objects.filter(session=session).values_list("leaf_id", "status")) == [
        ("b2000006", "needs_changes")
    ]
    assert _labels(session)["b2000006"] == "review: needs changes"
    # The same status again appends nothing.
    assert review.set_review_status(session, "b2000006", "needs_changes", user).label == "unchanged"
    assert len(_label_rows(session, "b2000006")) == 2


def test_a_users_own_label_is_never_overwritten(session: AgentSession, user: User) -> None:
    result = review.set_review_status(session, "b2000008", "abandoned", user)
    assert result.label == "kept"
    assert ReviewStatus.objects.get(session=session, leaf_id="b2000008").status == "abandoned"
    assert _label_rows(session, "b2000008")[-1].label_text == "click-version"
    append.set_label(session, "b2000006", "my own words")
    assert review.set_review_status(session, "b2000006", "approved", user).label == "kept"
    assert review.set_review_status(session, "b2000006", "unreviewed", user).label == "kept"
    assert _labels(session) == {"b2000006": "my own words", "b2000008": "click-version"}


def test_unreviewed_deletes_the_row_and_clears_the_review_label(session: AgentSession, user: User) -> None:
    review.set_review_status(session, "b2000006", "approved", user)
    result = review.set_review_status(session, "b2000006", "unreviewed", user)
    assert result.label == "cleared"
    assert not ReviewStatus.objects.filter(session=session).exists()
    assert _label_rows(session, "b2000006")[-1].label_text == ""
    assert "b2000006" not in _labels(session)
    # Nothing to clear: nothing appended.
    count = Entry.objects.filter(session=session).count()
    assert review.set_review_status(session, "b2000006", "unreviewed", user).label == "unchanged"
    assert Entry.objects.filter(session=session).count() == count
    # The custom entry ends b2000008's branch, which keeps its own label ("click-version"): nothing written.
    assert review.set_review_status(session, "e5000001", "unreviewed", user).label == "kept"
    assert Entry.objects.filter(session=session).count() == count


def test_an_unknown_leaf_is_refused_and_nothing_is_written(session: AgentSession, user: User) -> None:
    count = Entry.objects.filter(session=session).count()
    with pytest.raises(append.UnknownEntry):
        review.set_review_status(session, "nope", "approved", user)
    assert not ReviewStatus.objects.exists()
    assert Entry.objects.filter(session=session).count() == count


def test_a_label_entry_stands_for_the_entry_above_it(session: AgentSession, user: User) -> None:
    # c3000001 is the label below b2000006: the branch is named by b2000006.
    assert review.set_review_status(session, "c3000001", "approved", user).leaf_id == "b2000006"
    # The mirror label went below the session's leaf (e5000001): still two branches, same names; the leaf's
    # branch is named by b2000008 (the labels and the custom entry after it are bookkeeping).
    session.refresh_from_db()
    assert Entry.objects.get(session=session, entry_id=session.leaf_id).type == "label"
    assert {leaf.entry_id for leaf in review.session_leaves([session])[session.pk]} == LEAVES
    tree = explorer.explorer_tree(session, session.leaf_id)
    page = review.page_review(session, tree.flat, session.leaf_id)
    assert (page.leaf_id, page.status) == ("b2000008", "unreviewed")
    assert page.statuses == {"b2000006": "approved"}


def test_leaves_skip_labels_even_when_the_agent_went_on_after_them(session: AgentSession, user: User) -> None:
    # A label below the leaf, then a message after the label: the branch ends at the message, not above.
    append.set_label(session, "b2000001", "first")
    session.refresh_from_db()
    label_id = session.leaf_id
    append.append_entry(
        session,
        lambda leaf, ids: {
            "type": "message",
            "id": "f6000001",
            "parentId": leaf,
            "timestamp": "2026-05-01T10:01:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "Go on."}], "timestamp": 1},
        },
    )
    leaves = {leaf.entry_id for leaf in review.session_leaves([session])[session.pk]}
    assert leaves == {"b2000006", "f6000001"}
    assert label_id not in leaves and "b2000008" not in leaves


def test_trailing_bookkeeping_entries_belong_to_the_branch_above(session: AgentSession, user: User) -> None:
    # The fixture's leaf is a custom entry below two labels below b2000008: one branch, named by b2000008.
    assert review.branch_leaf(session, "e5000001") == "b2000008"
    append.append_entry(
        session,
        lambda leaf, ids: {
            "type": "model_change",
            "id": "f6000002",
            "parentId": leaf,
            "timestamp": "2026-05-01T10:01:00.000Z",
            "model": "anthropic/claude-opus-4",
        },
    )
    assert {leaf.entry_id for leaf in review.session_leaves([session])[session.pk]} == LEAVES
    assert review.set_review_status(session, "f6000002", "approved", user).leaf_id == "b2000008"
    assert review.statuses_for_session(session) == {"b2000008": "approved"}


def test_a_refused_write_back_keeps_the_status(session: AgentSession, user: User, settings: Any) -> None:
    settings.ARBOR_WRITE_BACK = True
    with open(session.source_path, "a", encoding="utf-8") as handle:
        handle.write("\n")  # the file changed since Arbor read it
    result = review.set_review_status(session, "b2000006", "approved", user)
    assert result.label == "refused" and "sync it first" in result.refusal
    assert ReviewStatus.objects.get(session=session, leaf_id="b2000006").status == "approved"
    assert _label_rows(session, "b2000006") == []


def test_with_write_back_the_label_lands_in_the_agents_file(
    session: AgentSession, user: User, settings: Any
) -> None:
    settings.ARBOR_WRITE_BACK = True
    review.set_review_status(session, "b2000006", "approved", user)
    core = SessionManager.open(session.source_path)
    assert core.get_label("b2000006") == "review: approved"


def test_statuses_survive_a_reimport_of_a_grown_file(session: AgentSession, user: User) -> None:
    review.set_review_status(session, "b2000006", "approved", user)
    review.set_review_status(session, "e5000001", "needs_changes", user)
    line = {
        "type": "message",
        "id": "g7000001",
        "parentId": "e5000001",
        "timestamp": "2026-05-01T10:02:00.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "More."}], "timestamp": 1},
    }
    with open(session.source_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, separators=(",", ":")) + "\n")
    result = sync_file(session.source_path)
    assert result.status == "grown" and result.session is not None and result.session.pk == session.pk
    assert review.statuses_for_session(result.session) == {
        "b2000006": "approved",
        "b2000008": "needs_changes",  # the branch e5000001 ends is b2000008's
    }
    # The branch went on: its new leaf waits for review; the old status stays on the entry it was set on.
    assert "g7000001" in {leaf.entry_id for leaf in review.session_leaves([result.session])[session.pk]}


def test_statuses_survive_a_reimport_of_a_rewritten_file(session: AgentSession, user: User) -> None:
    review.set_review_status(session, "b2000006", "abandoned", user)
    path = Path(session.source_path)
    path.write_text(path.read_text().replace("Rewrote it with click groups.", "Rewrote it with click."))
    result = sync_file(path)
    assert result.status == "rewritten" and result.session is not None and result.session.pk == session.pk
    assert review.statuses_for_session(result.session) == {"b2000006": "abandoned"}


def test_summaries_count_statuses_per_session_in_one_query(
    session: AgentSession, user: User, django_assert_num_queries: Any
) -> None:
    review.set_review_status(session, "b2000006", "approved", user)
    review.set_review_status(session, "b2000008", "approved", user)
    review.set_review_status(session, "b2000002", "needs_changes", user)
    with django_assert_num_queries(1):
        summaries = review.summaries([session])
    assert str(summaries[session.pk]) == "2 approved · 1 needs changes"


# -- the views -----------------------------------------------------------------------------------------------


def _post(client: Client, leaf: str = "b2000006", status: str = "approved", **extra: Any) -> Any:
    return client.post(f"/s/{SID}/review/", {"leaf_id": leaf, "status": status, "leafId": leaf}, **extra)


def test_without_javascript_the_form_redirects_back_to_the_branch(world: World) -> None:
    response = _post(world.client("member"))
    assert response.status_code == 302
    assert response["Location"] == f"/s/{SID}/?leafId=b2000006"
    row = ReviewStatus.objects.get(session=world.session, leaf_id="b2000006")
    assert (row.status, row.updated_by) == ("approved", world.users["member"])


def test_htmx_gets_the_control_and_the_tree_with_its_badge(world: World) -> None:
    response = _post(world.client("member"), headers=HTMX)
    assert response.status_code == 200
    assert response["Vary"] and "HX-Request" in response["Vary"]
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="review-status"')
    assert "<html" not in body
    assert re.search(r'value="approved"\s+class="review-choice review-approved"\s+aria-pressed="true"', body)
    assert 'id="tree"' in body and 'hx-swap-oob="true"' in body
    assert re.search(r'data-entry-id="b2000006"(?:(?!</li>).)*data-review-status="approved"', body)


def test_the_session_page_shows_the_control_and_the_badge(world: World) -> None:
    review.set_review_status(world.session, "b2000006", "needs_changes", world.users["owner"])
    body = world.client("member").get(f"/s/{SID}/?leafId=b2000006&filter=all").content.decode()
    assert 'id="review-status"' in body
    assert '<input type="hidden" name="leaf_id" value="b2000006">' in body
    assert re.search(
        r'value="needs_changes"\s+class="review-choice review-needs_changes"\s+aria-pressed="true"', body
    )
    assert re.search(
        r'<li role="treeitem" data-entry-id="b2000006"(?:(?!</li>).)*data-review-status="needs_changes"', body
    )
    # Another branch: unreviewed, and no badge on its row.
    other = world.client("member").get(f"/s/{SID}/").content.decode()
    assert '<input type="hidden" name="leaf_id" value="b2000008">' in other
    # (within that row: the rows are drawn one after another on one line)
    assert not re.search(r'data-entry-id="b2000008"(?:(?!</li>).)*data-review-status', other)


def test_csrf_is_enforced(world: World) -> None:
    response = _post(world.client("member", enforce_csrf_checks=True))
    assert response.status_code == 403
    assert not ReviewStatus.objects.exists()


def test_an_outsider_gets_a_404_with_nothing_of_the_session(world: World) -> None:
    for headers in ({}, HTMX):
        response = _post(world.client("outsider"), headers=headers)
        assert response.status_code == 404
        body = response.content.decode()
        assert all(secret not in body for secret in SECRETS) and "b2000006" not in body
    assert not ReviewStatus.objects.exists()


def test_signed_out_is_sent_to_the_login_page(world: World) -> None:
    response = _post(world.client("anonymous"))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert not ReviewStatus.objects.exists()


def test_malformed_or_unknown_input_is_refused(world: World) -> None:
    client = world.client("member")
    assert _post(client, status="great").status_code == 400
    assert _post(client, leaf="nope").status_code == 404
    assert client.get(f"/s/{SID}/review/").status_code == 405
    assert not ReviewStatus.objects.exists()


def test_the_list_shows_summaries_and_filters_by_status(world: World) -> None:
    review.set_review_status(world.session, "b2000006", "approved", world.users["owner"])
    review.set_review_status(world.session, "e5000001", "needs_changes", world.users["owner"])
    client = world.client("member")
    title = SECRETS[0]
    listed = client.get("/").content.decode()
    assert "1 approved" in listed and "1 needs changes" in listed
    assert title in client.get("/?review=approved").content.decode()
    assert title in client.get("/?review=needs_changes").content.decode()
    assert title not in client.get("/?review=abandoned").content.decode()
    # "unreviewed": sessions where no branch has a status yet (the long-output one).
    unreviewed = client.get("/?review=unreviewed").content.decode()
    assert title not in unreviewed and f'id="session-{world.long.pk}"' in unreviewed
    # htmx: the list only; a malformed filter shows every session.
    fragment = client.get("/?review=approved", headers={"HX-Request": "true"}).content.decode()
    assert fragment.lstrip().startswith('<section id="session-list"') and title in fragment
    assert title in client.get("/?review=bogus").content.decode()
    # An outsider filters nothing into view.
    assert title not in world.client("outsider").get("/?review=approved").content.decode()
