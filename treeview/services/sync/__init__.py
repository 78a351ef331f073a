"""Import and sync session files into the database, incrementally and without losing a byte.

A file is read as a stream of lines (never held whole). What is stored reproduces it exactly: each entry row
keeps its line and the text before it (the newline, blank or broken lines), the session keeps what precedes
the header (title slot) and what follows the last complete line. Re-syncing a file costs:

* unchanged (same size and mtime): one ``stat``;
* grown (the agent appended; the first and last 64 KiB imported are unchanged): only the new lines;
* rewritten (migration, title change, omp's atomic rewrite): the whole file, compared with the stored entries
  so that only what really changed is replaced; entries Arbor appended that are not in the file are kept.

A half-written last line (no newline yet) is not imported; it is kept aside and read again at the next sync.

Modules: ``files`` (sync_file, sync_paths, import_upload), ``paths`` (where session files are), ``importer``
(one file's transaction; its first half, header and session row, in ``head``), ``lines`` (bytes, hashes,
digests), ``sessions`` (the row of a file), ``entry_rows`` (fast inserts on a writer thread), ``totals`` (the
session list's figures), ``result``.
"""

from treeview.services.sync.files import import_upload, sync_file, sync_paths
from treeview.services.sync.lines import line_digest, window_hashes
from treeview.services.sync.paths import (
    default_session_dirs,
    find_session_files,
    in_session_dirs,
    is_archive,
    is_session_file_name,
)
from treeview.services.sync.result import SyncResult
from treeview.services.sync.totals import update_totals

__all__ = [
    "SyncResult",
    "default_session_dirs",
    "find_session_files",
    "import_upload",
    "in_session_dirs",
    "is_archive",
    "is_session_file_name",
    "line_digest",
    "sync_file",
    "sync_paths",
    "update_totals",
    "window_hashes",
]
