"""Reading lines: ``loads`` with JavaScript semantics, physical lines of a file, and one JSONL line each."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from treeview.session.jsonl.parsed import ParsedLine, ParseWarning


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
