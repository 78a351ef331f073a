"""JSON and JSONL exactly as the agents read and write them.

Session files are written by JavaScript's ``JSON.stringify`` and read by a lenient line parser. This package
reproduces both in Python:

* :func:`dumps` produces the exact bytes ``JSON.stringify`` would (key order, JS number formatting, JS string
  escaping, ``undefined`` properties omitted);
* :func:`loads` parses one JSON value with JavaScript semantics where they matter (``1e400`` is not an error);
* :func:`parse_session_text` splits a file into the optional title slot, the header and the entries, keeping
  the exact text of every line and a warning for every line it had to skip or repair.

Modules: ``undefined`` (``UNDEFINED``), ``stringify`` (``dumps``), ``lines`` (``loads`` and line parsing),
``title`` (the title slot), ``parsed`` (results and errors) and ``files`` (whole session files).
"""

from treeview.session.jsonl.files import parse_session_bytes, parse_session_file, parse_session_text
from treeview.session.jsonl.lines import (
    CHUNK_SIZE,
    PhysicalLine,
    iter_jsonl,
    iter_physical_lines,
    loads,
    parse_jsonl,
    parse_line,
)
from treeview.session.jsonl.parsed import (
    ParsedFile,
    ParsedLine,
    ParseWarning,
    SessionFileChanged,
    SessionFileError,
)
from treeview.session.jsonl.stringify import _write_deep as _write_deep
from treeview.session.jsonl.stringify import dumps, format_number
from treeview.session.jsonl.title import TITLE_SLOT_BYTES, is_title_slot, title_slot
from treeview.session.jsonl.undefined import UNDEFINED

__all__ = [
    "CHUNK_SIZE",
    "TITLE_SLOT_BYTES",
    "UNDEFINED",
    "ParseWarning",
    "ParsedFile",
    "ParsedLine",
    "SessionFileChanged",
    "SessionFileError",
    "dumps",
    "format_number",
    "is_title_slot",
    "PhysicalLine",
    "iter_jsonl",
    "iter_physical_lines",
    "parse_line",
    "parse_jsonl",
    "loads",
    "parse_session_bytes",
    "parse_session_file",
    "parse_session_text",
    "title_slot",
]
