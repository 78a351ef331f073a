"""Search across all sessions: the index (kept by every write path), queries, snippets, the branch of a hit
and the results page. Runs on SQLite (FTS5) and PostgreSQL (GIN index) alike."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import unescape
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.apps import apps as django_apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.reference import DATA, import_fixture
from treeview import explorer
from treeview.models import AgentSession, Entry
from treeview.search import (
    FTS_TABLE,
    PG_INDEX,
    EntryHits,
    branch_target,
    ensure_index,
    ensure_index_after_migrate,
    matching_sessions,
    parse_query,
    snippet,
)
from treeview.search_index import PG_COLUMN, PG_QUERY
from treeview.services.append import append_entry, move_leaf
from treeview.services.sync import sync_file
from treeview.session.body_text import MAX_BODY, MAX_TOOL_OUTPUT
from treeview.session.entries import base_entry
from treeview.session.selector_tree import flatten_tree

HTMX = {"HX-Request": "true"}
BRANCHING = "v3_branching_labels.jsonl"
BRANCHING_SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
# The active path of BRANCHING ends at e5000001; b2000003..b2000006 and the label c3000001: the other branch.
SUBCOMMAND_HITS = {"b2000003", "b2000006", "b2000007", "d4000001"}
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'
HOSTILE_QUERIES = [
    '"',
    '""',
    "'",
    "\\",
    "AND",
    "OR NOT",
    "subcommands AND",
    "NOT subcommands",
    "*",
    "sub*",
    "-",
    "-subcommands",
    "NEAR(",
    "NEAR(subcommands click, 2)",
    "(",
    ")",
    "^sub",
    "col:value",
    "search_text:subcommands",
    "{search_text}: x",
    "&|!",
    "<-> !!",
    "'a':*",
    ":*",
    "a & | b",
    '"unterminated phrase',
    "%",
    "_",
    "' OR 1=1 --",
    "'); DROP TABLE treeview_entry; --",
    "日本語",
    "\u200b",
    "x" * 400,
    " ".join(f"w{n}" for n in range(60)),
]


@pytest.fixture(autouse=True)
def _no_write_back(settings: Any) -> None:
    settings.ARBOR_WRITE_BACK = False
    explorer.clear_caches()


def ids_of(query: str) -> list[str]:
    hits = EntryHits(parse_query(query))
    found = [hit.entry.entry_id for hit in hits[0 : hits.count() + 10]]
    # The index holds exactly the stored entries: no row left behind by a delete.
    assert len(found) == hits.count()
    return found


def write_session(path: Path, session_id: str, messages: list[str], **header: Any) -> Path:
    """A linear v3 session: user/assistant messages alternating, one second apart."""
    lines: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-05-01T10:00:00.000Z",
            "cwd": "/home/dev/search",
            **header,
        }
    ]
    parent = None
    for n, text in enumerate(messages):
        role = "user" if n % 2 == 0 else "assistant"
        entry_id = f"m{n:07d}"
        minute, second = divmod(n + 1, 60)
        lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "timestamp": f"2026-05-01T{10 + minute // 60:02d}:{minute % 60:02d}:{second:02d}.000Z",
                "message": {"role": role, "content": [{"type": "text", "text": text}]},
            }
        )
        parent = entry_id
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def write_entries(path: Path, session_id: str, entries: list[dict[str, Any]], mode: str = "w") -> Path:
    """Entries (without id, parentId, timestamp) as one chain e0000000, e0000001 …; ``mode="a"`` appends to
    a file written before (the chain goes on from its last entry)."""
    lines: list[dict[str, Any]] = []
    start = 0
    if mode == "w":
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-05-01T10:00:00.000Z"}
        lines.append({**header, "cwd": "/home/dev/search"})
    else:
        start = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line) - 1
    for n, entry in enumerate(entries, start):
        lines.append(
            {
                "id": f"e{n:07d}",
                "parentId": f"e{n - 1:07d}" if n else None,
                "timestamp": f"2026-05-01T10:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
                **entry,
            }
        )
    with path.open(mode, encoding="utf-8") as out:
        out.write("".join(json.dumps(line) + "\n" for line in lines))
    return path


def filler(length: int) -> str:
    """``length`` characters of words that no test searches for."""
    return ("lorem ipsum dolor sit amet " * (length // 27 + 1))[:length]


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text}}


# -- queries (no database) ---------------------------------------------------------------------------------


def test_a_query_is_split_into_tokens_and_letter_digit_words_that_carry_no_syntax():
    query = parse_query('  "Sub-Commands"  NEAR(click* ')

    assert query.tokens == ('"sub-commands"', "near(click*")
    assert query.words == ("sub", "commands", "near", "click")
    assert query.fts5() == '"sub"* "commands"* "near"* "click"*'
    assert query.tsquery() == "'sub':* & 'commands':* & 'near':* & 'click':*"


@pytest.mark.parametrize("text", HOSTILE_QUERIES)
def test_hostile_queries_only_ever_give_quoted_words(text):
    query = parse_query(text)

    for word in query.words:
        assert re.fullmatch(r"[^\W_]+", word), word
    assert len(query.words) <= 16 and len(query.tokens) <= 16


def test_a_blank_or_punctuation_query_has_no_words():
    assert not parse_query("   ")
    assert parse_query("-- * ()").words == ()


# -- snippets (no database) --------------------------------------------------------------------------------


def test_snippet_escapes_the_text_and_marks_word_prefixes_only():
    html = snippet([f"{PAYLOAD} the needle & needles, not haystackneedle"], ["needle"])

    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert html.count("<mark>") == 2
    assert "<mark>needle</mark> &amp; <mark>needle</mark>s" in html
    assert "haystackneedle" in html


def test_snippet_of_a_hostile_match_keeps_the_mark_around_escaped_text():
    html = snippet(['<b onclick="x">bold</b>'], ["b"])

    # "b" (one letter) marks the whole word "b" only, not the start of "bold".
    assert html == "&lt;<mark>b</mark> onclick=&quot;x&quot;&gt;bold&lt;/<mark>b</mark>&gt;"


def test_snippet_matches_ignore_case_and_accents():
    assert snippet(["Un Café crème"], ["cafe", "CREME"]) == "Un <mark>Café</mark> <mark>crème</mark>"


def test_snippet_is_a_window_around_the_first_match():
    text = "alpha " * 40 + "needle " + "omega " * 80

    html = str(snippet([text], ["needle"]))

    assert html.startswith("…alpha")
    assert html.endswith("…")
    assert "<mark>needle</mark>" in html
    assert len(unescape(re.sub("<[^>]+>", "", html))) < 260


def test_snippet_takes_the_text_holding_the_most_words():
    html = snippet(["[read: cli.py]", "toolresult import argparse"], ["argparse"])

    assert html == "toolresult import <mark>argparse</mark>"


def test_snippet_finds_the_first_match_anywhere_in_a_long_body():
    text = filler(30_000) + " the needle here " + filler(500)

    html = str(snippet([text], ["needle"]))

    assert html.startswith("…") and html.endswith("…")
    assert "<mark>needle</mark> here" in html
    assert 150 < len(re.sub("<[^>]+>", "", html)) < 220


def test_overlapping_matches_of_several_words_make_one_mark():
    assert snippet(["needles, a need"], ["need", "needle"]) == "<mark>needle</mark>s, a <mark>need</mark>"


def test_snippet_shows_line_breaks_and_runs_of_spaces_as_one_space():
    assert snippet(["line one\n\n  needle\tthere\n"], ["needle"]) == "line one <mark>needle</mark> there"


def test_snippet_maps_folded_matches_back_to_the_text():
    # "ß" folds to two letters: the match still marks the original characters.
    assert snippet(["Die Straße und die Stadt"], ["strasse", "stadt"]) == (
        "Die <mark>Straße</mark> und die <mark>Stadt</mark>"
    )
    long_text = "Ünïcödé " * 3000 + "Zanzíbar"
    assert str(snippet([long_text], ["zanzibar"])).endswith("<mark>Zanzíbar</mark>")


# -- the branch of a hit (no database) ---------------------------------------------------------------------


@dataclass
class Node:
    entry: dict[str, Any]
    children: list[Node] = field(default_factory=list)
    label: str | None = None


def tree(*edges: tuple[str, str | None]) -> list[Node]:
    """Nodes in file order, one second apart: children stay oldest first, as the tree sorts them."""
    nodes: dict[str, Node] = {}
    roots: list[Node] = []
    for n, (entry_id, parent) in enumerate(edges):
        node = Node(
            {"type": "message", "id": entry_id, "parentId": parent, "timestamp": f"2026-01-01T00:00:{n:02d}Z"}
        )
        nodes[entry_id] = node
        (nodes[parent].children if parent else roots).append(node)
    return roots


def test_a_hit_on_the_active_path_or_the_leaf_keeps_the_leaf():
    roots = tree(("a", None), ("b", "a"), ("c", "b"), ("x", "a"), ("y", "x"))
    flat = flatten_tree(roots, "c")

    for entry_id in ("a", "b", "c"):
        target = branch_target(flat, entry_id)
        assert target is not None and (target.target_id, target.leaf_id) == (entry_id, None)


def test_an_off_path_hit_opens_the_newest_continuation_below_it():
    # x has two continuations: y (older) and z (newer, its own branch z → w, then z → v newer still).
    roots = tree(("a", None), ("b", "a"), ("x", "a"), ("y", "x"), ("z", "x"), ("w", "z"), ("v", "z"))
    flat = flatten_tree(roots, "b")
    memo: dict[str, str] = {}

    assert branch_target(flat, "x", memo) == branch_target(flat, "x")
    assert branch_target(flat, "x", memo).leaf_id == "v"  # type: ignore[union-attr]
    assert branch_target(flat, "y", memo).leaf_id == "y"  # type: ignore[union-attr]
    assert branch_target(flat, "w", memo).leaf_id == "w"  # type: ignore[union-attr]
    assert branch_target(flat, "z", memo).leaf_id == "v"  # type: ignore[union-attr]
    assert branch_target(flat, "missing") is None


def test_with_no_leaf_every_hit_opens_a_branch_below_it():
    flat = flatten_tree(tree(("a", None), ("b", "a")), None)

    assert branch_target(flat, "a").leaf_id == "b"  # type: ignore[union-attr]


# -- the index follows every write -------------------------------------------------------------------------


@pytest.mark.django_db
def test_imported_entries_are_found_by_every_word_prefix_and_case(tmp_path):
    import_fixture(tmp_path, BRANCHING)

    assert set(ids_of("subcommands")) == SUBCOMMAND_HITS
    assert set(ids_of("SUBCOMM")) == SUBCOMMAND_HITS
    assert EntryHits(parse_query("subcommands")).count() == len(SUBCOMMAND_HITS)


@pytest.mark.django_db
def test_every_word_must_match(tmp_path):
    import_fixture(tmp_path, BRANCHING)

    found = ids_of("subcommands click")
    assert "b2000007" in found
    assert not {"b2000003", "b2000006"} & set(found)
    assert ids_of("subcommands zebra") == []


@pytest.mark.django_db
def test_words_inside_paths_urls_and_identifiers_are_found_on_both_databases(tmp_path):
    text = "see src/app.py, snake_case_name, foo-bar, dev@example.com and https://example.org/docs/page"
    sync_file(write_session(tmp_path / "paths.jsonl", "paths", [text]))

    for query in ("app.py", "py", "src/app", "case name", "bar", "example com", "docs/page", "org", "Snake"):
        assert ids_of(query) == ["m0000000"], query
    assert ids_of("pp.py") == []  # a word's start, not any substring


@pytest.mark.django_db
def test_only_text_rows_are_indexed_not_labels_settings_or_textless_assistant_turns(tmp_path):
    import_fixture(tmp_path, BRANCHING)

    assert ids_of("start") == []  # the label entry c3000001 ("label start") is not indexed
    assert ids_of("medium") == []  # thinking_level_change
    assert ids_of("claude") == []  # model_change
    assert ids_of("phases") == []  # custom state
    # b2000004, a tool-call-only assistant turn: neither its thinking nor its call is indexed.
    assert ids_of("should look") == []
    assert set(ids_of("cli.py")) == {"b2000005", "d4000001"}  # "py", two letters: a whole word only
    assert ids_of("cli.pyt") == ["b2000001"]  # "CLI … Python"
    # A tool result: its call (the row text) and its output.
    assert ids_of("read import") == ["b2000005"]
    # The role is not a word of the text (the results page names it).
    assert ids_of("assistant") == []


@pytest.mark.django_db
def test_an_appended_entry_is_found(tmp_path):
    session = import_fixture(tmp_path, BRANCHING)

    def make(leaf: str | None, ids: Any) -> dict[str, Any]:
        entry = base_entry("message", leaf, ids)
        entry["message"] = {"role": "user", "content": "Try zanzibarite parsing"}
        return entry

    row = append_entry(session, make)

    assert ids_of("zanzibar") == [row.entry_id]


@pytest.mark.django_db
def test_a_rewrite_reimport_drops_the_entries_it_removes(tmp_path):
    path = tmp_path / BRANCHING
    shutil.copyfile(DATA / "handmade" / BRANCHING, path)
    sync_file(path)
    assert ids_of("groups") == ["b2000008"]

    path.write_text(path.read_text().replace("click groups", "typer apps"), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    result = sync_file(path)

    assert result.status == "rewritten" and result.entries_removed > 0
    assert ids_of("groups") == []
    assert ids_of("typer") == ["b2000008"]
    assert set(ids_of("subcommands")) == SUBCOMMAND_HITS


@pytest.mark.django_db
def test_deleting_a_session_removes_its_hits(tmp_path):
    session = import_fixture(tmp_path, BRANCHING)

    session.delete()

    assert ids_of("subcommands") == []


@pytest.mark.django_db
def test_a_large_import_through_the_writer_thread_is_indexed(tmp_path):
    texts = [f"message number {n} about {'walrus' if n % 3 == 0 else 'penguin'}" for n in range(4500)]
    sync_file(write_session(tmp_path / "big.jsonl", "big-session", texts))

    assert EntryHits(parse_query("walrus"), limit=5000).count() == 1500
    assert EntryHits(parse_query("penguin number"), limit=5000).count() == 3000


@pytest.mark.django_db
def test_ensure_index_repairs_a_lost_index_and_is_idempotent(tmp_path):
    import_fixture(tmp_path, BRANCHING)
    assert ensure_index() is False
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            # What Django's SQLite table remake does to triggers; entries imported meanwhile are not indexed.
            for trigger in ("treeview_entry_body_ai", "treeview_entry_body_ad", "treeview_entry_body_au"):
                cursor.execute(f"DROP TRIGGER {trigger}")
        else:
            cursor.execute(f"DROP INDEX {PG_INDEX}")
    sync_file(write_session(tmp_path / "later.jsonl", "later", ["a quokka appears"]))
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # The test transaction holds deferred foreign-key checks: CREATE INDEX refuses to run over them.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")

    assert ensure_index() is True
    assert ensure_index() is False
    assert ids_of("quokka") == ["m0000000"]
    assert set(ids_of("subcommands")) == SUBCOMMAND_HITS


@pytest.mark.django_db
def test_the_post_migrate_receiver_restores_the_index(tmp_path):
    import_fixture(tmp_path, BRANCHING)
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("DROP TRIGGER treeview_entry_body_ai")
        else:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"DROP INDEX {PG_INDEX}")

    ensure_index_after_migrate(sender=None, using="default")

    assert ensure_index() is False
    assert set(ids_of("subcommands")) == SUBCOMMAND_HITS


@pytest.mark.django_db
def test_the_database_uses_the_index_for_the_query(tmp_path):
    import_fixture(tmp_path, BRANCHING)
    sync_file(write_session(tmp_path / "big.jsonl", "big", [f"message {n}" for n in range(3000)]))
    query = parse_query("subcommands")
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                f"EXPLAIN QUERY PLAN SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [query.fts5()]
            )
            assert "VIRTUAL TABLE INDEX" in str(cursor.fetchall())
        else:
            cursor.execute("ANALYZE treeview_entry")
            cursor.execute(
                f"EXPLAIN SELECT id FROM treeview_entry WHERE {PG_COLUMN} @@ {PG_QUERY}", [query.tsquery()]
            )
            assert PG_INDEX in str(cursor.fetchall())


# -- the full text of entries -------------------------------------------------------------------------------

TOOL_CALL = {"type": "toolCall", "id": "call-1", "name": "bash", "arguments": {"command": "pytest -q tests"}}


def tool_session(path: Path, output: str) -> Path:
    """An assistant turn that runs ``pytest -q tests`` (e0000000), and its result ``output`` (e0000001)."""
    call = {
        "type": "message",
        "message": {"role": "assistant", "content": [TOOL_CALL], "stopReason": "toolUse"},
    }
    result = {
        "type": "message",
        "message": {
            "role": "toolResult",
            "toolCallId": "call-1",
            "toolName": "bash",
            "content": [{"type": "text", "text": output}],
        },
    }
    return write_entries(path, path.stem, [call, result])


@pytest.mark.django_db
@pytest.mark.parametrize("offset", [250, 2100, 20_000])
def test_a_word_anywhere_in_a_message_or_summary_is_found(client, tmp_path, offset):
    pad = filler(offset)
    entries = [
        user(f"{pad} zanzibar"),
        {
            "type": "message",
            "message": {"role": "assistant", "content": [{"type": "text", "text": f"{pad} quagga"}]},
        },
        {"type": "branch_summary", "fromId": "e0000001", "summary": f"{pad} numbat"},
        {"type": "custom_message", "customType": "note", "content": f"{pad} wombat", "display": True},
    ]
    sync_file(write_entries(tmp_path / "long.jsonl", "long", entries))

    assert ids_of("zanzibar") == ["e0000000"]  # user
    assert ids_of("quagga") == ["e0000001"]  # assistant
    assert ids_of("numbat") == ["e0000002"]  # branch summary
    assert ids_of("wombat") == ["e0000003"]  # custom message
    html = client.get("/search/", {"q": "numbat"}).content.decode()
    assert re.search(r">…[^<]*<mark>numbat</mark></a>", html)


@pytest.mark.django_db
def test_a_word_in_the_first_max_tool_output_characters_of_a_tool_result_is_found(client, tmp_path):
    output = f"{filler(MAX_TOOL_OUTPUT - 100)} quokka {filler(50_000)} okapi"
    sync_file(tool_session(tmp_path / "tool.jsonl", output))

    assert ids_of("quokka") == ["e0000001"]
    assert ids_of("okapi") == []  # past the cap of tool output
    # The call's command is part of its result's text; the tool-call-only turn is not indexed.
    assert ids_of("pytest tests") == ["e0000001"]
    html = client.get("/search/", {"q": "quokka"}).content.decode()
    assert re.search(r">…[^<]*<mark>quokka</mark>[^<]*</a>", html)


@pytest.mark.django_db
def test_only_the_first_max_body_characters_of_an_entry_are_indexed(tmp_path):
    text = filler(MAX_BODY - 500) + " capybara " + filler(5 * 1024 * 1024) + " pangolin"
    sync_file(write_entries(tmp_path / "huge.jsonl", "huge", [user(text)]))

    assert ids_of("capybara") == ["e0000000"]
    assert ids_of("pangolin") == []
    stored = Entry.objects.get(entry_id="e0000000")
    assert len(stored.body_text) == MAX_BODY and len(stored.raw) > 5 * 1024 * 1024


@pytest.mark.django_db
def test_appended_entries_and_grown_files_are_searchable_in_full(tmp_path):
    path = write_entries(tmp_path / "grow.jsonl", "grow", [user("first")])
    session = sync_file(path).session
    assert session is not None

    def make(leaf: str | None, ids: Any) -> dict[str, Any]:
        entry = base_entry("message", leaf, ids)
        entry["message"] = {"role": "user", "content": f"{filler(3000)} okapi"}
        return entry

    row = append_entry(session, make)
    assert ids_of("okapi") == [row.entry_id]

    # The file grows on its own (ARBOR_WRITE_BACK is off here): a sync reads the new line.
    write_entries(path, "grow", [user(f"{filler(3000)} axolotl")], mode="a")
    result = sync_file(path)
    assert result.status == "grown" and result.entries_added == 1
    assert ids_of("axolotl") == ["e0000001"]


def _fill_body_text() -> Any:
    return importlib.import_module("treeview.migrations.0003_entry_body_text").fill_body_text


@pytest.mark.django_db
def test_the_migration_fills_the_body_of_entries_stored_before_it(tmp_path, monkeypatch):
    import_fixture(tmp_path, BRANCHING)
    sync_file(write_entries(tmp_path / "long.jsonl", "long", [user(f"{filler(2500)} zanzibar")] * 3))
    imported = dict(Entry.objects.values_list("pk", "body_text"))
    assert ids_of("zanzibar")
    with connection.cursor() as cursor:
        # What 0003 finds: the new column, empty (the index follows the update).
        cursor.execute("UPDATE treeview_entry SET body_text = ''")
    assert ids_of("zanzibar") == [] and ids_of("subcommands") == []
    monkeypatch.setattr(importlib.import_module("treeview.migrations.0003_entry_body_text"), "BATCH", 4)

    with CaptureQueriesContext(connection) as queries:
        _fill_body_text()(django_apps, SimpleNamespace(connection=connection))

    assert dict(Entry.objects.values_list("pk", "body_text")) == imported
    assert set(ids_of("subcommands")) == SUBCOMMAND_HITS
    assert ids_of("zanzibar") == ["e0000000", "e0000001", "e0000002"]
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT")]
    # A batch at a time: 12 entries that may have a body, 4 a query, and the empty query that ends it.
    assert len(reads) == 4 and all("LIMIT 4" in sql for sql in reads)


@pytest.mark.django_db
def test_hostile_text_deep_in_a_body_is_escaped_in_the_snippet(client, tmp_path):
    text = f"{filler(2500)} {PAYLOAD} needle {PAYLOAD} {filler(100)}"
    sync_file(write_entries(tmp_path / "xss.jsonl", "xss-long", [user(text)]))

    html = client.get("/search/", {"q": "needle"}).content.decode()

    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<mark>needle</mark>" in html


# -- hostile input -----------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_hostile_queries_never_fail_the_database(tmp_path):
    import_fixture(tmp_path, BRANCHING)

    for text in HOSTILE_QUERIES:
        hits = EntryHits(parse_query(text))
        assert hits.count() >= 0
        hits[0:50]
        list(matching_sessions(parse_query(text)))

    assert set(ids_of('"subcommands')) == SUBCOMMAND_HITS
    assert set(ids_of("NEAR(subcommands")) == set()  # "near" is a word like any other: it must match too


@pytest.mark.django_db
@pytest.mark.parametrize("text", HOSTILE_QUERIES)
def test_hostile_queries_get_a_results_page(client, tmp_path, text):
    import_fixture(tmp_path, BRANCHING)

    response = client.get("/search/", {"q": text})

    assert response.status_code == 200
    assert "<q>" in response.content.decode()


@pytest.mark.django_db
def test_malformed_parameters_are_refused_or_ignored(client, tmp_path):
    import_fixture(tmp_path, BRANCHING)

    assert client.get("/search/", {"q": "a\x00b"}).status_code == 400
    assert client.get("/search/", {"q": "x" * 501}).status_code == 400
    for page in ("abc", "-1", "0", "99999", "1e9"):
        response = client.get("/search/", {"q": "subcommands", "page": page})
        assert response.status_code == 200
        assert response.content.decode().count('class="search-hit"') == len(SUBCOMMAND_HITS)


@pytest.mark.django_db
def test_session_text_in_results_is_escaped(client, tmp_path):
    path = write_session(
        tmp_path / "xss.jsonl", "xss-session", [f"{PAYLOAD} needle {PAYLOAD}"], title=f"{PAYLOAD} title"
    )
    sync_file(path)
    AgentSession.objects.filter(session_id="xss-session").update(cwd=f"/tmp/{PAYLOAD}")

    html = client.get("/search/", {"q": "needle"}).content.decode()
    titled = client.get("/search/", {"q": "title"}).content.decode()

    for page in (html, titled):
        assert "<script>" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "<mark>needle</mark>" in html


# -- sessions by title, directory, id ----------------------------------------------------------------------


@pytest.mark.django_db
def test_title_cwd_and_id_match_every_token_as_a_substring(client, tmp_path):
    sync_file(write_session(tmp_path / "a.jsonl", "sid-alpha", ["hello"], title="Refactor the Parser"))
    sync_file(write_session(tmp_path / "b.jsonl", "sid-beta", ["hello"], cwd="/srv/parser-tools"))

    def found(text: str) -> set[str]:
        return {s.session_id for s in matching_sessions(parse_query(text))}

    assert found("PARSER") == {"sid-alpha", "sid-beta"}
    assert found("parser refactor") == {"sid-alpha"}
    assert found("srv/parser") == {"sid-beta"}
    assert found("sid-bet") == {"sid-beta"}
    assert found("parser zebra") == set()

    html = client.get("/search/", {"q": "parser refactor"}).content.decode()
    assert "Sessions whose title, directory or id match" in html
    assert ">Refactor the Parser</a>" in html
    assert "0 entries match" in html


# -- the results page --------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_results_are_grouped_by_session_with_role_time_and_snippet(client, tmp_path):
    session = import_fixture(tmp_path, BRANCHING)
    sync_file(write_session(tmp_path / "other.jsonl", "other-session", ["more subcommands here", "fine"]))

    response = client.get("/search/", {"q": "subcommands"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "5 entries match <q>subcommands</q>" in html
    assert html.count('<h2 class="project">') == 2
    # Each session's hits are together: the entry ids of one group are contiguous.
    order = re.findall(r'data-entry-id="([^"]+)"', html)
    assert set(order) == SUBCOMMAND_HITS | {"m0000000"}
    branching = [i for i, e in enumerate(order) if e in SUBCOMMAND_HITS]
    assert branching == list(range(branching[0], branching[0] + 4))
    assert f'href="/s/{session.session_id}/"' in html
    assert ">Add <mark>subcommands</mark>.</a>" in html
    assert ">branch summary" in html
    assert '<time datetime="2026-05-01T10:00:05+00:00">2026-05-01 10:00</time>' in html
    assert 'id="search-form"' in html and 'value="subcommands"' in html


@pytest.mark.django_db
def test_hits_come_newest_session_first_then_in_file_order(tmp_path):
    older = write_session(tmp_path / "old.jsonl", "older", ["walrus one", "x", "walrus two"])
    newer = write_session(tmp_path / "new.jsonl", "newer", ["walrus three", "walrus four"])
    sync_file(older)
    sync_file(newer)
    AgentSession.objects.filter(session_id="newer").update(last_timestamp=datetime(2027, 1, 1, tzinfo=UTC))

    hits = EntryHits(parse_query("walrus"))[0:10]

    assert [(hit.session.session_id, hit.entry.entry_id) for hit in hits] == [
        ("newer", "m0000000"),
        ("newer", "m0000001"),
        ("older", "m0000000"),
        ("older", "m0000002"),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("limit", [2, 3, 5, 6, 11, 12, 50])
@pytest.mark.parametrize(
    "scan", [(20_000, 2500, 20_000), (3, 2, 20_000), (0, 1, 20_000), (3, 2, 2), (0, 1, 0)]
)
def test_the_first_hits_are_found_session_by_session_when_sessions_grew_in_between(
    tmp_path, monkeypatch, limit, scan
):
    # PostgreSQL reads entries in order while that promises the hits, then asks the index: every way.
    monkeypatch.setattr("treeview.search.hits.PG_SCAN_ROWS", scan[0])
    monkeypatch.setattr("treeview.search.hits.PG_CHUNK", scan[1])
    monkeypatch.setattr("treeview.search.hits.PG_SORT_ROWS", scan[2])
    # "grown": 5 hits, then "other" is imported (4 hits), then "grown" grows by 4 more: its ids now span
    # other's. The newest session (by activity) comes first: "other", then "grown".
    grown = write_entries(tmp_path / "grown.jsonl", "grown", [user(f"walrus g{n}") for n in range(5)])
    sync_file(grown)
    sync_file(write_entries(tmp_path / "other.jsonl", "other", [user(f"walrus o{n}") for n in range(4)]))
    write_entries(grown, "grown", [user("no match"), *(user(f"walrus g{n}") for n in range(5, 9))], mode="a")
    assert sync_file(grown).status == "grown"
    AgentSession.objects.filter(session_id="other").update(last_timestamp=datetime(2027, 1, 1, tzinfo=UTC))
    expected = [("other", f"e{n:07d}") for n in range(4)]
    expected += [("grown", f"e{n:07d}") for n in (*range(5), *range(6, 10))]

    hits = EntryHits(parse_query("walrus"), limit=limit)
    found = [(hit.session.session_id, hit.entry.entry_id) for hit in hits[0:limit]]

    assert found == expected[:limit]
    assert hits.count() == min(limit, len(expected))
    assert hits.more == (len(expected) > limit)
    # Only the sessions in scope, in the same order.
    scoped = EntryHits(
        parse_query("walrus"), sessions=AgentSession.objects.filter(session_id="grown"), limit=limit
    )
    grown_only = [e for e in expected if e[0] == "grown"]
    assert [(h.session.session_id, h.entry.entry_id) for h in scoped[0:limit]] == grown_only[:limit]


@pytest.mark.django_db
def test_results_are_paginated(client, tmp_path):
    texts = [f"walrus number {n}" for n in range(120)]
    sync_file(write_session(tmp_path / "many.jsonl", "many", texts))

    first = client.get("/search/", {"q": "walrus"}).content.decode()
    third = client.get("/search/", {"q": "walrus", "page": 3}).content.decode()
    beyond = client.get("/search/", {"q": "walrus", "page": 9}).content.decode()

    assert "120 entries match" in first and "page 1 of 3" in first
    assert first.count('class="search-hit"') == 50
    assert 'href="/search/?q=walrus&amp;page=2"' in first and 'rel="prev"' not in first
    assert third.count('class="search-hit"') == 20
    assert 'href="/search/?q=walrus&amp;page=2"' in third and 'rel="next"' not in third
    assert beyond.count('class="search-hit"') == 20  # past the end: the last page
    pages = [
        re.findall(
            r'data-entry-id="([^"]+)"', client.get("/search/", {"q": "walrus", "page": n}).content.decode()
        )
        for n in (1, 2, 3)
    ]
    assert sorted(sum(pages, [])) == sorted(f"m{n:07d}" for n in range(120))


@pytest.mark.django_db
def test_htmx_gets_the_results_region_only(client, tmp_path):
    import_fixture(tmp_path, BRANCHING)

    full = client.get("/search/", {"q": "subcommands"})
    partial = client.get("/search/", {"q": "subcommands"}, headers=HTMX)
    restore = client.get(
        "/search/", {"q": "subcommands"}, headers={**HTMX, "HX-History-Restore-Request": "true"}
    )

    for response in (full, partial):
        assert "HX-Request" in response["Vary"]
    assert full.content.decode().lstrip().startswith("<!doctype html>")
    body = partial.content.decode().strip()
    assert body.startswith('<section id="session-list"') and body.endswith("</section>")
    assert body.count('class="search-hit"') == len(SUBCOMMAND_HITS)
    assert restore.content.decode().lstrip().startswith("<!doctype html>")


@pytest.mark.django_db
def test_an_empty_query_shows_the_form_and_how_search_works(client):
    response = client.get("/search/")

    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="search-q"' in html and "every word must start a word" in html.lower()
    assert "search-hit" not in html.replace('class="search-hits"', "")


@pytest.mark.django_db
def test_the_session_list_has_a_search_form_that_works_without_javascript(client):
    html = client.get("/").content.decode()

    form = re.search(r'<form id="search-form".*?</form>', html, re.S)
    assert form is not None
    assert 'method="get"' in form.group(0) and 'action="/search/"' in form.group(0)
    assert 'name="q"' in form.group(0) and 'hx-target="#session-list"' in form.group(0)


# -- opening a hit -----------------------------------------------------------------------------------------


def _hit_url(html: str, entry_id: str) -> str:
    match = re.search(rf'data-entry-id="{entry_id}">.*?<a href="([^"]+)"', html, re.S)
    assert match is not None, entry_id
    return unescape(match.group(1))


def _params(location: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(location).query).items()}


@pytest.mark.django_db
def test_a_hit_on_the_active_branch_opens_it_selected(client, tmp_path):
    session = import_fixture(tmp_path, BRANCHING)
    html = client.get("/search/", {"q": "subcommands click"}).content.decode()

    response = client.get(_hit_url(html, "b2000007"))

    assert response.status_code == 302
    assert urlsplit(response["Location"]).path == f"/s/{session.session_id}/"
    assert _params(response["Location"]) == {"targetId": "b2000007"}
    page = client.get(response["Location"]).content.decode()
    assert 'data-entry-id="b2000007"' in page


@pytest.mark.django_db
def test_a_hit_on_another_branch_opens_that_branch_at_its_newest_leaf(client, tmp_path):
    import_fixture(tmp_path, BRANCHING)
    html = client.get("/search/", {"q": "subcommands"}).content.decode()

    response = client.get(_hit_url(html, "b2000003"))

    assert _params(response["Location"]) == {"leafId": "c3000001", "targetId": "b2000003"}
    page = client.get(response["Location"]).content.decode()
    selected = re.search(r'data-entry-id="([^"]+)"[^>]*aria-selected="true"', page)
    assert selected is not None and selected.group(1) == "b2000003"


@pytest.mark.django_db
def test_a_hit_follows_the_leaf_when_it_moved_since_the_search(client, tmp_path):
    session = import_fixture(tmp_path, BRANCHING)
    url = _hit_url(client.get("/search/", {"q": "subcommands"}).content.decode(), "b2000003")
    move_leaf(session, "b2000006")

    response = client.get(url)

    assert _params(response["Location"]) == {"targetId": "b2000003"}


@pytest.mark.django_db
def test_a_hit_names_the_copy_when_a_session_is_imported_twice(client, tmp_path):
    first = import_fixture(tmp_path, BRANCHING)
    (tmp_path / "backup").mkdir()
    second = import_fixture(tmp_path / "backup", BRANCHING)
    assert first.session_id == second.session_id and first.pk != second.pk

    html = client.get("/search/", {"q": "subcommands click"}).content.decode()
    urls = re.findall(r'data-entry-id="b2000007">.*?<a href="([^"]+)"', html, re.S)
    locations = {client.get(unescape(url))["Location"] for url in urls}

    assert {_params(location).get("copy") for location in locations} == {str(first.pk), str(second.pk)}
    assert f'href="/s/{first.session_id}/?copy={first.pk}"' in html


@pytest.mark.django_db
def test_opening_an_unknown_or_malformed_hit_is_not_found(client, tmp_path):
    session = import_fixture(tmp_path, BRANCHING)

    assert client.get("/search/open/", {"session": session.pk, "entry": "nope"}).status_code == 404
    assert client.get("/search/open/", {"session": session.pk + 99, "entry": "b2000003"}).status_code == 404
    assert client.get("/search/open/", {"session": "x", "entry": "b2000003"}).status_code == 404
    assert client.get("/search/open/").status_code == 404
    assert Entry.objects.filter(session=session).count() == session.entry_count


@pytest.mark.django_db
def test_results_are_headed_by_the_sessions_title_not_its_id(client, tmp_path):
    session = import_fixture(tmp_path, BRANCHING)
    assert session.title == ""

    hits = client.get("/search/", {"q": "subcommands"}).content.decode()
    by_id = client.get("/search/", {"q": session.session_id[:8]}).content.decode()

    prompt = "Write a CLI argument parser in Python."
    assert f'<a href="/s/{session.session_id}/">{prompt}</a>' in hits
    assert f'<a href="/s/{session.session_id}/">{prompt}</a>' in by_id
    assert f">{session.session_id}</a>" not in hits + by_id


@pytest.mark.django_db
def test_copies_in_results_are_told_apart_by_file(client, tmp_path):
    import_fixture(tmp_path, BRANCHING)
    (tmp_path / "backup").mkdir()
    import_fixture(tmp_path / "backup", BRANCHING)

    html = client.get("/search/", {"q": "subcommands"}).content.decode()

    assert f'<span class="copy-note muted">backup/{BRANCHING}</span>' in html
    assert f'<span class="copy-note muted">{tmp_path.name}/{BRANCHING}</span>' in html
