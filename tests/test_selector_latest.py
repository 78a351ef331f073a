"""The tree selector's filters and search by the newest agents' rules (the fixtures' answers are checked in
test_reference_latest.py; these pin single rules)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treeview.session import selector as sel
from treeview.session.fuzzy import (
    FuzzyQuery,
    Joined,
    WordIndex,
    char_mask,
    fuzzy_matches,
    normalize_fast,
    normalize_for_search,
    normalize_many,
)
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
    assert FuzzyQuery(query).matches(text) is matches


@settings(max_examples=3000, deadline=None)
@given(
    st.text(alphabet="abcrsetpxAB CDE01 9_-./éÉ\u0301", max_size=40),
    st.text(alphabet="abcrs01 tpxe-", max_size=8),
)
def test_the_compiled_fuzzy_query_answers_as_the_matcher(text: str, query: str) -> None:
    """The web tree's matcher (one query against many rows, mostly decided by regular expressions) gives
    oh-my-pi's matcher's answer on any text."""
    assert FuzzyQuery(query).matches(text) is fuzzy_matches(query, text)


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


# ---------------------------------------------------------------------------------------------------------
# Drawing (each agent's own rules; the fixtures' answers check whole lists)


def _manager(*entries: dict) -> SessionManager:
    lines = [HEADER]
    for index, entry in enumerate(entries):
        lines.append({"timestamp": f"2026-05-01T10:00:{index:02}.000Z", **entry})
    return SessionManager.from_text("".join(json.dumps(line) + "\n" for line in lines))


def _draw(manager: SessionManager, agent: str, mode: str = "default", width: int | None = None) -> list[str]:
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    rows = sel.visible_rows(flat, mode, agent=agent)  # type: ignore[arg-type]
    index = sel.initial_selection(flat, rows)
    return sel.render_lines(rows, index, mode, width, agent=agent, tree=flat)  # type: ignore[arg-type]


def _msg(entry_id: str, parent: str | None, role: str, text: str) -> dict:
    message = {"role": role, "content": [{"type": "text", "text": text}]}
    return {"type": "message", "id": entry_id, "parentId": parent, "message": message}


# a -> b -> (c -> d, e): a branch whose first child has a chain below it.
BRANCHED = [
    _msg("a", None, "user", "root"),
    _msg("b", "a", "assistant", "answer"),
    _msg("c", "b", "user", "left"),
    _msg("d", "c", "assistant", "left answer"),
    _msg("e", "b", "user", "right"),
]


def test_omp_draws_a_chain_below_a_branch_one_level_in_and_no_position_line() -> None:
    manager = _manager(*BRANCHED)
    manager.branch("e")
    assert _draw(manager, "omp") == [
        "  • user: root",
        "  • assistant: answer",
        "› ├─ • user: right",
        "  └─ user: left",
        "     assistant: left answer",
    ]
    assert _draw(manager, "omp", "no-tools")[-1] == "[no-tools]"
    # v15 takes one more step for the first generation after a branch, and prints the position.
    v15 = _draw(manager, "omp15")
    assert v15[-2:] == ["        assistant: left answer", "  (3/5)"]


def test_omp_says_why_a_list_is_empty() -> None:
    manager = _manager(*BRANCHED)
    assert _draw(manager, "omp", "labeled-only") == [
        "5 entries hidden by the current filter [labeled]",
        "Press Alt+A to show all, Alt+D for default",
        "(0/5) [labeled]",
    ]
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    rows = sel.visible_rows(flat, "default", "zzz", agent="omp")
    assert sel.render_lines(rows, None, "default", agent="omp", tree=flat, query="zzz") == [
        'No entries match search "zzz"',
        "Press Backspace to clear the search",
        "(0/5)",
    ]
    assert sel.render_lines([], None, "all", agent="omp", tree=sel.flatten_tree([], None)) == [
        "No entries found",
        "(0/0) [all]",
    ]


def test_omp_scrolls_deep_gutters_behind_an_ellipsis() -> None:
    # Ten nested branch points: the deepest rows sit ten levels in; at width 40 only 3 levels fit.
    entries = [_msg("r", None, "user", "root")]
    parent = "r"
    for level in range(10):
        entries += [
            _msg(f"x{level}", parent, "user", f"dead end {level}"),
            _msg(f"k{level}", parent, "user", "go"),
        ]
        parent = f"k{level}"
    manager = _manager(*entries)
    manager.branch("x0")
    lines = _draw(manager, "omp", width=40)
    deepest = [line for line in lines if "dead end 9" in line]
    assert deepest and deepest[0].startswith("  …") and len(deepest[0]) <= 40
    assert all(len(line) <= 40 for line in lines)


def test_pi_reindents_over_the_visible_rows_and_marks_foldable_connectors() -> None:
    manager = _manager(*BRANCHED)
    manager.branch("e")
    assert _draw(manager, "pi") == [
        "  • user: root",
        "  • assistant: answer",
        "› ├─ • user: right",
        "  └⊟ user: left",
        "        assistant: left answer",
        "  (3/5)",
    ]
    # user-only hides the assistant turns: "root" now has the two users as its visible children.
    assert _draw(manager, "pi", "user-only") == [
        "  • user: root",
        "› ├─ • user: right",
        "  └─ user: left",
        "  (2/3) [user]",
    ]


def test_pi_draws_what_it_knows_of_an_omp_file() -> None:
    manager = _manager(
        {"type": "model_change", "id": "m", "parentId": None, "model": "anthropic/claude-sonnet-4-5"},
        {"type": "service_tier_change", "id": "t", "parentId": "m", "serviceTier": "flex"},
        _msg("u", "t", "user", "hi"),
    )
    assert _draw(manager, "pi", "all") == [
        "  • [model: undefined]",
        "  • ",  # a type pi does not know: the marker and nothing
        "› • user: hi",
        "  (3/3) [all]",
    ]
    # oh-my-pi reads an old string tier as Object.entries does: character by character.
    assert _draw(manager, "omp", "all")[1] == "  • [service tier: 0:f 1:l 2:e 3:x]"


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"stopReason": "aborted"}, "assistant: Operation aborted"),
        ({"stopReason": "aborted", "errorMessage": "Interrupted by user"}, "assistant: (aborted)"),
        (
            {"stopReason": "error", "errorMessage": "overloaded\nretry later"},
            "assistant: overloaded retry later",
        ),
        (
            {"stopReason": "stop", "retryRecovery": {"status": "recovered", "note": "retried  twice"}},
            "assistant: retried twice",
        ),
    ],
)
def test_omp_shows_why_an_assistant_turn_has_no_text(fields: dict, text: str) -> None:
    message = {"role": "assistant", "content": [], **fields}
    manager = _manager({"type": "message", "id": "a", "parentId": None, "message": message})
    assert _draw(manager, "omp")[0] == f"› • {text}"


# ---------------------------------------------------------------------------------------------------------
# Keys: Shift+T (pi's label times) and Alt+Up / Alt+Down (oh-my-pi's turn jumps)


def test_shift_t_shows_each_labels_time_in_pis_drawing() -> None:
    manager = _manager(
        _msg("a", None, "user", "first"),
        _msg("b", "a", "assistant", "answer"),
        {"type": "label", "id": "l", "parentId": "b", "targetId": "a", "label": "start"},
    )
    assert manager.label_timestamp("a") == "2026-05-01T10:00:02.000Z"
    selector = sel.TreeSelector(
        manager.get_tree(), manager.leaf_id, agent="pi", label_times=manager.label_times
    )
    assert selector.render()[0] == "  • [start] user: first"
    selector.toggle_label_times()
    lines = selector.render()
    when = sel.format_label_time("2026-05-01T10:00:02.000Z")
    assert lines[0] == f"  • [start] {when} user: first"
    assert lines[-1] == "  (2/2) [+label time]"
    selector.toggle_label_times()
    assert selector.render()[0] == "  • [start] user: first"


def test_label_time_format_follows_pi() -> None:
    from datetime import UTC, datetime, timedelta

    local = datetime(2026, 5, 1, 10, 7).astimezone()
    stamp = local.astimezone(UTC).isoformat().replace("+00:00", "Z")
    assert sel.format_label_time(stamp, now=local) == "10:07"
    assert sel.format_label_time(stamp, now=local + timedelta(days=3)) == "5/1 10:07"
    assert sel.format_label_time(stamp, now=local.replace(year=2027)) == "26/5/1 10:07"


def test_alt_up_and_down_jump_between_turns_without_wrapping() -> None:
    # user, assistant (tool call only: hidden), tool result, assistant with text, user
    call = {"type": "toolCall", "id": "t1", "name": "read", "arguments": {"path": "a.py"}}
    manager = _manager(
        _msg("u1", None, "user", "read it"),
        {"type": "message", "id": "c", "parentId": "u1", "message": {"role": "assistant", "content": [call]}},
        {
            "type": "message",
            "id": "r",
            "parentId": "c",
            "message": {"role": "toolResult", "toolCallId": "t1", "toolName": "read", "content": []},
        },
        _msg("a1", "r", "assistant", "done"),
        _msg("u2", "a1", "user", "thanks"),
    )
    selector = sel.TreeSelector(manager.get_tree(), manager.leaf_id, agent="omp")
    assert [row.id for row in selector.rows] == ["u1", "r", "a1", "u2"]
    assert selector.selected_id == "u2"
    selector.jump_turn(-1)
    assert selector.selected_id == "a1"
    selector.jump_turn(-1)  # past the tool result
    assert selector.selected_id == "u1"
    selector.jump_turn(-1)  # nothing above: stays
    assert selector.selected_id == "u1"
    selector.jump_turn(1)
    assert selector.selected_id == "a1"
    selector.set_mode("user-only")
    assert selector.selected_id == "u1"  # a1's nearest visible ancestor
    selector.jump_turn(1)
    assert selector.selected_id == "u2"


def test_pi_pans_left_to_keep_a_deep_selected_row_readable() -> None:
    entries = [_msg("r", None, "user", "root")]
    parent = "r"
    for level in range(10):
        entries += [
            _msg(f"x{level}", parent, "user", f"dead end {level}"),
            _msg(f"k{level}", parent, "user", "go"),
        ]
        parent = f"k{level}"
    manager = _manager(*entries)
    manager.branch("x9")
    wide = _draw(manager, "pi")
    narrow = _draw(manager, "pi", width=36)
    selected = next(line for line in narrow if line.startswith("›"))
    assert "dead end 9" in selected  # without panning it would sit past column 36
    assert next(line for line in wide if line.startswith("›")).index("dead end 9") > 36
    # Rows are cut without an ellipsis; the footer keeps pi's "(i/N)".
    assert all(len(line) <= 36 and not line.endswith("…") for line in narrow[:-1])
    assert narrow[-1] == f"  ({narrow.index(selected) + 1}/{len(narrow) - 1})"


_TEXTS = st.text(alphabet="abcrsetpxAB CDE01 9_-./éÉ\u0301Σ\x00\n", max_size=40)
_QUERIES = st.text(alphabet="abcrs01 tpxe-", max_size=8)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_TEXTS, max_size=12), _QUERIES)
def test_the_search_over_many_rows_answers_as_one_row_at_a_time(texts: list[str], query: str) -> None:
    """The web tree's search of a whole tree at once (the texts normalized together, joined and scanned once
    per way to match, the character masks' pre-filter) keeps exactly the rows the one-row matcher keeps."""
    normalized = normalize_many(texts)
    assert normalized == [normalize_fast(text) for text in texts]
    matcher = FuzzyQuery(query)
    expected = [i for i, text in enumerate(texts) if fuzzy_matches(query, text)]
    masks = [char_mask(text) for text in normalized]
    assert matcher.select(normalized, masks=masks) == expected
    assert matcher.select(normalized, joined=Joined(normalized)) == expected
    rows = list(range(0, len(texts), 2))
    assert matcher.select(normalized, rows, masks, Joined(normalized)) == [i for i in expected if i % 2 == 0]
    indexed = Joined(normalized)
    indexed.words = WordIndex.build(normalized, chunk=5)
    assert matcher.select(normalized, masks=masks, joined=indexed) == expected
    assert matcher.select(normalized, rows, masks, indexed) == [i for i in expected if i % 2 == 0]


# Words that start, end and spell the queries' tokens in part (so that tokens span words, make acronyms, and
# match words in order with gaps), with gaps and camelCase between them.
_WORDY_TEXTS = st.lists(
    st.sampled_from(
        [
            "t",
            "te",
            "tes",
            "test",
            "est",
            "es",
            "s",
            "src",
            "sr",
            "rc",
            "c",
            "pa",
            "pars",
            "parse",
            "rse",
            "a1",
            "1a",
            "v81",
            "8v1",
            "tXst",
            "teast",
            "setup",
            "p",
        ]
    ),
    max_size=12,
).flatmap(
    lambda words: st.lists(
        st.sampled_from([" ", "-", "", "/"]), min_size=len(words), max_size=len(words)
    ).map(lambda gaps: "".join(w + g for w, g in zip(words, gaps, strict=True)))
)
_WORDY_QUERIES = st.text(alphabet="tesrcpa18v ", max_size=7)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_WORDY_TEXTS, max_size=25), _WORDY_QUERIES)
def test_the_search_by_words_answers_as_one_row_at_a_time(texts: list[str], query: str) -> None:
    """The search by the texts' word index (what one word decides, once per distinct word; a token spanning
    words and acronyms only where the words allow them) keeps exactly the rows the one-row matcher keeps."""
    normalized = normalize_many(texts)
    joined = Joined(normalized)
    joined.words = WordIndex.build(normalized, chunk=7)
    expected = [i for i, text in enumerate(texts) if fuzzy_matches(query, text)]
    assert FuzzyQuery(query).select(normalized, joined=joined) == expected
    rows = list(range(1, len(texts), 3))
    assert FuzzyQuery(query).select(normalized, rows, joined=joined) == [i for i in expected if i % 3 == 1]


def test_the_word_index_finds_each_way_to_match() -> None:
    texts = normalize_many(
        [
            "fix the parser",
            "pa rs e",
            "checkpoint",
            "http request",
            "v81 build",
            "the best",
            "nothing else",
            "",
        ]
    )
    joined = Joined(texts)
    joined.words = WordIndex.build(texts)
    assert joined.words.postings["the"] == [0, 5]
    assert joined.words.initials is not None and joined.words.initials.text.split("\n")[3] == "hr"
    for query, rows in [
        ("parse", [0, 1]),  # a prefix of a word; the token across words
        ("chek", [2]),  # in order within a word
        ("hr", [3]),  # an acronym
        ("8v1", [4]),  # a letter and a digit swapped
        ("pars", [0, 1]),  # a word one character short of the token... and across words
        ("the bst", [5]),  # every token
        ("zzz", []),
    ]:
        assert FuzzyQuery(query).select(texts, joined=joined) == rows, query
        assert rows == [i for i, text in enumerate(texts) if fuzzy_matches(query, text)], query


# Symbols, punctuation, spaces and controls beyond ASCII (more than fuzzy._MANY_GAPS distinct ones), letters
# with marks, a lone surrogate, camelCase and ACRONYMWords around them.
_WIDE_TEXTS = st.lists(
    st.sampled_from(
        [chr(c) for c in range(0x2500, 0x2560)]
        + list("aZbYxml9_ \x00\t\u00a0\u2028\u0301\u0130\u212a\u00df日本Σ€→\ud800")
        + ["HTMLParser", "getX2Y", "camelCase", "ÉtéÀ"]
    ),
    max_size=20,
).map("".join)


@settings(max_examples=500, deadline=None)
@given(st.lists(_WIDE_TEXTS, max_size=20))
def test_many_texts_are_normalized_together_as_one_at_a_time(texts: list[str]) -> None:
    """normalize_many (the texts joined, gaps replaced in their UTF-8 bytes or by a table when there are many
    kinds) gives each text's normalize_fast and normalize_for_search, whatever characters they hold."""
    assert normalize_many(texts) == [normalize_fast(text) for text in texts]
    assert normalize_many(texts) == [normalize_for_search(text) for text in texts]
    few = [text for text in texts if not any("\u2500" <= ch <= "\u255f" for ch in text)]
    assert normalize_many(few) == [normalize_for_search(text) for text in few]


@settings(max_examples=3000, deadline=None)
@given(_TEXTS, _QUERIES)
def test_the_character_prefilter_never_drops_a_match(text: str, query: str) -> None:
    """A text that matches holds every character the query's pre-filter asks for (and a text lacking one is
    ruled out by the masks alone, without a scan)."""
    normalized = normalize_fast(text)
    mask = char_mask(normalized)
    for token, variants in FuzzyQuery(query).tokens:
        required = token.required
        for variant in variants:
            required &= variant.required
        if token.matches(normalized) or any(variant.matches(normalized) for variant in variants):
            assert mask & required == required


def test_the_character_prefilter_rules_out_texts_without_the_characters() -> None:
    matcher = FuzzyQuery("parse")
    texts = ["fix the parser", "pa rs e", "nothing here"]
    masks = [char_mask(text) for text in texts]
    assert [bool(m & matcher.tokens[0][0].required == matcher.tokens[0][0].required) for m in masks] == [
        True,
        True,
        False,
    ]
    # "pa rs e": the token at a word start with the spaces taken out.
    assert matcher.select(texts, masks=masks) == [0, 1]
