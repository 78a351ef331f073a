"""Real-browser test of the search across sessions: from the list's search box to the entry on its branch."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS


def test_a_hit_on_another_branch_opens_that_branch_with_the_entry_selected(
    page: Page, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "branching.jsonl")

    with live_server(tmp_path, sessions) as base_url:
        page.goto(base_url + "/")
        page.fill("#search-q", "add subcommands")
        page.press("#search-q", "Enter")

        # htmx swaps the results in place of the list and pushes the search's address.
        hits = page.locator("#session-list li.search-hit")
        expect(hits).to_have_count(4)  # "add" is a prefix of "Added" too
        expect(page).to_have_url(re.compile(r"/search/\?q=add(\+|%20)subcommands$"))
        expect(page.locator("#session-list mark").first).to_have_text("Add")
        page.locator('#session-list li.search-hit[data-entry-id="b2000003"] a').click()

        # b2000003 ("Add subcommands.") is off the active path: its branch ends at the label c3000001.
        page.wait_for_url("**/s/**")
        params = parse_qs(urlsplit(page.url).query)
        assert params == {"leafId": ["c3000001"], "targetId": ["b2000003"]}
        expect(page.locator("#tree [aria-selected=true]")).to_have_attribute("data-entry-id", "b2000003")
        expect(page.locator('#conversation [data-entry-id="b2000003"]')).to_be_visible()
        expect(page.locator('#conversation [data-entry-id="b2000003"]')).to_contain_text("Add subcommands.")
