"""Real-browser tests of the branch on screen: a click shows the branch through the entry with its header in
view, and the page header (name, review, share, totals) follows every click and navigation; a branch on
screen is reviewed without moving the session's leaf (Playwright + Chromium on a live daphne)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
FIXTURE = "v3_branching_labels.jsonl"
STORED_BRANCH = "Add subcommands using click instead."
OTHER_BRANCH = "Add subcommands."


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    """A live server per test: they write (a review label, a leaf move)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, sessions / FIXTURE)
    with live_server(tmp_path, sessions) as url:
        yield url


def open_page(page: Page, base: str, query: str = "") -> None:
    page.goto(f"{base}/s/{SID}/{query}")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")


def click_row(page: Page, entry_id: str) -> None:
    page.locator(f'#tree [role="treeitem"][data-entry-id="{entry_id}"] a').click()
    expect(page.locator(f'#conversation article.selected[data-entry-id="{entry_id}"]')).to_be_visible()


def expect_header(page: Page, name: str, anchor: str) -> None:
    header = page.locator("#branch-header")
    expect(header.locator(".branch-name")).to_have_text(name)
    expect(header.locator(".branch-name")).to_have_attribute("title", f"branch to entry {anchor}")
    expect(header.locator('input[name="leaf_id"]')).to_have_value(anchor)


def test_a_click_shows_the_branch_through_the_entry_and_the_header_follows(page: Page, server: str) -> None:
    open_page(page, server)
    expect_header(page, STORED_BRANCH, "b2000008")
    click_row(page, "b2000003")
    # The branch goes on below the clicked entry, down to its newest leaf.
    expect(page.locator('#conversation article[data-entry-id="b2000006"]')).to_have_count(1)
    expect_header(page, OTHER_BRANCH, "b2000006")
    share = page.locator("#branch-header a.share-branch")
    expect(share).to_have_attribute("href", f"/s/{SID}/share/?leafId=c3000001&targetId=b2000003")
    expect(page.locator("#branch-header .totals-branch td").first).to_have_text("9")
    # The clicked entry's header is in view, below the tab bar, not scrolled past.
    head = page.locator('#conversation article.selected[data-entry-id="b2000003"] .entry-head')
    tabs = page.locator("#pane-tabs").bounding_box()
    pane = page.locator("#reading-pane").bounding_box()
    box = head.bounding_box()
    assert tabs and pane and box
    assert box["y"] >= tabs["y"] + tabs["height"] - 1
    assert box["y"] + box["height"] <= pane["y"] + pane["height"]
    # Back on the stored branch: the header follows again.
    click_row(page, "b2000007")
    expect_header(page, STORED_BRANCH, "b2000008")


def test_reviewing_the_branch_on_screen_leaves_the_sessions_leaf_alone(page: Page, server: str) -> None:
    open_page(page, server)
    click_row(page, "b2000003")
    expect_header(page, OTHER_BRANCH, "b2000006")
    page.locator('#review-status button[value="approved"]').click()
    expect(page.locator("#review-status .review-message")).to_have_text("Status saved.")
    expect(page.locator('#review-status button[aria-pressed="true"]')).to_have_text("approved")
    expect_header(page, OTHER_BRANCH, "b2000006")
    # A fresh page opens on the session's own branch, which nobody reviewed.
    fresh = page.context.new_page()
    fresh.goto(f"{server}/s/{SID}/")
    expect_header(fresh, STORED_BRANCH, "b2000008")
    expect(fresh.locator('#review-status button[aria-pressed="true"]')).to_have_text("unreviewed")
    fresh.goto(f"{server}/s/{SID}/?targetId=b2000003")
    expect(fresh.locator('#review-status button[aria-pressed="true"]')).to_have_text("approved")
    fresh.close()


def test_after_a_navigation_the_header_describes_the_new_branch(page: Page, server: str) -> None:
    open_page(page, server, "?filter=all")
    expect_header(page, STORED_BRANCH, "b2000008")
    click_row(page, "b2000006")
    page.locator('#tree [role="treeitem"][data-entry-id="b2000006"] a').focus()
    page.keyboard.press("Enter")
    expect(page.locator("#navigator")).to_be_visible()
    page.get_by_role("button", name="No summary").click()
    expect(page.locator("#navigator")).to_be_hidden()
    expect(page.locator("#tree .tree-row.leaf")).to_have_attribute("data-entry-id", "b2000006")
    expect_header(page, OTHER_BRANCH, "b2000006")
    share = page.locator("#branch-header a.share-branch")
    expect(share).to_have_attribute("href", re.compile(r"/share/\?leafId=b2000006&"))
