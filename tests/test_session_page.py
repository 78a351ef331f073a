"""The session page: tree window, filters and search, deep links, the conversation path, labels."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from tests.reference import import_fixture
from treeview import explorer
from treeview.models import AgentSession
from treeview.services.sync import sync_file
from treeview.session.generate import write_session
from treeview.session.selector import FILTER_MODES, initial_selection
from treeview.tree_index import flatten_session, select_rows

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
BRANCHING = "v3_branching_labels.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
ROW = re.compile(r'<li role="treeitem"\s+data-entry-id="([^"]*)"')
ENTRY = re.compile(r'<article id="entry-[^"]*"\s+data-entry-id="([^"]*)"')


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path: Path) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    explorer.clear_caches()


def page(session: AgentSession) -> str:
    return f"/s/{session.session_id}/"


def tree_ids(html: str) -> list[str]:
    return [unescape(i) for i in ROW.findall(html)]


def entry_ids(html: str) -> list[str]:
    return [unescape(i) for i in ENTRY.findall(html)]


def selected_row(html: str) -> str:
    match = re.search(r'data-entry-id="([^"]*)"\s+aria-level="\d+"\s+aria-selected="true"', html)
    assert match is not None
    return unescape(match.group(1))


def path_to(session: AgentSession, entry_id: str) -> list[str]:
    flat = flatten_session(session)
    ids = []
    current: str | None = entry_id
    while current is not None:
        ids.append(current)
        current = flat.by_id[current].entry.get("parentId")
    return ids[::-1]


# -- page and fragments ------------------------------------------------------------------------------------


def test_full_page_shows_header_tree_and_conversation(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session))
    html = response.content.decode()
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    assert "<html" in html
    assert 'id="tree"' in html and 'id="conversation"' in html
    assert "/home/dev/proj" in html
    assert 'role="tree"' in html
    assert f"{len(select_rows(session))} of {len(flatten_session(session).nodes)} shown" in html
    assert f"/s/{SID}/download.jsonl" in html


def test_htmx_tree_request_gets_the_tree_and_the_conversation_out_of_band(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session), {"targetId": "b2000004"}, headers={**HTMX, "HX-Target": "tree"})
    html = response.content.decode()
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    assert "<html" not in html
    assert html.lstrip().startswith('<section id="tree"')
    assert 'id="conversation"' in html and 'hx-swap-oob="true"' in html


def test_htmx_conversation_request_gets_only_the_conversation(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session), headers={**HTMX, "HX-Target": "conversation"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="conversation"')
    assert 'id="tree"' not in html and "hx-swap-oob" not in html


def test_history_restore_request_gets_the_full_page(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session), headers={**HTMX, "HX-History-Restore-Request": "true"})
    assert "<html" in response.content.decode()


def test_window_paging_request_gets_only_the_tree(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session), {"start": "0"}, headers={**HTMX, "HX-Target": "tree"})
    html = response.content.decode()
    assert 'id="tree"' in html and 'id="conversation"' not in html


# -- filters, search, selection ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("handmade", BRANCHING),
        ("handmade", "v3_custom_mode_ttsr.jsonl"),
        ("handmade", "v3_orphans_sorting_malformed.jsonl"),
        ("real", "pi-mono_large-session_v1.jsonl"),
    ],
)
def test_every_filter_mode_shows_the_core_selector_rows(client: Client, tmp_path: Path, folder, name):
    session = import_fixture(tmp_path, name, folder)
    for mode in FILTER_MODES:
        expected = [row.id for row in select_rows(session, mode)]
        html = client.get(page(session), {"filter": mode}).content.decode()
        shown = tree_ids(html)
        assert len(shown) <= explorer.TREE_WINDOW
        if len(expected) <= explorer.TREE_WINDOW:
            assert shown == expected, mode
        else:
            first = expected.index(shown[0])
            assert shown == expected[first : first + len(shown)], mode
        assert f"{len(expected)} of {len(flatten_session(session).nodes)} shown" in html


def test_search_shows_the_core_selector_matches(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    for query in ["click", "subcommands", "ADD sub", "start", "no such text"]:
        html = client.get(page(session), {"q": query}).content.decode()
        assert tree_ids(html) == [row.id for row in select_rows(session, "default", query)], query
    assert "No entries found" in client.get(page(session), {"q": "no such text"}).content.decode()


def test_malformed_filter_is_a_bad_request(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    assert client.get(page(session), {"filter": "everything"}).status_code == 400


def test_default_selection_is_the_leaf_and_the_conversation_is_its_path(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session)).content.decode()
    assert session.leaf_id is not None
    # The leaf (a custom entry) is hidden in the default view: its nearest visible ancestor is selected.
    rows = select_rows(session)
    flat = flatten_session(session)
    index = initial_selection(flat, rows)
    assert index is not None
    assert selected_row(html) == rows[index].id
    assert entry_ids(html) == path_to(session, rows[index].id)


def test_target_id_deep_link_selects_the_entry_and_shows_its_path(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000005"}).content.decode()
    assert selected_row(html) == "b2000005"
    assert entry_ids(html) == path_to(session, "b2000005")
    assert 'id="entry-b2000005"' in html
    assert "targetId=b2000005" in html  # the permalink


def test_hidden_target_selects_its_nearest_visible_ancestor(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    # b2000004 is a tool-call-only assistant turn, which no filter mode shows.
    html = client.get(page(session), {"targetId": "b2000004", "filter": "all"}).content.decode()
    assert "b2000004" not in tree_ids(html)
    assert selected_row(html) == "b2000003"
    # The conversation still goes to the entry asked for.
    assert entry_ids(html) == path_to(session, "b2000004")


def test_leaf_id_deep_link_draws_the_tree_for_that_leaf(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"leafId": "b2000006", "targetId": "b2000006"}).content.decode()
    rows = tree_ids(html)
    # That leaf's branch comes first now, and it carries the leaf marker.
    assert rows.index("b2000006") < rows.index("b2000007")
    leaf_row = re.search(r'data-entry-id="b2000006"[^>]*class="tree-row[^"]*"', html)
    assert leaf_row is not None and " leaf" in leaf_row.group(0)
    assert entry_ids(html) == path_to(session, "b2000006")


def test_sibling_switcher_at_a_branch_point(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000007"}).content.decode()
    # b2000002 has two children (b2000003 and the branch summary d4000001): the summary's branch is active.
    assert re.search(r"1/2", html)
    assert "targetId=b2000003" in html


@pytest.mark.parametrize("param", ["leafId", "targetId"])
def test_unknown_entry_ids_are_404(client: Client, tmp_path: Path, param: str):
    session = import_fixture(tmp_path, BRANCHING)
    assert client.get(page(session), {param: "nope0000"}).status_code == 404
    assert client.get(page(session), {param: "x" * 200}).status_code == 404


def test_unknown_session_is_404(client: Client, tmp_path: Path):
    import_fixture(tmp_path, BRANCHING)
    assert client.get("/s/not-a-session/").status_code == 404


def test_copy_parameter_selects_a_copy(client: Client, tmp_path: Path):
    first = import_fixture(tmp_path, BRANCHING)
    other = tmp_path / "again"
    other.mkdir()
    second = import_fixture(other, BRANCHING)
    assert first.session_id == second.session_id
    assert client.get(page(first), {"copy": first.pk}).status_code == 200
    assert client.get(page(first), {"copy": 999999}).status_code == 404


@pytest.mark.parametrize(
    ("folder", "name"),
    [("real", "oh-my-pi_large-session_v3-migrated_title-slot.jsonl"), ("handmade", "v3_compaction.jsonl")],
)
def test_fixture_pages_render_with_their_leaf_path(client: Client, tmp_path: Path, folder: str, name: str):
    session = import_fixture(tmp_path, name, folder)
    assert session.leaf_id is not None
    response = client.get(page(session), {"targetId": session.leaf_id, "leafId": session.leaf_id})
    assert response.status_code == 200
    expected = path_to(session, session.leaf_id)[-explorer.CONVERSATION_PAGE :]
    assert entry_ids(response.content.decode()) == expected


# -- labels ------------------------------------------------------------------------------------------------


def label_url(session: AgentSession) -> str:
    return f"/s/{session.session_id}/label/"


def test_label_form_without_javascript_redirects_back(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    form = {"target_id": "b2000003", "label": "reviewed", "filter": "all"}
    response = client.post(label_url(session), form)
    assert response.status_code == 302
    assert "targetId=b2000003" in response["Location"] and "filter=all" in response["Location"]
    session.refresh_from_db()
    assert session.resolved_labels()["b2000003"] == "reviewed"
    html = client.get(response["Location"]).content.decode()
    assert '<span class="label-chip">reviewed</span>' in html
    assert [row.id for row in select_rows(session, "labeled-only")] == tree_ids(
        client.get(page(session), {"filter": "labeled-only"}).content.decode()
    )


def test_label_form_with_htmx_returns_the_tree(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.post(
        label_url(session), {"target_id": "b2000003", "label": "api"}, headers={**HTMX, "HX-Target": "tree"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    assert html.lstrip().startswith('<section id="tree"')
    assert '<span class="label-chip">api</span>' in html
    # An empty label clears it.
    response = client.post(label_url(session), {"target_id": "b2000003", "label": ""}, headers=HTMX)
    assert '<span class="label-chip">api</span>' not in response.content.decode()
    session.refresh_from_db()
    assert "b2000003" not in session.resolved_labels()


def test_label_of_an_unknown_entry_is_404(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    assert client.post(label_url(session), {"target_id": "nope0000", "label": "x"}).status_code == 404


def test_label_post_needs_the_csrf_token(tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    client = Client(enforce_csrf_checks=True)
    refused = client.post(label_url(session), {"target_id": "b2000004", "label": "x"})
    assert refused.status_code == 403
    html = client.get(page(session)).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert token is not None
    accepted = client.post(
        label_url(session), {"target_id": "b2000004", "label": "x", "csrfmiddlewaretoken": token.group(1)}
    )
    assert accepted.status_code == 302


def test_label_get_is_not_allowed(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    assert client.get(label_url(session)).status_code == 405


# -- hostile content ---------------------------------------------------------------------------------------

PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def write_hostile_session(path: Path) -> None:
    header = {"type": "session", "version": 3, "id": "xss-session", "timestamp": "2026-05-01T10:00:00.000Z"}
    lines = [
        header | {"cwd": PAYLOAD},
        {
            "type": "message",
            "id": "x0000001",
            "parentId": None,
            "timestamp": "2026-05-01T10:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": PAYLOAD}], "timestamp": 1},
        },
        {
            "type": "message",
            "id": "x0000002",
            "parentId": "x0000001",
            "timestamp": "2026-05-01T10:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": PAYLOAD}, {"type": "text", "text": PAYLOAD}],
                "stopReason": "stop",
                "timestamp": 2,
            },
        },
        {
            "type": "label",
            "id": "x0000003",
            "parentId": "x0000002",
            "timestamp": "2026-05-01T10:00:03.000Z",
            "targetId": "x0000001",
            "label": PAYLOAD,
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_hostile_content_and_labels_are_escaped(client: Client, tmp_path: Path):
    path = tmp_path / "xss.jsonl"
    write_hostile_session(path)
    result = sync_file(path)
    assert result.session is not None, result.error
    session = result.session
    for params in [{}, {"targetId": "x0000002", "filter": "all"}, {"q": "script"}]:
        html = client.get(page(session), params).content.decode()
        assert "x0000002" in html
        # The only scripts are the page's own, loaded from files.
        assert all(tag.startswith("<script src=") for tag in re.findall(r"<script[^>]*>", html))
        assert "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
        assert "<img src=x" not in html
    client.post(label_url(session), {"target_id": "x0000002", "label": PAYLOAD})
    html = client.get(page(session), {"filter": "labeled-only"}).content.decode()
    assert "&lt;script&gt;" in html
    assert all(tag.startswith("<script src=") for tag in re.findall(r"<script[^>]*>", html))


# -- large sessions ----------------------------------------------------------------------------------------


@pytest.fixture
def generated(tmp_path: Path) -> AgentSession:
    path = tmp_path / "generated.jsonl"
    write_session(path, 5000, seed=7)
    result = sync_file(path)
    assert result.session is not None, result.error
    return result.session


def test_large_session_sends_a_bounded_window(client: Client, generated: AgentSession):
    for mode in ["default", "all"]:
        html = client.get(page(generated), {"filter": mode}).content.decode()
        rows = tree_ids(html)
        expected = [row.id for row in select_rows(generated, mode)]
        assert 0 < len(rows) <= explorer.TREE_WINDOW
        first = expected.index(rows[0])
        assert rows == expected[first : first + len(rows)]
        assert len(entry_ids(html)) <= explorer.CONVERSATION_PAGE


def test_load_later_and_earlier_move_the_window(client: Client, generated: AgentSession):
    expected = [row.id for row in select_rows(generated, "all")]
    assert len(expected) > 2 * explorer.TREE_WINDOW
    html = client.get(page(generated), {"filter": "all", "start": "0"}).content.decode()
    assert tree_ids(html) == expected[: explorer.TREE_WINDOW]
    later = re.search(r'<a href="([^"]*start=\d+)"\s+hx-get="[^"]*"\s+hx-target="#tree"', html)
    assert later is not None and "load later" in html
    response = client.get(unescape(later.group(1)), headers={**HTMX, "HX-Target": "tree"})
    shown = tree_ids(response.content.decode())
    assert shown == expected[explorer.TREE_WINDOW : 2 * explorer.TREE_WINDOW]
    assert "load earlier" in response.content.decode()


def test_earlier_entries_page_through_the_path(client: Client, generated: AgentSession):
    flat = flatten_session(generated)
    deepest = max(flat.nodes, key=lambda node: len(explorer.path_ids(flat, node.id))).id
    path = path_to(generated, deepest)
    assert len(path) > explorer.CONVERSATION_PAGE
    html = client.get(page(generated), {"targetId": deepest, "filter": "all"}).content.decode()
    assert entry_ids(html) == path[-explorer.CONVERSATION_PAGE :]
    earlier = len(path) - explorer.CONVERSATION_PAGE
    link = re.search(
        rf'<a href="([^"]*)"\s+hx-get="[^"]*"\s+hx-target="#conversation"[^>]*>{earlier} earlier', html
    )
    assert link is not None
    response = client.get(unescape(link.group(1)), headers={**HTMX, "HX-Target": "conversation"})
    previous = entry_ids(response.content.decode())
    assert previous == path[max(0, earlier - explorer.CONVERSATION_PAGE) : earlier]
    assert 'id="tree"' not in response.content.decode()


def test_flattened_trees_are_cached_per_session_state(generated: AgentSession):
    first = explorer.explorer_tree(generated, generated.leaf_id)
    assert explorer.explorer_tree(generated, generated.leaf_id) is first
    generated.next_seq += 1  # what any new entry (a label ...) does
    assert explorer.explorer_tree(generated, generated.leaf_id) is not first


def test_session_without_entries_shows_an_empty_tree(client: Client):
    session = AgentSession.objects.create(session_id="empty-one", header_raw="{}", title="empty")
    html = client.get(page(session)).content.decode()
    assert "0 of 0 shown" in html and "No entries found" in html
    assert client.get(page(session), {"targetId": "x"}).status_code == 404
