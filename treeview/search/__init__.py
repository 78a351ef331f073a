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

Modules: ``query`` (parsing a query, matching sessions), ``hits`` (``EntryHits``), ``snippets`` and ``branch``
(the branch to open for a hit).
"""

from treeview.search.branch import BranchTarget, branch_target
from treeview.search.hits import EntryHits, Hit
from treeview.search.query import MAX_HITS, SearchQuery, matching_sessions, parse_query
from treeview.search.snippets import snippet
from treeview.search_index import (
    FTS_TABLE,
    PG_INDEX,
    ensure_index,
    ensure_index_after_migrate,
    install_body_index,
    install_index,
    remove_body_index,
    remove_index,
)

# The index itself lives in treeview.search_index; its public names are re-exported here (migration 0002 and
# the app config import them from this package).
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
