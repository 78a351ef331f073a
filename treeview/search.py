"""Search across every imported session: the full-text index, the query, snippets and the branch of a hit.

What is searched: each entry's ``search_text`` (the lower-cased text the tree selector's search matches,
§17.6: the role or type and the first 200 characters of the text) for the entries the tree shows as text rows
(messages, custom messages, branch summaries, compactions; not assistant turns without text), and each
session's title, working directory and id (a plain substring match: there are few sessions).

The index lives in the database and follows the ``treeview_entry`` table whatever writes it (the import's
driver-level inserts and ``COPY``, appends, the deletes of a re-import):

* SQLite: an FTS5 table ``treeview_entry_search`` (rowid = ``Entry.id``) kept in step by triggers. The
  ``unicode61 remove_diacritics 2`` tokenizer: words are runs of letters and digits, case and accents folded.
* PostgreSQL: a partial GIN index on ``to_tsvector('simple', …)`` of the same text (an expression index, so
  ``COPY`` maintains it). ASCII punctuation is turned into spaces first, so that words are the same runs of
  letters and digits as on SQLite (the default parser would otherwise keep ``src/app.py`` as one word).
  ``simple`` folds case but not accents.

A query is split on whitespace into tokens; an entry matches when every word of every token (its runs of
letters and digits) starts a word of the text (a prefix match, like the selector's search as you type). The
words are quoted by this module, so operators, quotes and parentheses in a query are only text. A session
matches when every token occurs in its title, directory or id. Hits are not ranked: the most recently active
session first, each session's hits in file order.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, router, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models import Q
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from treeview.models import AgentSession, Entry
from treeview.session.selector import FlatTree

__all__ = [
    "BranchTarget",
    "EntryHits",
    "Hit",
    "SearchQuery",
    "branch_target",
    "ensure_index",
    "ensure_index_after_migrate",
    "install_index",
    "matching_sessions",
    "parse_query",
    "remove_index",
    "snippet",
]

#: Tokens and words of a query beyond these are ignored (a query is typed, not pasted files).
MAX_TOKENS = 16
MAX_WORDS = 16

# -- the index ---------------------------------------------------------------------------------------------

INDEX_MIGRATION = "0002_search_index"
FTS_TABLE = "treeview_entry_search"
PG_INDEX = "treeview_entry_search_gin"
_TRIGGERS = ("treeview_entry_search_ai", "treeview_entry_search_ad", "treeview_entry_search_au")
# The entries with a text row in the tree (§17.4): settings entries and labels have no text worth finding, and
# an assistant turn without text is hidden by the tree's filters (its search text is only "assistant").
_INDEXED_TYPES = "('message', 'custom_message', 'branch_summary', 'compaction')"


def _indexed(row: str) -> str:
    prefix = f"{row}." if row else ""
    return f"{prefix}type IN {_INDEXED_TYPES} AND NOT ({prefix}role = 'assistant' AND NOT {prefix}has_text)"


# ASCII punctuation, symbols and controls become spaces (see the module docstring). In a PostgreSQL regular
# expression \x.. is a character escape; standard_conforming_strings (on since 9.1) keeps the backslashes.
def _pg_document(column: str = "search_text") -> str:
    return (
        f"to_tsvector('simple', regexp_replace({column}, "
        "'[\\x01-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]+', ' ', 'g'))"
    )


_PG_DOCUMENT = _pg_document()

_PG_QUERY = "to_tsquery('simple', %s)"

_SQLITE_INSTALL = (
    # The FTS table keeps its own copy of the text (about 15 MB per 100,000 entries), so a delete always
    # removes exactly what was indexed. (A contentless table must be given the indexed text again to delete,
    # and reports a corrupt database once it was given another.)
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5("
    "search_text, tokenize = 'unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[0]} AFTER INSERT ON treeview_entry"
    f" WHEN {_indexed('new')} BEGIN"
    f" INSERT INTO {FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[1]} AFTER DELETE ON treeview_entry"
    f" WHEN {_indexed('old')} BEGIN DELETE FROM {FTS_TABLE} WHERE rowid = old.id; END",
    # Entries are append-only, but a data migration may rewrite a derived column.
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[2]} AFTER UPDATE ON treeview_entry BEGIN"
    f" DELETE FROM {FTS_TABLE} WHERE rowid = old.id;"
    f" INSERT INTO {FTS_TABLE}(rowid, search_text) SELECT new.id, new.search_text WHERE {_indexed('new')};"
    " END",
)
_SQLITE_REBUILD = (
    f"DELETE FROM {FTS_TABLE}",
    f"INSERT INTO {FTS_TABLE}(rowid, search_text) SELECT id, search_text FROM treeview_entry"
    f" WHERE {_indexed('')}",
)
_PG_INSTALL = (
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON treeview_entry"
    f" USING gin ({_PG_DOCUMENT}) WHERE {_indexed('')}",
)


def _sqlite_index_complete(cursor: Any) -> bool:
    names = (FTS_TABLE, *_TRIGGERS)
    marks = ", ".join(["%s"] * len(names))
    cursor.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", names)
    return bool(cursor.fetchone()[0] == len(names))


def install_index(apps: Any, schema_editor: Any) -> None:
    """Migration step: create the index for the database in use (and fill it from the stored entries)."""
    ensure_index(schema_editor.connection.alias)


def remove_index(apps: Any, schema_editor: Any) -> None:
    """Migration step backwards: drop the index."""
    connection = schema_editor.connection
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            for trigger in _TRIGGERS:
                cursor.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            cursor.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")
        elif connection.vendor == "postgresql":
            cursor.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")


def ensure_index(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Create whatever part of the index is missing; on SQLite, refill the FTS table when anything was.

    Idempotent and cheap when all is there (one query). Django remakes a SQLite table for many schema changes
    (a new NOT NULL column, for one), which drops its triggers: run this after migrations (``post_migrate``).
    Returns whether anything was created.
    """
    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            if _sqlite_index_complete(cursor):
                return False
            for statement in (*_SQLITE_INSTALL, *_SQLITE_REBUILD):
                cursor.execute(statement)
            return True
        if connection.vendor == "postgresql":
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [PG_INDEX])
            if cursor.fetchone()[0]:
                return False
            for statement in _PG_INSTALL:
                cursor.execute(statement)
            return True
    return False


def ensure_index_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """``post_migrate`` receiver: :func:`ensure_index`, once the migration that creates the index is applied
    (not after migrating back before it)."""
    recorder = MigrationRecorder(connections[using])
    if recorder.has_table() and ("treeview", INDEX_MIGRATION) in recorder.applied_migrations():
        ensure_index(using)


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


def matching_sessions(query: SearchQuery) -> Any:
    """Sessions whose title, working directory or id contains every token (newest first)."""
    if not query:
        return AgentSession.objects.none()
    condition = Q()
    for token in query.tokens:
        condition &= Q(title__icontains=token) | Q(cwd__icontains=token) | Q(session_id__icontains=token)
    return AgentSession.objects.filter(condition).newest_first()


@dataclass(frozen=True)
class Hit:
    """One entry that matches, with what the results page shows of it."""

    entry: Entry
    session: AgentSession


class EntryHits:
    """The entries matching a query, for a ``Paginator``: ``count()`` and slices, each one query.

    Order: the session with the latest activity first (``AgentSession.objects.newest_first()``), then each
    session's hits in file order, so that the hits of a session stay together.
    """

    def __init__(self, query: SearchQuery, using: str | None = None) -> None:
        self.query = query
        self.using = using or router.db_for_read(Entry)
        self._count: int | None = None

    def count(self) -> int:
        if self._count is None:
            self._count = self._fetch_count() if self.query.words else 0
        return self._count

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, index: slice) -> list[Hit]:
        if not isinstance(index, slice) or index.step is not None:
            raise TypeError("EntryHits only takes slices")
        start = index.start or 0
        stop = self.count() if index.stop is None else index.stop
        if not self.query.words or stop <= start:
            return []
        return self._load(self._page_ids(start, stop - start))

    def _cursor(self) -> Any:
        return connections[self.using].cursor()

    def _fetch_count(self) -> int:
        connection = connections[self.using]
        if connection.vendor == "postgresql":
            sql = (
                f"SELECT count(*) FROM treeview_entry WHERE {_indexed('')} AND {_PG_DOCUMENT} @@ {_PG_QUERY}"
            )
            params = [self.query.tsquery()]
        else:
            sql = f"SELECT count(*) FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s"
            params = [self.query.fts5()]
        with self._cursor() as cursor:
            cursor.execute(sql, params)
            return int(cursor.fetchone()[0])

    def _page_ids(self, offset: int, limit: int) -> list[int]:
        connection = connections[self.using]
        if connection.vendor == "postgresql":
            # The tsquery is a constant expression, so the planner can use the index.
            source = "treeview_entry e"
            match = f"{_indexed('e')} AND {_pg_document('e.search_text')} @@ {_PG_QUERY}"
            params: list[Any] = [self.query.tsquery()]
        else:
            source = f"{FTS_TABLE} JOIN treeview_entry e ON e.id = {FTS_TABLE}.rowid"
            match = f"{FTS_TABLE} MATCH %s"
            params = [self.query.fts5()]
        # No relevance ranking: PostgreSQL would parse the text of every hit again for ts_rank (seconds for a
        # common word in 100,000 entries), and the two databases would rank differently.
        sql = (
            f"SELECT e.id FROM {source} JOIN treeview_agentsession s ON s.id = e.session_id WHERE {match}"
            " ORDER BY s.last_timestamp DESC NULLS LAST, s.id DESC, e.seq, e.id LIMIT %s OFFSET %s"
        )
        with self._cursor() as cursor:
            cursor.execute(sql, [*params, limit, offset])
            return [row[0] for row in cursor.fetchall()]

    def _load(self, ids: list[int]) -> list[Hit]:
        fields = ("id", "session_id", "entry_id", "type", "role", "timestamp", "ts", "text", "search_text")
        entries = Entry.objects.using(self.using).only(*fields).in_bulk(ids)
        session_ids = {entry.session_id for entry in entries.values()}
        sessions = (
            AgentSession.objects.using(self.using)
            .defer("header_raw", "prefix_raw", "title_slot_raw", "tail_raw", "pending_raw", "warnings")
            .in_bulk(session_ids)
        )
        # An entry deleted between the two queries (a re-import) is left out.
        return [
            Hit(entries[pk], sessions[entries[pk].session_id])
            for pk in ids
            if pk in entries and entries[pk].session_id in sessions
        ]


# -- snippets ----------------------------------------------------------------------------------------------

SNIPPET_BEFORE = 60
SNIPPET_LENGTH = 240


def _fold(text: str) -> tuple[str, list[int]]:
    """``text`` case-folded and without accents, and for each of its characters the index it came from."""
    folded: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if char.isascii():
            piece = char.lower()
        else:
            base = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c))
            piece = base.casefold()
        folded.append(piece)
        origin.extend([index] * len(piece))
    return "".join(folded), origin


def _word_ranges(folded: str, origin: list[int], word: str) -> list[tuple[int, int]]:
    needle = _fold(word)[0]
    if not needle:
        return []
    # A prefix of a word: not preceded by a letter or digit.
    found = re.finditer(r"(?<![^\W_])" + re.escape(needle), folded)
    return [(origin[m.start()], origin[m.end() - 1] + 1) for m in found]


def match_ranges(text: str, words: Iterable[str]) -> tuple[list[tuple[int, int]], int]:
    """Where in ``text`` a word of the query starts a word (a prefix match, case and accents ignored): sorted,
    non-overlapping ``(start, end)`` ranges of ``text``, and how many of the words were found."""
    folded, origin = _fold(text)
    ranges: list[tuple[int, int]] = []
    found = 0
    for word in words:
        matches = _word_ranges(folded, origin, word)
        found += bool(matches)
        ranges.extend(matches)
    ranges.sort()
    merged: list[tuple[int, int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged, found


def snippet(texts: Sequence[str], words: Sequence[str]) -> SafeString:
    """HTML of a part of the text (of ``texts``, the first with the most query words found) around the first
    match, every match in ``<mark>``.

    Every piece of the text is escaped; this function adds only the ``<mark>`` tags and the ellipses.
    """
    text, ranges, best = "", [], -1
    for candidate in texts:
        candidate_ranges, found = match_ranges(candidate, words)
        if found > best:
            text, ranges, best = candidate, candidate_ranges, found
    begin = 0
    if ranges and ranges[0][0] > SNIPPET_BEFORE:
        begin = ranges[0][0] - SNIPPET_BEFORE
        # Start at a word: after the next space, if there is one before the match.
        space = text.find(" ", begin, ranges[0][0])
        if space != -1:
            begin = space + 1
    end = min(len(text), begin + SNIPPET_LENGTH)
    parts: list[str] = ["…"] if begin > 0 else []
    position = begin
    for start, stop in ranges:
        if stop <= begin or start >= end:
            continue
        start, stop = max(start, begin), min(stop, end)
        parts.append(escape(text[position:start]))
        parts.append(f"<mark>{escape(text[start:stop])}</mark>")
        position = stop
    parts.append(escape(text[position:end]))
    if end < len(text):
        parts.append("…")
    # Safe: every piece of session text above went through escape().
    return mark_safe("".join(parts))


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
