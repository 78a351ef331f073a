"""Hits: the entries of the matching sessions, newest session first, read a page at a time."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, router
from django.db.models import QuerySet

from treeview.models import AgentSession, Entry
from treeview.search.query import MAX_HITS, SearchQuery
from treeview.search_index import (
    FTS_TABLE,
    PG_COLUMN,
    PG_QUERY,
)

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
