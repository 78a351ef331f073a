"""Reading a whole session file: title slot, header and entries, from text, bytes or a path."""

from __future__ import annotations

import os
from collections.abc import Iterator

from treeview.session.jsonl.lines import CHUNK_SIZE, iter_jsonl
from treeview.session.jsonl.parsed import ParsedFile, ParsedLine, ParseWarning, SessionFileError
from treeview.session.jsonl.title import is_title_slot


def parse_session_text(text: str) -> ParsedFile:
    """Read a session file given as text; see :func:`parse_session_bytes`."""
    return parse_session_bytes(text.encode("utf-8", errors="surrogatepass"))


def parse_session_bytes(data: bytes, headerless_id: str | None = None) -> ParsedFile:
    """Read a session file's text leniently (see :func:`iter_jsonl`), splitting off the title slot and header.

    Raises :class:`SessionFileError` when no valid header starts the file, unless ``headerless_id`` is given:
    then a file whose first object is an entry is read with a header made up with that id (``header_line``
    None, a warning; treeview/session/headerless.py).
    """
    result = ParsedFile(data=data, size=len(data), incomplete_tail=bool(data) and not data.endswith(b"\n"))
    return _split_session(result, iter_jsonl(data, result.warnings), headerless_id)


def parse_session_file(path: str | os.PathLike[str], headerless_id: str | None = None) -> ParsedFile:
    """Read a session file piece by piece (see :func:`parse_session_bytes`); its text is not kept."""
    result = ParsedFile(path=os.fspath(path))
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
        result.size, result.mtime_ns = stat.st_size, stat.st_mtime_ns
        chunks = iter(lambda: handle.read(CHUNK_SIZE), b"")
        _split_session(result, iter_jsonl(_limited(chunks, stat.st_size), result.warnings), headerless_id)
        if result.size:
            handle.seek(result.size - 1)
            result.incomplete_tail = handle.read(1) != b"\n"
    return result


def _limited(chunks: Iterator[bytes], size: int) -> Iterator[bytes]:
    """Stop at the size the file had when opened (an agent may be appending while we read)."""
    left = size
    for chunk in chunks:
        if left <= 0:
            return
        yield chunk if len(chunk) <= left else chunk[:left]
        left -= len(chunk)


def _headerless(result: ParsedFile, parsed: ParsedLine, headerless_id: str | None) -> None:
    """The first object is not a header: read the file with a made-up one when ``headerless_id`` is given
    (treeview/session/headerless.py), else refuse it."""
    from treeview.session.headerless import headerless_warning, is_sdk_v4, sdk_v4_message, synthesized_header

    value, number = parsed.value, parsed.line
    if is_sdk_v4(value):
        raise SessionFileError(f"line {number}: {sdk_v4_message(value)}")
    if headerless_id is None:
        raise SessionFileError(
            f"line {number}: not a session file: the first JSON object must be a session header "
            '({"type":"session","id":…})'
        )
    result.header = synthesized_header(headerless_id, value)
    result.warnings.append(ParseWarning(number, headerless_warning(headerless_id, value)))


def _split_session(
    result: ParsedFile, parsed_lines: Iterator[ParsedLine], headerless_id: str | None = None
) -> ParsedFile:
    entries = result.entries
    first_object = True
    for parsed in parsed_lines:
        value, number = parsed.value, parsed.line
        if first_object:
            first_object = False
            if number == 1 and is_title_slot(value):
                result.title_slot, result.title_slot_line = value, parsed
                first_object = True
                continue
            if value.get("type") != "session" or not isinstance(value.get("id"), str):
                _headerless(result, parsed, headerless_id)
            else:
                result.header, result.header_line = value, parsed
                continue
        entries.append(parsed)
    if result.header is None:
        empty = not result.warnings and not result.size
        reason = "the file is empty" if empty else "no JSON object in it, so no session header"
        raise SessionFileError(f"not a session file: {reason}")
    return result
