"""The tree selector's filters and search by the newest agents' rules (the fixtures' answers are checked in
test_reference_latest.py; these pin single rules)."""

from __future__ import annotations

import json

import pytest

from treeview.session import selector as sel
from treeview.session.fuzzy import fuzzy_matches, normalize_for_search
from treeview.session.session_manager import SessionManager

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/p"}


def _flat(*entries: dict) -> sel.FlatTree:
    lines = [HEADER]
    parent = None
    for index, entry in enumerate(entries):
        lines.append(
            {"id": f"e{index}", "parentId": parent, "timestamp": f"2026-05-01T10:00:{index:02}.000Z", **entry}
        )
        parent = f"e{index}"
    manager = SessionManager.from_text("".join(json.dumps(line) + "\n" for line in lines))
    return sel.flatten_tree(manager.get_tree(), manager.leaf_id)


USER = {"type": "message", "message": {"role": "user", "content": "fix the parser"}}
BOOKKEEPING = [
    {"type": "reset_boundary"},
    {"type": "credential_pin", "provider": "anthropic"},
    {"type": "title_change", "title": "Parser work"},
    {"type": "service_tier_change", "serviceTier": {"openai": "priority"}},
    {"type": "mode_change", "mode": "plan"},
]


def test_normalization_splits_camel_case_and_punctuation() -> None:
    assert normalize_for_search("parseHTTPRequest, v2!") == "parse http request v2"


@pytest.mark.parametrize(
    ("query", "text", "matches"),
    [
        ("mode", "model change", True),  # a prefix of a word
        ("chkpt", "checkpoint-a", False),  # in order, but spread too wide
        ("chek", "checkpoint", True),  # in order within a short span
        ("checkpoint-a", "[checkpoint-a] user: hi", True),
        ("hr", "http request", True),  # an acronym
        ("8v1", "v81 build", True),  # a letter and a digit swapped
        ("parser zzz", "fix the parser", False),  # every token must match
        ("!!", "anything", True),
    ],
)
def test_fuzzy_match(query: str, text: str, matches: bool) -> None:
    assert fuzzy_matches(query, text) is matches


def test_omp_hides_bookkeeping_rows_except_in_all_and_searches_them() -> None:
    flat = _flat(USER, *BOOKKEEPING, USER)
    assert [r.id for r in sel.visible_rows(flat, "default", agent="omp")] == ["e0", "e6"]
    assert [r.id for r in sel.visible_rows(flat, "default", agent="omp15")] == [f"e{i}" for i in range(7)]
    assert len(sel.visible_rows(flat, "all", agent="omp")) == 7
    assert [r.id for r in sel.visible_rows(flat, "all", "credential pin", agent="omp")] == ["e2"]
    assert [r.id for r in sel.visible_rows(flat, "all", "priority", agent="omp")] == ["e4"]


def test_pi_never_shows_usage_and_hides_its_bookkeeping() -> None:
    usage = {"type": "usage", "kind": "side-request", "provider": "anthropic", "model": "m", "usage": {}}
    edit = {"type": "context_edit", "targetId": "e0", "replacement": None}
    info = {"type": "session_info", "name": "Parser"}
    flat = _flat(USER, usage, edit, info, USER)
    assert [r.id for r in sel.visible_rows(flat, "default", agent="pi")] == ["e0", "e4"]
    assert [r.id for r in sel.visible_rows(flat, "all", agent="pi")] == ["e0", "e2", "e3", "e4"]
    assert [r.id for r in sel.visible_rows(flat, "all", "context edit omit", agent="pi")] == ["e2"]
    assert [r.id for r in sel.visible_rows(flat, "all", "title parser", agent="pi")] == ["e3"]


def test_omp_user_only_includes_skill_prompts() -> None:
    skill = {"type": "custom_message", "customType": "skill-prompt", "content": "run it", "display": True}
    flat = _flat(USER, skill)
    assert [r.id for r in sel.visible_rows(flat, "user-only", agent="omp")] == ["e0", "e1"]
    assert [r.id for r in sel.visible_rows(flat, "user-only", agent="pi")] == ["e0"]
