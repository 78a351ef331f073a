"""Real-browser test of rights per action (treeview/access.py): a team member who sees a session is offered no
write action and cannot move its leaf; once its owner lets them write ("People and rights"), they can."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser import BROWSER_MARKS, TIMEOUT_MS, live_server, sign_in
from tests.reference import DATA
from treeview import access

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
FIXTURE = "v3_branching_labels.jsonl"
TARGET = "b2000006"

SETUP = (
    "from django.contrib.auth.models import User; "
    "from treeview.models import AgentSession, Membership, Team; "
    "alice = User.objects.create_user('alice', password='alice-pw-1234'); "
    "bob = User.objects.create_user('bob', password='bob-pw-1234'); "
    "team = Team.objects.create(name='reviewers'); "
    "Membership.objects.create(team=team, user=alice); "
    "Membership.objects.create(team=team, user=bob); "
    "AgentSession.objects.update(owner=alice, visibility='teams'); "
    "[session.teams.set([team]) for session in AgentSession.objects.all()]"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, sessions / FIXTURE)
    with live_server(tmp_path, sessions, setup=SETUP, ARBOR_SINGLE_USER="0") as url:
        yield url


def _open_entry(page: Page, entry_id: str) -> None:
    page.locator(f'#tree [role="treeitem"][data-entry-id="{entry_id}"] a').click()
    expect(page.locator(f'#conversation article.selected[data-entry-id="{entry_id}"]')).to_be_visible()
    page.locator(f'#tree [role="treeitem"][data-entry-id="{entry_id}"] a').focus()


def _leaf(page: Page) -> str | None:
    return page.locator("#tree .tree-row.leaf").get_attribute("data-entry-id")


def test_a_viewer_is_offered_no_write_action_and_a_granted_user_navigates(
    server: str, page: Page, tmp_path: Path
) -> None:
    sign_in(page, server, "bob", "bob-pw-1234")
    page.goto(f"{server}/s/{SID}/?filter=all")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")
    leaf = _leaf(page)
    # No label form, no public link, no branch picker; "Go here…" disabled with the reason.
    expect(page.locator("form.label-form")).to_have_count(0)
    expect(page.get_by_role("link", name="Share this branch")).to_have_count(0)
    expect(page.locator("[data-branch-picker-open]")).to_have_count(0)
    go_here = page.locator("#go-here")
    expect(go_here).to_be_disabled()
    expect(go_here).to_have_attribute("title", access.REFUSALS[access.NAVIGATE])
    expect(page.locator(".rights-note")).to_contain_text("Its owner decides")
    # Comments and reviews are still his to make.
    expect(page.locator("form.comment-new")).to_be_visible()
    expect(page.locator("#review-status button[name=status]").first).to_be_visible()
    # Enter twice on an entry (open, then move the leaf) says why not; Shift+L opens no label editor.
    _open_entry(page, TARGET)
    page.keyboard.press("Enter")
    expect(page.locator("#navigator")).to_be_hidden()
    expect(page.locator("#command-message")).to_contain_text("may move its leaf")
    page.keyboard.press("Shift+L")
    expect(page.locator(".label-editor")).to_have_count(0)
    assert _leaf(page) == leaf

    # Alice lets him write, in the People and rights box of the session page.
    owner = page.context.browser.new_context()
    owner.set_default_timeout(TIMEOUT_MS)
    alice = owner.new_page()
    sign_in(alice, server, "alice", "alice-pw-1234")
    alice.goto(f"{server}/s/{SID}/")
    alice.get_by_text("People and rights").click()
    alice.fill("#grant-username", "bob")
    alice.get_by_role("button", name="Grant “can write”").click()
    expect(alice.locator("#rights .rights-message")).to_have_text("bob can write now.")
    expect(alice.locator("#rights .rights-grants")).to_contain_text("bob can write")
    owner.close()

    # Bob's page, reloaded, offers the leaf move; it works over the websocket.
    page.goto(f"{server}/s/{SID}/?filter=all")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")
    expect(page.locator("#go-here")).to_be_enabled()
    expect(page.locator("form.label-form")).to_have_count(1)
    _open_entry(page, TARGET)
    page.keyboard.press("Enter")
    expect(page.locator("#navigator")).to_be_visible()
    page.get_by_role("button", name="No summary").click()
    expect(page.locator("#navigator")).to_be_hidden(timeout=TIMEOUT_MS)
    leaf_row = page.locator("#tree .tree-row.leaf")
    expect(leaf_row).to_have_attribute("data-entry-id", TARGET, timeout=TIMEOUT_MS)
    log = (tmp_path / "daphne.log").read_text()
    assert "Traceback" not in log, log
