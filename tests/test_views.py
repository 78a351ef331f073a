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
    assert '<span class="project-name">proj</span>' in html
    assert '<code class="project-path">/home/dev/proj</code>' in html
    assert session.get_agent_display() in html
    assert f'<td class="num col-entries">{session.entry_count}</td>' in html
    assert f'<td class="num col-branches">{session.branch_point_count}</td>' in html
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

    assert ">Fresh start</a>" in html


def test_an_unnamed_session_is_titled_by_its_first_prompt(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    assert session.title == ""

    listed = client.get("/").content.decode()
    page = client.get(f"/s/{session.session_id}/").content.decode()

    prompt = "Write a CLI argument parser in Python."
    assert f'class="title" href="/s/{session.session_id}/"' in listed
    assert f">{prompt}</a>" in listed
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

    assert html.count('<tr class="project-row">') == 2
    # One table: the columns of every project line up.
    assert html.count('<table class="sessions">') == 1
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
    broken = tmp_path / "broken.jsonl"
    broken.write_text("not json at all\n")
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

    assert "Append a marker so that the agent resumes at Arbor's leaf" in off
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


# -- opening, filtering and ordering the list (issue 12) -------------------------------------------------


def test_the_title_links_to_the_session_and_the_row_carries_its_address(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    html = client.get("/").content.decode()

    detail = f"/s/{session.session_id}/"
    assert f'<a class="title" href="{detail}"' in html
    assert f'data-href="{detail}"' in html
    # The actions sit in a menu, not in the row's text.
    assert '<details class="row-menu">' in html


def test_filter_by_project_and_agent(client):
    make_sessions(3, cwd="/home/dev/alpha")
    make_sessions(2, cwd="/home/dev/beta")
    AgentSession.objects.filter(cwd="/home/dev/beta").update(agent=AgentSession.Agent.PI)

    alpha = client.get("/", {"project": "/home/dev/alpha"}).content.decode()
    pi = client.get("/", {"agent": "pi"}).content.decode()
    both = client.get("/", {"project": "/home/dev/alpha", "agent": "pi"}).content.decode()

    assert rows_in(alpha) == 3 and "of /home/dev/beta" not in alpha
    assert rows_in(pi) == 2 and "of /home/dev/alpha" not in pi
    assert rows_in(both) == 0
    assert "No session matches these filters" in both
    # The project filter offers readable names.
    assert '<option value="/home/dev/alpha" selected>alpha</option>' in alpha


def test_sessions_without_a_directory_have_their_own_project_choice(client):
    make_sessions(1, cwd="/home/dev/alpha")
    AgentSession.objects.create(session_id="nowhere", header_raw="{}", title="no cwd", cwd="")

    html = client.get("/", {"project": "-"}).content.decode()

    assert rows_in(html) == 1 and "no cwd" in html
    assert '<option value="-" selected>No working directory</option>' in html


def test_filter_by_date_range_of_last_activity(client):
    make_sessions(3, cwd="/p", start=datetime(2026, 3, 1, 12, tzinfo=UTC))
    AgentSession.objects.filter(session_id="p-0001").update(
        last_timestamp=datetime(2026, 3, 5, 12, tzinfo=UTC)
    )
    AgentSession.objects.filter(session_id="p-0002").update(
        last_timestamp=datetime(2026, 3, 9, 12, tzinfo=UTC)
    )

    since = client.get("/", {"since": "2026-03-05"}).content.decode()
    until = client.get("/", {"until": "2026-03-05"}).content.decode()
    day = client.get("/", {"since": "2026-03-05", "until": "2026-03-05"}).content.decode()

    assert rows_in(since) == 2
    assert rows_in(until) == 2
    assert rows_in(day) == 1 and "session 0001" in day
    assert 'value="2026-03-05"' in day


def test_filter_by_cost_and_sort_by_cost(client):
    make_sessions(3, cwd="/p")
    for n, cost in enumerate([0.5, 12.25, 3.0]):
        AgentSession.objects.filter(session_id=f"p-{n:04d}").update(cost=cost)

    costly = client.get("/", {"min_cost": "3"}).content.decode()
    by_cost = client.get("/", {"sort": "cost"}).content.decode()

    assert rows_in(costly) == 2 and "session 0000" not in costly
    assert by_cost.index("session 0001") < by_cost.index("session 0002") < by_cost.index("session 0000")
    # Not ordered by project: no project rows, each row names its project.
    assert '<tr class="project-row">' not in by_cost
    assert '<span class="row-project" title="/p">p</span>' in by_cost


def test_sort_by_title_oldest_and_entries(client):
    make_sessions(3, cwd="/p")
    AgentSession.objects.filter(session_id="p-0000").update(title="zebra", entry_count=1)
    AgentSession.objects.filter(session_id="p-0001").update(title="Apple", entry_count=50)
    AgentSession.objects.filter(session_id="p-0002").update(title="mango", entry_count=7)

    def order(sort: str) -> list[str]:
        html = client.get("/", {"sort": sort}).content.decode()
        return sorted(["zebra", "Apple", "mango"], key=lambda title: html.index(f">{title}</a>"))

    assert order("title") == ["Apple", "mango", "zebra"]
    assert order("oldest") == ["zebra", "Apple", "mango"]
    assert order("newest") == ["mango", "Apple", "zebra"]
    assert order("entries") == ["Apple", "mango", "zebra"]


def test_malformed_filters_are_dropped_not_errors(client):
    make_sessions(2, cwd="/p")

    response = client.get("/", {"since": "yesterday", "min_cost": "-3", "sort": "nope", "agent": "x"})

    assert response.status_code == 200
    assert rows_in(response.content.decode()) == 2


def test_paging_links_keep_the_filters(client):
    make_sessions(60, cwd="/p")

    html = client.get("/", {"sort": "oldest", "agent": "omp"}).content.decode()

    assert 'href="/?page=2&amp;agent=omp&amp;sort=oldest"' in html


def test_filters_work_with_htmx_and_return_the_fragment(client):
    make_sessions(2, cwd="/home/dev/alpha")
    make_sessions(2, cwd="/home/dev/beta")

    response = client.get("/", {"project": "/home/dev/beta"}, headers=HTMX)

    html = response.content.decode()
    assert html.lstrip().startswith('<section id="session-list">')
    assert rows_in(html) == 2 and "of /home/dev/alpha" not in html


def test_copies_of_one_session_id_are_told_apart_by_file(client, tmp_path):
    first = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    backup = tmp_path / "backup.jsonl"
    backup.write_bytes(Path(first.source_path).read_bytes())
    second = sync_file(backup).session
    assert first.session_id == second.session_id and first.pk != second.pk

    html = client.get("/").content.decode()

    assert '<span class="copy-note"' in html
    assert f">{tmp_path.name}/backup.jsonl</span>" in html
    assert f'href="/s/{first.session_id}/?copy={second.pk}"' in html


def test_an_action_on_the_list_keeps_its_filters_and_order(client, tmp_path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    make_sessions(2, cwd="/elsewhere")

    listed = client.get("/", {"sort": "cost", "agent": "omp"}).content.decode()
    response = client.post(
        f"/s/{session.session_id}/persist-position/", {"page": "1", "sort": "cost", "agent": "omp"}
    )

    assert '<input type="hidden" name="sort" value="cost">' in listed
    html = response.content.decode()
    assert response.status_code == 200 and "Position persisted" in html
    assert '<tr class="project-row">' not in html  # still ordered by cost, not grouped
