"""The web explorer reads a session by its agent's rules (oh-my-pi 18 or pi 1.6), as the core does for the
file: the tree's filters, search and row texts, and the rules a user picks for a session."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.template.loader import render_to_string
from django.test import Client

from tests.reference import DATA
from tests.reference_latest import LatestCase, all_latest_cases, fixture_bytes, open_latest
from tests.test_access import HTMX, SID, World, _world
from tests.test_render import PNG_1X1, assistant, audit, call_block, entry, page, tool_call
from tests.test_session_page import ROW
from treeview import explorer
from treeview.models import AgentSession
from treeview.render import render_entries, render_entry
from treeview.render.blocks import ImageBlock, JsonBlock, NoticeBlock, ToolCallBlock
from treeview.render.transcript import transcript
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


def _import(name: str, tmp_path: Path, folder: Path = LATEST):
    path = tmp_path / name
    shutil.copyfile(folder / name, path)
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
            assert [r.id for r in ours] == [r.id for r in core], (mode, query)
            v15 = [n.id for n in tree.visible(mode, query, agent="omp15").nodes]
            differs = differs or v15 != [r.id for r in ours]
            window = explorer.tree_window(
                tree, mode, query, None, 0, count=explorer.TREE_SLICE_MAX, agent=agent
            )
            assert window.shown == len(core)
            # The same rows with the same text: the agent's wording, not the one stored at import (v15's).
            assert [(r.id, r.content) for r in window.rows] == [(r.id, r.content) for r in core], (
                mode,
                query,
            )
    # The fixtures hold what the rules read differently: reading them by v15's rules would not do.
    assert differs


def _web_and_core_rows(case: LatestCase, tmp_path: Path) -> tuple[list[Any], list[Any]]:
    path = tmp_path / f"{case.stem}.jsonl"
    path.write_bytes(fixture_bytes(case.stem))
    session = sync_file(path).session
    assert session is not None
    if session.rules.agent != case.agent:
        session.agent_rules = case.agent
    manager = open_latest(case)
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    tree = explorer.explorer_tree(session, session.leaf_id)
    core = visible_rows(core_flat, "all", "", agent=case.agent)  # type: ignore[arg-type]
    rows: list[Any] = []
    start = 0
    while True:  # every row, a window at a time as the pages ask for them
        window = explorer.tree_window(tree, "all", "", None, start, count=100, agent=case.agent)  # type: ignore[arg-type]
        rows += window.rows
        if window.end >= window.shown:
            break
        start = window.end
    return [(r.id, r.content) for r in rows], [(r.id, r.content) for r in core]


@pytest.mark.parametrize("case", [c for c in all_latest_cases() if c.opens], ids=str)
def test_the_web_tree_words_each_row_as_the_core_does_for_every_newest_reference(
    case: LatestCase, tmp_path: Path
) -> None:
    """The row text of every row of every fixture the newest agents answered for (by the answering agent's
    rules), web tree against the core's selector (which agrees with the agents' own rows)."""
    ours, core = _web_and_core_rows(case, tmp_path)
    assert ours == core


@pytest.mark.parametrize(
    ("folder", "name", "agent"),
    # pi refuses omp's title-slot files: an omp file without one.
    [(LATEST, "pi16w_features_200.jsonl", "omp"), (DATA / "handmade", "v3_custom_mode_ttsr.jsonl", "pi")],
)
def test_the_chosen_rules_apply_to_a_file_the_other_agent_wrote(
    folder: Path, name: str, agent: str, tmp_path: Path
) -> None:
    path, session = _import(name, tmp_path, folder)
    assert session.rules.agent != agent
    session.agent_rules = agent
    assert session.rules.agent == agent
    manager = SessionManager.open(path, agent=agent)
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    tree = explorer.explorer_tree(session, session.leaf_id)
    for mode in FILTER_MODES:
        for query in QUERIES:
            core = visible_rows(core_flat, mode, query, agent=agent)  # type: ignore[arg-type]
            ours = tree.visible(mode, query, agent=session.rules.agent).nodes
            assert [n.id for n in ours] == [r.id for r in core], (mode, query)


# -- the rules a user chooses for a session ---------------------------------------------------------------


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


# -- rendering what the newest agents write --------------------------------------------------------------

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _blocks_html(view: Any) -> str:
    return render_to_string("treeview/_entry_blocks.html", {"view": view, "session": None})


def test_a_tool_calls_intent_is_shown_with_the_call_and_escaped() -> None:
    view = render_entry(assistant(dict(tool_call("bash", {"command": "ls"}), intent="List the files")))
    (block,) = view.blocks
    assert isinstance(block, ToolCallBlock) and block.intent == "List the files"
    html = _blocks_html(view)
    assert "Intent: List the files" in html
    hostile = _blocks_html(
        render_entry(assistant(dict(tool_call("bash", {"command": "ls"}), intent=HOSTILE)))
    )
    assert "<script>" not in hostile and "&lt;script&gt;" in hostile


def test_omps_renamed_tools_render_as_their_kind() -> None:
    grep = call_block("grep", {"pattern": "TODO", "path": "src"})
    assert grep.tool == "grep" and grep.summary == "TODO in src"
    glob = call_block("glob", {"pattern": "**/*.py", "path": "src"})
    assert glob.tool == "find" and glob.summary == "**/*.py in src"
    # xd:// devices go through read and write: the listing, a device's documentation, a device's call.
    listing = call_block("read", {"path": "xd://"})
    assert listing.device == "" and listing.summary == "the list of devices" and listing.tool == ""
    docs = call_block("read", {"path": "xd://web_search"})
    assert docs.device == "web_search" and docs.summary == "documentation of the web_search device"
    call = call_block("write", {"path": "xd://bash", "content": '{"command": "make test"}'})
    assert (call.device, call.name, call.tool, call.summary) == ("bash", "bash", "bash", "make test")
    assert call.code is not None and "make" in call.code.html
    custom = call_block("write", {"path": "xd://web_search", "content": '{"query": "arbor"}'})
    assert custom.name == "web_search" and custom.summary == "query: arbor"
    broken = call_block("write", {"path": "xd://todo", "content": "not json"})
    assert broken.device == "todo" and broken.summary == "not json"
    # A plain file is still a file.
    assert call_block("write", {"path": "a.py", "content": "x"}).device is None
    html = _blocks_html(render_entry(assistant(tool_call("write", {"path": "xd://bash", "content": "{}"}))))
    assert "(device xd://bash)" in html
    hub = call_block("hub", {"action": "list", "room": "general"})
    assert hub.name == "hub" and hub.summary == "action: list"  # an unknown tool: generically


def test_pis_edit_with_several_pairs_is_shown_as_diffs() -> None:
    # pi 1.6's edit tool: {path, edits: [{oldText, newText}, ...]} (the fixtures' edits carry no pairs).
    pair = call_block(
        "edit",
        {
            "path": "a.py",
            "edits": [{"oldText": "one", "newText": "uno"}, {"oldText": "two", "newText": "dos"}],
        },
    )
    assert pair.code is not None
    text = re.sub(r"<[^>]+>", "", pair.code.html)
    assert "a.py (edit 1)" in text and "a.py (edit 2)" in text
    assert "-one" in text and "+uno" in text and "-two" in text and "+dos" in text


def test_new_assistant_blocks_are_rendered() -> None:
    view = render_entry(
        assistant(
            {"type": "text", "text": "Done."},
            {
                "type": "fallback",
                "from": {"provider": "anthropic", "model": "claude-opus-4-5"},
                "to": {"provider": "openai", "model": "gpt-5.1"},
                "reason": "overloaded",
            },
            {
                "type": "anthropicServerTool",
                "block": {"type": "server_tool_use", "name": "web_search", "input": {"query": "arbor"}},
            },
            {"type": "image", "mimeType": "image/png", "data": PNG_1X1},
            {"type": "somethingNew", "value": 1},
        )
    )
    kinds = [block.kind for block in view.blocks]
    assert kinds == ["text", "notice", "json", "image", "json"]
    fallback, server, image, unknown = view.blocks[1:]
    assert isinstance(fallback, NoticeBlock)
    assert fallback.text == "Provider fallback: anthropic/claude-opus-4-5 → openai/gpt-5.1 (overloaded)"
    assert isinstance(server, JsonBlock) and server.label == "server tool: server_tool_use (web_search)"
    assert "arbor" in server.html
    assert isinstance(image, ImageBlock) and image.status == "inline"
    assert isinstance(unknown, JsonBlock) and unknown.label == "somethingNew block"


def test_remote_compactions_and_discarded_branches_say_what_they_are() -> None:
    views = render_entries(SessionManager.open(LATEST / "omp18w_features_200.jsonl").entries)
    remote = [v for v in views if v.kind == "compaction" and ("method", "remote") in _fields(v)]
    assert remote
    for view in remote:
        notices = [b.text for b in view.blocks if isinstance(b, NoticeBlock)]
        assert any("placeholder" in text for text in notices)
    marker = [v for v in views if ("details", "discarded-entry-branch") in _fields(v)]
    assert marker and all(v.is_marker or v.kind == "branch_summary" for v in marker)
    assert any("discarded branch" in b.text for v in marker for b in v.blocks if isinstance(b, NoticeBlock))


def _fields(view: Any) -> list[tuple[str, str]]:
    return [(f.label, f.value) for f in view.fields]


def test_hostile_html_in_every_new_field_is_escaped() -> None:
    views = [
        render_entry(
            assistant(
                dict(
                    tool_call(
                        "write",
                        {"path": f"xd://{HOSTILE}", "content": orjson.dumps({HOSTILE: HOSTILE}).decode()},
                    ),
                    intent=HOSTILE,
                ),
                tool_call("read", {"path": f"xd://{HOSTILE}"}),
                tool_call("glob", {"pattern": HOSTILE, "path": HOSTILE}),
                tool_call(
                    "edit", {"path": HOSTILE, "edits": [{"oldText": HOSTILE, "newText": HOSTILE + "!"}]}
                ),
                {
                    "type": "fallback",
                    "from": {"model": HOSTILE, "provider": HOSTILE},
                    "to": HOSTILE,
                    "reason": HOSTILE,
                },
                {
                    "type": "anthropicServerTool",
                    "block": {"type": HOSTILE, "name": HOSTILE, HOSTILE: HOSTILE},
                },
                {"type": "image", "mimeType": HOSTILE, "data": HOSTILE},
                {"type": HOSTILE, HOSTILE: HOSTILE},
            )
        ),
        render_entry(
            entry("compaction", summary=HOSTILE, method="remote", firstKeptEntryId=HOSTILE, tokensBefore=1)
        ),
        render_entry(
            entry("branch_summary", fromId=HOSTILE, summary="", details={"kind": "discarded-entry-branch"})
        ),
    ]
    for view in views:
        html = _blocks_html(view)
        assert "<script" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html or "&amp;lt;script" in html or "&lt;" in html
    audit(page(views))


def test_the_markdown_transcript_names_a_calls_intent() -> None:
    call = dict(tool_call("bash", {"command": "ls"}), intent="List\nthe files")
    text = transcript([assistant(call), assistant(tool_call("bash", {"command": "pwd"}))], title="T")
    assert '**Tool call: bash** (List the files)\n\n```json\n{\n  "command": "ls"\n}\n```' in text
    assert '**Tool call: bash**\n\n```json\n{\n  "command": "pwd"\n}\n```' in text


# -- oh-my-pi's search splits the words of a message's text by case ---------------------------------------

CAMEL_TEXTS = [
    "please fix parseSessionHeader in the loader",
    "the HTTPServerError comes from readFileSync",
    "nothing camel here at all",
    "toolResult rows and XMLHttpRequest",
]
# Acronyms of camelCase words ("psh": parse session header), word starts inside them, plain words and
# tokens that match nothing.
CAMEL_QUERIES = ["psh", "rfs", "hse", "xhr", "session header", "server", "loader", "camel", "qqq", "fix psh"]


def _camel_session(path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "camel-1",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "cwd": "/w",
        }
    ]
    parent = None
    for number, text in enumerate(CAMEL_TEXTS):
        for role in ("user", "assistant"):
            entry_id = f"{role[0]}{number}"
            content: Any = text if role == "user" else [{"type": "text", "text": f"{text} done"}]
            message: dict[str, Any] = {"role": role, "content": content}
            if role == "assistant":
                message |= {"stopReason": "stop", "provider": "anthropic", "model": "m"}
            lines.append(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2026-12-01T10:00:{number:02d}.{len(lines):03d}Z",
                    "message": message,
                }
            )
            parent = entry_id
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def test_the_web_search_splits_camel_case_words_in_message_text_as_the_core_does(tmp_path: Path) -> None:
    path = tmp_path / "camel.jsonl"
    _camel_session(path)
    session = sync_file(path).session
    assert session is not None
    session.agent_rules = "omp"
    manager = SessionManager.open(path, agent="omp")
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    tree = explorer.explorer_tree(session, session.leaf_id)
    for query in CAMEL_QUERIES:
        core = [r.id for r in visible_rows(core_flat, "default", query, agent="omp")]
        ours = [n.id for n in tree.visible("default", query, agent="omp").nodes]
        assert ours == core, query
    # The acronyms of camelCase words find their messages (the lowercased stored text alone would not).
    assert [n.id for n in tree.visible("default", "psh", agent="omp").nodes] == ["u0", "a0"]
    assert [n.id for n in tree.visible("default", "xhr", agent="omp").nodes] == ["u3", "a3"]
    # A message appended later is read as written too.
    with path.open("ab") as handle:
        handle.write(
            orjson.dumps(
                {
                    "type": "message",
                    "id": "u9",
                    "parentId": "a3",
                    "timestamp": "2026-12-01T10:01:00.000Z",
                    "message": {"role": "user", "content": "and getUserName please"},
                }
            )
            + b"\n"
        )
    session = sync_file(path).session
    assert session is not None
    session.agent_rules = "omp"
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert [n.id for n in tree.visible("default", "gun", agent="omp").nodes] == ["u9"]


def test_the_migration_fills_the_as_written_text_of_stored_messages(tmp_path: Path) -> None:
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    from treeview.models import Entry

    path = tmp_path / "camel.jsonl"
    _camel_session(path)
    session = sync_file(path).session
    assert session is not None
    stored = dict(session.entries.exclude(fuzzy_text="").values_list("entry_id", "fuzzy_text"))
    # Only the messages with camelCase words in their text keep it (not "nothing camel here at all").
    assert sorted(stored) == ["a0", "a1", "a3", "u0", "u1", "u3"]
    assert stored["u0"] == "user please fix parseSessionHeader in the loader"
    with connection.cursor() as cursor:  # as a database from before the column holds them (rows never change)
        cursor.execute(
            f"UPDATE {Entry._meta.db_table} SET fuzzy_text = '' WHERE session_id = %s", [session.pk]
        )
    assert not session.entries.exclude(fuzzy_text="").exists()
    migration = importlib.import_module("treeview.migrations.0011_newest_fuzzy_text")
    migration.fill_fuzzy_text(apps, SimpleNamespace(connection=connection))
    assert dict(session.entries.exclude(fuzzy_text="").values_list("entry_id", "fuzzy_text")) == stored


def test_a_tool_result_far_from_its_call_is_worded_by_the_call(tmp_path: Path) -> None:
    """The core words a tool result by its call wherever the call is in the file; the web tree finds a call
    that is not above its result too (here on another branch)."""

    def line(entry_id: str, parent: str | None, second: int, message: dict[str, Any]) -> dict[str, Any]:
        ts = f"2026-12-01T10:00:{second:02d}.000Z"
        return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts, "message": message}

    call = {
        "type": "toolCall",
        "id": "call-far",
        "name": "grep",
        "arguments": {"pattern": "TODO", "path": "src"},
    }
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": "far-1",
            "timestamp": "2026-12-01T10:00:00.000Z",
            "cwd": "/w",
        },
        line("u1", None, 1, {"role": "user", "content": "find the todos"}),
        line("a1", "u1", 2, {"role": "assistant", "content": [call], "stopReason": "toolUse"}),
        line("a2", "u1", 3, {"role": "assistant", "content": [{"type": "text", "text": "other"}]}),
        line(
            "r1", "a2", 4, {"role": "toolResult", "toolCallId": "call-far", "toolName": "grep", "content": []}
        ),
    ]
    path = tmp_path / "far.jsonl"
    path.write_bytes(b"".join(orjson.dumps(each) + b"\n" for each in lines))
    session = sync_file(path).session
    assert session is not None
    session.agent_rules = "pi"
    manager = SessionManager.open(path, agent="pi")
    core_flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    core = {r.id: r.content for r in visible_rows(core_flat, "all", "", agent="pi")}
    assert core["r1"] == "[grep: /TODO/ in src]"
    tree = explorer.explorer_tree(session, session.leaf_id)
    window = explorer.tree_window(tree, "all", "", None, 0, agent="pi")
    assert {r.id: r.content for r in window.rows} == core
