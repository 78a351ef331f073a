"""The share form's background scan (issue 11, finding 9): a long branch is scanned over the share-scan
socket with progress, chunk results are cached by content so a sibling branch rescans only where it differs,
and the form then shows the preview without scanning in its request."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from tests.sockets import signed_in_socket
from tests.test_access import _world
from tests.test_share import GITHUB_TOKEN, _line, _message, _text
from treeview.models import AgentSession
from treeview.redaction import Redactor
from treeview.services import share, share_scan
from treeview.services.sync import sync_file

N = 1300  # entries on the main branch: three chunks of 500 (the last one partial)
SID = "share-scan-0001"


@pytest.fixture(autouse=True)
def _multi_user_fresh_cache(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False
    cache.clear()


def _session(tmp_path: Path) -> Path:
    """A chain e0 … e{N-1} (e3 holds a token) and a sibling leaf f below e{N-2}."""
    header = {"type": "session", "version": 3, "id": SID, "timestamp": "2026-05-01T10:00:00.000Z"}
    lines = [_line(header)]
    for i in range(N):
        text = f"token {GITHUB_TOKEN}" if i == 3 else f"step {i}"
        lines.append(_message(f"e{i}", f"e{i - 1}" if i else None, "user", _text(text), i % 60))
    lines.append(_message("f", f"e{N - 2}", "user", _text("the sibling"), 1))
    path = tmp_path / "scan.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _setup(tmp_path: Path) -> tuple[Any, AgentSession]:
    world = _world(tmp_path)
    result = sync_file(_session(tmp_path))
    assert result.session is not None, result.error
    AgentSession.objects.filter(pk=result.session.pk).update(owner=world.users["owner"], visibility="private")
    return world, AgentSession.objects.get(pk=result.session.pk)


@pytest.mark.django_db
def test_a_sibling_branch_rescans_only_the_chunk_where_it_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world, session = _setup(tmp_path)
    scanned: list[int] = []
    original = share.scan_branch

    def counting(redactor: Redactor, entries: list[share.BranchEntry]) -> list[Any]:
        scanned.append(len(entries))
        return original(redactor, entries)

    monkeypatch.setattr(share, "scan_branch", counting)
    strings = share.team_strings(world.users["owner"], session)
    hits = share_scan.branch_hits(session, f"e{N - 1}", strings)
    assert [hit.entry_id for hit in hits] == ["e3"] and scanned == [500, 500, 300]
    scanned.clear()
    assert share_scan.branch_hits(session, "f", strings) == hits
    assert scanned == [300], "the two full chunks they share come from the cache"
    scanned.clear()
    assert share_scan.cached_branch_hits(session, f"e{N - 1}", strings) == hits
    share_scan.branch_hits(session, f"e{N - 1}", ["another team string"])
    assert scanned == [500, 500, 300], "other team strings: another scan"


@pytest.mark.django_db(transaction=True)
def test_the_form_of_a_long_branch_scans_in_the_background_then_shows_the_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(share_scan, "INLINE_ENTRIES", 1000)
    world, session = _setup(tmp_path)
    client = world.client("owner")
    url = f"/s/{SID}/share/?leafId=e{N - 1}"
    page = client.get(url).content.decode()
    assert 'id="share-scan"' in page and "share-scan.js" in page and "ghp_" not in page
    assert share_scan.cached_branch_hits(session, f"e{N - 1}", []) is None

    async def scan() -> list[dict[str, Any]]:
        socket = await signed_in_socket(f"/ws/share-scan/{SID}/", world.users["owner"])
        connected, _ = await socket.connect()
        assert connected
        await socket.send_json_to({"type": "start", "leafId": f"e{N - 1}"})
        messages = []
        while not messages or messages[-1]["type"] not in ("done", "error"):
            messages.append(await socket.receive_json_from(timeout=60))
        await socket.disconnect()
        return messages

    messages = _run(scan)
    assert messages[-1] == {"type": "done"}
    progress = [(m["done"], m["total"]) for m in messages[:-1]]
    assert progress == [(0, N), (500, N), (1000, N), (N, N)]
    page = client.get(url).content.decode()
    assert 'id="share-scan"' not in page and "1 possible secret found" in page


@pytest.mark.django_db
def test_the_form_without_javascript_can_scan_in_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(share_scan, "INLINE_ENTRIES", 1000)
    world, _ = _setup(tmp_path)
    page = world.client("owner").get(f"/s/{SID}/share/?leafId=e{N - 1}&scan=now").content.decode()
    assert 'id="share-scan"' not in page and "1 possible secret found" in page


@pytest.mark.django_db(transaction=True)
def test_the_scan_socket_refuses_who_does_not_see_the_session(tmp_path: Path) -> None:
    world, _ = _setup(tmp_path)

    async def attempt(user: Any) -> Any:
        socket = await signed_in_socket(f"/ws/share-scan/{SID}/", user)
        connected, code = await socket.connect()
        if connected:
            await socket.disconnect()
        return connected, code

    assert _run(lambda: attempt(world.users["outsider"])) == (False, 4403)
    assert _run(lambda: attempt(None)) == (False, 4403)


def _run(factory: Any) -> Any:
    return asyncio.run(factory())
