"""The web explorer reads a session by its agent's rules (oh-my-pi 18 or pi 1.6), as the core does for the
file: the tree's filters, search and row texts, and the rules a user picks for a session."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.reference import DATA
from tests.test_access import HTMX, SID, World, _world
from tests.test_session_page import ROW
from treeview import explorer
from treeview.models import AgentSession
from treeview.services.sync import sync_file
from treeview.session.selector import FILTER_MODES, flatten_tree, make_row, visible_rows
from treeview.session.session_manager import SessionManager

pytestmark = pytest.mark.django_db

LATEST = DATA / "latest"
# Words of the fixtures' texts, bookkeeping rows' terms (omp finds them, v15 does not), camel-case and
# fuzzy forms (omp's matcher), and a token that matches nothing.
QUERIES = [
    "",
    "user",
    "read",
    "reset boundary",
    "credential",
    "title",
    "model",
    "thinking",
    "context edit",
    "service tier",
    "mode",
    "skill",
    "ttsr",
    "compaction",
    "summary",
    "rdfl",
    "zzz-nothing",
]


def _import(name: str, tmp_path: Path):
    path = tmp_path / name
    shutil.copyfile(LATEST / name, path)
    return path, sync_file(path).session


@pytest.mark.parametrize(
    ("name", "agent"),
    [
        ("omp18w_features_200.jsonl", "omp"),
        ("omp18w_features_200-branched.jsonl", "omp"),
        ("omp18w_small_50.jsonl", "omp"),
        ("pi16w_features_200.jsonl", "pi"),
        ("pi16w_features_200-branched.jsonl", "pi"),
        ("pi16w_small_50.jsonl", "pi"),
    ],
)
def test_the_web_tree_shows_the_rows_the_core_shows_by_the_sessions_agent(
    name: str, agent: str, tmp_path: Path
) -> None:
    path, session = _import(name, tmp_path)
    assert session.rules.agent == agent
    manager = SessionManager.open(path, agent=agent)
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert [n.id for n in tree.flat.nodes] == [n.id for n in core_flat.nodes]
    differs = False
    for mode in FILTER_MODES:
        for query in QUERIES:
            core = visible_rows(core_flat, mode, query, agent=agent)  # type: ignore[arg-type]
            ours = [make_row(n, tree.flat) for n in tree.visible(mode, query, agent=agent).nodes]
            assert [(r.id, r.text) for r in ours] == [(r.id, r.text) for r in core], (mode, query)
            v15 = [n.id for n in tree.visible(mode, query, agent="omp15").nodes]
            differs = differs or v15 != [r.id for r in ours]
            window = explorer.tree_window(tree, mode, query, None, None, agent=agent)
            assert window.shown == len(core)
    # The fixtures hold what the rules read differently: reading them by v15's rules would not do.
    assert differs


# -- the rules a user chooses for a session ------------------------------------------------------------------


@pytest.fixture
def world(db: Any, tmp_path: Path, settings: Any) -> World:
    settings.ARBOR_SINGLE_USER = False
    return _world(tmp_path)


def _rules_url() -> str:
    return f"/s/{SID}/rules/"


def test_the_page_says_which_rules_apply_and_only_the_owner_may_switch(world: World) -> None:
    for role in ("owner", "superuser", "member", "grantee", "team_admin"):
        page = world.client(role).get(f"/s/{SID}/").content.decode()
        assert "oh-my-pi 18 rules (" in page, role
        assert ('class="rules-form"' in page) is (role in ("owner", "superuser")), role


@pytest.mark.parametrize("role", ["member", "grantee", "team_admin", "outsider"])
def test_a_viewer_cannot_switch_the_rules(world: World, role: str) -> None:
    for headers in ({}, HTMX):
        response = world.client(role).post(_rules_url(), {"rules": "pi"}, headers=headers)
        assert response.status_code in (403, 404), role
    assert AgentSession.objects.get(pk=world.session.pk).agent_rules == ""
    assert Client().post(_rules_url(), {"rules": "pi"}).status_code == 302  # to the login page


def test_the_owner_switches_the_rules_with_and_without_htmx(world: World) -> None:
    owner = world.client("owner")
    detected = AgentSession.objects.get(pk=world.session.pk).rules_label
    response = owner.post(_rules_url(), {"rules": "pi"}, headers=HTMX)
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    fragment = response.content.decode()
    assert 'id="agent-rules"' in fragment and "<html" not in fragment
    assert "pi 1.6 rules (chosen for this session)" in fragment
    assert f"detected: {detected}" in fragment
    stored = AgentSession.objects.get(pk=world.session.pk)
    assert stored.agent_rules == "pi" and stored.rules.agent == "pi"
    page = owner.get(f"/s/{SID}/").content.decode()
    assert "pi 1.6 rules (chosen for this session)" in page
    assert '<option value="pi" selected>' in page
    response = owner.post(_rules_url(), {"rules": "detect"})
    assert response.status_code == 302 and response["Location"].startswith(f"/s/{SID}/")
    stored = AgentSession.objects.get(pk=world.session.pk)
    assert stored.agent_rules == "" and stored.rules_label == detected
    refused = owner.post(_rules_url(), {"rules": "omp15"}, headers=HTMX)
    assert refused.status_code == 400 and "not one of the available choices" in refused.content.decode()
    assert AgentSession.objects.get(pk=world.session.pk).agent_rules == ""


def test_the_tree_and_the_context_follow_the_chosen_rules(tmp_path: Path, client: Client) -> None:
    path, session = _import("omp18w_features_200.jsonl", tmp_path)
    url = f"/s/{session.session_id}/"
    core_flat = flatten_tree(*_core(path))
    seen = {}
    for choice, agent in (("detect", "omp"), ("pi", "pi"), ("omp", "omp")):
        assert client.post(f"{url}rules/", {"rules": choice}).status_code == 302
        shown = len(visible_rows(core_flat, "default", "", agent=agent))
        html = client.get(url).content.decode()
        assert f"{shown} of {len(core_flat.nodes)} shown" in html, choice
        rows = client.get(f"{url}rows/", {"start": "0", "count": "400"}).content.decode()
        assert len(ROW.findall(rows)) == shown, choice
        context = client.get(f"{url}context/", headers=HTMX).content.decode()
        seen[choice] = context
    # The path's compaction reaches the model in each agent's own wrapper.
    assert "Prior model work/tool state available." in seen["omp"]
    assert "Prior model work/tool state available." not in seen["pi"]
    assert "The conversation history before this point was compacted" in seen["pi"]
    assert seen["detect"].count("Prior model work") == seen["omp"].count("Prior model work")


def _core(path: Path) -> tuple[Any, Any]:
    manager = SessionManager.open(path)
    return manager.get_tree(), manager.leaf_id
