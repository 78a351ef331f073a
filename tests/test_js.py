"""JavaScript value semantics (treeview.session.js) on the inputs where Python's builtins differ."""

from __future__ import annotations

import math

from treeview.session import js
from treeview.session.jsonl import UNDEFINED


def test_trim_uses_the_ecmascript_white_space_set() -> None:
    assert js.trim("\ufeff\u00a0 x \u2028\u3000") == "x"
    # Python's str.strip() would remove these; JavaScript's trim() keeps them.
    assert js.trim("\x1cx\x85") == "\x1cx\x85"
    assert js.trim_start("  x  ") == "x  " and js.trim_end("  x  ") == "  x"


def test_string_conversion_follows_template_literals() -> None:
    assert [js.to_string(v) for v in (UNDEFINED, None, True, 1.0, 1e21, math.nan, -math.inf)] == [
        "undefined",
        "null",
        "true",
        "1",
        "1e+21",
        "NaN",
        "-Infinity",
    ]
    assert js.to_string([1, None, [UNDEFINED, "a"]]) == "1,,,a"
    assert js.to_string({"a": 1}) == "[object Object]"
    assert js.join(["a", None, UNDEFINED, 2], "-") == "a---2"


def test_truthiness_and_nullish() -> None:
    assert [js.truthy(v) for v in ([], {}, "0", -0.0, math.nan, "", UNDEFINED)] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]
    assert js.is_nullish(None) and js.is_nullish(UNDEFINED) and not js.is_nullish(0)
    assert js.get({"a": None}, "a") is None
    assert js.get({"a": 1}, "b") is UNDEFINED and js.get(3, "a") is UNDEFINED


def test_number_conversion_and_to_fixed() -> None:
    assert js.to_number(" 12 ") == 12.0 and js.to_number("") == 0.0 and js.to_number(None) == 0.0
    assert math.isnan(js.to_number("x")) and math.isnan(js.to_number(UNDEFINED))
    # toFixed rounds the exact binary value: 0.25 is exact (a tie, up); 0.35 is slightly below .35.
    assert [js.to_fixed(v, 1) for v in (0.25, 0.35, 1.05, 2.0, 1e21, math.nan)] == [
        "0.3",
        "0.3",
        "1.1",
        "2.0",
        "1e+21",
        "NaN",
    ]
    assert js.to_fixed(-0.0, 1) == "0.0" and js.to_fixed(-0.04, 1) == "-0.0"


def test_utf16_length_and_slice() -> None:
    text = "ab\U0001f600c"
    assert js.utf16_len(text) == 5
    # Cutting inside the emoji: dropped by default, kept as a lone surrogate on request (as JS does).
    assert js.utf16_slice(text, 3) == "ab"
    assert js.utf16_slice(text, 3, keep_lone_surrogate=True) == "ab\ud83d"
    assert js.utf16_slice(text, 4) == js.utf16_slice(text, 4, keep_lone_surrogate=True) == "ab\U0001f600"


def test_sorting_and_comparison_use_utf16_code_units() -> None:
    assert js.sort_strings(["\uff5e", "\U0001f600", "b", "B"]) == ["B", "b", "\U0001f600", "\uff5e"]
    assert js.greater_or_equal("\uff5e", "\U0001f600")
    assert js.greater_or_equal("10", 9) and not js.greater_or_equal(math.nan, 0)
    assert js.stringify({"a": UNDEFINED, "b": [1.0, "\u2028"]}) == '{"b":[1,"\u2028"]}'
