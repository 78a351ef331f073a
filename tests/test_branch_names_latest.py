"""Branch names and entry headings worded as the session's agent words its tree rows (oh-my-pi 18, pi 1.6).

The stored row text (``Entry.text``) is v15's wording. oh-my-pi 18 words an aborted turn with no text by its
error ("assistant: Operation aborted", "assistant: Request was aborted.") where v15 and pi 1.6 say
"assistant: (aborted)"; the real oh-my-pi session of the fixtures holds such turns.
"""

from __future__ import annotations

import html as html_lib
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.reference import DATA
from treeview import explorer
from treeview.models import AgentSession, ReviewStatus
from treeview.services import review
from treeview.services.sync import sync_file
from treeview.session.selector import make_row

pytestmark = pytest.mark.django_db

REAL = "oh-my-pi_large-session_v3-migrated_title-slot.jsonl"
ABORTED = "69d23404"  # an aborted assistant turn with no text (its error: "Request was aborted")
FIRST_ABORTED = "19e7dd4e"  # the same, the file's first turn after its prompt "/mode"
OMP = "assistant: Request was aborted."
OMP_FIRST = "assistant: Operation aborted"
V15 = "assistant: (aborted)"


@pytest.fixture
def clean(db: Any, tmp_path: Path, settings: Any) -> Path:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    settings.ARBOR_WRITE_BACK = False
    settings.ARBOR_SINGLE_USER = True  # every request acts as the local user
    explorer.clear_caches()
    return tmp_path


def _import(path: Path) -> AgentSession:
    session = sync_file(path).session
    assert session is not None
    return session


def _page(client: Client, session: AgentSession, **params: str) -> str:
    response = client.get(f"/s/{session.session_id}/", params)
    assert response.status_code == 200
    return html_lib.unescape(response.content.decode())


def _cut_session(tmp_path: Path) -> AgentSession:
    """The real session cut down by hand: its title slot and header, then its first aborted turn (the prompt
    above it left out, so the turn is a root) and the model change below it."""
    lines = (DATA / "real" / REAL).read_bytes().split(b"\n")
    assert b'"id":"19e7dd4e"' in lines[3] and b'"parentId":"19e7dd4e"' in lines[4]
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"\n".join([lines[0], lines[1], lines[3], lines[4]]) + b"\n")
    session = _import(path)
    assert session.rules.agent == "omp"
    return session


def test_the_context_tab_names_its_entry_as_the_tree_row_does(clean: Path, client: Client) -> None:
    path = clean / REAL
    shutil.copyfile(DATA / "real" / REAL, path)
    session = _import(path)
    assert session.rules.agent == "omp"
    # The tree row of the entry, worded by oh-my-pi 18's rules (the stored text is v15's).
    tree = explorer.explorer_tree(session, session.leaf_id)
    row = make_row(tree.flat.by_id[ABORTED], tree.flat)
    assert row.content == V15
    window = explorer.tree_window(tree, "all", "", ABORTED, None, agent="omp")
    shown = {r.id: r.content for r in window.rows}
    assert shown[ABORTED] == OMP
    context = html_lib.unescape(
        client.get(f"/s/{session.session_id}/context/", {"targetId": ABORTED}).content.decode()
    )
    target = re.search(rf'<span class="context-target" title="entry {ABORTED}">([^<]*)</span>', context)
    assert target is not None and target.group(1) == OMP
    # pi 1.6 words it as v15 does: the heading follows the session's rules.
    session.agent_rules = "pi"
    session.save(update_fields=["agent_rules"])
    context = html_lib.unescape(
        client.get(f"/s/{session.session_id}/context/", {"targetId": ABORTED}).content.decode()
    )
    assert f'title="entry {ABORTED}">{V15}</span>' in context


def test_the_header_review_widget_and_share_button_name_the_branch_as_the_tree_does(
    clean: Path, client: Client
) -> None:
    session = _cut_session(clean)
    html = _page(client, session)
    header = re.search(r'<section id="branch-header".*?</section>', html, re.S)
    assert header is not None
    # No prompt above the aborted turn: the turn names the branch, in oh-my-pi 18's words.
    name = re.search(r'<strong class="branch-name" title="branch to entry 19e7dd4e"[^>]*>([^<]*)<', header[0])
    assert name is not None and name.group(1) == OMP_FIRST
    assert f"(“{OMP_FIRST}”)" in header[0]  # the review widget
    assert V15 not in header[0]
    # The share button is beside the name and shares that branch (to its trailing model change).
    assert re.search(r'class="share-branch"\s+href="[^"]*leafId=c94944ed', header[0])
    # The row in the tree says the same.
    assert re.search(rf'data-entry-id="{FIRST_ABORTED}".*?{re.escape(OMP_FIRST)}', html, re.S)
    # By pi 1.6's rules the name is pi's wording.
    session.agent_rules = "pi"
    session.save(update_fields=["agent_rules"])
    html = _page(client, session)
    assert re.search(r'<strong class="branch-name"[^>]*>assistant: \(aborted\)<', html)


def test_the_review_page_names_branches_as_the_tree_does(clean: Path, client: Client) -> None:
    session = _cut_session(clean)
    # Unreviewed (the section lists every session in single-user mode).
    html = html_lib.unescape(client.get("/review/").content.decode())
    link = re.compile(r'<a href="[^"]*leafId=19e7dd4e" title="branch to entry 19e7dd4e">([^<]*)</a>')
    found = link.search(html)
    assert found is not None and found.group(1) == OMP_FIRST
    # Needs changes.
    ReviewStatus.objects.create(session=session, leaf_id=FIRST_ABORTED, status="needs_changes")
    html = html_lib.unescape(client.get("/review/").content.decode())
    assert [m.group(1) for m in link.finditer(html)] == [OMP_FIRST]
    assert V15 not in html
    # The service names by the session's rules, and by v15's when asked.
    assert review.branch_names(session, [FIRST_ABORTED]) == {FIRST_ABORTED: OMP_FIRST}
    assert review.branch_names(session, [FIRST_ABORTED], agent="omp15") == {FIRST_ABORTED: V15}


def test_a_page_that_read_the_tree_words_review_names_from_the_forest(
    clean: Path, client: Client, django_assert_max_num_queries: Any
) -> None:
    session = _cut_session(clean)
    _page(client, session)  # the session page reads the forest and the rows' texts
    forest = explorer.cached_forest(session)
    assert forest is not None and forest.row_texts("omp", [FIRST_ABORTED]) == {FIRST_ABORTED: OMP_FIRST}
    leaves = review.session_leaves([session])[session.pk]
    assert [leaf.text for leaf in leaves] == [V15]  # kept in the stored wording, worded when shown
    with django_assert_max_num_queries(0):
        assert [leaf.text for leaf in review.worded(session, leaves)] == [OMP_FIRST]


def test_the_share_form_names_the_branch_as_the_header_does(clean: Path, client: Client) -> None:
    session = _cut_session(clean)
    # The header's share button leads to the form for the branch to its trailing model change.
    response = client.get(f"/s/{session.session_id}/share/", {"leafId": "c94944ed"})
    assert response.status_code == 200
    page = html_lib.unescape(response.content.decode())
    name = re.search(r'<strong class="branch-name" title="branch to entry c94944ed">([^<]*)</strong>', page)
    assert name is not None and name.group(1) == f"“{OMP_FIRST}”"
    assert V15 not in page


def test_the_shared_links_page_words_a_links_last_entry_as_the_tree_does(clean: Path, client: Client) -> None:
    from treeview.access import local_user
    from treeview.services import share

    path = clean / REAL
    shutil.copyfile(DATA / "real" / REAL, path)
    session = _import(path)
    share.create_link(local_user(), session, leaf_id=ABORTED)  # the branch to the aborted turn
    page = html_lib.unescape(client.get("/shared/").content.decode())
    assert f'<span title="to entry {ABORTED}">{OMP}</span>' in page
    assert V15 not in page
