"""The branch on screen: a click shows the branch through the entry, and the header follows what is shown."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.reference import DATA, import_fixture
from treeview import explorer
from treeview.models import AgentSession, ReviewStatus
from treeview.services import fork as fork_service
from treeview.services import review
from treeview.services.sync import sync_file
from treeview.session.branches import branch_anchor, is_conversational, newest_leaf, shorten

BRANCHING = "v3_branching_labels.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
ENTRY = re.compile(r'<article id="entry-[^"]*"\s+data-entry-id="([^"]*)"')
HTMX_TREE = {"HX-Request": "true", "HX-Target": "tree"}


# -- the pure part -------------------------------------------------------------------------------------------


@dataclass
class Node:
    entry: dict[str, Any]
    children: list[Node] = field(default_factory=list)


def _node(entry_id: str, *children: Node) -> Node:
    return Node({"id": entry_id, "type": "message"}, list(children))


def test_newest_leaf_follows_the_newest_child_at_every_level() -> None:
    tree = _node("a", _node("b", _node("c")), _node("d", _node("e"), _node("f", _node("g"))))
    assert newest_leaf(tree).entry["id"] == "g"
    assert newest_leaf(tree.children[0]).entry["id"] == "c"
    leaf = _node("z")
    assert newest_leaf(leaf) is leaf


def test_newest_leaf_walks_a_deep_chain_without_recursion() -> None:
    root = current = _node("0")
    for i in range(1, 50_000):
        child = _node(str(i))
        current.children.append(child)
        current = child
    assert newest_leaf(root).entry["id"] == "49999"


def test_branch_anchor_skips_trailing_labels_and_bookkeeping() -> None:
    entries = {
        "m1": ("message", None),
        "m2": ("message", "m1"),
        "l1": ("label", "m2"),
        "c1": ("custom", "l1"),
        "t1": ("thinking_level_change", "c1"),
        "s1": ("branch_summary", "m1"),
    }
    lookup = entries.get
    assert branch_anchor("t1", lookup) == "m2"
    assert branch_anchor("m2", lookup) == "m2"
    assert branch_anchor("s1", lookup) == "s1"
    # Bookkeeping up to a root, an unknown id, a cycle: the entry names its branch itself.
    assert branch_anchor("x", {"x": ("model_change", None)}.get) == "x"
    assert branch_anchor("nope", lookup) == "nope"
    assert branch_anchor("p", {"p": ("label", "q"), "q": ("custom", "p")}.get) == "p"
    assert is_conversational("custom_message") and not is_conversational("custom")


def test_shorten_cuts_at_a_word_with_an_ellipsis() -> None:
    assert shorten("  Add\nsubcommands.  ") == "Add subcommands."
    long = "Write a command line argument parser in Python with subcommands and a help screen for each"
    cut = shorten(long, 40)
    assert len(cut) <= 40 and cut.endswith("…") and long.startswith(cut[:-1])
    assert not cut[:-1].endswith(" ")


# -- the page ------------------------------------------------------------------------------------------------


@pytest.fixture
def session(db: Any, tmp_path: Path, settings: Any) -> AgentSession:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    explorer.clear_caches()
    return import_fixture(tmp_path, BRANCHING)


def _header(html: str) -> str:
    match = re.search(r'<section id="branch-header".*?</section>', html, re.S)
    assert match is not None
    return match.group(0)


def test_clicking_an_entry_shows_its_branch_down_to_the_newest_leaf(client: Client, session: Any) -> None:
    # b2000003 is on the branch the stored leaf is not on: its newest leaf is the label c3000001.
    html = client.get(f"/s/{SID}/", {"targetId": "b2000003"}).content.decode()
    ids = ENTRY.findall(html)
    assert ids == ["a1000001", "a1000002", "b2000001", "b2000002", "b2000003", "b2000004", "b2000005"] + [
        "b2000006",
        "c3000001",
    ]
    # The clicked entry is the highlighted one, not the last.
    assert re.search(r'<article id="entry-b2000003"[^>]*class="[^"]*\bselected\b', html)
    assert not re.search(r'<article id="entry-c3000001"[^>]*class="[^"]*\bselected\b', html)


def test_an_entry_on_the_drawn_branch_shows_the_drawn_leaf(client: Client, session: Any) -> None:
    # b2000001 is on both branches: the stored leaf's branch (e5000001) is kept, not the newest child's.
    html = client.get(f"/s/{SID}/", {"targetId": "b2000001"}).content.decode()
    assert ENTRY.findall(html)[-1] == "e5000001"
    html = client.get(f"/s/{SID}/", {"targetId": "b2000001", "leafId": "b2000006"}).content.decode()
    assert ENTRY.findall(html)[-1] == "b2000006"


@pytest.mark.parametrize("headers", [{}, HTMX_TREE])
def test_the_header_describes_the_branch_on_screen(
    client: Client, session: Any, headers: dict[str, str]
) -> None:
    stored = _header(client.get(f"/s/{SID}/", headers=headers).content.decode())
    assert "Add subcommands using click instead." in stored
    assert '<input type="hidden" name="leaf_id" value="b2000008">' in stored
    assert "leafId=e5000001" in stored  # Share this branch
    other = client.get(f"/s/{SID}/", {"targetId": "b2000005"}, headers=headers).content.decode()
    if headers:
        assert re.search(r'<section id="branch-header"[^>]*hx-swap-oob="true"', other)
    header = _header(other)
    # Named by words: the branch's last user prompt; its entry only in a tooltip.
    assert re.search(
        r'<strong class="branch-name" title="branch to entry b2000006"[^>]*>Add subcommands\.<', header
    )
    assert '<input type="hidden" name="leaf_id" value="b2000006">' in header
    assert '<input type="hidden" name="targetId" value="b2000005">' in header
    assert "leafId=c3000001" in header and "targetId=b2000005" in header
    # The totals of that branch: 9 entries root → c3000001, 6 of them messages, 1 tool result.
    row = re.search(r'<tr class="totals-branch">(.*?)</tr>', header, re.S)
    assert row is not None
    cells = [cell.strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]
    assert cells[:3] == ["9", "6", "1"]


def test_reviewing_the_branch_on_screen_keeps_the_sessions_branch(client: Client, session: Any) -> None:
    before = review.branch_leaf(session, session.leaf_id)
    response = client.post(
        f"/s/{SID}/review/",
        {"leaf_id": "b2000006", "status": "approved", "targetId": "b2000005"},
        headers={"HX-Request": "true", "HX-Target": "review-status"},
    )
    assert response.status_code == 200
    assert ReviewStatus.objects.get(session=session, leaf_id="b2000006").status == "approved"
    session.refresh_from_db()
    # The mirror label went below the stored leaf: the session's leaf is still on its own branch.
    assert review.branch_leaf(session, session.leaf_id) == before == "b2000008"
    body = response.content.decode()
    assert re.search(r'value="approved"\s+class="review-choice review-approved"\s+aria-pressed="true"', body)
    # The page the reviewer comes back to shows that branch as approved.
    html = client.get(f"/s/{SID}/", {"targetId": "b2000005"}).content.decode()
    assert 'data-review-status="approved"' in _header(html)


# -- a fork: its title, its file and the command that resumes it ---------------------------------------------


@pytest.mark.parametrize("write_back", [True, False])
def test_a_fork_has_its_own_title_and_says_how_to_resume_it(
    db: Any, client: Client, tmp_path: Path, settings: Any, write_back: bool
) -> None:
    settings.ARBOR_DATA_DIR = tmp_path / "arbor data"
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_SESSION_DIRS = [tmp_path / "agent dir"]
    settings.ARBOR_WRITE_BACK = write_back
    settings.ARBOR_EXTENSIONS = []
    folder = tmp_path / "agent dir" / "-proj"
    folder.mkdir(parents=True)
    shutil.copyfile(DATA / "handmade" / BRANCHING, folder / BRANCHING)
    original = sync_file(folder / BRANCHING).session
    assert original is not None
    response = client.post(f"/s/{SID}/fork/", {"entry_id": "b2000003"})
    assert response.status_code == 303
    fork = AgentSession.objects.exclude(pk=original.pk).get()
    assert fork.title == "Fork of Write a CLI argument parser in Python."
    html = client.get(response["Location"]).content.decode()
    assert "<h1>Fork of Write a CLI argument parser in Python.</h1>" in html
    path = fork.source_path
    assert " " in path  # quoted for the shell
    assert f'<code id="resume-command">omp --resume &#x27;{path}&#x27;</code>' in html
    if write_back:
        assert Path(path).parent == folder.resolve() or Path(path).parent == folder
        assert "among oh-my-pi’s sessions" in html and "Write-back is off" not in html
    else:
        assert Path(path).parent == tmp_path / "arbor data" / "forks"
        assert "Write-back is off" in html and "download it</a>" in html
    # The original is no fork: no hint there.
    assert 'class="fork-hint"' not in client.get(f"/s/{SID}/").content.decode()


def test_a_pi_session_resumes_with_pi_session(client: Client, session: AgentSession) -> None:
    session.agent = AgentSession.Agent.PI
    session.source_path = "/home/dev/.pi/agent/sessions/-proj/2026 fork.jsonl"
    hint = fork_service.resume_hint(session)
    assert hint is not None
    assert hint.command == "pi --session '/home/dev/.pi/agent/sessions/-proj/2026 fork.jsonl'"


def test_custom_instructions_are_offered_only_to_a_model(
    client: Client, session: AgentSession, settings: Any
) -> None:
    settings.ARBOR_LLM_PROVIDER = "digest"
    html = client.get(f"/s/{SID}/").content.decode()
    custom = re.search(r'<button type="button"\s+data-choice="custom"([^>]*)>', html)
    assert custom is not None and "disabled" in custom.group(1)
    assert "cannot follow custom instructions" in html
    settings.ARBOR_LLM_PROVIDER = "openai"
    settings.ARBOR_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.ARBOR_LLM_MODEL = "some-model"
    settings.ARBOR_LLM_API_KEY = "key"
    html = client.get(f"/s/{SID}/").content.decode()
    custom = re.search(r'<button type="button"\s+data-choice="custom"([^>]*)>', html)
    assert custom is not None and "disabled" not in custom.group(1)


def test_the_context_tab_names_its_entry_in_words(client: Client, session: AgentSession) -> None:
    html = client.get(f"/s/{SID}/context/", {"targetId": "b2000003"}).content.decode()
    target = re.search(r'<span class="context-target" title="entry b2000003">([^<]*)</span>', html)
    assert target is not None and target.group(1) == "user: Add subcommands."


def test_branches_are_named_by_their_last_user_prompt(session: AgentSession) -> None:
    leaves = {leaf.entry_id: leaf.text for leaf in review.session_leaves([session])[session.pk]}
    assert leaves == {"b2000006": "Add subcommands.", "b2000008": "Add subcommands using click instead."}
    assert review.branch_names(session, ["b2000001", "a1000002", "nope"]) == {
        "b2000001": "Write a CLI argument parser in Python.",
        "a1000002": "[thinking: medium]",  # no user message above: the entry's own text
    }


def test_the_review_page_names_branches_in_words(client: Client, session: AgentSession) -> None:
    html = client.get("/review/").content.decode()
    assert re.search(
        r'<a href="[^"]*leafId=b2000006" title="branch to entry b2000006">Add subcommands\.</a>', html
    )
    assert '<code class="muted">b2000006</code>' not in html
