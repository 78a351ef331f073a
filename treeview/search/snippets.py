"""Snippets: a short excerpt of an entry's text around its first match, the matches marked."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from treeview.search.query import is_prefix

#: A snippet is about this many characters of the text, starting up to SNIPPET_BEFORE before the first match.
SNIPPET_LENGTH = 200
SNIPPET_BEFORE = 80

_SPACES = re.compile(r"\s+")


class _FoldTable(dict[int, str]):
    """For ``str.translate``: a character → itself case-folded and without accents, computed once a call.
    Notes whether a character folded to more or fewer than one character (``ß``, a lone combining accent)."""

    def __init__(self) -> None:
        super().__init__()
        self.uneven = False

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char.isascii():
            piece = char.lower()
        else:
            base = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c))
            piece = base.casefold()
        self.uneven = self.uneven or len(piece) != 1
        self[code] = piece
        return piece


@dataclass(frozen=True)
class _Folded:
    """A text case-folded and without accents; ``origin[i]``: the index in the text of folded character ``i``
    (``None``: the same index, the usual case, found without a Python loop over a body of 32 KiB)."""

    text: str
    origin: list[int] | None

    def to_text(self, start: int, stop: int) -> tuple[int, int]:
        """The range of the text that folded ``[start, stop)`` (not empty) came from."""
        if self.origin is None:
            return start, stop
        return self.origin[start], self.origin[stop - 1] + 1

    def from_text(self, index: int) -> int:
        """The first folded character at or after text index ``index``."""
        return index if self.origin is None else bisect.bisect_left(self.origin, index)


def _fold(text: str) -> _Folded:
    if text.isascii():
        return _Folded(text.lower(), None)
    table = _FoldTable()
    folded = text.translate(table)
    if not table.uneven:
        return _Folded(folded, None)
    origin: list[int] = []
    for index, char in enumerate(text):
        origin.extend([index] * len(table[ord(char)]))
    return _Folded(folded, origin)


def _word_starts(folded: str, needle: str, start: int = 0, stop: int | None = None) -> Iterator[int]:
    """Where ``needle`` starts a word of ``folded`` (is not preceded by a letter or digit; a needle shorter
    than :data:`MIN_PREFIX` is the whole word, not followed by one either): the matches that begin in
    ``[start, stop)``, in order."""
    stop = len(folded) if stop is None else stop
    limit = stop + len(needle) - 1
    whole = not is_prefix(needle)
    at = folded.find(needle, start, limit)
    while at != -1:
        end = at + len(needle)
        if (at == 0 or not folded[at - 1].isalnum()) and not (
            whole and end < len(folded) and folded[end].isalnum()
        ):
            yield at
        at = folded.find(needle, at + 1, limit)


def _shown(text: str) -> str:
    # Line breaks and runs of spaces of the text read as one space in a one-line snippet.
    return escape(_SPACES.sub(" ", text))


def snippet(texts: Sequence[str], words: Sequence[str]) -> SafeString:
    """HTML of about :data:`SNIPPET_LENGTH` characters of a text (of ``texts``, the first with the most query
    words found) around the first match, wherever it is in the text, every match in ``<mark>`` (a prefix
    match of a word, case and accents ignored).

    Every piece of the text is escaped; this function adds only the ``<mark>`` tags and the ellipses. Only
    the first match of each word is looked for outside the window, so a long text costs little.
    """
    needles = [needle for needle in dict.fromkeys(_fold(word).text for word in words) if needle]
    text, folded, first, best = "", _fold(""), None, -1
    for candidate in texts:
        candidate_folded = _fold(candidate)
        starts = [next(_word_starts(candidate_folded.text, needle), None) for needle in needles]
        found = [at for at in starts if at is not None]
        if len(found) > best:
            text, folded, best = candidate, candidate_folded, len(found)
            first = min(found) if found else None
    begin = 0
    if first is not None:
        match = folded.to_text(first, first + 1)[0]
        if match > SNIPPET_BEFORE:
            begin = match - SNIPPET_BEFORE
            # Start at a word: after the next space, if there is one before the match.
            space = _SPACES.search(text, begin, match)
            if space is not None:
                begin = space.end()
    end = min(len(text), begin + SNIPPET_LENGTH)
    window = (folded.from_text(begin), folded.from_text(end))
    ranges: list[tuple[int, int]] = []
    for needle in needles:
        for at in _word_starts(folded.text, needle, max(0, window[0] - len(needle) + 1), window[1]):
            start, stop = folded.to_text(at, at + len(needle))
            ranges.append((max(start, begin), min(stop, end)))
    merged: list[tuple[int, int]] = []
    for start, stop in sorted(ranges):
        if merged and start <= merged[-1][1]:  # overlapping or touching matches: one mark
            merged[-1] = (merged[-1][0], max(stop, merged[-1][1]))
        elif start < stop:
            merged.append((start, stop))
    parts: list[str] = ["…"] if begin > 0 else []
    position = begin
    for start, stop in merged:
        parts.append(_shown(text[position:start]))
        parts.append(f"<mark>{_shown(text[start:stop])}</mark>")
        position = stop
    parts.append(_shown(text[position:end]))
    if end < len(text):
        parts.append("…")
    # Safe: every piece of session text above went through escape().
    return mark_safe("".join(parts).strip())
