"""Real-browser tests of comments on entries: comment on an entry (and on a selected text range), see it,
resolve it, reopen it; and the same without JavaScript (Playwright driving Debian's Chromium against a live
daphne server in multi-user mode: tests/browser.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BROWSER_MARKS, live_server, sign_in
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
SETUP = (
    "from django.contrib.auth.models import User; "
    "User.objects.create_user('alice', password='alice-pw-1234'); "
    "User.objects.create_user('bob', password='bob-pw-1234')"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("comments-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    with live_server(root, sessions, setup=SETUP, ARBOR_SINGLE_USER="0") as url:
        yield url


def test_commenting_on_an_entry_then_resolving_and_reopening_it(page: Page, server: str) -> None:
    sign_in(page, server, "alice", "alice-pw-1234")
    page.goto(f"{server}/s/{SID}/?targetId=b2000002")
    panel = page.locator("#comments")
    expect(panel).to_be_visible()
    page.fill("#comment-body-new", "Prefer **click** here, @bob.")
    with page.expect_response(lambda response: "/comments/" in response.url):
        panel.get_by_role("button", name="Comment", exact=True).click()

    thread = page.locator("#comments .comment-thread")
    expect(thread).to_have_count(1)
    expect(thread.locator(".comment-author")).to_have_text("alice")
    expect(thread.locator(".comment-body strong")).to_have_text("click")
    expect(thread.locator(".mention")).to_have_text("@bob")
    expect(page.locator("#comment-body-new")).to_have_value("")  # a fresh form
    # The tree row's badge follows (comments.js), an open thread.
    badge = page.locator('#tree [data-entry-id="b2000002"] .comment-count')
    expect(badge).to_have_text("💬 1")
    expect(badge).to_have_class("comment-count comment-count-open")
    # The page's address did not change: the panel was swapped in place.
    assert page.url.endswith("?targetId=b2000002")

    thread.get_by_role("button", name="Resolve").click()
    expect(page.locator("#comments .comment-thread.resolved")).to_have_count(1)
    expect(page.locator("#comments .comment-resolved")).to_have_text("Resolved by alice")
    expect(badge).to_have_class("comment-count")

    page.locator("#comments").get_by_role("button", name="Reopen").click()
    expect(page.locator("#comments .comment-thread.open")).to_have_count(1)

    # The "commented" filter shows that entry and nothing else (the leaf has no comment).
    page.goto(f"{server}/s/{SID}/?filter=commented")
    rows = page.locator('.tree-rows > [role="treeitem"]')
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-entry-id", "b2000002")


def test_commenting_on_a_selected_text_range(page: Page, server: str) -> None:
    sign_in(page, server, "bob", "bob-pw-1234")
    page.goto(f"{server}/s/{SID}/?targetId=b2000006")
    button = page.locator("#comments [data-comment-selection]")
    expect(button).to_be_hidden()
    # Select the word "subcommands" of "Added `init` and `run` subcommands."
    page.evaluate(
        """() => {
            const block = document.querySelector('#conversation article.entry.selected .block-text');
            const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
            let node;
            while ((node = walker.nextNode())) {
                const at = node.data.indexOf('subcommands');
                if (at >= 0) {
                    const range = document.createRange();
                    range.setStart(node, at);
                    range.setEnd(node, at + 'subcommands'.length);
                    const selection = window.getSelection();
                    selection.removeAllRanges();
                    selection.addRange(range);
                    return;
                }
            }
            throw new Error('text not found');
        }"""
    )
    expect(button).to_be_visible()
    button.click()
    expect(page.locator("#comments [data-comment-quote]")).to_have_value("subcommands")
    start = page.locator("#comments [data-comment-quote-start]").input_value()
    text = page.evaluate(
        "() => document.querySelector('#conversation article.entry.selected .block-text').textContent"
    )
    assert text[int(start) : int(start) + len("subcommands")] == "subcommands"
    expect(page.locator("#comment-body-new")).to_be_focused()
    page.keyboard.type("Name them after the verbs.")
    page.locator("#comments").get_by_role("button", name="Comment", exact=True).click()
    thread = page.locator("#comments .comment-thread")
    expect(thread.locator(".comment-quote")).to_have_text("subcommands")
    expect(thread.locator(".comment-body")).to_have_text("Name them after the verbs.")


def test_without_javascript_a_comment_is_posted_and_shown(browser: Browser, server: str) -> None:
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, server, "alice", "alice-pw-1234")
        page.goto(f"{server}/s/{SID}/?targetId=b2000001")
        page.fill("#comment-body-new", "Works without scripts.")
        page.locator("#comments").get_by_role("button", name="Comment", exact=True).click()
        page.wait_for_url(f"{server}/s/{SID}/?targetId=b2000001#comments")
        expect(page.locator("#comments .comment-body")).to_have_text("Works without scripts.")
    finally:
        context.close()
