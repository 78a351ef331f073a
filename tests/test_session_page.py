"""The session page: tree window, filters and search, deep links, the conversation path, labels."""

from __future__ import annotations

import json
import re
import threading
import time
from html import unescape
from pathlib import Path

import pytest
from django.db import connections
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


def test_a_filter_or_search_with_a_selection_sends_the_tree_alone(client: Client, tmp_path: Path):
    """A filter or search from the tree's form with a selection: the reading pane shows that entry whatever
    the filter, so the tree comes alone (the browser lays out no conversation before the tree shows) with the
    event after which explorer.js loads the pane again for its links; any other tree answer brings the
    pane."""
    session = import_fixture(tmp_path, BRANCHING)
    tree = {**HTMX, "HX-Target": "tree"}
    for trigger, query in (
        ("tree-filter", {"filter": "no-tools"}),
        ("tree-search", {"filter": "all", "q": "b"}),
    ):
        response = client.get(
            page(session), {"targetId": "b2000003", **query}, headers={**tree, "HX-Trigger": trigger}
        )
        html = response.content.decode()
        assert html.lstrip().startswith('<section id="tree"')
        assert 'id="conversation"' not in html and "hx-swap-oob" not in html.split("</form>", 1)[1], trigger
        assert response["HX-Trigger-After-Settle"] == "arbor:reading-stale"
        assert re.search(r'role="treeitem"[^>]*data-entry-id="b2000003"[^>]*aria-selected="true"', html)
    # The selected entry filtered out (an assistant message under user-only): the tree selects another row,
    # but the reading pane still shows the entry asked for (as the whole answer would): the tree alone too.
    response = client.get(
        page(session),
        {"targetId": "b2000004", "filter": "user-only"},
        headers={**tree, "HX-Trigger": "tree-filter"},
    )
    assert 'id="conversation"' not in response.content.decode()
    assert response["HX-Trigger-After-Settle"] == "arbor:reading-stale"
    whole = client.get(page(session), {"targetId": "b2000004", "filter": "user-only"}, headers=tree)
    assert re.search(
        r'<article[^>]*data-entry-id="b2000004"[^>]*class="[^"]*selected', whole.content.decode()
    )
    # A tab, a link or no selection: the whole answer, as before.
    for headers, query in (
        (tree, {"targetId": "b2000003", "filter": "no-tools"}),
        ({**tree, "HX-Trigger": "tab-conversation"}, {"targetId": "b2000003"}),
        ({**tree, "HX-Trigger": "tree-filter"}, {"filter": "no-tools"}),
    ):
        response = client.get(page(session), query, headers=headers)
        assert 'id="conversation"' in response.content.decode() and "HX-Trigger-After-Settle" not in response


def test_a_filter_or_search_answer_sends_fewer_rows_around_the_selection(client: Client, tmp_path: Path):
    """The tree's own filter or search (explorer.js's virtual tree loads the rows beyond as the pane scrolls)
    gets FILTER_WINDOW rows around the selection, the same rows a page has there; a page, a link or a tab
    gets the whole window."""
    from treeview.views.detail import context as detail

    session = import_fixture(tmp_path, "pi-mono_large-session_v1.jsonl", "real")
    expected = [row.id for row in select_rows(session, "all")]
    assert len(expected) > explorer.TREE_WINDOW
    target = expected[len(expected) // 2]
    query = {"targetId": target, "filter": "all"}
    tree = {**HTMX, "HX-Target": "tree"}
    whole = tree_ids(client.get(page(session), query).content.decode())
    assert len(whole) == explorer.TREE_WINDOW
    for trigger in ("tree-filter", "tree-search"):
        html = client.get(page(session), query, headers={**tree, "HX-Trigger": trigger}).content.decode()
        shown = tree_ids(html)
        assert len(shown) == detail.FILTER_WINDOW < explorer.TREE_WINDOW, trigger
        assert target in shown and shown == expected[expected.index(shown[0]) :][: len(shown)]
        assert set(shown) <= set(whole)
        assert f"{len(expected)} of {len(flatten_session(session).nodes)} shown" in html
    linked = client.get(page(session), query, headers={**tree, "HX-Trigger": "tab-conversation"})
    assert tree_ids(linked.content.decode()) == whole


def test_htmx_conversation_request_gets_only_the_conversation(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(page(session), headers={**HTMX, "HX-Target": "conversation"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="conversation"')
    assert 'id="tree"' not in html and "hx-swap-oob" not in html


def test_htmx_selection_request_gets_what_describes_the_entry_and_no_rows(client: Client, tmp_path: Path):
    """A row selected in the tree the browser holds (explorer.js): the reading pane, the header and the forms
    that carry the selection, all out of band; the tree's rows stay where they are."""
    session = import_fixture(tmp_path, BRANCHING)
    response = client.get(
        page(session), {"targetId": "b2000004", "filter": "all"}, headers={**HTMX, "HX-Target": "selection"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="tree"' not in html and 'role="treeitem"' not in html
    for element in ("tree-target-id", "label-form", "branch-header", "pane-tabs", "conversation", "context"):
        assert re.search(rf'id="{element}"[^>]*hx-swap-oob="true"', html, re.S), element
    assert re.search(r'id="tree-target-id"\s+name="targetId"\s+value="b2000004"', html)
    assert re.search(r'name="target_id" value="b2000004"', html)
    assert entry_ids(part(html, "section", "conversation")) == path_to(session, "b2000004")
    # The conversation's links keep the page's filter.
    assert "filter=all&amp;targetId=b2000004" in html
    # Without a selection there is nothing to describe: the whole tree, as for a tree request.
    whole = client.get(page(session), headers={**HTMX, "HX-Target": "selection"}).content.decode()
    assert whole.lstrip().startswith('<section id="tree"')


def test_selection_keeps_the_filter_form_and_label_form_in_step(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session)).content.decode()
    # No selection asked for: the filter form sends none (the hidden field is there, disabled, for a swap).
    assert re.search(r'id="tree-target-id"\s+name="targetId"\s+value=""\s+disabled', html)
    html = client.get(page(session), {"targetId": "b2000004"}).content.decode()
    assert re.search(r'id="tree-target-id"\s+name="targetId"\s+value="b2000004"\s*>', html)


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
    # The selection is on the leaf's path: the conversation is that whole branch, down to the leaf.
    assert entry_ids(html) == path_to(session, session.leaf_id)


def test_target_id_deep_link_selects_the_entry_and_shows_its_path(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000005"}).content.decode()
    assert selected_row(html) == "b2000005"
    # The branch through it, down to the newest leaf below it (the label c3000001 below b2000006).
    assert entry_ids(html) == path_to(session, "c3000001")
    assert 'id="entry-b2000005"' in html
    assert "targetId=b2000005" in html  # the permalink


def test_hidden_target_selects_its_nearest_visible_ancestor(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    # b2000004 is a tool-call-only assistant turn, which no filter mode shows.
    html = client.get(page(session), {"targetId": "b2000004", "filter": "all"}).content.decode()
    assert "b2000004" not in tree_ids(html)
    assert selected_row(html) == "b2000003"
    # The conversation still shows the branch through the entry asked for, which is highlighted.
    assert entry_ids(html) == path_to(session, "c3000001")
    assert re.search(r'id="entry-b2000004"[^>]*selected', html)


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


def _row_html(html: str, entry_id: str) -> str:
    match = re.search(rf'<li role="treeitem" data-entry-id="{entry_id}".*?</li>', html)
    assert match is not None, entry_id
    return match.group(0)


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_rows_carry_their_turn_role_label_time_and_the_keys_help(client: Client, tmp_path: Path, headers):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"filter": "all"}, headers=headers).content.decode()
    # The label time (Shift+T) is the time of the label entry that set the label; a cleared label has none.
    labeled = _row_html(html, "b2000008")
    assert '<span class="label-chip">click-version</span> ' in labeled
    assert '<time class="label-time" datetime="2026-05-01T10:00:13.000Z"></time>' in labeled
    assert "label-time" not in _row_html(html, "b2000001")
    # The turn jumps (Alt+Up / Alt+Down) find user and assistant rows by their role; others have none.
    assert 'data-role="user"' in _row_html(html, "b2000001")
    assert "data-role" not in _row_html(html, "c3000001")
    help_box = re.search(r'<details class="tree-keys">.*?</details>', html, re.S)
    assert help_box is not None
    for key in ("Alt+↑", "Shift+Enter", "Shift+T", "Shift+L", "Alt+D", "Ctrl+O"):
        assert f"<kbd>{key}</kbd>" in help_box.group(0)


def test_a_new_label_brings_its_time(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    client.get(page(session), {"filter": "all"})  # the forest is cached: the label comes as an appended row
    response = client.post(
        label_url(session), {"target_id": "b2000003", "label": "api", "filter": "all"}, headers=HTMX
    )
    session.refresh_from_db()
    stamp = session.entries.filter(type="label").order_by("-seq").values_list("timestamp", flat=True).first()
    assert f'<time class="label-time" datetime="{stamp}"></time>' in _row_html(
        response.content.decode(), "b2000003"
    )


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


# -- the reading pane's tabs and the Context tab following the selection -------------------------------------

CUSTOM = "v3_custom_mode_ttsr.jsonl"


def part(html: str, tag: str, element_id: str) -> str:
    """The element ``<tag id="element_id" ...>...</tag>`` (none holds a nested element of its own tag)."""
    match = re.search(rf'<{tag} id="{element_id}".*?</{tag}>', html, re.S)
    assert match is not None, f"no #{element_id} in the answer"
    return match.group(0)


def tab(html: str, element_id: str) -> dict[str, str]:
    match = re.search(rf'<a id="{element_id}"(.*?)>', part(html, "div", "pane-tabs"), re.S)
    assert match is not None
    return {name: unescape(value) for name, value in re.findall(r'([\w-]+)="([^"]*)"', match.group(1))}


def row_links(html: str) -> list[str]:
    tree = part(html, "section", "tree")
    return [unescape(href) for href in re.findall(r'<li role="treeitem"[^>]*><a href="([^"]*)"', tree)]


def test_tabs_are_a_tablist_whose_panels_are_the_conversation_and_the_context(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000003"}).content.decode()
    assert 'role="tablist"' in part(html, "div", "pane-tabs")
    conversation, context = tab(html, "tab-conversation"), tab(html, "tab-context")
    assert conversation["role"] == context["role"] == "tab"
    assert (conversation["aria-selected"], context["aria-selected"]) == ("true", "false")
    assert (conversation["aria-controls"], context["aria-controls"]) == ("conversation", "context")
    assert 'role="tabpanel"' in re.search(r'<section id="conversation"[^>]*>', html).group(0)
    # Real links: without JavaScript the tab is a page with (or without) tab=context.
    assert "tab=context" in context["href"] and "targetId=b2000003" in context["href"]
    assert "tab=" not in conversation["href"] and "targetId=b2000003" in conversation["href"]

    opened = client.get(context["href"]).content.decode()
    assert 'class="context-pane open"' in opened
    assert 'role="tabpanel"' in re.search(r'<section id="context"[^>]*>', opened).group(0)
    assert (
        tab(opened, "tab-conversation")["aria-selected"],
        tab(opened, "tab-context")["aria-selected"],
    ) == (
        "false",
        "true",
    )
    # Every row of the tree keeps the tab open; the conversation's permalinks do not carry it.
    links = row_links(opened)
    assert links and all("tab=context" in link for link in links)
    permalinks = re.findall(r'class="permalink" href="([^"]*)"', opened)
    assert permalinks and not any("tab=" in link for link in permalinks)


def test_selecting_an_entry_while_the_context_tab_is_open_swaps_in_its_context(
    client: Client, tmp_path: Path
):
    session = import_fixture(tmp_path, BRANCHING)
    params = {"targetId": "b2000003", "tab": "context", "filter": "all"}
    response = client.get(page(session), params, headers={**HTMX, "HX-Target": "tree"})
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="tree"')
    context = part(html, "section", "context")
    assert 'class="context-pane open"' in context and 'hx-swap-oob="true"' in context
    assert 'data-target-id="b2000003"' in context
    tabs = part(html, "div", "pane-tabs")
    assert 'hx-swap-oob="true"' in tabs and tab(html, "tab-context")["aria-selected"] == "true"
    assert all("tab=context" in link and "filter=all" in link for link in row_links(html))
    # Another entry: another context.
    params["targetId"] = "b2000002"
    html = client.get(page(session), params, headers={**HTMX, "HX-Target": "tree"}).content.decode()
    assert 'data-target-id="b2000002"' in part(html, "section", "context")


def test_a_selection_without_the_tab_closes_a_stale_context(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000003"}, headers={**HTMX, "HX-Target": "tree"}).content
    html = html.decode()
    context = part(html, "section", "context")
    assert "hidden" in context and 'hx-swap-oob="true"' in context and "context-message" not in context
    assert tab(html, "tab-conversation")["aria-selected"] == "true"
    assert not any("tab=" in link for link in row_links(html))


def test_opening_the_context_tab_with_htmx_brings_a_tree_that_keeps_it_open(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000003", "filter": "all"}).content.decode()
    fragment_url = tab(html, "tab-context")["hx-get"]
    assert fragment_url.startswith(f"/s/{session.session_id}/context/")
    response = client.get(fragment_url, headers={**HTMX, "HX-Target": "context"})
    answer = response.content.decode()
    assert answer.lstrip().startswith('<section id="context"')
    assert 'data-target-id="b2000003"' in part(answer, "section", "context")
    assert 'hx-swap-oob="true"' in part(answer, "section", "tree")
    assert tab(answer, "tab-context")["aria-selected"] == "true"
    # The filter went along, and the rows' links keep the tab open.
    assert tree_ids(answer) == tree_ids(html)
    assert all("tab=context" in link and "filter=all" in link for link in row_links(answer))
    # The Conversation tab goes back through the selection (it targets the tree).
    conversation = tab(answer, "tab-conversation")
    assert conversation["hx-target"] == "#tree" and "tab=" not in conversation["hx-get"]


def test_paging_through_the_context_sends_only_the_context(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    url = f"/s/{session.session_id}/context/?end=1"
    html = client.get(url, headers={**HTMX, "HX-Target": "context"}).content.decode()
    assert html.lstrip().startswith('<section id="context"')
    assert 'id="tree"' not in html and 'id="pane-tabs"' not in html


def test_the_label_form_keeps_the_tab_open(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    form = {"target_id": "b2000003", "label": "tabbed", "filter": "all", "tab": "context"}
    response = client.post(label_url(session), form)
    assert "tab=context" in response["Location"]
    html = client.post(label_url(session), form, headers={**HTMX, "HX-Target": "tree"}).content.decode()
    assert 'name="tab" value="context"' in html
    assert all("tab=context" in link for link in row_links(html))


# -- entries: hidden custom messages, copy links -------------------------------------------------------------


def article(html: str, entry_id: str) -> str:
    match = re.search(rf'<article id="entry-{entry_id}".*?</article>', html, re.S)
    assert match is not None, entry_id
    return match.group(0)


def test_hidden_custom_messages_are_collapsed_and_shown_on_demand(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, CUSTOM)
    html = client.get(page(session), {"targetId": "b2100012", "filter": "all"}).content.decode()
    # A custom_message entry with display:false, and a custom-role message with display:false.
    for entry_id, custom_type in (("b2100002", "plan-mode-context"), ("b2100012", "rewind-report")):
        hidden = article(html, entry_id)
        assert "entry-hidden" in hidden
        details = re.search(
            r"<details class=\"hidden-message\"( open)?>\s*<summary>(.*?)</summary>", hidden, re.S
        )
        assert details is not None
        assert f"hidden custom message ({custom_type})" in " ".join(details.group(2).split())
        assert "— show" in details.group(2)
        # The message itself is inside the disclosure, whole (copy link included).
        assert hidden.index("<details") < hidden.index('class="entry-head"') < hidden.index("</details>")
        assert 'data-copy-link="' in hidden
    # Closed, unless it is the entry asked for.
    assert '<details class="hidden-message">' in article(html, "b2100002")
    assert '<details class="hidden-message" open>' in article(html, "b2100012")
    assert "Plan mode is active" in article(html, "b2100002")
    # Everything else is shown as usual.
    assert html.count('class="hidden-message"') == 2


def test_a_displayed_custom_message_is_not_hidden(client: Client, tmp_path: Path):
    path = tmp_path / "shown.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "shown-custom", "timestamp": "2026-05-01T10:00:00.000Z"},
        {
            "type": "custom_message",
            "customType": "note",
            "content": "Visible note",
            "display": True,
            "id": "c0000001",
            "parentId": None,
            "timestamp": "2026-05-01T10:00:01.000Z",
        },
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    session = sync_file(path).session
    assert session is not None
    html = client.get(page(session)).content.decode()
    shown = article(html, "c0000001")
    assert "Visible note" in shown and "hidden-message" not in shown and "entry-hidden" not in shown


def test_every_entry_has_a_copy_link_button_and_a_permalink(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"targetId": "b2000007", "filter": "all"}).content.decode()
    ids = entry_ids(html)
    assert ids
    for entry_id in ids:
        entry = article(html, entry_id)
        button = re.search(r'<button type="button"\s+class="copy-link"\s+data-copy-link="([^"]*)"', entry)
        permalink = re.search(r'<a class="permalink" href="([^"]*)"', entry)
        assert button is not None and permalink is not None
        assert unescape(button.group(1)) == unescape(permalink.group(1))
        assert f"targetId={entry_id}" in unescape(permalink.group(1))
    # Loaded as a module; the button shows only once copy.js runs (the permalink works without it).
    assert '<script src="/static/copy.js" type="module">' in html


# -- header, layout, themes ----------------------------------------------------------------------------------


def test_header_shows_whole_tree_totals_and_no_branch_row_without_branch_totals(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from treeview.views.detail import context as detail

    original = detail._detail_context
    monkeypatch.setattr(
        detail,
        "_detail_context",
        lambda *args, **kwargs: {**original(*args, **kwargs), "branch_totals": None},
    )
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session)).content.decode()
    assert "Whole tree" in html and "This branch" not in html
    totals = re.search(r'<tr class="totals-tree">(.*?)</tr>', html, re.S).group(1)
    cells = [" ".join(cell.split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", totals, re.S)]
    assert cells[:3] == [str(session.entry_count), str(session.message_count), str(session.tool_call_count)]
    assert cells[3] == f"{session.input_tokens:,}"


def test_header_shows_the_active_branch_totals_next_to_the_whole_tree(
    client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from types import SimpleNamespace

    from treeview.views.detail import context as detail

    branch = SimpleNamespace(
        entries=7,
        messages=5,
        tool_calls=1,
        input_tokens=12345,
        output_tokens=678,
        cost=0.01234,
    )
    original = detail._detail_context
    monkeypatch.setattr(
        detail,
        "_detail_context",
        lambda *args, **kwargs: {**original(*args, **kwargs), "branch_totals": branch},
    )
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session)).content.decode()
    row = re.search(r'<tr class="totals-branch">(.*?)</tr>', html, re.S)
    assert row is not None and "This branch" in row.group(1)
    cells = [" ".join(cell.split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    # No cache totals per branch: a dash, not a zero.
    assert cells == ["7", "5", "1", "12,345", "678", "–", "–", "$0.0123"]
    assert html.index("This branch") < html.index("Whole tree")
    branch.cache_read_tokens, branch.cache_write_tokens = 9, 1010
    html = client.get(page(session)).content.decode()
    row = re.search(r'<tr class="totals-branch">(.*?)</tr>', html, re.S)
    cells = [" ".join(cell.split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    assert cells[5:7] == ["9", "1,010"]


def test_header_shows_the_branch_totals_of_the_displayed_leaf(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session), {"leafId": "b2000006", "targetId": "b2000006"}).content.decode()
    row = re.search(r'<tr class="totals-branch">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = [" ".join(cell.split()) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    assert cells[0] == str(len(path_to(session, "b2000006")))
    assert int(cells[0]) < session.entry_count


def test_page_has_the_resize_handle_the_theme_toggle_and_the_navigator(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get(page(session)).content.decode()
    handle = re.search(r'<div class="pane-handle"(.*?)>', html, re.S).group(1)
    for attribute in (
        'role="separator"',
        'aria-orientation="vertical"',
        "aria-valuenow=",
        'tabindex="0"',
        "hidden",
    ):
        assert attribute in handle
    # The theme is applied before the first paint: a classic script in <head>, before the stylesheet.
    head = html[: html.index("</head>")]
    theme = re.search(r'<script src="/static/theme.js"([^>]*)>', head)
    assert theme is not None and "module" not in theme.group(1) and "defer" not in theme.group(1)
    assert head.index("theme.js") < head.index("arbor.css")
    assert re.search(r'<button type="button"\s+id="theme-toggle"[^>]*hidden>', html, re.S)
    assert '<script src="/static/panes.js" type="module">' in html
    assert 'id="navigator-root"' in html


def test_tree_rows_are_light(client: Client, generated: AgentSession):
    html = client.get(page(generated), {"filter": "all"}).content.decode()
    tree = part(html, "section", "tree")
    rows = tree_ids(tree)
    assert len(rows) == explorer.TREE_WINDOW
    # The rows are boosted links: the htmx attributes sit once on the list, not on every row.
    assert re.search(r'<ul class="tree-rows"[^>]*hx-boost="true"', tree, re.S)
    assert tree.count("hx-get") < 10 and tree.count("hx-target") < 10
    # Besides its prefix and text (twice: the row and its title, the whole text on hover), a row is its link
    # and a few attributes, its index and depth badge (about 350 bytes; it was 600).
    for row in re.findall(r'<li role="treeitem".*?</li>', tree, re.S):
        prefix = re.search(r'<span class="tree-prefix" aria-hidden="true">(.*?)</span>', row, re.S)
        text = re.search(r'<span class="tree-text">(.*?)</span>', row, re.S)
        title = re.search(r'<a href="[^"]*" title="([^"]*)">', row)
        assert prefix is not None and text is not None and title is not None and "hx-" not in row
        assert title.group(1).endswith(text.group(1))
        # The prefix draws at most explorer.TREE_LEVELS levels (3 characters each), then "• ".
        assert len(prefix.group(1)) <= 3 * explorer.TREE_LEVELS + 2, row
        assert len(row) - len(prefix.group(1)) - len(text.group(1)) - len(title.group(1)) < 480, row


STATIC = Path(__file__).resolve().parent.parent / "static"


def _pygments_rules(style: str, scope: str) -> list[str]:
    from treeview.render import highlight_css

    return [line for line in highlight_css(style, scope).splitlines() if line.startswith(f"{scope} .")]


def test_stylesheet_has_both_palettes_and_code_highlighting_for_both(client: Client):
    css = (STATIC / "arbor.css").read_text(encoding="utf-8")
    assert ':root[data-theme="dark"] {' in css
    assert '@media (prefers-color-scheme: dark) {\n  :root:not([data-theme="light"]) {' in css
    light = _pygments_rules("default", ".highlight")
    dark = _pygments_rules("github-dark", ':root[data-theme="dark"] .highlight')
    system_dark = _pygments_rules("github-dark", ':root:not([data-theme="light"]) .highlight')
    assert light and dark and system_dark
    missing = [rule for rule in light + dark if rule not in css]
    missing += [rule for rule in system_dark if f"  {rule}" not in css]
    assert missing == []
    # No light token colour survives in the dark theme: every class styled for light has a dark colour.
    dark_classes = {rule.split()[2] for rule in dark if "color:" in rule}
    light_colored = {rule.split()[1] for rule in light if re.search(r"(?<!-)color:", rule)}
    assert light_colored - dark_classes == set()


def _luminance(color: str) -> float:
    color = color.lstrip("#")
    if len(color) == 3:
        color = "".join(c * 2 for c in color)
    channels = [int(color[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(one: str, two: str) -> float:
    high, low = sorted((_luminance(one), _luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize(("style", "palette"), [("default", "light"), ("github-dark", "dark")])
def test_highlighted_code_is_readable_on_its_background(style: str, palette: str):
    from pygments.styles import get_style_by_name
    from pygments.token import STANDARD_TYPES, Token

    css = (STATIC / "arbor.css").read_text(encoding="utf-8")
    block = (
        css[: css.index(':root[data-theme="light"]')]
        if palette == "light"
        else css[css.index(':root[data-theme="dark"] {') :]
    )
    background = re.search(r"--code-bg: (#[0-9a-f]{6});", block).group(1)
    found = get_style_by_name(style)
    low = []
    for token, name in STANDARD_TYPES.items():
        spec = found.style_for_token(token)
        # Whitespace tokens draw nothing; a token with its own background is checked against it.
        if not name or not spec["color"] or token in Token.Text.Whitespace:
            continue
        ratio = _contrast("#" + spec["color"], "#" + spec["bgcolor"] if spec["bgcolor"] else background)
        if ratio < 4.5:
            low.append((name, spec["color"], round(ratio, 2)))
    assert low == []


# -- the rows endpoint (explorer.js scrolls through the whole tree with it) --------------------------------


def rows_url(session: AgentSession) -> str:
    return f"/s/{session.session_id}/rows/"


def slice_attrs(html: str) -> dict[str, str]:
    match = re.search(r'<ul class="tree-slice"([^>]*)>', html)
    assert match is not None, html[:300]
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', match.group(1)))


def test_rows_endpoint_returns_any_slice_of_the_visible_rows(client: Client, generated: AgentSession):
    expected = [row.id for row in select_rows(generated, "all")]
    for start in (0, 1_000, len(expected) - 30):
        response = client.get(rows_url(generated), {"filter": "all", "start": start, "count": 100})
        assert response.status_code == 200
        html = response.content.decode()
        assert tree_ids(html) == expected[start : start + 100]
        attrs = slice_attrs(html)
        assert attrs["start"] == str(start) and attrs["shown"] == str(len(expected))
        assert attrs["end"] == str(min(len(expected), start + 100))
        # Each row knows its place among the visible rows (the page positions it there).
        indexes = [int(i) for i in re.findall(r'class="tree-row[^"]*" data-index="(\d+)"', html)]
        assert indexes == list(range(start, min(len(expected), start + 100)))
        # Only the slice: no page around it.
        assert "<html" not in html and 'id="conversation"' not in html
    # The same fragment for htmx.
    plain = client.get(rows_url(generated), {"filter": "all", "start": 5, "count": 10})
    htmx = client.get(rows_url(generated), {"filter": "all", "start": 5, "count": 10}, headers=HTMX)
    assert tree_ids(plain.content.decode()) == tree_ids(htmx.content.decode()) == expected[5:15]


@pytest.mark.django_db(transaction=True)
def test_rows_requests_are_served_a_few_at_a_time(generated: AgentSession, settings, monkeypatch):
    """Every open page refetches its rows after a change: the burst is served ARBOR_ROWS_CONCURRENCY at a time
    (the others wait their turn at treeview/gate.py), and every request still gets its rows."""
    inside, peak, lock = 0, 0, threading.Lock()
    real_window = explorer.tree_window

    def counted_window(*args, **kwargs):
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        try:
            time.sleep(0.05)
            return real_window(*args, **kwargs)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(explorer, "tree_window", counted_window)
    statuses: list[int] = []

    def refetch() -> None:
        try:
            response = Client().get(rows_url(generated), {"start": 0, "count": 20})
            statuses.append(response.status_code)
            assert len(tree_ids(response.content.decode())) == 20
        finally:
            # The test client does not close the thread's connection as a server's request_finished does:
            # on PostgreSQL it would stay out of the pool.
            connections.close_all()

    threads = [threading.Thread(target=refetch) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert statuses == [200] * 12
    assert peak == settings.ARBOR_ROWS_CONCURRENCY
    # The gate comes before the middleware that reads the database: a waiting request holds no connection.
    order = settings.MIDDLEWARE
    assert order.index("treeview.gate.RefreshGate") < order.index(
        "django.contrib.sessions.middleware.SessionMiddleware"
    )


def test_rows_endpoint_centres_on_the_target_and_follows_filter_and_search(
    client: Client, generated: AgentSession
):
    expected = [row.id for row in select_rows(generated, "all")]
    target = expected[2_000]
    query = {"filter": "all", "targetId": target, "count": 50}
    html = client.get(rows_url(generated), query).content.decode()
    attrs = slice_attrs(html)
    assert attrs["selected-id"] == target and attrs["selected-index"] == "2000"
    assert tree_ids(html) == expected[1_975:2_025]
    users = [row.id for row in select_rows(generated, "user-only")]
    html = client.get(rows_url(generated), {"filter": "user-only", "start": 0, "count": 400}).content.decode()
    assert tree_ids(html) == users[:400] and slice_attrs(html)["shown"] == str(len(users))
    html = client.get(rows_url(generated), {"q": "zzzz-no-such-text", "start": 0}).content.decode()
    assert tree_ids(html) == [] and slice_attrs(html)["shown"] == "0"


def test_rows_endpoint_refuses_bad_input(client: Client, generated: AgentSession):
    assert client.get(rows_url(generated), {"count": 0}).status_code == 400
    assert client.get(rows_url(generated), {"count": 10_000}).status_code == 400
    assert client.get(rows_url(generated), {"start": -1}).status_code == 400
    assert client.get(rows_url(generated), {"targetId": "nope"}).status_code == 404
    assert client.get("/s/no-such-session/rows/").status_code == 404


def test_the_page_tells_the_tree_where_its_rows_are(client: Client, generated: AgentSession):
    expected = [row.id for row in select_rows(generated, "all")]
    target = expected[3_000]
    html = client.get(page(generated), {"filter": "all", "targetId": target}).content.decode()
    tree = part(html, "section", "tree")
    match = re.search(r'<ul class="tree-rows"[^>]*data-rows-url="([^"]*)"[^>]*>', tree, re.S)
    assert match is not None
    assert unescape(match.group(1)) == f"{rows_url(generated)}?filter=all"
    assert 'data-selected-index="3000"' in match.group(0)
    assert f'data-shown="{len(expected)}"' in match.group(0)


@pytest.mark.parametrize(
    ("folder", "name", "label"),
    [
        ("latest", "pi16w_small_50.jsonl", "pi 1.6 rules (model_change shape)"),
        ("latest", "omp18w_small_50.jsonl", "oh-my-pi 18 rules (title slot)"),
        ("handmade", "v3_custom_mode_ttsr.jsonl", "oh-my-pi 18 rules (header key title)"),
    ],
)
def test_header_names_the_rules_the_session_is_read_by(client: Client, tmp_path: Path, folder, name, label):
    from treeview.session.session_manager import SessionManager

    session = import_fixture(tmp_path, name, folder)
    html = client.get(page(session)).content.decode()
    assert f'<small class="rules-label">· {label}</small>' in html
    core = SessionManager.open(tmp_path / name).agent_decision
    assert (session.rules.agent, session.rules.reason) == (core.agent, core.reason)
