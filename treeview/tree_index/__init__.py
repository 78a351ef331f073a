"""A session's tree built from the database columns, for the tree selector (§17) of the web pages.

No line is parsed again: each node carries the row text, search text and "has text" fact computed once at
import (``Entry.text``, ``search_text``, ``has_text``), so the core's own flattening, filtering, search and
selection rules run unchanged on it (``treeview.session.selector``). The stored row text is v15's wording;
the newest agents' wording of the rows a page shows is read from their lines once (:meth:`Forest.row_texts`).

A :class:`Forest` is the per-session structure the web pages keep in memory: it is read once (one query over
the indexed columns, never ``raw``) and then kept current by reading only the rows appended since
(:meth:`Forest.refresh`): a label, an entry Arbor appended, the lines a sync added. Anything else (a rewrite
that deleted rows, an entry that would move existing nodes) makes it read everything again. A big session's
rows are also kept on disk (a snapshot under ``ARBOR_DATA_DIR/cache/forests``), so that after a restart the
server reads that file and only the rows added since, not the whole table. The import writes the rows; the
first server process that has the forest in memory (``warmup``'s prewarm) writes the forest itself instead
(its nodes as columns, its links, and its tree flattened for the session's leaf): later starts make the
nodes with a few comprehensions and neither link, sort nor flatten; the flattened tree is used only while the
forest is exactly the snapshot's (no row added, the same leaf).

The package's modules: rows.py (the columns read, row flags, ``DbNode``), gc_pause.py, agent_texts.py
(what the newest rule sets read from the lines), snapshot_files.py and fuzzy_files.py (what is kept on disk),
and ``Forest`` in forest.py, built from layers, each a class in its own module that builds on the one
before: building.py (in memory), loading.py (from the table or the snapshot), forest.py (``load``, the
rule sets' texts and search haystacks).
"""

from treeview.tree_index.agent_texts import AgentTexts, row_texts_of
from treeview.tree_index.forest import Forest, flatten_session, load_forest, select_rows
from treeview.tree_index.gc_pause import gc_paused
from treeview.tree_index.loading import prepare_snapshot
from treeview.tree_index.rows import (
    HIDDEN_ASSISTANT,
    OMP_SETTINGS,
    PI_SETTINGS,
    PI_USAGE,
    SETTINGS,
    TOOL_RESULT,
    USER,
    DbNode,
)
from treeview.tree_index.snapshot_files import snapshot_dir, snapshot_sessions

__all__ = [
    "HIDDEN_ASSISTANT",
    "OMP_SETTINGS",
    "PI_SETTINGS",
    "PI_USAGE",
    "SETTINGS",
    "TOOL_RESULT",
    "USER",
    "AgentTexts",
    "DbNode",
    "Forest",
    "flatten_session",
    "gc_paused",
    "load_forest",
    "prepare_snapshot",
    "row_texts_of",
    "select_rows",
    "snapshot_dir",
    "snapshot_sessions",
]
