"""Search across every imported session: the full-text index, the query, snippets and the branch of a hit.

What is searched: each entry's ``body_text``, the full text of the entries the tree shows as text rows
(messages, tool output, custom messages, branch summaries, compactions; not thinking, settings, labels or
assistant turns without text), cut at 32 Ki characters an entry and 2,000 of tool output
(:mod:`treeview.session.body_text`), and each session's title, working directory and id (a plain substring
match: there are few sessions).

The index (an FTS5 table on SQLite, a GIN index on PostgreSQL) lives in the database and follows the
``treeview_entry`` table whatever writes it: see :mod:`treeview.search_index`.

A query is split on whitespace into tokens; an entry matches when every word of every token (its runs of
letters and digits) starts a word of the text (a prefix match, like the selector's search as you type). The
words are quoted by this module, so operators, quotes and parentheses in a query are only text. A session
matches when every token occurs in its title, directory or id. Hits are not ranked: the most recently active
session first, each session's hits in file order.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.models import Q, QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from treeview.models import AgentSession, Entry
from treeview.search_index import (
    FTS_TABLE,
    PG_DOCUMENT,
    PG_INDEX,
    PG_QUERY,
    ensure_index,
    ensure_index_after_migrate,
    indexed,
    install_body_index,
    install_index,
    pg_document,
    remove_body_index,
    remove_index,
)
from treeview.session.selector import FlatTree

# The index itself lives in treeview.search_index; its public names are re-exported here (migration 0002 and
# the app config import them from this module).
__all__ = [
    "FTS_TABLE",
    "PG_INDEX",
    "BranchTarget",
    "EntryHits",
    "Hit",
    "SearchQuery",
    "branch_target",
    "ensure_index",
    "ensure_index_after_migrate",
    "install_body_index",
    "install_index",
    "matching_sessions",
    "parse_query",
    "remove_body_index",
    "remove_index",
    "snippet",
]

#: Tokens and words of a query beyond these are ignored (a query is typed, not pasted files).
MAX_TOKENS = 16
MAX_WORDS = 16

# -- the query ---------------------------------------------------------------------------------------------

# A word: a run of letters and digits (what FTS5's unicode61 tokenizer keeps; the rest separates words).
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class SearchQuery:
    """A query as typed, its whitespace-separated tokens (lower-cased) and the words full-text search uses."""

    text: str
    tokens: tuple[str, ...]
    words: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.tokens)

    def fts5(self) -> str:
        """The FTS5 query: every word as a quoted prefix term (implicit AND). Words hold no quote."""
        return " ".join(f'"{word}"*' for word in self.words)

    def tsquery(self) -> str:
        """The ``to_tsquery`` text: every word as a quoted prefix lexeme, joined with ``&``."""
        return " & ".join(f"'{word}':*" for word in self.words)


def parse_query(text: str) -> SearchQuery:
    """Tokens (at most :data:`MAX_TOKENS`) and their words (at most :data:`MAX_WORDS`, no repeats)."""
    tokens = tuple(text.lower().split()[:MAX_TOKENS])
    words: list[str] = []
    for token in tokens:
        for word in _WORD.findall(token):
            if word not in words:
                words.append(word)
    return SearchQuery(text, tokens, tuple(words[:MAX_WORDS]))


def matching_sessions(query: SearchQuery, sessions: QuerySet[AgentSession] | None = None) -> Any:
    """Sessions (of ``sessions``, default all) whose title, working directory or id contains every token
    (newest first)."""
    if not query:
        return AgentSession.objects.none()
    condition = Q()
    for token in query.tokens:
        condition &= Q(title__icontains=token) | Q(cwd__icontains=token) | Q(session_id__icontains=token)
    found = (AgentSession.objects.all() if sessions is None else sessions).filter(condition)
    return found.with_first_prompt().newest_first()


@dataclass(frozen=True)
class Hit:
    """One entry that matches, with what the results page shows of it."""

    entry: Entry
    session: AgentSession


class EntryHits:
    """The entries matching a query, for a ``Paginator``: ``count()`` and slices, each one query.

    Order: the session with the latest activity first (``AgentSession.objects.newest_first()``), then each
    session's hits in file order, so that the hits of a session stay together. ``sessions`` (default: all)
    limits the hits to those sessions (the ones the user may see, treeview/access.py).
    """

    def __init__(
        self, query: SearchQuery, using: str | None = None, sessions: QuerySet[AgentSession] | None = None
    ) -> None:
        self.query = query
        self.using = using or router.db_for_read(Entry)
        self._count: int | None = None
        # The scope as SQL: "AND e.session_id IN (…)", or nothing; an empty scope finds nothing.
        self._scope_sql = ""
        self._scope_params: tuple[Any, ...] = ()
        self._nothing = False
        if sessions is not None:
            try:
                sql, params = sessions.using(self.using).values("pk").query.sql_with_params()
            except EmptyResultSet:
                self._nothing = True
            else:
                self._scope_sql = f" AND e.session_id IN ({sql})"
                self._scope_params = tuple(params)

    def count(self) -> int:
        if self._count is None:
            self._count = self._fetch_count() if self.query.words and not self._nothing else 0
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[Hit]:
        if not isinstance(index, slice) or index.step is not None:
            raise TypeError("EntryHits only takes slices")
        start = index.start or 0
        stop = self.count() if index.stop is None else index.stop
        if not self.query.words or self._nothing or stop <= start:
            return []
        return self._load(self._page_ids(start, stop - start))

    def _cursor(self) -> Any:
        return connections[self.using].cursor()

    def _fetch_count(self) -> int:
        connection = connections[self.using]
        if connection.vendor == "postgresql" and self._scope_sql:
            match = f"{indexed('e')} AND {pg_document('e.body_text')} @@ {PG_QUERY}"
            sql = f"SELECT count(*) FROM treeview_entry e WHERE {match}{self._scope_sql}"
            params = [self.query.tsquery()]
        elif connection.vendor == "postgresql":
            sql = f"SELECT count(*) FROM treeview_entry WHERE {indexed('')} AND {PG_DOCUMENT} @@ {PG_QUERY}"
            params = [self.query.tsquery()]
        elif self._scope_sql:
            sql = (
                f"SELECT count(*) FROM {FTS_TABLE} JOIN treeview_entry e ON e.id = {FTS_TABLE}.rowid"
                f" WHERE {FTS_TABLE} MATCH %s{self._scope_sql}"
            )
            params = [self.query.fts5()]
        else:
            sql = f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s"
            params = [self.query.fts5()]
        with self._cursor() as cursor:
            cursor.execute(sql, [*params, *self._scope_params])
            return int(cursor.fetchone()[0])

    def _page_ids(self, offset: int, limit: int) -> list[int]:
        connection = connections[self.using]
        if connection.vendor == "postgresql":
            # The tsquery is a constant expression, so the planner can use the index.
            source = "treeview_entry e"
            match = f"{indexed('e')} AND {pg_document('e.body_text')} @@ {PG_QUERY}"
            params: list[Any] = [self.query.tsquery()]
        else:
            source = f"{FTS_TABLE} JOIN treeview_entry e ON e.id = {FTS_TABLE}.rowid"
            match = f"{FTS_TABLE} MATCH %s"
            params = [self.query.fts5()]
        # No relevance ranking: PostgreSQL would parse the text of every hit again for ts_rank (seconds for a
        # common word in 100,000 entries), and the two databases would rank differently.
        sql = (
            f"SELECT e.id FROM {source} JOIN treeview_agentsession s ON s.id = e.session_id"
            f" WHERE {match}{self._scope_sql}"
            " ORDER BY s.last_timestamp DESC NULLS LAST, s.id DESC, e.seq, e.id LIMIT %s OFFSET %s"
        )
        with self._cursor() as cursor:
            cursor.execute(sql, [*params, *self._scope_params, limit, offset])
            return [row[0] for row in cursor.fetchall()]

    def _load(self, ids: list[int]) -> list[Hit]:
        fields = ("id", "session_id", "entry_id", "type", "role", "timestamp", "ts", "text", "body_text")
        entries = Entry.objects.using(self.using).only(*fields).in_bulk(ids)
        session_ids = {entry.session_id for entry in entries.values()}
        sessions = (
            AgentSession.objects.using(self.using)
            .defer("header_raw", "prefix_raw", "title_slot_raw", "tail_raw", "pending_raw", "warnings")
            .with_first_prompt()  # an unnamed session is headed by its first prompt, not its id
            .in_bulk(session_ids)
        )
        # An entry deleted between the two queries (a re-import) is left out.
        return [
            Hit(entries[pk], sessions[entries[pk].session_id])
            for pk in ids
            if pk in entries and entries[pk].session_id in sessions
        ]


# -- snippets ----------------------------------------------------------------------------------------------

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
    """Where ``needle`` starts a word of ``folded`` (is not preceded by a letter or digit): the matches that
    begin in ``[start, stop)``, in order."""
    stop = len(folded) if stop is None else stop
    limit = stop + len(needle) - 1
    at = folded.find(needle, start, limit)
    while at != -1:
        if at == 0 or not folded[at - 1].isalnum():
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


# -- the branch of a hit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BranchTarget:
    """Where the session page should open to show an entry: ``leaf_id`` ``None`` keeps the session's leaf."""

    target_id: str
    leaf_id: str | None


def branch_target(flat: FlatTree, entry_id: str, memo: dict[str, str] | None = None) -> BranchTarget | None:
    """The branch holding ``entry_id``: the active one when the entry is on it (an ancestor of the leaf, or
    the leaf); else the branch of the newest continuation below it (always the last child in the tree's
    order: newest timestamp, then file order). ``None`` when the tree has no such entry.

    ``memo`` (entry id → leaf found below it) may be shared by the calls for one tree.
    """
    flat_node = flat.by_id.get(entry_id)
    if flat_node is None:
        return None
    if entry_id in flat.active_ids:
        return BranchTarget(entry_id, None)
    memo = {} if memo is None else memo
    walked: list[str] = []
    node: Any = flat_node.node
    leaf: str | None = None
    while True:
        node_id = node.entry.get("id")
        if node_id in memo:
            leaf = memo[node_id]
            break
        walked.append(node_id)
        if not node.children:
            leaf = node_id
            break
        node = node.children[-1]
    for node_id in walked:
        memo[node_id] = leaf
    return BranchTarget(entry_id, leaf)
