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
from bisect import bisect_right
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Final

__all__ = [
    "FuzzyQuery",
    "Joined",
    "WordIndex",
    "case_matters",
    "char_mask",
    "fuzzy_matches",
    "normalize_fast",
    "normalize_many",
    "normalize_for_search",
]

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


# Separates the texts normalized at once (in a text, a gap: replaced by a space first).
_BETWEEN: Final = "\x00"


def normalize_fast(value: str) -> str:
    """:func:`normalize_for_search` by regular expressions (the same result, without a step per character)."""
    value = _CAMEL.sub(r"\1 \2", _UPPER_RUN.sub(r"\1 \2", value)).lower()
    if value.isascii():
        return _ASCII_GAPS.sub(" ", value).strip(" ")
    return _gaps().sub(" ", value).strip(" ")


# The camelCase patterns as searches that start at an uppercase letter (few in a text), the character
# before or after it checked there: the same places as ``_UPPER_RUN`` and ``_CAMEL`` (a space goes before
# the last capital of a run followed by a lowercase letter, and before a capital after a lowercase letter
# or digit), without trying a match at every character.
_UPPER_RUN_AT: Final = re.compile(r"[A-Z](?<=[A-Z][A-Z])(?=[a-z])")
_CAMEL_AT: Final = re.compile(r"[A-Z](?<=[a-z0-9][A-Z])")
# Every ASCII character that is not a lowercase letter or digit (nor the separator) becomes a space; the
# other bytes (of UTF-8 sequences) stay.
_GAP_BYTES: Final = bytes(
    code if "a" <= chr(code) <= "z" or "0" <= chr(code) <= "9" or code == 0 or code >= 128 else 32
    for code in range(256)
)
# More distinct characters than that (not letters, marks or digits) in the texts that are not ASCII: they
# become spaces by a translation table (a step per character) instead of one replacement each.
_MANY_GAPS: Final = 64


def _space_before(match: re.Match[str]) -> str:
    return f" {match.group()}"


def normalize_many(values: Sequence[str]) -> list[str]:
    """:func:`normalize_fast` of each of ``values``, on all of them joined (the ASCII ones apart from the
    others): a few steps in C over the whole text instead of a few per text. Gaps become spaces in the UTF-8
    bytes (a translation table for ASCII, one replacement per other character that is not a letter, mark or
    digit), then runs of spaces one space. No step reaches across the separator (a control character, which
    lowercasing and the camelCase patterns leave alone, and which a text's own gaps would have become)."""
    out = [""] * len(values)
    ascii_rows: list[int] = []
    other_rows: list[int] = []
    for row, value in enumerate(values):
        (ascii_rows if value.isascii() else other_rows).append(row)
    for rows in (ascii_rows, other_rows):
        if not rows:
            continue
        joined = _BETWEEN.join(
            value.replace(_BETWEEN, " ") if _BETWEEN in value else value
            for value in (values[row] for row in rows)
        )
        joined = _CAMEL_AT.sub(_space_before, _UPPER_RUN_AT.sub(_space_before, joined)).lower()
        gaps = (
            [] if rows is ascii_rows else [ch for ch in set(joined) if ch > "\x7f" and not _is_word_char(ch)]
        )
        if len(gaps) > _MANY_GAPS:
            joined = joined.translate(dict.fromkeys(map(ord, gaps), " "))
            gaps = []
        # UTF-8 synchronizes: a character's bytes are never inside another's (lone surrogates: gaps too).
        data = joined.encode("utf-8", "surrogatepass").translate(_GAP_BYTES)
        for ch in gaps:
            data = data.replace(ch.encode("utf-8", "surrogatepass"), b" ")
        while b"  " in data:  # each pass halves the runs of spaces
            data = data.replace(b"  ", b" ")
        data = data.replace(b" \x00", b"\x00").replace(b"\x00 ", b"\x00").strip(b" ")
        for row, normal in zip(rows, data.decode("utf-8", "surrogatepass").split(_BETWEEN), strict=True):
            out[row] = normal
    return out


# One bit per lowercase ASCII letter and digit; any other character shares one of 27 bits with others (a
# necessary condition only: a text whose mask lacks a bit of the query's cannot match it).
_ASCII_BITS: Final = {ch: 1 << i for i, ch in enumerate("abcdefghijklmnopqrstuvwxyz0123456789")}
_SEPARATOR: Final = "\n"  # joins the texts searched at once (normalized texts hold no newline)


def char_mask(text: str) -> int:
    """The characters of ``text`` (spaces left out) as a bit set: a cheap test that a query cannot match."""
    mask = 0
    bits = _ASCII_BITS
    for ch in set(text):
        bit = bits.get(ch)
        if bit is None:
            if ch == " ":
                continue
            bit = 1 << (36 + ord(ch) % 27)
        mask |= bit
    return mask


class Joined:
    """Texts joined by newlines (searched at once), which texts (``rows``) and where each starts."""

    __slots__ = ("rows", "starts", "text", "words")

    def __init__(self, texts: Sequence[str], rows: Sequence[int] | None = None) -> None:
        # All the texts' words (kept with a Joined of all of them, see WordIndex): a search of whole words.
        self.words: WordIndex | None = None
        self.rows = list(range(len(texts)) if rows is None else rows)
        parts = [texts[row] for row in self.rows] if rows is not None else list(texts)
        self.text = _SEPARATOR.join(parts)
        self.starts = [0, *accumulate(len(part) + 1 for part in parts)]
        self.starts.pop()


#: Estimated bytes of a WordIndex (tracemalloc on the 100,000-entry session's: 34 MB, these give 34): per
#: (word, text) pair a list slot with its share of the spare room, per text its index (an int shared by its
#: pairs) and its initials' start (a list slot and an int, twice: ``Joined.starts`` and ``rows``), per
#: distinct word its dict entry, string and list headers.
WORD_PAIR_BYTES: Final = 9
WORD_TEXT_BYTES: Final = 100
WORD_ENTRY_BYTES: Final = 150


class WordIndex:
    """The words of many normalized texts (all the texts of a search, by index): each distinct word with the
    texts that hold it (``postings``, ascending), all the distinct words joined by newlines (``vocabulary``:
    scanned instead of the texts for what one word decides) and each text's words' first characters
    (``initials``, joined: where an acronym can be)."""

    __slots__ = ("initials", "pairs", "postings", "vocabulary")

    def __init__(self) -> None:
        self.postings: dict[str, list[int]] = {}
        self.pairs = 0
        self.vocabulary = ""
        self.initials: Joined | None = None

    @classmethod
    def build(
        cls, texts: Sequence[str], chunk: int = 10_000, pause: Callable[[], None] | None = None
    ) -> WordIndex:
        """The index of ``texts``, ``chunk`` texts at a time, ``pause()`` between them (a thread that makes
        it ahead of a search lets requests go first)."""
        index = cls()
        postings = index.postings
        initials: list[str] = []
        pairs = 0
        for begin in range(0, len(texts), chunk):
            if pause is not None:
                pause()
            for row in range(begin, min(begin + chunk, len(texts))):
                text = texts[row]
                if not text:
                    initials.append("")
                    continue
                words = text.split(" ")
                initials.append("".join([word[0] for word in words]))
                distinct = set(words)
                pairs += len(distinct)
                for word in distinct:
                    found = postings.get(word)
                    if found is None:
                        postings[word] = [row]
                    else:
                        found.append(row)
        index.pairs = pairs
        index.vocabulary = _SEPARATOR.join(postings)
        index.initials = Joined(initials)
        return index

    def bytes(self) -> int:
        """Estimated bytes held (characters counted two bytes each: one that is not Latin-1 makes a string
        take two bytes a character)."""
        initials = self.initials
        texts = 0 if initials is None else len(initials.starts) * WORD_TEXT_BYTES + 2 * len(initials.text)
        words = len(self.postings) * WORD_ENTRY_BYTES + 2 * len(self.vocabulary)
        return self.pairs * WORD_PAIR_BYTES + texts + words

    def words_matching(self, pattern: re.Pattern[str]) -> list[str]:
        """The distinct words in which ``pattern`` finds something (it must not cross a newline)."""
        vocabulary = self.vocabulary
        found: list[str] = []
        position = 0
        while True:
            match = pattern.search(vocabulary, position)
            if match is None:
                return found
            start = vocabulary.rfind(_SEPARATOR, 0, match.start()) + 1
            end = vocabulary.find(_SEPARATOR, match.start())
            if end < 0:
                end = len(vocabulary)
            found.append(vocabulary[start:end])
            position = end + 1


def _hits(joined: str, starts: list[int], find: Callable[[int], int]) -> list[int]:
    """The places (in ``starts``) of the texts in which ``find`` (the next match at or after a position, or
    -1) finds something; after a hit the search goes on at the next text."""
    found: list[int] = []
    last = len(starts) - 1
    position = 0
    while True:
        at = find(position)
        if at < 0:
            return found
        k = bisect_right(starts, at) - 1
        found.append(k)
        if k >= last:
            return found
        position = starts[k + 1]


def _regex_find(pattern: re.Pattern[str], joined: str) -> Callable[[int], int]:
    def find(position: int) -> int:
        match = pattern.search(joined, position)
        return -1 if match is None else match.start()

    return find


def _at_word_start(escaped: str, rest: str = "") -> re.Pattern[str]:
    """``escaped`` (a regular expression of fixed width, characters) at the start of a word of texts joined
    by newlines, then ``rest``. The characters come first and the word start is checked behind them, so
    that the search looks for the characters (fast) instead of trying a lookbehind at every position."""
    return re.compile(f"{escaped}(?<![^ \\n]{escaped}){rest}")


class _Token:
    """One query token (or a swapped variant of it), with the patterns that rule out most texts at once."""

    __slots__ = ("acronym", "in_order", "prefix_word", "required", "start", "text")

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
        # Characters every matching text holds: the shortest word prefix_word accepts, else all of them.
        self.required = char_mask(text[: max(1, len(text) - 2)])

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

    def select(self, texts: Sequence[str], rows: Sequence[int], joined: Joined | None = None) -> set[int]:
        """The ``rows`` (indexes of non-empty normalized ``texts``) that :meth:`matches`, decided for all of
        them at once: each way to match is one scan over the texts joined (in C; ``joined``: all ``texts``,
        when kept), the texts it found checked one by one only where :meth:`matches` checks more than a
        pattern; a text matched is not checked again, and the texts left are joined again once they are
        fewer than half of those joined."""
        if joined is not None and joined.words is not None:
            return self.select_words(texts, rows, joined.words)
        token = self.text
        hit: set[int] = set()
        live = set(rows)
        current = joined if joined is not None and len(rows) * 2 >= len(joined.rows) else None

        def scan(find: Callable[[str], Callable[[int], int]], check: Callable[[str], bool] | None) -> None:
            nonlocal current
            if not live:
                return
            if current is None or len(live) * 2 < len(current.rows):
                current = Joined(texts, [row for row in rows if row in live])
            joined_rows = current.rows
            found = [
                row
                for row in (joined_rows[k] for k in _hits(current.text, current.starts, find(current.text)))
                if row in live
            ]
            if check is not None:
                found = [row for row in found if check(texts[row])]
            hit.update(found)
            live.difference_update(found)

        scan(lambda joined: lambda position: joined.find(token, position), None)
        escaped = [re.escape(ch) for ch in token]
        # A whole word that the token starts with, one or two characters short.
        shorter = [
            "".join(escaped[1:size]) + "(?![^ \\n])" for size in range(max(1, len(token) - 2), len(token))
        ]
        if len(token) >= _MIN_SHADOW_RESCAN:
            # At a word start, spaces ignored, or one of those words: each starts with the token's first
            # character at a word start, so one scan finds them all.
            start = _at_word_start(escaped[0], f"(?: ?{' ?'.join(escaped[1:])}|{'|'.join(shorter)})")
            scan(lambda joined: _regex_find(start, joined), None)
        else:
            if len(token) == 2:
                # Found in the words with their spaces taken out, not as a substring: across one space.
                spaced = re.compile(re.escape(token[0]) + " " + re.escape(token[1]))
                scan(
                    lambda joined: _regex_find(spaced, joined),
                    lambda text: _compact_word_start(_Index(text), token),
                )
            for rest in shorter:
                word = _at_word_start(escaped[0], rest)
                scan(lambda joined, word=word: _regex_find(word, joined), None)  # type: ignore[misc]
        # Its characters in order within one word, each gap no longer than the span allows
        # (_in_order_within: a necessary condition), then the words found checked.
        gap = max(len(token) + 2, -(-len(token) * 9 // 5)) - len(token)
        in_order = re.compile(f"[^ \\n]{{0,{gap}}}?".join(escaped))
        in_word = re.compile(f"[^ ]*{f'[^ ]{{0,{gap}}}?'.join(escaped)}[^ ]*")
        scan(
            lambda joined: _regex_find(in_order, joined),
            lambda text: any(_in_order_within(token, m.group()) for m in in_word.finditer(text)),
        )
        if self.acronym is not None:
            # Words starting with its characters, in order, at most two words skipped between two of them
            # (_acronym allows two words more than the token's characters: a necessary condition).
            acronym = _at_word_start(
                escaped[0], "".join(f"[^ \\n]*+(?: [^ \\n]++){{0,2}}? {e}" for e in escaped[1:])
            )

            def acronym_check(text: str) -> bool:
                index = _Index.__new__(_Index)
                index.words = text.split(" ")
                return _acronym(token, index)

            scan(lambda joined: _regex_find(acronym, joined), acronym_check)
        return hit

    def select_words(self, texts: Sequence[str], rows: Sequence[int], words: WordIndex) -> set[int]:
        """:meth:`select` by the texts' words (``words``: the index of all ``texts``). What one word decides
        (the token in it, it the token short by at most two characters, the token's characters in order within
        it) is decided once per distinct word, its texts taken from the index; the ways that span words are
        checked as :meth:`matches` checks them, only in the texts left that can hold them: the token at a word
        start across spaces needs a word that is a shorter start of the token followed by a word the rest
        starts with (or that starts the rest), and an acronym the token's characters in order among the
        words' initials, each at most two after the last."""
        token = self.text
        postings = words.postings
        found: set[int] = set()
        for word in words.words_matching(re.compile(re.escape(token))):
            found.update(postings[word])
        for size in range(max(1, len(token) - 2), len(token)):
            found.update(postings.get(token[:size], ()))
        escaped = [re.escape(ch) for ch in token]
        gap = max(len(token) + 2, -(-len(token) * 9 // 5)) - len(token)
        in_order = re.compile(f"[^ \\n]{{0,{gap}}}?".join(escaped))
        for word in words.words_matching(in_order):
            if token not in word and _in_order_within(token, word):
                found.update(postings[word])
        live = set(rows)
        hit = found & live
        left = live - hit
        if not left:
            return hit
        # The token at a word start across spaces (a word start without one: a substring, found above).
        spanning: set[int] = set()
        for size in range(1, len(token)):
            first = postings.get(token[:size])
            if first is None:
                continue
            rest = token[size:]
            second: set[int] = set()
            for word in words.words_matching(_at_word_start(re.escape(rest))):
                second.update(postings[word])
            for shorter in range(1, len(rest)):
                second.update(postings.get(rest[:shorter], ()))
            spanning |= second.intersection(first)
        spanning &= left
        if len(token) >= _MIN_SHADOW_RESCAN:
            hit.update(row for row in spanning if self.start.search(texts[row]))
        else:
            hit.update(row for row in spanning if _compact_word_start(_Index(texts[row]), token))
        initials = words.initials
        if self.acronym is not None and initials is not None:
            # _acronym takes the first word that starts with the token's first character, then the next ones
            # that start with its others, within a span two words longer than the token: among the initials,
            # each next character at most two after the last.
            pattern = re.compile(escaped[0] + "".join(f"[^{e}\\n]{{0,2}}{e}" for e in escaped[1:]))
            acronym = {
                initials.rows[k]
                for k in _hits(initials.text, initials.starts, _regex_find(pattern, initials.text))
            }
            for row in acronym & left:
                if row not in hit:
                    index = _Index.__new__(_Index)
                    index.words = texts[row].split(" ")
                    if _acronym(token, index):
                        hit.add(row)
        return hit


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

    def select(
        self,
        texts: Sequence[str],
        rows: Sequence[int] | None = None,
        masks: Sequence[int] | None = None,
        joined: Joined | None = None,
    ) -> list[int]:
        """The ``rows`` (default: all) of the normalized ``texts`` that :meth:`matches_normalized` accepts
        (the same answers, in the same order), decided for many texts at once; ``masks``: each text's
        :func:`char_mask`, when kept, rules out at once the texts that lack a character every match needs;
        ``joined``: all the texts joined, when kept (with their :class:`WordIndex`, when made: the texts
        found by their words, none of them checked one by one first)."""
        rows = list(range(len(texts)) if rows is None else rows)
        if not self.tokens:
            return rows
        indexed = joined is not None and joined.words is not None
        if not indexed:
            rows = [i for i in rows if texts[i]]  # (an empty text has no words: the index never finds it)
        for token, variants in self.tokens:
            if masks is not None and not indexed:
                required = token.required
                for variant in variants:
                    required &= variant.required
                if required:
                    rows = [i for i in rows if masks[i] & required == required]
            hit = token.select(texts, rows, joined)
            for variant in variants:
                rest = [i for i in rows if i not in hit]
                if not rest:
                    break
                hit |= variant.select(texts, rest, joined)
            rows = [i for i in rows if i in hit]
        return rows
