"""The session tree: load, index, navigate and append, with oh-my-pi v15 semantics (§8–§10).

Entries are plain dicts exactly as parsed (key order kept). Every entry loaded from a file remembers where its
exact text is, so an untouched entry is always written back byte for byte; new entries are serialized as the
original serializes them (:func:`~treeview.session.jsonl.dumps`).

Arbor never rewrites a user's file: appends go to the end of a file only when it still ends where it was read,
and a file that needed a migration is never written in place (write a migrated copy instead).

``SessionManager`` (manager.py) is built from layers, each a class in its own module that builds on the one
before: index.py (loading, the index), reading.py, writing.py, appending.py, branching.py; values.py holds
what they hand out.
"""

from ..jsonl import SessionFileChanged
from .manager import SessionManager
from .values import EntryNotFound, TreeNode, UsageStatistics, session_file_name

__all__ = [
    "EntryNotFound",
    "SessionFileChanged",
    "SessionManager",
    "TreeNode",
    "UsageStatistics",
    "session_file_name",
]
