"""Real-browser test of subagent transcripts: the list's collapsed subagents, the drill-down from the task
call and the breadcrumb back."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.subagent_tree import SESSION_ID, build_tree

pytestmark = BROWSER_MARKS


def test_expand_the_subagents_open_one_from_its_task_call_and_come_back(page: Page, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    build_tree(sessions)

    with live_server(tmp_path, sessions) as base_url:
        page.goto(base_url + "/")
        rows = page.locator("#session-list tr.session-row")
        expect(rows).to_have_count(1)
        subagents = rows.first.locator("details.row-subagents")
        summary = subagents.locator("summary")
        expect(summary).to_have_text("5 subagent transcripts")
        anna = subagents.locator('li[data-agent-id="Anna"] > a.subagent-link')
        expect(anna).to_be_hidden()  # collapsed by default

        # the keyboard opens it
        summary.focus()
        page.keyboard.press("Enter")
        expect(anna).to_be_visible()
        expect(subagents.locator('li[data-agent-id="Anna.Cy"] > a.subagent-link')).to_be_visible()

        # the session page: the task result links to the transcripts it spawned
        rows.first.locator("a.title").click()
        page.wait_for_url(f"**/s/{SESSION_ID}/**")
        page.goto(base_url + f"/s/{SESSION_ID}/?targetId=a0000003")
        result = page.locator('#conversation article[data-entry-id="a0000003"]')
        result.locator(".subagent-links a", has_text="Anna").click()

        # Anna's page: the breadcrumb back, and Anna's own subagent one level down
        breadcrumb = page.locator("nav.subagent-breadcrumb")
        expect(breadcrumb.locator('[aria-current="page"]')).to_have_text("Anna")
        page.goto(page.url.split("?")[0] + "?targetId=b0000003")
        page.locator(
            '#conversation article[data-entry-id="b0000003"] .subagent-links a', has_text="Anna.Cy"
        ).click()
        expect(breadcrumb.locator('[aria-current="page"]')).to_have_text("Anna.Cy")
        expect(breadcrumb.locator("li")).to_have_count(3)

        # the breadcrumb's task call opens the parent's page at the call that spawned Anna
        breadcrumb.locator("a.subagent-call").first.click()
        page.wait_for_url(f"**/s/{SESSION_ID}/?targetId=a0000003*")
        expect(page.locator("#tree [aria-selected=true]")).to_have_attribute("data-entry-id", "a0000003")
