"""Real-browser tests of navigation (/tree) over the websocket, live updates and double Escape: Playwright
driving Chromium against a live daphne server whose summaries come from a local model server
(tests/llm_server.py)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, TIMEOUT_MS, live_server, sign_in
from tests.llm_server import LlmServer
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
FIXTURE = "v3_branching_labels.jsonl"
FIRST_BRANCH_END = "b2000006"
TOKENS = [f"token{i} " for i in range(40)]


@pytest.fixture(scope="module")
def llm() -> Iterator[LlmServer]:
    with LlmServer(provider="openai", tokens=TOKENS, delay=0.0) as server:
        yield server


@pytest.fixture
def server(tmp_path: Path, llm: LlmServer) -> Iterator[str]:
    """A live server per test: each one moves the leaf, so each starts from the fixture as it is."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, sessions / FIXTURE)
    llm.delay, llm.mode, llm.tokens = 0.0, "normal", TOKENS
    env = {
        "ARBOR_LLM_PROVIDER": "openai",
        "ARBOR_LLM_BASE_URL": llm.base_url,
        "ARBOR_LLM_MODEL": "local-test-model",
    }
    with live_server(tmp_path, sessions, **env) as url:
        yield url


def open_page(page: Page, base: str, query: str = "") -> None:
    page.goto(f"{base}/s/{SID}/{query}")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")


def stored_leaf(page: Page, base: str) -> str | None:
    """The leaf as the server has it: a fresh page's leaf marker."""
    fresh = page.context.new_page()
    fresh.goto(f"{base}/s/{SID}/?filter=all")
    leaf = fresh.locator("#tree .tree-row.leaf").get_attribute("data-entry-id")
    fresh.close()
    return leaf


def open_entry(page: Page, entry_id: str) -> None:
    """Click the entry's row and wait until the conversation shows it; its row has the keyboard."""
    page.locator(f'#tree [role="treeitem"][data-entry-id="{entry_id}"] a').click()
    expect(page.locator(f'#conversation article.selected[data-entry-id="{entry_id}"]')).to_be_visible()
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", entry_id)
    page.locator(f'#tree [role="treeitem"][data-entry-id="{entry_id}"] a').focus()


def open_navigator_on(page: Page, entry_id: str) -> None:
    """Open the entry, then Enter on it opens the navigator."""
    open_entry(page, entry_id)
    page.keyboard.press("Enter")
    expect(page.locator("#navigator")).to_be_visible()


def test_navigate_with_a_summary_streams_tokens_and_moves_the_leaf(
    server: str, page: Page, llm: LlmServer
) -> None:
    llm.delay = 0.03
    open_page(page, server, "?filter=all")
    open_navigator_on(page, FIRST_BRANCH_END)
    expect(page.locator("#navigator-summary-note")).to_contain_text("local-test-model")
    page.get_by_role("button", name="Summarize", exact=True).click()
    stream = page.locator("#navigator-stream")
    # Tokens arrive one by one while the model writes: some are shown before the last one is.
    expect(stream).to_contain_text("token3")
    assert "token39" not in (stream.text_content() or "")
    expect(page.locator("#navigator")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(page.locator("#live-status")).to_contain_text("summary of the abandoned branch was added")
    # The panes show the new active path without a reload: the summary is the leaf now.
    leaf_row = page.locator("#tree .tree-row.leaf")
    expect(leaf_row).to_contain_text("token0")
    summary_id = leaf_row.get_attribute("data-entry-id")
    assert summary_id and summary_id != FIRST_BRANCH_END
    expect(page).to_have_url(re.compile(f"targetId={summary_id}"))
    assert stored_leaf(page, server) == summary_id


def test_escape_mid_stream_cancels_and_leaves_the_leaf(server: str, page: Page, llm: LlmServer) -> None:
    llm.delay = 0.2
    streams_before = len(llm.streams)
    open_page(page, server, "?filter=all")
    before = stored_leaf(page, server)
    open_navigator_on(page, FIRST_BRANCH_END)
    page.get_by_role("button", name="Summarize", exact=True).click()
    expect(page.locator("#navigator-stream")).to_contain_text("token0")
    page.keyboard.press("Escape")
    expect(page.locator("#navigator")).to_be_hidden()
    expect(page.locator("#live-status")).to_have_text("Branch summarization cancelled")
    assert stored_leaf(page, server) == before
    stream = llm.wait_for_streams(streams_before + 1)[-1]
    assert stream.outcome == "client_gone"


def test_custom_instructions_escape_goes_back_to_the_choice(server: str, page: Page, llm: LlmServer) -> None:
    open_page(page, server, "?filter=all")
    open_navigator_on(page, FIRST_BRANCH_END)
    page.get_by_role("button", name="Summarize with custom instructions…").click()
    instructions = page.locator("#navigator-instructions")
    expect(instructions).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#navigator")).to_be_visible()
    expect(instructions).to_be_hidden()
    expect(page.get_by_role("button", name="No summary")).to_be_visible()
    page.get_by_role("button", name="Summarize with custom instructions…").click()
    instructions.fill("Focus on the parser")
    page.locator("#navigator-custom").get_by_role("button", name="Summarize").click()
    expect(page.locator("#navigator")).to_be_hidden()
    assert "Focus on the parser" in str(llm.requests[-1])


def test_moving_to_a_user_message_offers_its_text_to_continue(server: str, page: Page) -> None:
    open_page(page, server, "?filter=all")
    open_navigator_on(page, "b2000003")
    page.get_by_role("button", name="No summary").click()
    expect(page.locator("#navigator")).to_be_hidden()
    expect(page.locator("#continue-box")).to_be_visible()
    expect(page.locator("#continue-text")).to_have_value("Add subcommands.")
    # The leaf went to the message's parent.
    expect(page.locator("#tree .tree-row.leaf")).to_have_attribute("data-entry-id", "b2000002")
    assert stored_leaf(page, server) == "b2000002"


def test_the_current_leaf_says_already_there(server: str, page: Page) -> None:
    open_page(page, server, "?filter=all")
    leaf = stored_leaf(page, server)
    assert leaf
    open_navigator_on(page, leaf)
    expect(page.locator("#navigator-already")).to_be_visible()
    expect(page.get_by_role("button", name="No summary")).to_be_hidden()
    page.keyboard.press("Escape")
    expect(page.locator("#navigator")).to_be_hidden()
    assert stored_leaf(page, server) == leaf


def test_another_page_sees_the_move_and_labels_without_reload(server: str, page: Page) -> None:
    open_page(page, server, "?filter=all")
    other = page.context.new_page()
    other.goto(f"{server}/s/{SID}/?filter=all")
    expect(other.locator("#navigator-root")).to_have_attribute("data-live", "true")
    open_navigator_on(page, FIRST_BRANCH_END)
    page.get_by_role("button", name="No summary").click()
    expect(other.locator("#tree .tree-row.leaf")).to_have_attribute("data-entry-id", FIRST_BRANCH_END)
    # A label saved on the first page appears on the other.
    open_entry(page, "b2000001")
    page.keyboard.press("Shift+L")
    page.locator(".label-editor").fill("shared-label")
    page.keyboard.press("Enter")
    expect(other.locator('#tree [data-entry-id="b2000001"] .label-chip')).to_have_text("shared-label")
    other.close()


def test_double_escape_and_the_command_box(server: str, page: Page) -> None:
    open_page(page, server, "?filter=all")
    page.locator("body").click()
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    # The default action ("tree") hands the keyboard to the tree selector.
    expect(page.locator('#tree [aria-selected="true"] a')).to_be_focused()
    expect(page.locator("#command-message")).to_contain_text("Enter again moves the leaf")
    page.keyboard.press("/")
    expect(page.locator("#command-input")).to_be_focused()
    page.keyboard.type("/nonsense")
    page.keyboard.press("Enter")
    expect(page.locator("#command-message")).to_contain_text("Unknown command /nonsense")
    page.locator("#command-input").fill("/tree")
    page.keyboard.press("Enter")
    expect(page.locator('#tree [aria-selected="true"] a')).to_be_focused()


def test_branch_from_the_session_page_opens_the_fork_with_the_text_to_continue(
    server: str, page: Page
) -> None:
    open_page(page, server)
    page.locator("#command-input").fill("/branch")
    page.keyboard.press("Enter")
    picker = page.locator("#branch-picker")
    expect(picker).to_have_attribute("open", "")
    choices = picker.locator(".branch-here")
    expect(choices).to_have_count(3)
    # The last user message is pre-selected; take the middle one.
    expect(choices.nth(2)).to_be_focused()
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"continueFrom=b2000003"))
    expect(page.locator("#continue-box")).to_be_visible()
    expect(page.locator("#continue-text")).to_have_value("Add subcommands.")
    expect(page.locator(".session-facts")).to_contain_text("Forked from")
    fork_url = page.url.split("?")[0]
    # The parent lists its fork.
    page.goto(f"{server}/s/{SID}/")
    fork_link = page.locator(".session-facts a", has_text="Write a CLI argument parser")
    expect(fork_link).to_have_attribute("href", fork_url.removeprefix(server))


def test_the_session_list_offers_a_refresh_when_a_session_changes(server: str, page: Page) -> None:
    page.goto(f"{server}/")
    expect(page.locator("body")).to_have_attribute("data-list-live", "true")
    notice = page.locator("#list-changed")
    expect(notice).to_be_hidden()
    other = page.context.new_page()
    open_page(other, server, "?filter=all")
    open_entry(other, "b2000001")
    other.keyboard.press("Shift+L")
    other.locator(".label-editor").fill("from another tab")
    other.keyboard.press("Enter")
    expect(other.locator('#tree [data-entry-id="b2000001"] .label-chip')).to_have_text("from another tab")
    other.close()
    expect(notice).to_be_visible()
    notice.get_by_role("link", name="show them").click()
    expect(notice).to_be_hidden()


SIGNED_IN_SETUP = (
    "from django.contrib.auth.models import User; "
    "from treeview.models import AgentSession; "
    "alice = User.objects.create_user('alice', password='alice-pw-1234'); "
    "AgentSession.objects.update(owner=alice, visibility='private')"
)


def test_a_signed_in_owner_navigates_with_a_summary(tmp_path: Path, page: Page, llm: LlmServer) -> None:
    """Multi-user mode: the socket's user comes from the cookie session (AuthMiddlewareStack's lazy user)."""
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, sessions / FIXTURE)
    llm.delay, llm.mode, llm.tokens = 0.0, "normal", TOKENS
    env = {
        "ARBOR_SINGLE_USER": "0",
        "ARBOR_LLM_PROVIDER": "openai",
        "ARBOR_LLM_BASE_URL": llm.base_url,
        "ARBOR_LLM_MODEL": "local-test-model",
    }
    with live_server(tmp_path, sessions, setup=SIGNED_IN_SETUP, **env) as base:
        sign_in(page, base, "alice", "alice-pw-1234")
        open_page(page, base, "?filter=all")
        leaf_row = page.locator("#tree .tree-row.leaf")
        old_leaf = leaf_row.get_attribute("data-entry-id")
        assert old_leaf
        open_navigator_on(page, FIRST_BRANCH_END)
        page.get_by_role("button", name="Summarize", exact=True).click()
        expect(page.locator("#navigator")).to_be_hidden(timeout=TIMEOUT_MS)
        expect(page.locator("#live-status")).to_contain_text("summary of the abandoned branch was added")
        # The status line comes before the refreshed tree: wait for the leaf marker to move.
        expect(leaf_row).not_to_have_attribute("data-entry-id", old_leaf, timeout=TIMEOUT_MS)
        summary_id = leaf_row.get_attribute("data-entry-id")
        assert summary_id and summary_id != FIRST_BRANCH_END
        assert stored_leaf(page, base) == summary_id
        log = (tmp_path / "daphne.log").read_text()
        assert "Traceback" not in log, log
