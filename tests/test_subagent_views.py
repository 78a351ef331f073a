"""Subagent transcripts in the views: nested in the list, drill-down from the task call, breadcrumb back."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from tests.subagent_tree import SESSION_ID, build_tree
from treeview.models import AgentSession
from treeview.services.sync import sync_paths

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, AgentSession]:
    build_tree(tmp_path)
    sync_paths([tmp_path])
    return {s.agent_key or "session": s for s in AgentSession.objects.all()}


def detail(session: AgentSession) -> str:
    return f"/s/{session.session_id}/"


def rows_in(html: str) -> int:
    return html.count('<tr id="session-')


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_the_list_shows_one_row_with_the_subagents_nested_under_it(client, tree, headers) -> None:
    html = client.get("/", headers=headers).content.decode()
    assert rows_in(html) == 1
    assert f'id="session-{tree["session"].pk}"' in html
    assert "1 session," in html
    # collapsed by default, with the count of every transcript below (Anna.Cy included)
    details = re.search(r'<details class="row-subagents">\s*<summary>\s*(.*?)\s*</summary>', html)
    assert details is not None and details.group(1) == "5 subagent transcripts"
    nested = html[details.start() :]
    for key in ("Anna", "Bob", "__advisor", "Tan-1234"):
        assert f'href="{detail(tree[key])}"' in nested
    # Anna.Cy is listed inside Anna's item
    anna = nested[nested.index('data-agent-id="Anna"') : nested.index('data-agent-id="Bob"')]
    assert 'data-agent-id="Anna.Cy"' in anna and f'href="{detail(tree["Anna.Cy"])}"' in anna
    assert "advisor" in nested and "/tan clone" in nested


def test_filters_apply_to_the_sessions_and_keep_their_subagents(client, tree) -> None:
    html = client.get("/", {"agent": "omp"}).content.decode()
    assert rows_in(html) == 1 and "5 subagent transcripts" in html
    html = client.get("/", {"agent": "pi"}).content.decode()
    assert rows_in(html) == 0


def test_a_subagent_whose_session_is_missing_is_a_row_with_a_note(client, tree) -> None:
    tree["session"].delete()
    html = unescape(client.get("/").content.decode())
    assert rows_in(html) == 4  # Anna (with Anna.Cy under it), Bob, the advisor, the clone
    assert f'id="session-{tree["Anna"].pk}"' in html
    assert f'id="session-{tree["Anna.Cy"].pk}"' not in html
    assert (
        "Subagent transcript <code>Anna</code>" in html
        and "a session not imported (or not shared with you)" in html
    )
    assert f"<code>{Path(tree['Anna'].spawned_from_path).name}</code>" in html
    assert tree["Anna"].spawned_from_path not in html  # the name, never the site's path


@pytest.mark.parametrize(
    "headers",
    [{}, {**HTMX, "HX-Target": "conversation"}, {**HTMX, "HX-Target": "tree"}],
    ids=["page", "htmx-conversation", "htmx-selection"],
)
def test_the_task_call_and_its_result_link_to_the_transcripts(client, tree, headers) -> None:
    # the result entry selected: the whole branch is on the page (the htmx answer is the panes)
    response = client.get(detail(tree["session"]), {"targetId": "a0000003"}, headers=headers)
    html = response.content.decode()
    links = re.findall(r'<p class="subagent-links">(.*?)</p>', html, re.S)
    assert len(links) == 2  # the assistant's task call, and its result
    for block in links:
        assert f'href="{detail(tree["Anna"])}"' in block and f'href="{detail(tree["Bob"])}"' in block
        assert "Anna.Cy" not in block  # Anna's own subagent is linked from Anna's page
    article = html[html.index('id="entry-a0000003"') :]
    assert article.index('class="subagent-links"') < article.index("</article>")


def test_a_subagent_page_links_its_own_subagents(client, tree) -> None:
    html = client.get(detail(tree["Anna"]), {"targetId": "b0000003"}).content.decode()
    assert f'href="{detail(tree["Anna.Cy"])}"' in html


def test_a_nested_subagent_shows_the_breadcrumb_to_its_session_and_the_calls(client, tree) -> None:
    html = unescape(client.get(detail(tree["Anna.Cy"])).content.decode())
    crumb = re.search(r'<nav class="subagent-breadcrumb" aria-label="Spawned by">(.*?)</nav>', html, re.S)
    assert crumb is not None
    text = crumb.group(1)
    session_url, anna_url = detail(tree["session"]), detail(tree["Anna"])
    assert text.index(f'href="{session_url}"') < text.index(f'href="{anna_url}"')
    assert f'href="{session_url}?targetId=a0000003#entry-a0000003"' in text  # the call that spawned Anna
    assert f'href="{anna_url}?targetId=b0000003#entry-b0000003"' in text  # the call that spawned Anna.Cy
    assert '<li aria-current="page">Anna.Cy</li>' in text
    assert "Forked from" not in html


def test_the_breadcrumb_call_link_opens_the_task_call(client, tree) -> None:
    response = client.get(detail(tree["session"]), {"targetId": "a0000003"})
    assert response.status_code == 200


def test_a_session_of_its_own_has_no_breadcrumb(client, tree) -> None:
    html = client.get(detail(tree["session"])).content.decode()
    assert "subagent-breadcrumb" not in html
    assert tree["session"].session_id == SESSION_ID


def test_a_subagent_of_a_missing_session_says_so_on_its_page(client, tree) -> None:
    tree["session"].delete()
    html = unescape(client.get(detail(tree["Bob"])).content.decode())
    assert "subagent-breadcrumb" not in html
    assert "of a session not imported (or not shared with you)" in html


def test_a_fork_still_shows_forked_from(client, tree, tmp_path: Path) -> None:
    # the /tan clone names its parent by id: the breadcrumb, not "Forked from"
    html = client.get(detail(tree["Tan-1234"])).content.decode()
    assert "subagent-breadcrumb" in html and "Forked from" not in html
    # and the parent's forks do not list its transcripts
    parent = client.get(detail(tree["session"])).content.decode()
    assert "<dt>Forks</dt>" not in parent


def test_hostile_agent_ids_are_escaped(client, tree) -> None:
    AgentSession.objects.filter(pk=tree["Bob"].pk).update(agent_key="<script>x</script>")
    html = client.get("/").content.decode()
    assert "<script>x</script>" not in html and "&lt;script&gt;x&lt;/script&gt;" in html


def test_search_finds_words_of_a_subagent_and_names_it(client, tree) -> None:
    html = unescape(client.get("/search/", {"q": "part Anna.Cy"}).content.decode())
    assert f'href="{detail(tree["Anna.Cy"])}' in html
    assert "subagent <code>Anna.Cy</code>" in html


def test_a_subagent_page_offers_no_fork_resume_but_a_clone_does(client, tree) -> None:
    assert "Resume this fork" not in client.get(detail(tree["Anna"])).content.decode()
    assert "Resume this fork" in client.get(detail(tree["Tan-1234"])).content.decode()


def test_subagents_of_a_session_someone_may_not_see_stand_on_their_own(client, tree, settings) -> None:
    from django.contrib.auth.models import User

    settings.ARBOR_SINGLE_USER = False
    alice = User.objects.create_user("alice", password="pw")
    bob = User.objects.create_user("bob", password="pw")
    AgentSession.objects.filter(pk=tree["session"].pk).update(owner=alice, visibility="private")
    client.force_login(bob)
    html = client.get("/").content.decode()
    assert f'id="session-{tree["session"].pk}"' not in html
    assert rows_in(html) == 4 and f'id="session-{tree["Anna"].pk}"' in html
    assert f'id="session-{tree["Anna.Cy"].pk}"' not in html  # still under Anna, whom bob sees
    # and no breadcrumb to the session bob may not see
    page = client.get(detail(tree["Anna"])).content.decode()
    assert "subagent-breadcrumb" not in page and "Split the shop refactor" not in page
    assert "of a session not imported (or not shared with you)" in page
    client.force_login(alice)
    assert rows_in(client.get("/").content.decode()) == 1


def test_a_subagent_heavy_tree_is_one_row_and_costs_a_query_per_level(client, tmp_path: Path) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.subagent_tree import subagent_lines

    paths = build_tree(tmp_path)
    folder = paths["session"].with_suffix("")
    for n in range(30):
        name = f"Worker-{n}"
        lines = subagent_lines(f"worker-{n}", str(paths["session"]), f"Do part {name}", [f"{name}.Sub"])
        (folder / f"{name}.jsonl").write_text("".join(line + "\n" for line in lines))
        sub = subagent_lines(f"worker-{n}-sub", str(folder / f"{name}.jsonl"), "deeper")
        (folder / name).mkdir()
        (folder / name / f"{name}.Sub.jsonl").write_text("".join(line + "\n" for line in sub))
    results = sync_paths([tmp_path])
    assert len(results) == 6 + 60 and {r.status for r in results} == {"new"}
    client.get("/")  # warm up (sessions, site settings)
    with CaptureQueriesContext(connection) as heavy:
        html = client.get("/").content.decode()
    assert rows_in(html) == 1 and "65 subagent transcripts" in html
    AgentSession.objects.filter(session_id__startswith="worker-").delete()
    with CaptureQueriesContext(connection) as light:
        html = client.get("/").content.decode()
    assert "5 subagent transcripts" in html
    assert len(heavy) == len(light)  # the same queries, whatever the number of transcripts


def test_the_session_page_lists_every_transcript_it_spawned(client, tree) -> None:
    html = client.get(detail(tree["session"])).content.decode()
    spawned = re.search(r'<dd class="subagent-spawned">(.*?)</dd>', html, re.S)
    assert spawned is not None
    for key in ("Anna", "Bob", "__advisor", "Tan-1234"):
        assert f'href="{detail(tree[key])}"' in spawned.group(1)
    assert "Anna.Cy" not in spawned.group(1)  # on Anna's page
    assert 'title="advisor: Review the plan"' in spawned.group(1)
    assert "subagent-spawned" not in client.get(detail(tree["Bob"])).content.decode()


def test_a_subagent_in_a_worktree_adds_no_project_to_the_filter(client, tree) -> None:
    AgentSession.objects.filter(pk=tree["Bob"].pk).update(cwd="/tmp/omp-worktree-bob")
    html = client.get("/").content.decode()
    assert "omp-worktree-bob" not in html
