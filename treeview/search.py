"""Search across every imported session: the full-text index, the query, snippets and the branch of a hit.

What is searched: each entry's ``body_text``, the full text of the entries the tree shows as text rows
(messages, tool output, custom messages, branch summaries, compactions; not thinking, settings, labels or
assistant turns without text), cut at 32 Ki characters an entry and 2,000 of tool output
(:mod:`treeview.session.body_text`), and each session's title, working directory and id (a plain substring
match: there are few sessions).

The index (an FTS5 table on SQLite, a stored, GIN-indexed ``tsvector`` column on PostgreSQL) lives in the
database and follows the ``treeview_entry`` table whatever writes it: see :mod:`treeview.search_index`.

A query is split on whitespace into tokens; an entry matches when every word of every token (its runs of
letters and digits) starts a word of the text (a prefix match, like the selector's search as you type); a word
of one or two characters must be a whole word of the text (as a prefix it would match nearly every entry). The
words are quoted by this module, so operators, quotes and parentheses in a query are only text. A session
matches when every token occurs in its title, directory or id.

Hits are not ranked: the most recently active session first, each session's hits in file order, and only the
first :data:`MAX_HITS` of them are counted and shown. That is what keeps a common word cheap: the entries are
read session by session, newest first, in file order, until that many were found (:class:`EntryHits`), never
every match of a word that occurs in a third of a large database.
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
    PG_COLUMN,
    PG_INDEX,
    PG_QUERY,
    ensure_index,
    ensure_index_after_migrate,
    install_body_index,
    install_index,
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
    "MAX_HITS",
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
#: Words shorter than this match whole words only, longer ones every word they start.
MIN_PREFIX = 3
#: At most this many hits of a query are counted and can be paged through: the first ones in the order.
MAX_HITS = 1000

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
        """The FTS5 query: every word as a quoted (prefix) term (implicit AND). Words hold no quote."""
        return " ".join(f'"{word}"*' if is_prefix(word) else f'"{word}"' for word in self.words)

    def tsquery(self) -> str:
        """The ``to_tsquery`` text: every word as a quoted (prefix) lexeme, joined with ``&``."""
        return " & ".join(f"'{word}':*" if is_prefix(word) else f"'{word}'" for word in self.words)


def is_prefix(word: str) -> bool:
    """Whether ``word`` matches every word it starts (else only itself): :data:`MIN_PREFIX` characters on."""
    return len(word) >= MIN_PREFIX


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


# The order of sessions in the results (as AgentSession.objects.newest_first()), for a row aliased "s".
_SESSION_ORDER = "s.last_timestamp DESC NULLS LAST, s.id DESC"

#: PostgreSQL: entries of the newest sessions read in order and tested one by one, at most (a common word
#: fills the hits long before), and at a time.
PG_SCAN_ROWS = 20_000
PG_CHUNK = 2_500
#: PostgreSQL: matches listed and sorted here at most, when the words are rare in the newest sessions.
PG_SORT_ROWS = 20_000
# PostgreSQL: a chunk of a session's entries in order, each with whether it matches.
_PG_CHUNK = (
    "SELECT e.id, e.seq, coalesce({match}, false) FROM treeview_entry e"
    " WHERE e.session_id = %s AND e.seq > %s ORDER BY e.seq LIMIT %s"
)
# PostgreSQL: a session's hits after an entry, in order (the planner picks the index).
_PG_REST = (
    "SELECT e.id FROM treeview_entry e WHERE e.session_id = %s AND e.seq > %s AND {match}"
    " ORDER BY e.seq LIMIT %s"
)

# SQLite: the smallest and largest entry id of a session (two index seeks).
_SQLITE_SPAN = (
    "SELECT (SELECT id FROM treeview_entry WHERE session_id = %s ORDER BY id LIMIT 1),"
    " (SELECT id FROM treeview_entry WHERE session_id = %s ORDER BY id DESC LIMIT 1)"
)
# SQLite: a session's hits in id order (file order), FTS5 reading only the session's range of ids.
_SQLITE_SESSION_HITS = (
    f"SELECT f.rowid FROM {FTS_TABLE} f JOIN treeview_entry e ON e.id = f.rowid"
    f" WHERE f.{FTS_TABLE} MATCH %s AND f.rowid BETWEEN %s AND %s AND e.session_id = %s"
    " ORDER BY f.rowid LIMIT %s"
)
# SQLite: which of some ids (of a session's range) are the session's own, in order.
_SQLITE_OWN = "SELECT id FROM treeview_entry WHERE session_id = %s AND id IN ({marks}) ORDER BY id"
# SQLite: ids asked about at a time (below any SQLite's limit of variables in a statement).
_SQLITE_CHUNK = 500


@dataclass(frozen=True)
class Hit:
    """One entry that matches, with what the results page shows of it."""

    entry: Entry
    session: AgentSession


class EntryHits:
    """The first ``limit`` (:data:`MAX_HITS`) entries matching a query, for a ``Paginator``: ``count()`` (at
    most ``limit``; :attr:`more` says whether more match) and slices.

    Order: the session with the latest activity first (``AgentSession.objects.newest_first()``), then each
    session's hits in file order, so that the hits of a session stay together. ``sessions`` (default: all)
    limits the hits to those sessions (the ones the user may see, treeview/access.py).

    How they are found (one search reads only what it shows, whatever the size of the database):

    * a probe asks the index for ``limit + 1`` matches in any order (it stops there). Fewer: a rare word,
      every match is known, and one query sorts them;
    * more: the sessions are walked newest first, each one's entries in file order through the
      ``(session, seq)`` index, each tested against the index, until ``limit + 1`` hits are found. A common
      word stops after a few hundred entries of the newest session. PostgreSQL does the walk in one statement
      (a ``LATERAL`` join under an incremental sort); SQLite in one small statement per session.
    """

    def __init__(
        self,
        query: SearchQuery,
        using: str | None = None,
        sessions: QuerySet[AgentSession] | None = None,
        limit: int = MAX_HITS,
    ) -> None:
        self.query = query
        self.using = using or router.db_for_read(Entry)
        self.limit = limit
        self._ids: list[int] | None = None
        self._sessions = sessions
        # The scope as SQL: a query of session ids, or nothing; an empty scope finds nothing.
        self._scope_sql = ""
        self._scope_params: tuple[Any, ...] = ()
        self._nothing = False
        if sessions is not None:
            try:
                sql, params = sessions.using(self.using).values("pk").query.sql_with_params()
            except EmptyResultSet:
                self._nothing = True
            else:
                self._scope_sql = sql
                self._scope_params = tuple(params)

    def count(self) -> int:
        return min(len(self._found()), self.limit)

    @property
    def more(self) -> bool:
        """Whether more than ``limit`` entries match (only the first ``limit`` are counted and shown)."""
        return len(self._found()) > self.limit

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[Hit]:
        if not isinstance(index, slice) or index.step is not None:
            raise TypeError("EntryHits only takes slices")
        start = index.start or 0
        stop = self.count() if index.stop is None else min(index.stop, self.count())
        if stop <= start:
            return []
        return self._load(self._found()[start:stop])

    def _found(self) -> list[int]:
        """The ids of the first ``limit + 1`` hits, in order."""
        if self._ids is None:
            self._ids = [] if not self.query.words or self._nothing else self._first(self.limit + 1)
        return self._ids

    def _cursor(self) -> Any:
        return connections[self.using].cursor()

    def _pg(self) -> bool:
        return bool(connections[self.using].vendor == "postgresql")

    def _first(self, wanted: int) -> list[int]:
        return self._first_pg(wanted) if self._pg() else self._walk_sqlite(wanted)

    def _pg_match(self) -> str:
        # The tsquery is a constant expression, so the planner can use the index.
        return f"e.{PG_COLUMN} @@ {PG_QUERY}"

    def _first_pg(self, wanted: int) -> list[int]:
        """The first ``wanted`` hits on PostgreSQL.

        The newest sessions' entries are read in ``seq`` order through the ``(session, seq)`` index, a chunk
        at a time, each tested against its stored ``body_tsv``: a common word fills the hits within a few
        thousand entries. This goes on while the hits found so far promise the rest within
        :data:`PG_SCAN_ROWS` entries read. Otherwise the words are rare (in the newest sessions at least):
        the GIN index lists the matches, up to :data:`PG_SORT_ROWS` of them, which are sorted here; only a
        word with more matches than that, none of them in the newest sessions, has the rest of each session
        asked in turn (the planner answers each from the index). (One statement for the whole walk, a
        ``LATERAL`` join over the sessions, read every session in full: the planner neither stops such a
        nested loop early nor reads a session in order when a prefix has many words.)
        """
        sessions = AgentSession.objects.all() if self._sessions is None else self._sessions
        order = list(sessions.using(self.using).newest_first().values_list("pk", flat=True))
        tsquery = self.query.tsquery()
        match = self._pg_match()
        found: list[int] = []
        scanned = 0
        with self._cursor() as cursor:
            index, last_seq = 0, -1
            while index < len(order):
                cursor.execute(_PG_CHUNK.format(match=match), [tsquery, order[index], last_seq, PG_CHUNK])
                rows = cursor.fetchall()
                scanned += len(rows)
                for entry_pk, seq, hit in rows:
                    last_seq = seq
                    if hit:
                        found.append(entry_pk)
                        if len(found) >= wanted:
                            return found
                if len(rows) < PG_CHUNK:  # the end of the session
                    index, last_seq = index + 1, -1
                # Entries still to read at the rate seen so far, if it holds.
                if not found or (wanted - len(found)) * scanned / len(found) > PG_SCAN_ROWS - scanned:
                    break
            else:
                return found  # every session read
            scope = f" AND e.session_id IN ({self._scope_sql})" if self._scope_sql else ""
            sql = f"SELECT e.id, e.session_id, e.seq FROM treeview_entry e WHERE {match}{scope} LIMIT %s"
            cursor.execute(sql, [tsquery, *self._scope_params, PG_SORT_ROWS + 1])
            matches = cursor.fetchall()
            if len(matches) <= PG_SORT_ROWS:
                rank = {pk: position for position, pk in enumerate(order)}
                matches.sort(key=lambda row: (rank.get(row[1], len(rank)), row[2], row[0]))
                return [row[0] for row in matches if row[1] in rank][:wanted]
            for position in range(index, len(order)):
                after = last_seq if position == index else -1
                cursor.execute(
                    _PG_REST.format(match=match), [order[position], after, tsquery, wanted - len(found)]
                )
                found.extend(row[0] for row in cursor.fetchall())
                if len(found) >= wanted:
                    break
        return found

    def _walk_sqlite(self, wanted: int) -> list[int]:
        """The first ``wanted`` hits on SQLite, with at most two full-text statements.

        An FTS5 statement with a prefix term merges the lists of every word with that prefix (a third of a
        second for ``con`` in 570,000 entries) whatever it is limited to, so there is no statement per
        session: the newest session is asked first (its range of entry ids, in id order, which is file order:
        a session's entries are stored in file order), which is all a common word needs; otherwise every
        match is listed once (ids only) and divided among the sessions by their ranges of ids, a session's
        own entries told apart from others' in its range (a session that grew has later ids).
        """
        sessions = AgentSession.objects.all() if self._sessions is None else self._sessions
        order = list(sessions.using(self.using).newest_first().values_list("pk", flat=True))
        fts = self.query.fts5()
        found: list[int] = []
        matches: list[int] | None = None
        with self._cursor() as cursor:
            for pk in order:
                cursor.execute(_SQLITE_SPAN, [pk, pk])
                low, high = cursor.fetchone()
                if low is None:
                    continue
                if matches is None:
                    cursor.execute(_SQLITE_SESSION_HITS, [fts, low, high, pk, wanted])
                    found.extend(row[0] for row in cursor.fetchall())
                    if len(found) >= wanted:
                        return found
                    cursor.execute(f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s", [fts])
                    matches = [row[0] for row in cursor.fetchall()]
                    continue
                candidates = matches[bisect.bisect_left(matches, low) : bisect.bisect_right(matches, high)]
                for start in range(0, len(candidates), _SQLITE_CHUNK):
                    chunk = candidates[start : start + _SQLITE_CHUNK]
                    marks = ", ".join(["%s"] * len(chunk))
                    cursor.execute(_SQLITE_OWN.format(marks=marks), [pk, *chunk])
                    found.extend(row[0] for row in cursor.fetchall())
                    if len(found) >= wanted:
                        return found[:wanted]
        return found

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
