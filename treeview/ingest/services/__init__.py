"""The writers of the ingest API: pushed bytes are kept in a file of the server's and imported from it exactly
as ``sync`` imports a session file (grown: only the new lines; rewritten: reconciled entry by entry; a
half-written last line waits).

Every change to one pushed file runs in one transaction with its ``IngestSource`` row locked, so two
workers (or two clients) pushing the same file are serialized; the row's ``length`` is the truth: bytes a
crashed request left beyond it are cut off before the next write. A chunk is placed at the offset the client
says: bytes the server already holds are compared, not stored again (a retried chunk is stored once).

Modules: ``sources`` (pushed files and their rows), ``writing`` (placing chunks, importing), ``pushes``
(append, title slot, rewrite), ``uploads`` (web uploads) and ``defaults`` (the visibility of pushes).
"""

from treeview.ingest.services.defaults import default_visibility, set_defaults
from treeview.ingest.services.pushes import append, put_slot, rewrite
from treeview.ingest.services.sources import IngestError, Pushed, describe, limits, open_source
from treeview.ingest.services.uploads import import_upload

__all__ = [
    "IngestError",
    "Pushed",
    "append",
    "default_visibility",
    "describe",
    "import_upload",
    "limits",
    "open_source",
    "put_slot",
    "rewrite",
    "set_defaults",
]
