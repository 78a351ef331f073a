"""oh-my-pi 18's fuzzy match (does a query match a text?), used by its tree selector's search.

Both sides are normalized the same way: camelCase and ACRONYMWords are split, everything is lowercased and
every run of characters that are not letters, marks or digits becomes one space. Each query token must then
match the text in one of these ways: as the start of a word when spaces are ignored; against one word
(equal, a prefix of it, it a prefix of the token short by at most two characters, a substring, or its
characters in order within a short span); as an acronym of consecutive words; or any of these after
swapping one adjacent letter and digit (typing ``v81`` for ``8v1``). Only whether it matches is computed,
not the score the original ranks by (the tree keeps tree order).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

__all__ = ["FuzzyQuery", "case_matters", "fuzzy_matches", "normalize_fast", "normalize_for_search"]

_UPPER_RUN: Final = re.compile(r"([A-Z]+)([A-Z][a-z])")
_CAMEL: Final = re.compile(r"([a-z0-9])([A-Z])")
_MIN_SHADOW_RESCAN: Final = 3


def _is_word_char(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LMN"


def normalize_for_search(value: str) -> str:
    """The text as the matcher sees it: words of letters and digits, lowercased, single spaces."""
    value = _CAMEL.sub(r"\1 \2", _UPPER_RUN.sub(r"\1 \2", value)).lower()
    out: list[str] = []
    gap = False
    for ch in value:
        if _is_word_char(ch):
            if gap and out:
                out.append(" ")
            gap = False
            out.append(ch)
        else:
            gap = True
    return "".join(out)


class _Index:
    __slots__ = ("compact", "starts", "words")

    def __init__(self, normalized: str) -> None:
        self.words = normalized.split(" ") if normalized else []
        self.compact = normalized.replace(" ", "")
        self.starts: set[int] = set()
        position = 0
        for word in self.words:
            self.starts.add(position)
            position += len(word)


@lru_cache(maxsize=4096)
def _index(text: str) -> _Index:
    return _Index(normalize_for_search(text))


def _compact_word_start(index: _Index, needle: str) -> bool:
    compact = index.compact
    at = compact.find(needle)
    if at < 0:
        return False
    if at in index.starts:
        return True
    if len(needle) < _MIN_SHADOW_RESCAN:
        return False
    at = compact.find(needle, at + 1)
    while at >= 0:
        if at in index.starts:
            return True
        at = compact.find(needle, at + 1)
    return False


def _in_order_within(token: str, word: str) -> bool:
    """The token's characters appear in order in the word, within a span not much longer than the token."""
    if len(token) > len(word):
        return False
    first = last = -1
    position = 0
    for i, ch in enumerate(word):
        if position < len(token) and ch == token[position]:
            if first < 0:
                first = i
            last = i
            position += 1
    if position < len(token):
        return False
    return last - first + 1 <= max(len(token) + 2, -(-len(token) * 9 // 5))


def _matches_word(token: str, word: str) -> bool:
    if word.startswith(token) or token in word:
        return True
    if token.startswith(word) and len(token) - len(word) <= 2:
        return True
    return _in_order_within(token, word)


def _acronym(token: str, index: _Index) -> bool:
    if not 2 <= len(token) <= 4 or not index.words:
        return False
    position = 0
    first = last = -1
    for ordinal, word in enumerate(index.words):
        if not word or word[0] != token[position]:
            continue
        if first < 0:
            first = ordinal
        last = ordinal
        position += 1
        if position == len(token):
            break
    return position == len(token) and last - first + 1 <= len(token) + 2


def _token_direct(token: str, index: _Index) -> bool:
    if not token:
        return True
    if _compact_word_start(index, token):
        return True
    return any(_matches_word(token, word) for word in index.words) or _acronym(token, index)


def _swaps(token: str) -> list[str]:
    variants: dict[str, None] = {}
    for i in range(len(token) - 1):
        a, b = token[i], token[i + 1]
        if ("a" <= a <= "z" and "0" <= b <= "9") or ("0" <= a <= "9" and "a" <= b <= "z"):
            variants[token[:i] + b + a + token[i + 2 :]] = None
    return list(variants)


def fuzzy_matches(query: str, text: str) -> bool:
    """Whether every token of ``query`` matches ``text`` (a query with no word characters matches all)."""
    normalized = normalize_for_search(query)
    if not normalized:
        return True
    index = _index(text)
    if not index.words:
        return False
    for token in normalized.split(" "):
        if _token_direct(token, index):
            continue
        if not any(_token_direct(variant, index) for variant in _swaps(token)):
            return False
    return True


_ASCII_GAPS: Final = re.compile(r"[^a-z0-9]+")


@lru_cache(maxsize=1)
def _gaps() -> re.Pattern[str]:
    """Runs of characters that are not letters, marks or digits (``\\w`` holds letters, digits and ``_``;
    the marks are added as ranges, read once from the Unicode database)."""
    ranges: list[str] = []
    start = previous = -2
    for code in range(0x300, 0x110000):
        if unicodedata.category(chr(code))[0] != "M":
            continue
        if code != previous + 1:
            if start >= 0:
                ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
            start = code
        previous = code
    ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
    return re.compile(f"(?:[^\\w{''.join(ranges)}]|_)+")


def case_matters(value: str) -> bool:
    """Whether the matcher splits words of ``value`` by case (camelCase, ACRONYMWords): then the normalized
    text differs from that of ``value.lower()``; otherwise the lowercased text reads the same to it."""
    return _CAMEL.search(value) is not None or _UPPER_RUN.search(value) is not None


def normalize_fast(value: str) -> str:
    """:func:`normalize_for_search` by regular expressions (the same result, without a step per character)."""
    value = _CAMEL.sub(r"\1 \2", _UPPER_RUN.sub(r"\1 \2", value)).lower()
    if value.isascii():
        return _ASCII_GAPS.sub(" ", value).strip(" ")
    return _gaps().sub(" ", value).strip(" ")


class _Token:
    """One query token (or a swapped variant of it), with the patterns that rule out most texts at once."""

    __slots__ = ("acronym", "in_order", "prefix_word", "start", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        escaped = [re.escape(ch) for ch in text]
        # Its characters in order inside one word (a necessary condition of _in_order_within).
        self.in_order = re.compile("[^ ]*?".join(escaped))
        # At a word start, spaces ignored (_compact_word_start for tokens that rescan: any occurrence).
        self.start = re.compile("(?:^| )" + " ?".join(escaped))
        # A whole word that the token starts with, one or two characters short (_matches_word).
        shorter = [re.escape(text[:size]) for size in range(max(1, len(text) - 2), len(text))]
        self.prefix_word = re.compile(f"(?:^| )(?:{'|'.join(shorter)})(?= |$)") if shorter else None
        # Words starting with its characters, in order (a necessary condition of _acronym).
        self.acronym = re.compile("(?:^| )" + ".*? ".join(escaped)) if 2 <= len(text) <= 4 else None

    def matches(self, normalized: str) -> bool:
        """``_token_direct`` on the text whose normalized form is ``normalized``."""
        token = self.text
        if token in normalized:
            return True  # a substring of one word: _matches_word
        if len(token) >= _MIN_SHADOW_RESCAN:
            if self.start.search(normalized):
                return True
        elif _compact_word_start(_Index(normalized), token):
            return True
        if self.prefix_word is not None and self.prefix_word.search(normalized):
            return True
        if self.in_order.search(normalized) and any(
            _in_order_within(token, word) for word in normalized.split(" ")
        ):
            return True
        if self.acronym is not None and self.acronym.search(normalized):
            index = _Index.__new__(_Index)
            index.words = normalized.split(" ")
            return _acronym(token, index)
        return False


class FuzzyQuery:
    """:func:`fuzzy_matches` for one query against many texts: the query is read once, and most texts are
    decided by a few regular-expression searches instead of a walk over their words (the same answers)."""

    __slots__ = ("tokens",)

    def __init__(self, query: str) -> None:
        normalized = normalize_for_search(query)
        self.tokens = [
            (_Token(token), [_Token(variant) for variant in _swaps(token)])
            for token in (normalized.split(" ") if normalized else [])
        ]

    def matches(self, text: str) -> bool:
        return self.matches_normalized(normalize_fast(text))

    def matches_normalized(self, normalized: str) -> bool:
        """:meth:`matches` on a text already normalized (:func:`normalize_fast`), which a caller may keep."""
        if not self.tokens:
            return True
        if not normalized:
            return False
        for token, variants in self.tokens:
            if token.matches(normalized):
                continue
            if not any(variant.matches(normalized) for variant in variants):
                return False
        return True
