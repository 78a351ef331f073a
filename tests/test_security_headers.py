"""Every page is served with a strict Content-Security-Policy: no inline scripts or styles, nothing remote."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.reference import DATA
from treeview.services.sync import sync_file

pytestmark = pytest.mark.django_db


def _policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def test_pages_send_a_strict_content_security_policy(client, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", path)
    session = sync_file(path).session
    for url in ("/", f"/s/{session.session_id}/"):
        response = client.get(url)
        policy = _policy(response)
        assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
        assert policy["object-src"] == ["'none'"] and policy["default-src"] == ["'self'"]
        assert "'unsafe-inline'" not in response["Content-Security-Policy"]
        html = response.content.decode()
        # Scripts only from our own static files; no inline script bodies, no style attributes or blocks.
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html)
        assert " style=" not in html and "<style" not in html
