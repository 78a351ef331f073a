"""Streamed downloads under a live daphne (issue 11, findings 8 and 10): readers who stop reading cost the
server about one chunk each, not the file; a database error part way cuts the transfer off visibly at once
instead of leaving the client waiting."""

from __future__ import annotations

import http.client
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser import live_server
from tests.test_share import _line, _message, _text

ENTRIES = 4000
TEXT = 10_000  # characters per entry: a file of about 40 MB
SID = "stream-big-0001"
URL = f"/s/{SID}/download.jsonl"
#: The branch to the last entry: the whole 40 MB again, written as /branch writes a new file.
BRANCH_URL = f"/s/{SID}/branch/b{ENTRIES - 1}.jsonl"
STALLED = 5

pytestmark = pytest.mark.browser  # a live server in a subprocess, like the browser tests


def big_session(directory: Path) -> None:
    header = {"type": "session", "version": 3, "id": SID, "timestamp": "2026-05-01T10:00:00.000Z"}
    lines = [_line(header)]
    filler = "".join(chr(97 + (i * 7) % 26) for i in range(TEXT))
    for i in range(ENTRIES):
        parent = f"b{i - 1}" if i else None
        lines.append(
            _message(f"b{i}", parent, "user" if i % 2 else "assistant", _text(f"{i} {filler}"), i % 60)
        )
    directory.mkdir()
    (directory / "big.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("stream")
    big_session(root / "sessions")
    with live_server(root, root / "sessions") as url:
        yield url, root


def _daphne_pid(url: str) -> int:
    port = url.rsplit(":", 1)[1]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"daphne" in b" ".join(args) and port.encode() in args:
            return int(proc.name)
    raise AssertionError("no daphne process on " + url)


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _stalled_reader(url: str, path: str = URL) -> socket.socket:
    """A client that asks for the file, reads its first bytes and then stops reading."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.connect((host, int(port)))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    assert sock.recv(16 * 1024).startswith(b"HTTP/1.1 200")
    return sock


def _settled_rss(pid: int, seconds: float = 8) -> float:
    """The server's RSS once it stops growing (or after ``seconds``)."""
    last = _rss_mb(pid)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(1)
        now = _rss_mb(pid)
        if abs(now - last) < 1:
            return now
        last = now
    return last


@pytest.mark.parametrize("path", [URL, BRANCH_URL], ids=["session", "branch"])
def test_stalled_readers_hold_about_a_chunk_each(server: tuple[str, Path], path: str) -> None:
    url, _ = server
    pid = _daphne_pid(url)
    host = url.removeprefix("http://")
    # one whole download first: what a download costs once (imports, caches) is not what we measure
    conn = http.client.HTTPConnection(host, timeout=60)
    conn.request("GET", path)
    size = len(conn.getresponse().read())
    conn.close()
    assert size > 35_000_000
    before = _settled_rss(pid)
    readers = [_stalled_reader(url, path) for _ in range(STALLED)]
    try:
        grown = _settled_rss(pid) - before
        print(f"RSS before {before:.0f} MB, with {STALLED} stalled readers +{grown:.0f} MB")
    finally:
        for sock in readers:
            sock.close()
    # Without back-pressure each reader made the server buffer the whole 40 MB file (+200 MB for five).
    assert grown < 50, f"{STALLED} stalled readers of a {size // 1_000_000} MB file cost {grown:.0f} MB"


def test_a_database_error_part_way_cuts_the_download_off(server: tuple[str, Path]) -> None:
    url, root = server
    host = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host, timeout=30)
    conn.request("GET", URL)
    response = conn.getresponse()
    assert response.status == 200
    first = response.read(1_000_000)
    assert len(first) == 1_000_000
    database = sqlite3.connect(root / "data" / "db.sqlite3", timeout=30)
    database.execute("ALTER TABLE treeview_entry RENAME TO treeview_entry_gone")
    database.commit()
    try:
        started = time.monotonic()
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            response.read()
        assert time.monotonic() - started < 20, "the client saw the end only when it gave up"
    finally:
        database.execute("ALTER TABLE treeview_entry_gone RENAME TO treeview_entry")
        database.commit()
        database.close()
        conn.close()
    log = (root / "daphne.log").read_text(errors="replace")
    assert "failed part way" in log
