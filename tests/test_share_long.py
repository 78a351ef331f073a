"""A very long shared branch (issue 11, finding 9): more ids than SQLite allows variables in one statement
(32,766), through the preview, the link, its page and its downloads."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from tests.test_access import _world
from tests.test_share import GITHUB_TOKEN, _line, _message, _text, body, share_url
from treeview.models import AgentSession
from treeview.services import share
from treeview.services.sync import sync_file

LONG = 33_000


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def sqlite_default_limit(db: Any) -> None:
    """SQLite's own default of 32,766 variables per statement (Debian builds it with 250,000)."""
    if connection.vendor == "sqlite":
        connection.ensure_connection()
        connection.connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 32_766)


def long_session(tmp_path: Path, n: int = LONG) -> Path:
    """One chain of ``n`` entries; the first mentions a token."""
    header = {
        "type": "session",
        "version": 3,
        "id": "share-long-0001",
        "timestamp": "2026-05-01T10:00:00.000Z",
    }
    lines = [_line(header), _message("e0", None, "user", _text(f"token {GITHUB_TOKEN}"), 0)]
    for i in range(1, n):
        role = "assistant" if i % 2 else "user"
        lines.append(_message(f"e{i}", f"e{i - 1}", role, _text(f"step {i}"), i % 60))
    path = tmp_path / "long.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_branch_longer_than_sqlites_variable_limit_is_shared(
    sqlite_default_limit: None, tmp_path: Path
) -> None:
    world = _world(tmp_path)
    result = sync_file(long_session(tmp_path))
    assert result.session is not None, result.error
    AgentSession.objects.filter(pk=result.session.pk).update(owner=world.users["owner"])
    session = AgentSession.objects.get(pk=result.session.pk)
    leaf = f"e{LONG - 1}"
    length, hits = share.preview(world.users["owner"], session, leaf)
    assert length == LONG and [hit.entry_id for hit in hits] == ["e0"]
    link, token = share.create_link(world.users["owner"], session, leaf_id=leaf)
    assert link.redactions[0]["entry_id"] == "e0"
    page = Client().get(share_url(token))
    assert page.status_code == 200
    jsonl = body(Client().get(share_url(token, "branch.jsonl")))
    assert jsonl.count("\n") == LONG + 1 and GITHUB_TOKEN not in jsonl
