"""Real-browser test of review statuses: set one from the session page, see the badge in the tree, and the
branch leave the Review page's waiting list (Playwright + Chromium on a live daphne: tests/browser.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("review-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    with live_server(root, sessions) as url:
        yield url


def test_setting_a_status_shows_its_badge_in_the_tree(page: Page, server: str) -> None:
    page.goto(f"{server}/review/")
    expect(page.locator(f'#review-lists a[href="/s/{SID}/?leafId=b2000006"]')).to_have_count(1)
    page.goto(f"{server}/s/{SID}/?leafId=b2000006")
    control = page.locator("#review-status")
    expect(control.locator('button[aria-pressed="true"]')).to_have_text("unreviewed")
    control.locator('button[value="approved"]').click()
    expect(page.locator("#review-status .review-message")).to_have_text("Status saved.")
    expect(page.locator('#review-status button[aria-pressed="true"]')).to_have_text("approved")
    row = page.locator('#tree [role="treeitem"][data-entry-id="b2000006"]')
    expect(row.locator(".review-badge")).to_have_text("approved")
    # The mirror label, as the agent will show it.
    expect(row.locator(".label-chip")).to_have_text("review: approved")
    # htmx swapped, nothing reloaded: the address is still the branch's.
    assert page.url.endswith(f"/s/{SID}/?leafId=b2000006")
    page.click("a.site-review")
    expect(page.locator("h1")).to_have_text("Review")
    expect(page.locator(f'#review-lists a[href="/s/{SID}/?leafId=b2000006"]')).to_have_count(0)
    expect(page.locator(f'#review-lists a[href="/s/{SID}/?leafId=b2000008"]')).to_have_count(1)
