"""Long outputs are cut on the session page; "show all" loads the whole text of that block on demand."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from treeview.services.sync import sync_file
from treeview.session.jsonl import dumps

pytestmark = pytest.mark.django_db

HEADER = '{"type":"session","version":3,"id":"long-output","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/p"}'


def _session_with_long_output(tmp_path: Path) -> Path:
    output = "\n".join(f"line {i} <b>not bold</b>" for i in range(500))
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "seq 500"}}
    lines = [
        HEADER,
        dumps({"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-05-01T10:00:01.000Z",
               "message": {"role": "user", "content": "run it", "timestamp": 1}}),
        dumps({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-05-01T10:00:02.000Z",
               "message": {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2}}),
        dumps({"type": "message", "id": "t1", "parentId": "a1", "timestamp": "2026-05-01T10:00:03.000Z",
               "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                           "content": [{"type": "text", "text": output}], "isError": False, "timestamp": 3}}),
    ]  # fmt: skip
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_show_all_loads_the_whole_output_escaped(client, tmp_path: Path) -> None:
    sync_file(_session_with_long_output(tmp_path))
    page = client.get("/s/long-output/?targetId=t1").content.decode()
    assert "line 499" not in page
    link = re.search(r'href="(/s/long-output/entry/t1/block/\d+/)"[^>]*>show all<', page)
    assert link, "a show-all link for the cut output"
    full = client.get(link.group(1)).content.decode()
    assert "line 0 " in full and "line 499 " in full
    assert "<b>" not in full and "&lt;b&gt;not bold&lt;/b&gt;" in full


def test_show_all_of_unknown_entries_or_blocks_is_404(client, tmp_path: Path) -> None:
    sync_file(_session_with_long_output(tmp_path))
    assert client.get("/s/long-output/entry/nope/block/0/").status_code == 404
    assert client.get("/s/long-output/entry/t1/block/99/").status_code == 404
    assert client.get("/s/unknown/entry/t1/block/0/").status_code == 404
