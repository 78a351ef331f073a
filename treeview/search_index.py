"""The full-text index of the search across sessions (:mod:`treeview.search`): how it is made, filled, dropped
and repaired on SQLite and PostgreSQL, and the SQL the queries share with it.

The index follows the ``treeview_entry`` table whatever writes it (the import's driver-level inserts and
``COPY``, appends, the deletes of a re-import):

* SQLite: an external-content FTS5 table ``treeview_entry_body`` (rowid = ``Entry.id``; FTS5 keeps the
  index only, the text stays in ``treeview_entry``) kept in step by triggers. The ``unicode61
  remove_diacritics 2`` tokenizer: words are runs of letters and digits, case and accents folded.
* PostgreSQL: a stored generated column ``body_tsv`` (``to_tsvector('simple', …)`` of the same text, NULL for
  an entry without a body) and a GIN index on it. The database computes the column on every insert, ``COPY``
  included. ASCII punctuation is turned into spaces first, so that words are the same runs of letters and
  digits as on SQLite (the default parser would otherwise keep ``src/app.py`` as one word). ``simple`` folds
  case but not accents. The column is stored, not only indexed, so that a query can test an entry without
  parsing its text again: the search walks a session's entries in file order and tests each (see
  :mod:`treeview.search`), and a bitmap that outgrows ``work_mem`` rechecks its rows.

Migration 0002 made a first index on ``search_text`` (the selector's 200 characters); 0003 replaced it with an
expression index on ``body_text``; 0007 with the stored column. All stay defined here, for migrating forwards
and back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.migrations.recorder import MigrationRecorder

__all__ = [
    "FTS_TABLE",
    "INDEX_MIGRATION",
    "PG_COLUMN",
    "PG_DOCUMENT",
    "PG_INDEX",
    "PG_QUERY",
    "ensure_index",
    "ensure_index_after_migrate",
    "indexed",
    "install_body_index",
    "install_index",
    "install_tsv_index",
    "pg_document",
    "remove_body_index",
    "remove_index",
    "remove_tsv_index",
]

# The migration that makes the current index (the integrator may renumber it: keep this name in step).
INDEX_MIGRATION = "0007_search_body_tsv"
FTS_TABLE = "treeview_entry_body"
PG_COLUMN = "body_tsv"
PG_INDEX = "treeview_entry_body_tsv_gin"
_TRIGGERS = ("treeview_entry_body_ai", "treeview_entry_body_ad", "treeview_entry_body_au")


def indexed(row: str) -> str:
    """The entries in the index: those with a body (``treeview.session.body_text``: the entries with a text
    row in the tree; not settings, labels, custom state or an assistant turn without text)."""
    return f"{row}.body_text <> ''" if row else "body_text <> ''"


# ASCII punctuation, symbols and controls become spaces (see the module docstring). In a PostgreSQL regular
# expression \x.. is a character escape; standard_conforming_strings (on since 9.1) keeps the backslashes.
# (translate() would do the same and is four times slower on long texts.)
def pg_document(column: str = "body_text") -> str:
    return (
        f"to_tsvector('simple', regexp_replace({column}, "
        "'[\\x01-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]+', ' ', 'g'))"
    )


PG_DOCUMENT = pg_document()

PG_QUERY = "to_tsquery('simple', %s)"

_SQLITE_INSTALL = (
    # An external-content table: FTS5 keeps only the index, the text stays in treeview_entry (no second copy
    # of up to 32 KiB per entry). A delete must give FTS5 the text that was indexed: the triggers give it the
    # row's text, which is what was indexed as entries are append-only and an update re-indexes, and
    # ensure_index() rebuilds the whole index whenever a trigger was missing.
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(body_text, content = 'treeview_entry',"
    " content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2')",
    # Merge the index's segments when 8 (not 4) wait at a level: about a tenth less work while a large
    # session is imported, for a few more segments to read per query.
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rank) VALUES ('automerge', 8)",
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[0]} AFTER INSERT ON treeview_entry"
    f" WHEN {indexed('new')} BEGIN"
    f" INSERT INTO {FTS_TABLE}(rowid, body_text) VALUES (new.id, new.body_text); END",
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[1]} AFTER DELETE ON treeview_entry WHEN {indexed('old')} BEGIN"
    f" INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, body_text) VALUES ('delete', old.id, old.body_text); END",
    # Entries are append-only, but a data migration may rewrite a derived column.
    f"CREATE TRIGGER IF NOT EXISTS {_TRIGGERS[2]} AFTER UPDATE OF body_text ON treeview_entry BEGIN"
    f" INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, body_text)"
    f" SELECT 'delete', old.id, old.body_text WHERE {indexed('old')};"
    f" INSERT INTO {FTS_TABLE}(rowid, body_text) SELECT new.id, new.body_text WHERE {indexed('new')};"
    " END",
)
_SQLITE_REBUILD = (
    f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('delete-all')",
    f"INSERT INTO {FTS_TABLE}(rowid, body_text) SELECT id, body_text FROM treeview_entry WHERE {indexed('')}",
)
_SQLITE_REMOVE = (
    *(f"DROP TRIGGER IF EXISTS {trigger}" for trigger in _TRIGGERS),
    f"DROP TABLE IF EXISTS {FTS_TABLE}",
)
_PG_INSTALL = (
    # Rewrites the table once (every row gets its value); later inserts and COPY compute it.
    f"ALTER TABLE treeview_entry ADD COLUMN IF NOT EXISTS {PG_COLUMN} tsvector"
    f" GENERATED ALWAYS AS (CASE WHEN {indexed('')} THEN {PG_DOCUMENT} END) STORED",
    f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON treeview_entry USING gin ({PG_COLUMN})"
    f" WHERE {PG_COLUMN} IS NOT NULL",
)
_PG_REMOVE = (
    f"DROP INDEX IF EXISTS {PG_INDEX}",
    f"ALTER TABLE treeview_entry DROP COLUMN IF EXISTS {PG_COLUMN}",
)

# The index of migration 0003: an expression index on body_text (SQLite: the same FTS5 table as now).
_V3_MIGRATION = "0003_entry_body_text"
_V3_PG_INDEX = "treeview_entry_body_gin"
_V3_PG_INSTALL = (
    f"CREATE INDEX IF NOT EXISTS {_V3_PG_INDEX} ON treeview_entry"
    f" USING gin ({PG_DOCUMENT}) WHERE {indexed('')}",
)
_V3_PG_REMOVE = (f"DROP INDEX IF EXISTS {_V3_PG_INDEX}",)

# The first index (migration 0002), on the selector's search text: only what migrating to 0002, or back to
# it, needs. An FTS5 table with its own copy of the text.
_V2_MIGRATION = "0002_search_index"
_V2_FTS_TABLE = "treeview_entry_search"
_V2_TRIGGERS = ("treeview_entry_search_ai", "treeview_entry_search_ad", "treeview_entry_search_au")
_V2_INDEXED = (
    "{0}type IN ('message', 'custom_message', 'branch_summary', 'compaction')"
    " AND NOT ({0}role = 'assistant' AND NOT {0}has_text)"
)
_V2_SQLITE_INSTALL = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {_V2_FTS_TABLE} USING fts5("
    "search_text, tokenize = 'unicode61 remove_diacritics 2')",
    f"CREATE TRIGGER IF NOT EXISTS {_V2_TRIGGERS[0]} AFTER INSERT ON treeview_entry"
    f" WHEN {_V2_INDEXED.format('new.')} BEGIN"
    f" INSERT INTO {_V2_FTS_TABLE}(rowid, search_text) VALUES (new.id, new.search_text); END",
    f"CREATE TRIGGER IF NOT EXISTS {_V2_TRIGGERS[1]} AFTER DELETE ON treeview_entry"
    f" WHEN {_V2_INDEXED.format('old.')} BEGIN DELETE FROM {_V2_FTS_TABLE} WHERE rowid = old.id; END",
    f"CREATE TRIGGER IF NOT EXISTS {_V2_TRIGGERS[2]} AFTER UPDATE ON treeview_entry BEGIN"
    f" DELETE FROM {_V2_FTS_TABLE} WHERE rowid = old.id;"
    f" INSERT INTO {_V2_FTS_TABLE}(rowid, search_text) SELECT new.id, new.search_text"
    f" WHERE {_V2_INDEXED.format('new.')}; END",
)
_V2_SQLITE_REBUILD = (
    f"DELETE FROM {_V2_FTS_TABLE}",
    f"INSERT INTO {_V2_FTS_TABLE}(rowid, search_text) SELECT id, search_text FROM treeview_entry"
    f" WHERE {_V2_INDEXED.format('')}",
)
_V2_SQLITE_REMOVE = (
    *(f"DROP TRIGGER IF EXISTS {trigger}" for trigger in _V2_TRIGGERS),
    f"DROP TABLE IF EXISTS {_V2_FTS_TABLE}",
)
_V2_PG_INDEX = "treeview_entry_search_gin"
_V2_PG_INSTALL = (
    f"CREATE INDEX IF NOT EXISTS {_V2_PG_INDEX} ON treeview_entry"
    f" USING gin ({pg_document('search_text')}) WHERE {_V2_INDEXED.format('')}",
)
_V2_PG_REMOVE = (f"DROP INDEX IF EXISTS {_V2_PG_INDEX}",)


@dataclass(frozen=True)
class _IndexSql:
    """The statements that make, fill and drop one version of the index, and the names that must exist."""

    sqlite_names: tuple[str, ...]
    sqlite_install: tuple[str, ...]
    sqlite_rebuild: tuple[str, ...]
    sqlite_remove: tuple[str, ...]
    pg_index: str
    pg_install: tuple[str, ...]
    pg_remove: tuple[str, ...]


_CURRENT = _IndexSql(
    (FTS_TABLE, *_TRIGGERS),
    _SQLITE_INSTALL,
    _SQLITE_REBUILD,
    _SQLITE_REMOVE,
    PG_INDEX,
    _PG_INSTALL,
    _PG_REMOVE,
)
_V3 = _IndexSql(
    (FTS_TABLE, *_TRIGGERS),
    _SQLITE_INSTALL,
    _SQLITE_REBUILD,
    _SQLITE_REMOVE,
    _V3_PG_INDEX,
    _V3_PG_INSTALL,
    _V3_PG_REMOVE,
)
_V2 = _IndexSql(
    (_V2_FTS_TABLE, *_V2_TRIGGERS),
    _V2_SQLITE_INSTALL,
    _V2_SQLITE_REBUILD,
    _V2_SQLITE_REMOVE,
    _V2_PG_INDEX,
    _V2_PG_INSTALL,
    _V2_PG_REMOVE,
)


def _ensure(index: _IndexSql, using: str) -> bool:
    connection = connections[using]
    with transaction.atomic(using=using), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            marks = ", ".join(["%s"] * len(index.sqlite_names))
            cursor.execute(f"SELECT count(*) FROM sqlite_master WHERE name IN ({marks})", index.sqlite_names)
            if cursor.fetchone()[0] == len(index.sqlite_names):
                return False
            for statement in (*index.sqlite_install, *index.sqlite_rebuild):
                cursor.execute(statement)
            return True
        if connection.vendor == "postgresql":
            cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [index.pg_index])
            if cursor.fetchone()[0]:
                return False
            for statement in index.pg_install:
                cursor.execute(statement)
            return True
    return False


def _remove(index: _IndexSql, connection: Any) -> None:
    statements = {"sqlite": index.sqlite_remove, "postgresql": index.pg_remove}.get(connection.vendor, ())
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def install_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0002: create the first index, on ``search_text`` (migration 0003 replaces it)."""
    _ensure(_V2, schema_editor.connection.alias)


def remove_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0002 backwards, and 0003 forwards: drop the index on ``search_text``."""
    _remove(_V2, schema_editor.connection)


def install_body_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0003: create the index on ``body_text`` (and fill it from the stored entries)."""
    _ensure(_V3, schema_editor.connection.alias)


def remove_body_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0003 backwards: drop the index on ``body_text``."""
    _remove(_V3, schema_editor.connection)


def install_tsv_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0007 (PostgreSQL): the stored ``body_tsv`` column and its index replace the expression index.
    SQLite keeps its FTS5 table."""
    if schema_editor.connection.vendor == "postgresql":
        _ensure(_CURRENT, schema_editor.connection.alias)
        _remove(_V3, schema_editor.connection)


def remove_tsv_index(apps: Any, schema_editor: Any) -> None:
    """Migration 0007 backwards: the expression index of 0003 again."""
    if schema_editor.connection.vendor == "postgresql":
        _ensure(_V3, schema_editor.connection.alias)
        _remove(_CURRENT, schema_editor.connection)


def ensure_index(using: str = DEFAULT_DB_ALIAS) -> bool:
    """Create whatever part of the index is missing; on SQLite, refill the FTS table when anything was.

    Idempotent and cheap when all is there (one query). Django remakes a SQLite table for many schema changes
    (a new NOT NULL column, for one), which drops its triggers: run this after migrations (``post_migrate``).
    Returns whether anything was created.
    """
    return _ensure(_CURRENT, using)


def ensure_index_after_migrate(sender: Any, using: str = DEFAULT_DB_ALIAS, **kwargs: Any) -> None:
    """``post_migrate`` receiver: :func:`ensure_index` once the migration that creates the index is applied;
    the first index when the database was migrated back to 0002; nothing before that."""
    recorder = MigrationRecorder(connections[using])
    if not recorder.has_table():
        return
    applied = recorder.applied_migrations()
    if ("treeview", INDEX_MIGRATION) in applied:
        _ensure(_CURRENT, using)
    elif ("treeview", _V3_MIGRATION) in applied:
        _ensure(_V3, using)
    elif ("treeview", _V2_MIGRATION) in applied:
        _ensure(_V2, using)
