"""Real-browser tests of ``/branch``: the user-message picker (its page and its dialog), its keys, and the
new session it opens (Playwright driving Debian's Chromium against a live daphne server: tests/browser.py)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
PICKER = f"/s/{SID}/branch-picker/"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("branch-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    with live_server(root, sessions) as url:
        yield url


def new_session_url(entry_id: str) -> re.Pattern[str]:
    return re.compile(rf"/s/(?!{SID})[0-9a-f-]+/\?continueFrom={entry_id}$")


def tree_ids(page: Page) -> list[str]:
    rows = page.locator('.tree-rows > [role="treeitem"]').all()
    return [str(row.get_attribute("data-entry-id")) for row in rows]


def open_all_rows(page: Page) -> None:
    """Show every entry of the session now open (the "all" filter) and wait for the tree."""
    page.goto(page.url.split("?")[0] + "?filter=all")
    expect(page.locator("#tree")).to_be_visible()


def test_picking_a_message_with_the_keyboard_opens_the_new_session(page: Page, server: str) -> None:
    page.goto(server + PICKER)
    choices = page.locator("#branch-picker .branch-here")
    expect(choices).to_have_count(3)
    expect(page.locator("#branch-picker .branch-text")).to_have_text(
        ["Write a CLI argument parser in Python.", "Add subcommands.", "Add subcommands using click instead."]
    )
    # The last message is selected; the arrows move, Enter branches.
    expect(choices.nth(2)).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(choices.nth(1)).to_be_focused()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowUp")
    expect(choices.nth(1)).to_be_focused()
    page.keyboard.press("Enter")

    page.wait_for_url(new_session_url("b2000003"))
    expect(page.locator(".session-facts")).to_contain_text("Forked from")
    parent = page.locator(".session-facts a", has_text="Write a CLI argument parser in Python.")
    expect(parent).to_have_attribute("href", f"/s/{SID}/")
    open_all_rows(page)
    # Everything before the message (its parent b2000002 is the new leaf), nothing after it.
    assert tree_ids(page) == ["a1000001", "a1000002", "b2000001", "b2000002"]


def test_the_branch_button_opens_the_picker_as_a_dialog(page: Page, server: str) -> None:
    page.goto(server + PICKER)
    dialog = page.locator("#branch-picker")
    expect(dialog).to_have_attribute("open", "")
    # Escape closes the list shown in place; the button opens it again, as a modal dialog with a fresh list.
    page.keyboard.press("Escape")
    expect(dialog).not_to_have_attribute("open", "")
    with page.expect_response(lambda response: "/branch-picker/" in response.url):
        page.get_by_role("link", name="Branch…").click()
    assert dialog.evaluate("element => element.matches(':modal')")
    choices = dialog.locator(".branch-here")
    expect(choices).to_have_count(3)
    expect(choices.nth(2)).to_be_focused()
    page.keyboard.press("Home")
    expect(choices.nth(0)).to_be_focused()
    page.keyboard.press("Enter")

    # htmx posts the form and follows the server's HX-Redirect.
    page.wait_for_url(new_session_url("b2000001"))
    open_all_rows(page)
    assert tree_ids(page) == ["a1000001", "a1000002"]


def test_the_branch_picker_event_opens_the_dialog_and_escape_closes_it(page: Page, server: str) -> None:
    page.goto(server + PICKER)
    dialog = page.locator("#branch-picker")
    page.keyboard.press("Escape")
    expect(dialog).not_to_have_attribute("open", "")

    page.evaluate("document.dispatchEvent(new CustomEvent('arbor:branch-picker'))")

    expect(dialog).to_have_attribute("open", "")
    assert dialog.evaluate("element => element.matches(':modal')")
    expect(dialog.locator(".branch-here").nth(2)).to_be_focused()
    page.keyboard.press("End")
    page.keyboard.press("Escape")
    expect(dialog).not_to_have_attribute("open", "")
    assert page.url.endswith(PICKER)


def test_without_javascript_the_picker_page_branches_with_a_plain_form(browser: Browser, server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(server + PICKER)
        page.locator(".branch-choice", has_text="Add subcommands using click instead.").get_by_role(
            "button", name="Branch here"
        ).click()
        page.wait_for_url(new_session_url("b2000007"))
        page.goto(page.url.split("?")[0] + "?filter=all")
        ids = tree_ids(page)
    finally:
        context.close()
    # The path up to b2000007's parent (the branch summary), then the label carried over: none on this path.
    assert ids == ["a1000001", "a1000002", "b2000001", "b2000002", "d4000001"]
