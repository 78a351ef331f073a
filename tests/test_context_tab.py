"""The Context tab: what the LLM would receive at an entry, per-message token estimates, paging, escaping."""

from __future__ import annotations

import json
import re
from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from tests.reference import DATA, import_fixture
from treeview import context_tab, explorer
from treeview.models import AgentSession
from treeview.services.export import load_manager
from treeview.services.sync import sync_file
from treeview.session.branch_summary import estimate_tokens
from treeview.session.messages import convert_to_llm, message_text

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
FIXTURES = sorted(
    (path.parent.name, path.name)
    for folder in ("handmade", "real")
    for path in (DATA / folder).glob("*.jsonl")
)
CARD = re.compile(
    r'<article class="entry context-message[^"]*"\s+data-entry-id="([^"]*)"\s+data-role="([^"]*)"'
)
COUNT = re.compile(r'data-message-count="(\d+)"')


@pytest.fixture(autouse=True)
def isolated(settings, tmp_path: Path) -> None:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    explorer.clear_caches()


def imported_text(tmp_path: Path, name: str, lines: list[dict]) -> AgentSession:
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    result = sync_file(path)
    assert result.session is not None, result.error
    return result.session


def context_url(session: AgentSession, query: str = "") -> str:
    return f"/s/{session.session_id}/context/{query}"


def built(session: AgentSession, target_id: str | None = None) -> context_tab.LlmContext:
    tree = explorer.explorer_tree(session, session.leaf_id)
    return context_tab.llm_context(session, tree, session.leaf_id if target_id is None else target_id)


def cards(html: str) -> list[tuple[str, str]]:
    return [(unescape(entry_id), role) for entry_id, role in CARD.findall(html)]


def expected_llm(session: AgentSession) -> list[dict]:
    manager = load_manager(session)
    return manager.llm_messages()


@pytest.mark.parametrize(("folder", "name"), FIXTURES)
def test_context_matches_the_core_at_the_leaf_for_every_fixture(client: Client, tmp_path: Path, folder, name):
    session = import_fixture(tmp_path, name, folder)
    expected = expected_llm(session)
    llm = built(session)
    assert [(card.role, card.text) for card in llm.cards] == [(m["role"], message_text(m)) for m in expected]
    assert llm.total_tokens == sum(card.tokens for card in llm.cards)
    assert [card.index for card in llm.cards] == list(range(1, len(llm.cards) + 1))

    response = client.get(context_url(session), headers=HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert COUNT.findall(html) == [str(len(expected))]
    shown = cards(html)
    page = llm.cards[-context_tab.CONTEXT_PAGE :]
    assert [role for _, role in shown] == [card.role for card in page]
    assert [entry_id for entry_id, _ in shown] == [card.entry_id or "" for card in page]


def test_every_card_names_the_entry_it_came_from(tmp_path: Path):
    session = import_fixture(tmp_path, "v3_custom_mode_ttsr.jsonl")
    llm = built(session)
    manager = load_manager(session)
    assert llm.cards
    for card in llm.cards:
        assert card.entry_id is not None
        assert card.entry_id in manager.by_id


def test_state_is_shown(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, "v3_custom_mode_ttsr.jsonl")
    state = load_manager(session).build_session_context()
    html = client.get(context_url(session), headers=HTMX).content.decode()
    assert f"<dd>{state.thinking_level}</dd>" in html
    for rule in state.injected_ttsr_rules:
        assert f"<code>{rule}</code>" in unescape(html)
    for model in state.models.values():
        assert model in unescape(html)


def test_compaction_summary_comes_first_then_only_kept_entries(tmp_path: Path):
    session = import_fixture(tmp_path, "v3_compaction.jsonl")
    manager = load_manager(session)
    llm = built(session)
    # oh-my-pi 18 wraps it as "Prior model work/tool state available." (v15: "Another language model ...")
    assert llm.cards[0].text.startswith("Prior model work/tool state available.")
    compaction = next(e for e in manager.get_branch() if e["type"] == "compaction")
    assert llm.cards[0].entry_id == compaction["id"]
    assert compaction["summary"] in llm.cards[0].text
    branch = [e["id"] for e in manager.get_branch()]
    first_kept = branch.index(compaction["firstKeptEntryId"])
    kept = set(branch[first_kept:])
    assert all(card.entry_id in kept for card in llm.cards[1:])
    assert len(llm.cards) < len([e for e in manager.get_branch() if e["type"] == "message"]) + 1


def test_target_deep_link_shows_the_context_at_that_entry(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    manager = load_manager(session)
    messages = [e for e in manager.entries if e["type"] == "message"]
    target = next(e for e in messages if e["id"] not in {x["id"] for x in manager.get_branch()})
    manager.branch(target["id"])
    expected = convert_to_llm(manager.build_session_context().messages)
    llm = built(session, target["id"])
    assert [(card.role, card.text) for card in llm.cards] == [(m["role"], message_text(m)) for m in expected]
    assert llm.cards[-1].entry_id == target["id"]

    html = client.get(context_url(session, f"?targetId={target['id']}"), headers=HTMX).content.decode()
    assert cards(html)[-1] == (target["id"], target["message"]["role"])
    # The same through the session page's tab parameter (no JavaScript).
    page = client.get(f"/s/{session.session_id}/?targetId={target['id']}&tab=context").content.decode()
    assert 'class="context-pane open"' in page
    assert cards(page)[-1][0] == target["id"]


def test_htmx_gets_the_fragment_and_a_plain_request_the_full_page(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    fragment = client.get(context_url(session), headers=HTMX)
    full = client.get(context_url(session))
    assert fragment.status_code == full.status_code == 200
    assert "HX-Request" in fragment["Vary"] and "HX-Request" in full["Vary"]
    fragment_html = fragment.content.decode()
    full_html = full.content.decode()
    assert fragment_html.lstrip().startswith('<section id="context"')
    assert "<html" not in fragment_html
    assert "<html" in full_html and 'id="tree"' in full_html and 'class="context-pane open"' in full_html
    assert cards(fragment_html) == cards(full_html)


def test_the_session_page_has_the_tab_and_keeps_the_conversation_the_default(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    html = client.get(f"/s/{session.session_id}/").content.decode()
    assert '<section id="context" class="context-pane" hidden>' in html
    assert f'hx-get="/s/{session.session_id}/context/"' in html
    assert "tab=context" in html
    assert not cards(html)


def test_unknown_ids_are_404(client: Client, tmp_path: Path):
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")
    assert client.get(context_url(session, "?targetId=nope")).status_code == 404
    assert client.get(context_url(session, "?leafId=nope"), headers=HTMX).status_code == 404
    assert client.get("/s/no-such-session/context/").status_code == 404
    assert client.get(context_url(session, "?copy=999999")).status_code == 404
    assert client.get(context_url(session, f"?copy={session.pk}")).status_code == 200


def test_hostile_html_is_escaped(client: Client, tmp_path: Path):
    payload = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    session = imported_text(
        tmp_path,
        "hostile.jsonl",
        [
            {
                "type": "session",
                "version": 3,
                "id": "hostile-session",
                "timestamp": "2025-01-01T00:00:00.000Z",
                "cwd": "/tmp",
            },
            {
                "type": "message",
                "id": "a1",
                "parentId": None,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": payload, "timestamp": 1},
            },
            {
                "type": "message",
                "id": "a2",
                "parentId": "a1",
                "timestamp": "2025-01-01T00:00:02.000Z",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": payload},
                        {
                            "type": "toolCall",
                            "id": "t1",
                            "name": "<b>bash</b>",
                            "arguments": {"command": payload},
                        },
                    ],
                    "stopReason": "toolUse",
                    "timestamp": 2,
                },
            },
        ],
    )
    html = client.get(context_url(session), headers=HTMX).content.decode()
    assert "<script>" not in html and "<img" not in html and "<b>bash" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert cards(html) == [("a1", "user"), ("a2", "assistant")]


def test_long_contexts_are_paged_but_counted_whole(client: Client, tmp_path: Path):
    lines: list[dict] = [
        {
            "type": "session",
            "version": 3,
            "id": "long-session",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": "/",
        }
    ]
    parent = None
    for i in range(250):
        entry_id = f"m{i:04d}"
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2025-01-01T00:00:01.000Z",
                "message": {"role": "user", "content": f"message {i} " + "x" * i, "timestamp": i},
            }
        )
        parent = entry_id
    session = imported_text(tmp_path, "long.jsonl", lines)
    llm = built(session)
    assert len(llm.cards) == 250
    assert llm.total_tokens == sum(estimate_tokens(m["message"]) for m in lines[1:])

    html = client.get(context_url(session), headers=HTMX).content.decode()
    shown = cards(html)
    assert len(shown) == context_tab.CONTEXT_PAGE
    assert shown[-1][0] == "m0249"
    assert "150 earlier messages" in html
    assert f'<span class="context-total-tokens">{llm.total_tokens:,}</span>' in html

    earlier = client.get(context_url(session, "?end=150"), headers=HTMX).content.decode()
    assert [entry_id for entry_id, _ in cards(earlier)] == [f"m{i:04d}" for i in range(50, 150)]
    assert "100 later messages" in earlier


@pytest.mark.parametrize(
    ("name", "folder", "answer"),
    [
        ("omp18w_features_200.jsonl", ".omp", "omp18"),
        ("pi16w_features_200.jsonl", ".pi", "pi16"),
        ("pi16w_small_50.jsonl", ".pi", "pi16"),
    ],
)
def test_context_tab_sends_what_the_sessions_agent_sends(tmp_path: Path, name: str, folder: str, answer: str):
    # The tab reads a session by its agent's newest rules (omp 18: /clear, wrappers, developer role; pi 1.6:
    # context edits, its own wrappers): each card's text is what that agent's model receives.
    import hashlib
    import shutil

    path = tmp_path / folder / "sessions" / name
    path.parent.mkdir(parents=True)
    shutil.copyfile(DATA / "latest" / name, path)
    session = sync_file(path).session
    assert session is not None and session.agent == ("pi" if folder == ".pi" else "omp")
    reference = json.loads((DATA / "reference-latest" / f"{path.stem}.{answer}.json").read_text())
    llm = built(session)
    got = [(card.role, hashlib.sha256(card.text.encode()).hexdigest()) for card in llm.cards]
    assert got == [(m["role"], m["text_sha256"]) for m in reference["llm"]["messages"]]
