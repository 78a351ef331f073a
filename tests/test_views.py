"""The session list from the database: groups, pages, import issues; persisting the position."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from tests.reference import import_fixture
from treeview.models import AgentSession, ImportIssue
from treeview.services.append import move_leaf
from treeview.services.sync import sync_file

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path: Path) -> Path:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    return settings.ARBOR_UPLOAD_DIR


def make_sessions(count: int, *, cwd: str = "/home/dev/many", start: datetime | None = None) -> None:
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    AgentSession.objects.bulk_create(
        AgentSession(
            session_id=f"{cwd.strip('/').replace('/', '-')}-{n:04d}",
            header_raw="{}",
            title=f"session {n:04d} of {cwd}",
            cwd=cwd,
            last_timestamp=start + timedelta(minutes=n),
        )
        for n in range(count)
    )


def rows_in(html: str) -> int:
    return html.count('<tr id="session-')


# -- the list --------------------------------------------------------------------------------------------


def test_empty_list_explains_the_three_ways_to_import(client):
    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "No sessions imported yet" in html
    assert "./arbor run" in html
    assert "python manage.py import_sessions PATH" in html
    assert "upload" in html
    assert 'type="file"' in html and "multiple" in html and 'accept=".jsonl"' in html


def test_imported_sessions_are_listed_with_their_facts(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    html = client.get("/").content.decode()

    assert session.session_id in html
    assert "<code>/home/dev/proj</code>" in html
    assert session.get_agent_display() in html
    assert f'<td class="num">{session.entry_count}</td>' in html
    assert f'<td class="num">{session.branch_point_count}</td>' in html
    assert session.branch_point_count > 0
    for model in session.models_used:
        assert f"<code>{model}</code>" in html
    assert f"/s/{session.session_id}/download.jsonl" in html
    assert f"/s/{session.session_id}/branch/{session.leaf_id}.jsonl" in html
    assert f"/s/{session.session_id}/persist-position/" in html
    assert "1 session," in html


def test_title_from_the_omp_title_slot_is_the_row_title(client, tmp_path):
    import_fixture(tmp_path, "omp18_title_slot_new_entry_types.jsonl")

    html = client.get("/").content.decode()

    assert '<span class="title">Fresh start</span>' in html


def test_an_unnamed_session_is_titled_by_its_first_prompt(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    assert session.title == ""

    listed = client.get("/").content.decode()
    page = client.get(f"/s/{session.session_id}/").content.decode()

    prompt = "Write a CLI argument parser in Python."
    assert f'<span class="title">{prompt}</span>' in listed
    assert f"<h1>{prompt}</h1>" in page
    # Without the annotation (elsewhere), the id stands in.
    assert AgentSession.objects.get(pk=session.pk).display_title == session.session_id


def test_a_long_first_prompt_is_cut_for_the_title():
    session = AgentSession(session_id="s1")
    session.first_prompt = "user: " + "word " * 40
    assert len(session.display_title) == 80
    assert session.display_title.endswith("…")


def test_sessions_are_grouped_by_project_latest_activity_first(client):
    make_sessions(2, cwd="/old/project", start=datetime(2025, 1, 1, tzinfo=UTC))
    make_sessions(2, cwd="/new/project", start=datetime(2026, 6, 1, tzinfo=UTC))

    html = client.get("/").content.decode()

    assert html.count('<h2 class="project">') == 2
    assert html.index("/new/project") < html.index("/old/project")
    # Newest first inside a project.
    assert html.index("session 0001 of /new/project") < html.index("session 0000 of /new/project")


def test_list_is_paginated_fifty_per_page(client):
    make_sessions(120)

    first = client.get("/").content.decode()
    last = client.get("/?page=3").content.decode()

    assert rows_in(first) == 50
    assert "page 1 of 3" in first
    assert 'href="/?page=2"' in first
    assert rows_in(last) == 20
    assert 'href="/?page=2"' in last
    assert "Older" not in last
    assert "session 0119" in first and "session 0119" not in last


def test_out_of_range_or_malformed_page_numbers_do_not_fail(client):
    make_sessions(60)

    assert rows_in(client.get("/?page=99").content.decode()) == 10
    assert rows_in(client.get("/?page=nope").content.decode()) == 50
    assert rows_in(client.get("/?page=-1").content.decode()) == 50


def test_import_issues_are_listed_with_their_reason(client, tmp_path):
    broken = tmp_path / "headerless.jsonl"
    broken.write_text('{"type":"message","id":"x","parentId":null}\n')
    sync_file(broken)

    html = client.get("/").content.decode()

    issue = ImportIssue.objects.get()
    assert "Files that failed to import (1)" in html
    assert str(broken) in html
    assert "not a session file" in issue.error
    assert "not a session file" in html
    # With no session imported, the empty state is still there to explain how to import.
    assert "No sessions imported yet" in html


def test_warnings_are_counted_and_listed_on_demand(client, tmp_path):
    session = import_fixture(tmp_path, "v3_orphans_sorting_malformed.jsonl")
    assert session.warnings

    html = client.get("/").content.decode()

    count = len(session.warnings)
    assert f"<summary>{count} warning{'s' if count != 1 else ''}</summary>" in html
    assert f"line {session.warnings[0]['line']}:" in html


def test_forked_session_links_to_its_parent(client, tmp_path):
    parent = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    AgentSession.objects.create(
        session_id="child-1",
        header_raw="{}",
        title="the fork",
        cwd="/home/dev/proj",
        parent_session=parent.source_path,
    )

    html = client.get("/").content.decode()

    assert "forked from" in html
    assert f'<a href="/s/{parent.session_id}/">Write a CLI argument parser in Python.</a>' in html


def test_session_link_opens_the_session_page(client):
    make_sessions(75)

    response = client.get("/s/home-dev-many-0000/")

    assert response.status_code == 200
    assert 'id="tree"' in response.content.decode()


def test_unknown_session_link_is_404(client):
    assert client.get("/s/nope/").status_code == 404


def test_hostile_title_and_cwd_are_escaped(client):
    AgentSession.objects.create(
        session_id="evil",
        header_raw="{}",
        title="<script>alert('title')</script>",
        cwd='/tmp/<img src=x onerror="alert(1)">',
        models_used=["<b>model</b>"],
        warnings=[{"line": 1, "message": "<i>warned</i>"}],
    )

    html = client.get("/").content.decode()

    assert "<script>alert(" not in html
    assert "&lt;script&gt;alert(&#x27;title&#x27;)&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "<b>model</b>" not in html
    assert "<i>warned</i>" not in html


def test_session_id_that_cannot_be_routed_gets_no_links_but_the_list_works(client):
    AgentSession.objects.create(session_id="", header_raw="{}", title="no id", leaf_id="abc")
    AgentSession.objects.create(session_id="a/b", header_raw="{}", title="slash id", leaf_id="abc")

    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "no id" in html and "slash id" in html
    assert "download.jsonl" not in html


def test_htmx_request_gets_only_the_session_list_fragment(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    response = client.get("/", headers=HTMX)

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="session-list">')
    assert "<html" not in html
    assert "upload-form" not in html
    assert session.session_id in html


def test_htmx_history_restore_gets_the_full_page(client):
    response = client.get("/", headers={**HTMX, "HX-History-Restore-Request": "true"})

    assert "<!doctype html>" in response.content.decode()


def test_session_list_varies_on_hx_request(client):
    assert "HX-Request" in client.get("/")["Vary"]
    assert "HX-Request" in client.get("/", headers=HTMX)["Vary"]


def test_session_list_refuses_post(client):
    assert client.post("/").status_code == 405


def test_page_has_no_inline_script_or_style(client, tmp_path):
    import_fixture(tmp_path, "v3_branching_labels.jsonl")

    html = client.get("/").content.decode()

    assert "<style" not in html
    assert " style=" not in html
    assert " hx-on" not in html
    for tag in html.split("<script")[1:]:
        assert tag.lstrip().startswith("src=") or 'src="' in tag.split(">")[0], tag[:80]
    assert 'type="module" src="/static/upload.js"' in html


# -- persist position for the agent ---------------------------------------------------------------------


def test_the_list_says_whether_write_back_is_on(client, settings, tmp_path):
    import_fixture(tmp_path, "v3_branching_labels.jsonl")

    off = client.get("/").content.decode()
    settings.ARBOR_WRITE_BACK = True
    on = client.get("/").content.decode()

    assert "the agent resumes at the last line of the file" in off
    assert "Write-back is off: the marker lands in Arbor's copy and in the downloaded file" in off
    assert "Write-back is on" in on


def test_persist_position_appends_a_marker_and_reports_it(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    before = session.entry_count

    response = client.post(f"/s/{session.session_id}/persist-position/", {"page": "1"})

    assert response.status_code == 200
    session.refresh_from_db()
    assert session.entry_count == before + 1
    marker = session.entries.order_by("-seq").first()
    assert marker.type == "branch_summary" and not marker.in_file
    html = response.content.decode()
    assert "Position persisted" in html
    assert "write-back is off" in html
    assert "<!doctype html>" in html


def test_persist_position_htmx_gets_the_fragment(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    response = client.post(f"/s/{session.session_id}/persist-position/", headers=HTMX)

    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<section id="session-list">')
    assert "HX-Request" in response["Vary"]


def test_persist_position_refused_by_write_back_is_409_with_the_reason(client, settings, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    settings.ARBOR_WRITE_BACK = True
    source = Path(session.source_path)
    with source.open("a") as handle:  # the agent wrote after Arbor's last sync
        handle.write(
            '{"type":"custom","id":"zz000001","parentId":null,"timestamp":"2026-05-01T12:00:00.000Z"}\n'
        )
    before = source.read_bytes()

    htmx = client.post(f"/s/{session.session_id}/persist-position/", headers=HTMX)
    plain = client.post(f"/s/{session.session_id}/persist-position/")

    assert htmx.status_code == 409
    assert plain.status_code == 409
    html = htmx.content.decode()
    assert html.lstrip().startswith('<section id="session-list">')
    assert 'class="notice notice-error"' in html
    assert "Position not persisted" in html
    assert "changed since Arbor last read it" in html
    assert source.read_bytes() == before
    assert AgentSession.objects.get(pk=session.pk).entry_count == session.entry_count


def test_persist_position_with_write_back_appends_to_the_agents_file(client, settings, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    settings.ARBOR_WRITE_BACK = True
    source = Path(session.source_path)
    before = source.read_bytes()

    response = client.post(f"/s/{session.session_id}/persist-position/")

    assert response.status_code == 200
    after = source.read_bytes()
    assert after.startswith(before)
    assert after[len(before) :].count(b"\n") == 1
    assert "appended to the agent's file" in unescape(response.content.decode())


def test_persist_position_of_a_session_without_entries_is_refused(client):
    AgentSession.objects.create(session_id="empty", header_raw="{}", title="empty")

    response = client.post("/s/empty/persist-position/")

    assert response.status_code == 409
    assert "no position to persist" in response.content.decode()


def test_persist_position_after_moving_the_leaf_names_that_leaf(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    first_message = session.entries.filter(type="message").order_by("seq").first()
    move_leaf(session, first_message.entry_id)

    html = client.post(f"/s/{session.session_id}/persist-position/").content.decode()

    assert f"at entry {first_message.entry_id}" in html


def test_persist_position_of_unknown_session_is_404(client):
    assert client.post("/s/nope/persist-position/").status_code == 404


def test_persist_position_refuses_get(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    assert client.get(f"/s/{session.session_id}/persist-position/").status_code == 405


def test_persist_position_enforces_csrf(tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    browser = Client(enforce_csrf_checks=True)
    url = f"/s/{session.session_id}/persist-position/"

    refused = browser.post(url)
    browser.get("/")
    token = browser.cookies["csrftoken"].value
    by_header = browser.post(url, headers={**HTMX, "X-CSRFToken": token})
    by_field = browser.post(url, {"csrfmiddlewaretoken": token})

    assert refused.status_code == 403
    assert by_header.status_code == 200
    assert by_field.status_code == 200
    assert AgentSession.objects.get(pk=session.pk).entry_count == session.entry_count + 2


def test_the_page_sends_the_csrf_token_in_htmx_headers(client):
    html = client.get("/").content.decode()

    assert 'hx-headers=\'{"X-CSRFToken": "' in html
