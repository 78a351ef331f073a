import os
from pathlib import Path

import pytest

from treeview.session_files import HeaderError, list_session_files, read_session_header

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/p"}\n'


def test_header_is_the_first_line(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_text(HEADER + '{"type":"message"}\n')

    assert read_session_header(path)["id"] == "s1"


def test_title_slot_before_header_is_skipped(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    slot = '{"type":"title","v":1,"title":"T","updatedAt":"2026-05-01T10:00:08.000Z","pad":"  "}\n'
    path.write_text(slot + HEADER)

    assert read_session_header(path)["cwd"] == "/p"


def test_unparsable_lines_before_header_are_skipped_like_the_lenient_loader(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n{not json\n\xff\xfe\n" + HEADER.encode())

    assert read_session_header(path)["id"] == "s1"


def test_header_without_trailing_newline_is_not_accepted(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_text(HEADER.rstrip("\n"))

    with pytest.raises(HeaderError, match="no session header"):
        read_session_header(path)


def test_header_needs_a_string_id(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"type":"session","id":42}\n')

    with pytest.raises(HeaderError, match="not a session header"):
        read_session_header(path)


def test_only_the_first_bytes_are_read(tmp_path: Path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"pad":"' + "x" * 100 + '"}' + HEADER)

    with pytest.raises(HeaderError, match="first 64 bytes"):
        read_session_header(path, limit=64)


def test_listing_is_newest_first_and_capped(tmp_path: Path):
    for index in range(3):
        path = tmp_path / f"{index}.jsonl"
        path.write_text(HEADER)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))

    listing = list_session_files([tmp_path], limit=2)

    assert [row.name for row in listing.rows] == ["2.jsonl", "1.jsonl"]
    assert listing.total == 3


def test_unreadable_entry_becomes_an_error_row(tmp_path: Path):
    (tmp_path / "dir.jsonl").mkdir()

    (row,) = list_session_files([tmp_path], limit=10).rows

    assert row.error is not None
    assert row.error.startswith("cannot read")
