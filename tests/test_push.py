"""``./arbor push`` against a live server: the real client in a subprocess (Django blocked in it), daphne
serving the ingest API. After each scenario the server's export of the session is the client's file byte for
byte and holds as many entries as the file."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live_push import (
    Server,
    live,
    postgres_env,
    push,
    recreate_postgres_database,
    token_for,
    wait_for,
    watch,
)
from tests.reference import DATA
from treeview.session.generate import write_session
from treeview.session.jsonl import dumps
from treeview.session.session_manager import SessionManager

SENT = re.compile(r"^sent\s+(\S+) \((\d+) bytes, (\d+) new entries\)", re.M)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with live(tmp_path_factory.mktemp("live"), users=("alice", "bob")) as running:
        yield running


@pytest.fixture(scope="module")
def token(server: Server) -> str:
    return token_for(server, "alice", "--name", "tests")


def _session_of(server: Server, path: Path) -> dict[str, Any]:
    sid = SessionManager.open(path).session_id
    matches = [value for key, value in server.state().items() if key.split(":")[0] == sid]
    assert len(matches) == 1, f"{len(matches)} sessions with the id {sid}"
    return matches[0]


def assert_mirrors(server: Server, path: Path) -> dict[str, Any]:
    """The server's export is the file, byte for byte; it holds as many entries as the file."""
    held = _session_of(server, path)
    assert held["export"].encode() == path.read_bytes()
    assert held["entry_count"] == held["rows"] == len(SessionManager.open(path).entries)
    assert len(held["ids"]) == len(set(held["ids"])) or _has_duplicate_ids(path)
    return held


def _has_duplicate_ids(path: Path) -> bool:
    ids = [e.get("id") for e in SessionManager.open(path).entries]
    return len(ids) != len(set(ids))


def _sent(output: str) -> dict[str, tuple[int, int]]:
    return {m[1]: (int(m[2]), int(m[3])) for m in SENT.finditer(output)}


def _entry(entry_id: str, parent: str | None, text: str) -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    return dumps(
        {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-05-02T10:00:00.000Z",
            "message": message,
        }
    )


def _last_id(path: Path) -> str:
    return str(SessionManager.open(path).leaf_id)


def _grow(path: Path, count: int, tag: str) -> bytes:
    parent = _last_id(path)
    lines = []
    for n in range(count):
        entry_id = f"{tag}{n:06d}"[-8:].rjust(8, "0")
        lines.append(_entry(entry_id, parent, f"more text {tag} {n}"))
        parent = entry_id
    data = ("\n".join(lines) + "\n").encode()
    with path.open("ab") as handle:
        handle.write(data)
    return data


def test_first_push_then_only_the_appended_bytes_travel(server: Server, token: str, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    path = sessions / "big.jsonl"
    write_session(path, 3000, 11)

    first = push(server.url, token, str(sessions), home=tmp_path)

    assert first.returncode == 0, first.stderr + first.stdout
    assert _sent(first.stdout)[str(path)][0] == path.stat().st_size
    held = assert_mirrors(server, path)
    assert held["owner"] == "alice" and held["visibility"] == "private"

    appended = _grow(path, 25, "ap")
    second = push(server.url, token, str(sessions), home=tmp_path)

    assert second.returncode == 0, second.stderr
    # Only the new bytes travel: the client says so, and the server received just as many.
    assert _sent(second.stdout)[str(path)] == (len(appended), 25)
    held = assert_mirrors(server, path)
    assert held["received"] == path.stat().st_size
    third = push(server.url, token, str(sessions), home=tmp_path)
    assert third.returncode == 0 and f"up to date  {path}" in third.stdout


def test_a_renamed_title_slot_and_a_full_rewrite(server: Server, token: str, tmp_path: Path) -> None:
    path = tmp_path / "titled.jsonl"
    shutil.copyfile(DATA / "handmade" / "omp18_title_slot_new_entry_types.jsonl", path)
    assert push(server.url, token, str(path), home=tmp_path).returncode == 0
    assert_mirrors(server, path)

    data = path.read_bytes()
    end = data.index(b"\n") + 1
    slot = json.loads(data[:end])
    slot["title"] = "Renamed on the laptop"
    padded = dumps({**slot, "pad": ""})
    new_slot = dumps({**slot, "pad": " " * (end - 1 - len(padded.encode()))}).encode() + b"\n"
    path.write_bytes(new_slot + data[end:])
    renamed = push(server.url, token, str(path), home=tmp_path)

    assert renamed.returncode == 0, renamed.stderr
    assert _sent(renamed.stdout)[str(path)][0] == len(new_slot)
    assert assert_mirrors(server, path)["title"] == "Renamed on the laptop"

    # A full rewrite (omp's atomic rewrite: a new file with an entry changed and the last ones gone).
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b'"timestamp":"', b'"timestamp":"', 1).replace(b"e", b"E", 1)
    rewritten = b"\n".join(lines[:-3]) + b"\n"
    replacement = path.with_suffix(".new")
    replacement.write_bytes(rewritten)
    os.replace(replacement, path)
    again = push(server.url, token, str(path), home=tmp_path)

    assert again.returncode == 0, again.stderr
    assert _sent(again.stdout)[str(path)][0] == len(rewritten)
    assert_mirrors(server, path)


def test_a_half_written_tail_waits_then_completes(server: Server, token: str, tmp_path: Path) -> None:
    path = tmp_path / "tail.jsonl"
    write_session(path, 200, 12)
    line = _entry("tail0001", _last_id(path), "the agent is still writing this") + "\n"
    with path.open("a") as handle:
        handle.write(line[:30])
    assert push(server.url, token, str(path), home=tmp_path).returncode == 0
    held = assert_mirrors(server, path)
    count = held["entry_count"]

    with path.open("a") as handle:
        handle.write(line[30:])
    done = push(server.url, token, str(path), home=tmp_path)

    assert done.returncode == 0
    assert _sent(done.stdout)[str(path)] == (len(line) - 30, 1)
    assert assert_mirrors(server, path)["entry_count"] == count + 1


class _LosingProxy:
    """Forwards to the server but loses the answer to the first append (the server did store the chunk):
    the client must send the chunk again, and the server must store it once."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lost = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream))
            state = {"append": False}
            threading.Thread(target=self._pump, args=(client, upstream, state, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, state, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, state: dict[str, bool], up: bool) -> None:
        try:
            while data := source.recv(1 << 16):
                if up and b"/append?" in data:
                    state["append"] = True
                if not up and state["append"] and not self.lost.is_set():
                    self.lost.set()
                    break
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            # shutdown, not only close: it ends the connection at once, even while the other pump thread is
            # still blocked reading the same socket (the client then sees the answer lost, not a long wait).
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self.listener.close()


def test_a_chunk_whose_answer_is_lost_is_sent_again_and_stored_once(
    server: Server, token: str, tmp_path: Path
) -> None:
    path = tmp_path / "retried.jsonl"
    write_session(path, 300, 13)
    proxy = _LosingProxy(server.ports[0])
    try:
        result = push(f"http://127.0.0.1:{proxy.port}", token, str(path), home=tmp_path)
    finally:
        proxy.close()

    assert proxy.lost.is_set()
    assert result.returncode == 0, result.stdout + result.stderr
    held = assert_mirrors(server, path)
    size = path.stat().st_size
    assert held["stored"] == size and held["received"] == 2 * size


def test_two_clients_pushing_the_same_file(server: Server, token: str, tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    write_session(path, 2000, 14)
    results: list[Any] = []

    def run() -> None:
        results.append(push(server.url, token, "--machine", "same-laptop", str(path), home=tmp_path))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert [r.returncode for r in results] == [0, 0], [r.stdout + r.stderr for r in results]
    held = assert_mirrors(server, path)
    assert held["stored"] == path.stat().st_size


def test_watch_follows_appends_and_stops_when_the_token_is_revoked(server: Server, tmp_path: Path) -> None:
    revocable = token_for(server, "alice", "--name", "revoked-mid-watch")
    sessions = tmp_path / "watched"
    sessions.mkdir()
    path = sessions / "live.jsonl"
    write_session(path, 100, 15)
    log = tmp_path / "watch.log"
    client = watch(server.url, revocable, str(sessions), home=tmp_path, log=log)
    try:
        wait_for(lambda: "sent" in log.read_text(), 60)
        assert_mirrors(server, path)
        _grow(path, 3, "wa")
        wait_for(lambda: log.read_text().count("sent") >= 2, 30)
        assert_mirrors(server, path)

        server.shell(
            "from treeview.ingest.models import ApiToken; from django.utils import timezone; "
            f"ApiToken.objects.filter(lookup={revocable.split('_')[1]!r}).update(revoked_at=timezone.now())"
        )
        _grow(path, 1, "rv")
        assert client.wait(timeout=60) == 1
        assert "revoked" in log.read_text()
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


def test_watch_waits_while_the_server_is_down_and_catches_up(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    with live(tmp_path_factory.mktemp("restart")) as server:
        token = token_for(server, "alice")
        path = tmp_path / "offline.jsonl"
        write_session(path, 100, 16)
        log = tmp_path / "watch.log"
        client = watch(server.url, token, str(path), home=tmp_path, log=log)
        try:
            wait_for(lambda: "sent" in log.read_text(), 60)
            server.stop()
            _grow(path, 5, "of")
            # (the client's own words: the log's path has "wait" in it too)
            wait_for(lambda: "file(s) wait" in log.read_text(), 30)
            assert client.poll() is None
            server.start()
            wait_for(lambda: "caught up" in log.read_text(), 90)
            assert_mirrors(server, path)
            client.send_signal(15)  # SIGTERM: a clean stop
            assert client.wait(timeout=30) == 0
            assert "stopped" in log.read_text()
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()


def test_save_writes_a_private_config_and_arbor_token_works(
    server: Server, token: str, tmp_path: Path
) -> None:
    path = tmp_path / "configured.jsonl"
    write_session(path, 50, 17)
    saved = push(server.url, token, "--save", str(path), home=tmp_path)
    assert saved.returncode == 0, saved.stderr
    config = tmp_path / ".config" / "arbor" / "push.toml"
    assert config.stat().st_mode & 0o777 == 0o600
    assert token in config.read_text()
    # From the config alone (no --server, no --token), then with ARBOR_TOKEN.
    import subprocess
    import sys

    from tests.live_push import CLIENT, client_env

    again = subprocess.run(
        [sys.executable, "-c", CLIENT], env=client_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0 and f"up to date  {path}" in again.stdout, again.stderr
    config.unlink()
    by_env = subprocess.run(
        [sys.executable, "-c", CLIENT, "--server", server.url, str(path)],
        env=client_env(tmp_path, {"ARBOR_TOKEN": token}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert by_env.returncode == 0 and "up to date" in by_env.stdout


def test_a_bad_token_or_a_failed_file_exits_with_status_1(server: Server, token: str, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    write_session(path, 20, 18)
    refused = push(server.url, "arbor_aaaaaaaaaa_" + "A" * 43, str(path), home=tmp_path)
    assert refused.returncode == 1 and "not known here" in refused.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text(
        '{"type":"session","version":3,"id":"broken","timestamp":"x","cwd":"/"}\n' + "x" * 5 + "\n"
    )
    mixed = push(server.url, token, str(path), str(broken), home=tmp_path)
    assert "sent" in mixed.stdout


@pytest.mark.database
@pytest.mark.skipif(
    os.environ.get("ARBOR_DB") != "postgres", reason="PostgreSQL run only (ARBOR_DB=postgres)"
)
def test_two_workers_on_postgresql_lose_and_duplicate_nothing(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    database = f"{os.environ.get('PGDATABASE', 'arbor')}_push_live"
    recreate_postgres_database(database)
    with live(tmp_path_factory.mktemp("pg"), workers=2, **postgres_env(database)) as server:
        token = token_for(server, "alice")
        path = tmp_path / "pg.jsonl"
        write_session(path, 3000, 19)
        first, second = server.urls()
        results: list[Any] = []
        for round_ in range(3):
            threads = [
                threading.Thread(
                    target=lambda url=url: results.append(
                        push(url, token, "--machine", "m", str(path), home=tmp_path)
                    )
                )
                for url in (first, second)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            _grow(path, 40, f"pg{round_}")
            time.sleep(0.1)
        results.append(push(second, token, "--machine", "m", str(path), home=tmp_path))
        assert all(r.returncode == 0 for r in results), [r.stdout + r.stderr for r in results]
        held = assert_mirrors(server, path)
        assert held["stored"] == path.stat().st_size


def test_a_file_without_a_session_header_is_pushed_and_read_with_the_same_made_up_header(
    server: Server, token: str, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    # One named by a UUID (the id comes from the name) and one not (from the path on this machine).
    named = sessions / "2026-05-02T10-00-00-000Z_0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl"
    plain = sessions / "cut-by-hand.jsonl"
    for path, tag in ((named, "hn"), (plain, "hp")):
        lines = [_entry(f"{tag}000001", None, "the header was cut off")]
        lines += [_entry(f"{tag}00000{n}", f"{tag}00000{n - 1}", f"line {n}") for n in range(2, 6)]
        path.write_text("".join(line + "\n" for line in lines))
        assert not path.read_text().startswith('{"type":"session"')

    first = push(server.url, token, str(sessions), home=tmp_path)

    assert first.returncode == 0, first.stderr + first.stdout
    for path in (named, plain):
        assert _sent(first.stdout)[str(path)] == (path.stat().st_size, 5)
        # The server's session has the id the local import gives the file, and exports it byte for byte.
        held = assert_mirrors(server, path)
        assert held["entry_count"] == 5
    assert "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001" in "".join(server.state())

    appended = _grow(plain, 3, "hq")
    second = push(server.url, token, str(sessions), home=tmp_path)

    assert second.returncode == 0, second.stderr + second.stdout
    assert _sent(second.stdout)[str(plain)] == (len(appended), 3)
    assert assert_mirrors(server, plain)["entry_count"] == 8
