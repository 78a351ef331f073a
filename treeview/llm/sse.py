"""An incremental parser for server-sent events (the WHATWG ``text/event-stream`` format).

Both providers stream their replies as server-sent events. The parser is pure: feed it the bytes as they
arrive, in chunks of any size (a chunk may end inside a line, inside a ``\\r\\n`` pair or inside a UTF-8
sequence), and it returns the events that became complete. No I/O, no Django.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

__all__ = ["SseEvent", "SseParser"]


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its type (``"message"`` unless an ``event:`` field named one), its data
    (the ``data:`` lines joined with ``"\\n"``), the last event id, and a ``retry:`` value if it had one."""

    event: str
    data: str
    id: str = ""
    retry: int | None = None


class SseParser:
    """Turns a byte stream into :class:`SseEvent` values, following the HTML standard's parsing rules.

    Lines end with ``\\r\\n``, ``\\n`` or ``\\r``; a leading byte-order mark is dropped; ``:`` starts a
    comment; an empty line dispatches the event collected so far (nothing when it has no data). An event
    left without its closing empty line when the stream ends is discarded, as the standard says.
    """

    def __init__(self) -> None:
        # The stream is always UTF-8; invalid bytes become U+FFFD instead of failing the whole reply.
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._started = False
        # A chunk ended with "\r": a "\n" at the start of the next chunk belongs to the same line end.
        self._after_cr = False
        self._event_type = ""
        self._data: list[str] = []
        self._last_id = ""
        self._retry: int | None = None

    @property
    def pending(self) -> bool:
        """True when data has been received that has not been dispatched as an event yet."""
        return bool(self._buffer or self._data or self._event_type)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse the next ``chunk`` of the stream; return the events it completed, in order."""
        text = self._decoder.decode(chunk)
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        if self._after_cr and text:
            self._after_cr = False
            text = text.removeprefix("\n")
        self._buffer += text
        events: list[SseEvent] = []
        buffer = self._buffer
        length = len(buffer)
        start = 0
        # The next "\r" and "\n" are looked up again only once passed, so a chunk of many lines is
        # scanned in linear time (-1: none left).
        cr = buffer.find("\r")
        lf = buffer.find("\n")
        while cr >= 0 or lf >= 0:
            end = lf if cr < 0 or 0 <= lf < cr else cr
            self._line(buffer[start:end], events)
            start = end + 1
            if end == cr:
                if start == length:
                    self._after_cr = True
                elif buffer[start] == "\n":
                    start += 1
            if 0 <= cr < start:
                cr = buffer.find("\r", start)
            if 0 <= lf < start:
                lf = buffer.find("\n", start)
        self._buffer = buffer[start:]
        return events

    def _line(self, line: str, events: list[SseEvent]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event_type = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        # Any other field name is ignored (standard).

    def _dispatch(self, events: list[SseEvent]) -> None:
        event_type, self._event_type = self._event_type, ""
        retry, self._retry = self._retry, None
        if not self._data:
            return
        data = "\n".join(self._data)
        self._data = []
        events.append(SseEvent(event=event_type or "message", data=data, id=self._last_id, retry=retry))
