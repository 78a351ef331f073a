"""JSON and JSONL exactly as the agents read and write them.

Session files are written by JavaScript's ``JSON.stringify`` and read by a lenient line parser. This module
reproduces both in Python:

* :func:`dumps` produces the exact bytes ``JSON.stringify`` would (key order, JS number formatting, JS string
  escaping, ``undefined`` properties omitted);
* :func:`loads` parses one JSON value with JavaScript semantics where they matter (``1e400`` is not an error);
* :func:`parse_session_text` splits a file into the optional title slot, the header and the entries, keeping
  the exact text of every line and a warning for every line it had to skip or repair.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring
from typing import Any

import orjson

__all__ = [
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
]


class _Undefined:
    """JavaScript's ``undefined``: a property holding it is left out when an entry is serialized."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Any = _Undefined()

# Integers beyond 2**53 are not exact in JavaScript; JSON.stringify prints the nearest double.
_MAX_SAFE_INT = 2**53
_SURROGATE = re.compile("[\ud800-\udfff]")


class SessionFileError(ValueError):
    """A file that cannot be read as a session at all (no valid header). It is never rewritten."""


def format_number(value: float) -> str:
    """Format a number as JavaScript's ``Number.prototype.toString`` (and so ``JSON.stringify``) does."""
    if isinstance(value, int):
        if -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            return "null"
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr() gives the shortest round-trip digits, as ECMAScript's algorithm does; only the layout differs.
    text = repr(abs(value))
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac_part = mantissa.partition(".")
    if frac_part == "0":
        frac_part = ""
    digits = (int_part + frac_part).lstrip("0")
    # Position of the decimal point relative to the first significant digit (ECMAScript's "n").
    point = len(int_part) + (int(exp_text) if exp_text else 0)
    if int_part == "0":
        stripped = frac_part.lstrip("0")
        point = -(len(frac_part) - len(stripped)) + (int(exp_text) if exp_text else 0)
        digits = stripped
    digits = digits.rstrip("0") or "0"
    k = len(digits)
    if k <= point <= 21:
        body = digits + "0" * (point - k)
    elif 0 < point <= 21:
        body = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        body = "0." + "0" * (-point) + digits
    else:
        exponent = point - 1
        exp_sign = "+" if exponent >= 0 else "-"
        body = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + exp_sign + str(abs(exponent))
    return sign + body


def _escape(text: str) -> str:
    encoded: str = encode_basestring(text)
    if not text.isascii() and _SURROGATE.search(encoded):
        # Well-formed JSON.stringify escapes lone surrogates instead of emitting invalid UTF-8.
        encoded = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", encoded)
    return encoded


class _Text:
    """Already-serialized text on the writer's stack (separators, keys, scalars, closing brackets)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _scalar(value: Any) -> str | None:
    """The JSON text of a scalar, or None for a container."""
    if isinstance(value, str):
        return _escape(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, dict | list | tuple):
        return None
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _write_deep(value: Any, out: list[str]) -> None:
    # An explicit stack instead of recursion, for values nested as deep as the parser accepts (orjson: 1,024
    # levels), which exhaust Python's stack in _write. Scalars are written where they stand; only containers
    # wait. A third slower than _write, so only used when _write runs out of stack.
    stack: list[Any] = [value]
    while stack:
        value = stack.pop()
        if type(value) is _Text:
            out.append(value.text)
            continue
        text = _scalar(value)
        if text is not None:
            out.append(text)
            continue
        pending: list[Any] = []
        written: list[str] = []
        if isinstance(value, dict):
            written.append("{")
            first = True
            for key, item in value.items():
                if item is UNDEFINED or callable(item):
                    continue
                if not first:
                    written.append(",")
                first = False
                written.append(_escape(str(key)))
                written.append(":")
                text = _scalar(item)
                if text is None:
                    pending.append(_Text("".join(written)))
                    pending.append(item)
                    written.clear()
                else:
                    written.append(text)
            written.append("}")
        else:
            written.append("[")
            for index, item in enumerate(value):
                if index:
                    written.append(",")
                # Inside arrays JSON.stringify writes undefined as null.
                text = "null" if item is UNDEFINED else _scalar(item)
                if text is None:
                    pending.append(_Text("".join(written)))
                    pending.append(item)
                    written.clear()
                else:
                    written.append(text)
            written.append("]")
        pending.append(_Text("".join(written)))
        pending.reverse()
        stack.extend(pending)


def _write(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_escape(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int | float):
        out.append(format_number(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for key, item in value.items():
            if item is UNDEFINED or callable(item):
                continue
            if not first:
                out.append(",")
            first = False
            out.append(_escape(str(key)))
            out.append(":")
            _write(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            # Inside arrays JSON.stringify writes undefined as null.
            if item is UNDEFINED:
                out.append("null")
            else:
                _write(item, out)
        out.append("]")
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> str:
    """Serialize ``value`` exactly as JavaScript's ``JSON.stringify(value)`` would."""
    out: list[str] = []
    try:
        _write(value, out)
    except RecursionError:
        out.clear()
        _write_deep(value, out)
    return "".join(out)


def loads(text: str | bytes) -> Any:
    """Parse one JSON value; fall back to the standard library for what orjson refuses but JS accepts.

    orjson rejects lone surrogate escapes and numbers that overflow a double; ``JSON.parse`` keeps the first
    and turns the second into ``Infinity`` (which serializes back as ``null``).
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        if _too_deep(error):
            raise ValueError(TOO_DEEP) from None
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        try:
            return json.loads(text)
        except RecursionError:
            raise ValueError(TOO_DEEP) from None


@dataclass(slots=True)
class ParseWarning:
    """A line that was skipped or repaired while reading, with its 1-based physical line number."""

    line: int
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass(slots=True)
class ParsedLine:
    """One JSON object read from the file; ``start``/``end`` locate its exact bytes in the file."""

    value: dict[str, Any]
    line: int
    start: int
    end: int


class SessionFileChanged(RuntimeError):
    """The file on disk is no longer what was read (or appending now could corrupt it): re-read it first."""


@dataclass(slots=True)
class ParsedFile:
    """The result of reading a session file leniently.

    The exact text of every line stays available: from ``data`` when the text was given in memory, else
    from the file itself, read again on demand (a 250 MB session is never held twice). A file that changed
    since it was read refuses to serve old offsets.
    """

    data: bytes | None = None
    path: str | None = None
    size: int = 0
    mtime_ns: int = 0
    title_slot: dict[str, Any] | None = None
    title_slot_line: ParsedLine | None = None
    header: dict[str, Any] | None = None
    header_line: ParsedLine | None = None
    entries: list[ParsedLine] = field(default_factory=list)
    warnings: list[ParseWarning] = field(default_factory=list)
    # True when the data does not end in a newline: the last line may still be being written.
    incomplete_tail: bool = False

    def load_data(self) -> bytes:
        """The whole text as it was read."""
        if self.data is not None:
            return self.data
        assert self.path is not None
        with open(self.path, "rb") as handle:
            self._check_unchanged(os.fstat(handle.fileno()))
            return handle.read(self.size)

    def _check_unchanged(self, stat: os.stat_result) -> None:
        # Agents only append, so lines already read stay where they were as long as the file did not shrink.
        if stat.st_size < self.size or (stat.st_size == self.size and stat.st_mtime_ns != self.mtime_ns):
            raise SessionFileChanged(f"{self.path} was rewritten since it was read; read it again")

    def raw(self, parsed: ParsedLine) -> str:
        """The exact text a value was read from (without its newline)."""
        if self.data is not None:
            chunk = self.data[parsed.start : parsed.end]
        else:
            assert self.path is not None
            with open(self.path, "rb") as handle:
                self._check_unchanged(os.fstat(handle.fileno()))
                handle.seek(parsed.start)
                chunk = handle.read(parsed.end - parsed.start)
        return chunk.decode("utf-8", errors="surrogateescape")

    def raw_from(self, data: bytes, parsed: ParsedLine) -> str:
        """Like :meth:`raw`, from the text returned by :meth:`load_data` (many lines, one read)."""
        return data[parsed.start : parsed.end].decode("utf-8", errors="surrogateescape")


def is_title_slot(value: Any) -> bool:
    """Whether a parsed first line is the omp v16+ title slot (§20.1)."""
    return (
        isinstance(value, dict)
        and value.get("type") == "title"
        and value.get("v") == 1
        and isinstance(value.get("title"), str)
        and isinstance(value.get("updatedAt"), str)
        and isinstance(value.get("pad"), str)
    )


TITLE_SLOT_BYTES = 256


def title_slot(title: str, updated_at: str, source: str | None = None) -> dict[str, Any]:
    """oh-my-pi's title slot: a first line padded to exactly 256 bytes (newline included), rewritten in
    place on every rename. A title too long for the slot is cut at a code point."""

    def slot(text: str, pad: str) -> dict[str, Any]:
        value: dict[str, Any] = {"type": "title", "v": 1, "title": text}
        if source is not None:
            value["source"] = source
        value["updatedAt"] = updated_at
        value["pad"] = pad
        return value

    def size(value: dict[str, Any]) -> int:
        return len((dumps(value) + "\n").encode("utf-8", "surrogatepass"))

    low, high, best = 0, len(title), ""
    while low <= high:
        middle = (low + high) // 2
        if size(slot(title[:middle], "")) <= TITLE_SLOT_BYTES:
            best, low = title[:middle], middle + 1
        else:
            high = middle - 1
    padding = TITLE_SLOT_BYTES - size(slot(best, ""))
    if padding < 0:
        raise ValueError("title slot metadata exceeds the slot size")
    return slot(best, " " * padding)


_decoder = json.JSONDecoder()
_WS = " \t\r\n"

#: orjson refuses values nested deeper than this; the standard library's decoder would exhaust Python's stack
#: on them, so such a line is skipped (no agent writes one: it is damage or an attack).
MAX_DEPTH = 1024
TOO_DEEP = f"nested more than {MAX_DEPTH:,} levels deep, skipped"


def _too_deep(error: orjson.JSONDecodeError) -> bool:
    message = str(error).lower()
    return "depth limit" in message or "recursion" in message


def _split_glued(text: str) -> tuple[list[tuple[Any, int, int]], str]:
    """Decode consecutive JSON values of one line: (value, start, end) spans and the undecodable rest."""
    values: list[tuple[Any, int, int]] = []
    pos = 0
    end = len(text)
    while pos < end:
        while pos < end and text[pos] in _WS:
            pos += 1
        if pos >= end:
            break
        try:
            value, stop = _decoder.raw_decode(text, pos)
        except (ValueError, RecursionError):
            return values, text[pos:]
        values.append((value, pos, stop))
        pos = stop
    return values, ""


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def parse_session_text(text: str) -> ParsedFile:
    """Read a session file given as text; see :func:`parse_session_bytes`."""
    return parse_session_bytes(text.encode("utf-8", errors="surrogatepass"))


CHUNK_SIZE = 8 * 1024 * 1024


@dataclass(slots=True)
class PhysicalLine:
    """One line of a file: its bytes (without the newline) and where they are in the whole text."""

    number: int
    start: int
    end: int
    data: bytes
    has_newline: bool


def iter_physical_lines(
    data: bytes | Iterable[bytes], warnings: list[ParseWarning]
) -> Iterator[PhysicalLine]:
    """Split a text, given whole or as successive chunks, into lines with their offsets in the whole text.

    A byte order mark before the first line is dropped (with a warning). A file read piece by piece never
    needs to be held in memory at once.
    """
    chunks: Iterable[bytes] = (data,) if isinstance(data, bytes) else data
    number = 0
    base = 0  # offset of buf[0] in the whole text
    pending: list[bytes] = []
    first = True
    for chunk in chunks:
        if not chunk:
            continue
        if b"\n" not in chunk:
            pending.append(chunk)
            continue
        buf = b"".join((*pending, chunk)) if pending else chunk
        pending = []
        last = buf.rindex(b"\n")
        pos = 0
        while pos <= last:
            stop = buf.index(b"\n", pos)
            number += 1
            start = pos
            if first:
                first = False
                if buf.startswith(b"\xef\xbb\xbf"):
                    start += 3
                    warnings.append(ParseWarning(number, "byte order mark at the start of the file ignored"))
            yield PhysicalLine(number, base + start, base + stop, buf[start:stop], True)
            pos = stop + 1
        if last + 1 < len(buf):
            pending.append(buf[last + 1 :])
        base += last + 1
    rest = b"".join(pending)
    if rest:
        number += 1
        start = 3 if first and rest.startswith(b"\xef\xbb\xbf") else 0
        if start:
            warnings.append(ParseWarning(number, "byte order mark at the start of the file ignored"))
        yield PhysicalLine(number, base + start, base + len(rest), rest[start:], False)


def iter_jsonl(data: bytes | Iterable[bytes], warnings: list[ParseWarning]) -> Iterator[ParsedLine]:
    """Yield every JSON object of a JSONL text, leniently (§2, §21.4).

    ``data`` is the whole text or its successive chunks; ``start``/``end`` of each result are offsets in the
    whole text. Blank lines, lines that are not JSON, values that are not objects and a final partial line are
    skipped; a line holding several JSON objects glued together yields every object (the original keeps only
    the first). Every skipped or repaired line is reported in ``warnings``.
    """
    for line in iter_physical_lines(data, warnings):
        yield from parse_line(line, warnings)


def parse_line(line: PhysicalLine, warnings: list[ParseWarning]) -> list[ParsedLine]:
    """The JSON objects of one physical line (usually one), with warnings for what was skipped or repaired."""
    return _parse_line(line.data, line.start, line.end, line.number, line.has_newline, warnings)


def _parse_line(
    line: bytes, start: int, stop: int, number: int, has_newline: bool, warnings: list[ParseWarning]
) -> list[ParsedLine]:
    """The objects of one physical line (usually one), with warnings for what was skipped or repaired."""
    objects: list[tuple[Any, int, int]]
    try:
        objects = [(orjson.loads(line), start, stop)]
    except orjson.JSONDecodeError as error:
        if _too_deep(error):
            warnings.append(ParseWarning(number, TOO_DEEP))
            return []
        if not line.strip():
            warnings.append(ParseWarning(number, "blank line skipped"))
            return []
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            warnings.append(ParseWarning(number, "invalid UTF-8 replaced with U+FFFD"))
        spans, rest = _split_glued(text)
        if not has_newline and (rest or not spans):
            warnings.append(ParseWarning(number, "incomplete last line (no newline at the end) skipped"))
            return []
        if not spans:
            warnings.append(ParseWarning(number, f"not valid JSON, skipped: {_short(text)!r}"))
            return []
        if len(spans) > 1:
            warnings.append(
                ParseWarning(
                    number,
                    f"{len(spans)} JSON objects glued on one line; each was recovered",
                )
            )
        if rest:
            warnings.append(
                ParseWarning(
                    number,
                    f"unreadable text after the JSON skipped: {_short(rest)!r}",
                )
            )
        if len(spans) == 1 and not rest:
            objects = [(spans[0][0], start, stop)]
        else:
            objects = [
                (
                    value,
                    start + len(text[:a].encode()),
                    start + len(text[:b].encode()),
                )
                for value, a, b in spans
            ]
    result: list[ParsedLine] = []
    for value, a, b in objects:
        if not isinstance(value, dict):
            warnings.append(ParseWarning(number, f"not a JSON object, skipped: {_short(repr(value))}"))
            continue
        result.append(ParsedLine(value, number, a, b))
    return result


def parse_jsonl(text: str) -> tuple[list[dict[str, Any]], list[ParseWarning]]:
    """The objects of a JSONL text and the warnings about what was skipped or repaired."""
    warnings: list[ParseWarning] = []
    values = [parsed.value for parsed in iter_jsonl(text.encode("utf-8", errors="surrogatepass"), warnings)]
    return values, warnings


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
    from .headerless import headerless_warning, is_sdk_v4, sdk_v4_message, synthesized_header

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
