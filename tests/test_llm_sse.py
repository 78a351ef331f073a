"""The incremental server-sent-events parser (treeview.llm.sse)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from treeview.llm.sse import SseEvent, SseParser


def _parse(*chunks: bytes) -> list[SseEvent]:
    parser = SseParser()
    return [event for chunk in chunks for event in parser.feed(chunk)]


def test_data_lines_are_joined_with_newlines_and_dispatched_on_a_blank_line() -> None:
    assert _parse(b"data: one\ndata: two\n\ndata: three\n\n") == [
        SseEvent(event="message", data="one\ntwo"),
        SseEvent(event="message", data="three"),
    ]


def test_event_id_and_retry_fields() -> None:
    events = _parse(b"event: message_start\nid: 7\nretry: 1500\ndata: {}\n\ndata: x\n\n")
    assert events == [
        SseEvent(event="message_start", data="{}", id="7", retry=1500),
        # The id sticks; the event type and retry belong to one event only.
        SseEvent(event="message", data="x", id="7"),
    ]


def test_comments_unknown_fields_and_bad_retry_are_ignored() -> None:
    assert _parse(b": keep-alive\nfoo: bar\nretry: soon\ndata: x\n\n") == [
        SseEvent(event="message", data="x")
    ]


def test_only_one_space_after_the_colon_is_removed() -> None:
    assert _parse(b"data:no space\n\ndata:  two spaces\n\n") == [
        SseEvent(event="message", data="no space"),
        SseEvent(event="message", data=" two spaces"),
    ]


def test_a_field_without_colon_has_an_empty_value() -> None:
    assert _parse(b"data\n\n") == [SseEvent(event="message", data="")]


def test_an_event_without_data_is_not_dispatched_and_its_type_is_forgotten() -> None:
    assert _parse(b"event: ping\n\ndata: x\n\n") == [SseEvent(event="message", data="x")]


def test_crlf_cr_and_lf_line_endings() -> None:
    expected = [SseEvent(event="a", data="1"), SseEvent(event="message", data="2")]
    assert _parse(b"event: a\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n") == expected
    assert _parse(b"event: a\rdata: 1\r\rdata: 2\r\r") == expected
    assert _parse(b"event: a\ndata: 1\n\ndata: 2\n\n") == expected


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    # A "\n" arriving after a chunk that ended in "\r" must not count as the blank line that dispatches.
    assert _parse(b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n") == [SseEvent(event="message", data="a\nb")]


def test_utf8_split_inside_a_character() -> None:
    payload = "data: héllo — 世界\n\n".encode()
    chunks = [payload[index : index + 1] for index in range(len(payload))]
    assert _parse(*chunks) == [SseEvent(event="message", data="héllo — 世界")]


def test_leading_byte_order_mark_is_dropped_once() -> None:
    assert _parse(b"\xef\xbb", b"\xbfdata: x\n\n") == [SseEvent(event="message", data="x")]
    assert _parse("data: \ufeffx\n\n".encode()) == [SseEvent(event="message", data="\ufeffx")]


def test_an_unfinished_event_stays_pending() -> None:
    parser = SseParser()
    assert parser.feed(b"data: partial\n") == []
    assert parser.pending
    assert parser.feed(b"\n") == [SseEvent(event="message", data="partial")]
    assert not parser.pending


_text = st.text(
    alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=12
)


@given(
    events=st.lists(
        st.tuples(st.sampled_from(["", "delta", "ping"]), st.lists(_text, min_size=1, max_size=3))
    ),
    newline=st.sampled_from(["\n", "\r\n", "\r"]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_split_of_the_stream_gives_the_same_events(
    events: list[tuple[str, list[str]]], newline: str, cuts: list[int]
) -> None:
    stream = ""
    for kind, lines in events:
        if kind:
            stream += f"event: {kind}{newline}"
        stream += "".join(f"data: {line}{newline}" for line in lines) + newline
    payload = stream.encode()
    positions = sorted({0, len(payload), *(cut for cut in cuts if cut < len(payload))})
    chunks = [payload[start:end] for start, end in zip(positions, positions[1:], strict=False)]
    expected = [SseEvent(event=kind or "message", data="\n".join(lines)) for kind, lines in events]
    assert _parse(payload) == expected
    assert _parse(*chunks) == expected
