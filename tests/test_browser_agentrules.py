"""Real-browser test of the session's rules: the header says which agent's rules apply and why, and switching
them (htmx, then the page reloads) redraws the tree by the new rules."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA
from treeview.session.selector import flatten_tree, visible_rows
from treeview.session.session_manager import SessionManager

pytestmark = BROWSER_MARKS

FIXTURE = "omp18w_features_200.jsonl"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "latest" / FIXTURE, sessions / FIXTURE)
    with live_server(tmp_path, sessions, ARBOR_SINGLE_USER="1") as url:
        yield url


def _shown(agent: str) -> tuple[int, int]:
    manager = SessionManager.open(DATA / "latest" / FIXTURE)
    flat = flatten_tree(manager.get_tree(), manager.leaf_id)
    return len(visible_rows(flat, "default", "", agent=agent)), len(flat.nodes)  # type: ignore[arg-type]


def _shots(page: Page, name: str) -> None:
    """Screenshots at a desktop and a phone size, when ARBOR_SHOTS names a folder (to look at the header)."""
    folder = os.environ.get("ARBOR_SHOTS")
    if not folder:
        return
    for width, height in ((1440, 900), (390, 844)):
        page.set_viewport_size({"width": width, "height": height})
        page.screenshot(path=str(Path(folder) / f"{name}-{width}.png"))
    page.set_viewport_size({"width": 1440, "height": 900})


def test_the_owner_switches_the_rules_and_the_tree_follows(server: str, page: Page) -> None:
    sid = SessionManager.open(DATA / "latest" / FIXTURE).header["id"]
    page.goto(f"{server}/s/{sid}/")
    rules = page.locator("#agent-rules")
    expect(rules).to_contain_text("oh-my-pi 18 rules (title slot)")
    omp_shown, total = _shown("omp")
    pi_shown, _ = _shown("pi")
    assert omp_shown != pi_shown
    expect(page.locator(".tree-count")).to_contain_text(f"{omp_shown} of {total} shown")
    _shots(page, "rules-detected")
    rules.locator("select[name=rules]").select_option("pi")
    rules.get_by_role("button", name="Apply").click()
    # The page reloads: the header, the tree's count and rows are the pi rules'.
    expect(page.locator("#agent-rules")).to_contain_text("pi 1.6 rules (chosen for this session)")
    expect(page.locator("#agent-rules")).to_contain_text("detected: oh-my-pi 18 rules (title slot)")
    expect(page.locator(".tree-count")).to_contain_text(f"{pi_shown} of {total} shown")
    expect(page.locator("#agent-rules select[name=rules]")).to_have_value("pi")
    _shots(page, "rules-pi")
    page.locator("#agent-rules select[name=rules]").select_option("detect")
    page.locator("#agent-rules").get_by_role("button", name="Apply").click()
    expect(page.locator("#agent-rules")).not_to_contain_text("chosen for this session")
    expect(page.locator(".tree-count")).to_have_text(re.compile(rf"\s*{omp_shown} of {total} shown\s*"))
