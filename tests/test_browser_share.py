"""Real-browser test of share links: a signed-in user shares a branch from the session page, someone without
an account opens the link in a fresh browser, the link is revoked on the Shared links page and is gone on the
next load (Playwright driving Debian's Chromium against a live multi-user daphne server: tests/browser.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BROWSER_MARKS, TIMEOUT_MS, live_server, sign_in
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
# Alice owns the session: public links are the owner's to make (treeview/access.py).
SETUP = (
    "from django.contrib.auth.models import User; from treeview.models import AgentSession; "
    "alice = User.objects.create_user('alice', password='pw-alice-1'); "
    "AgentSession.objects.update(owner=alice)"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("share-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    with live_server(root, sessions, setup=SETUP, ARBOR_SINGLE_USER="0") as url:
        yield url


def test_share_a_branch_open_it_signed_out_then_revoke_it(page: Page, browser: Browser, server: str) -> None:
    sign_in(page, server, "alice", "pw-alice-1")
    # The first branch (argparse), with "Add subcommands." selected.
    page.goto(f"{server}/s/{SID}/?leafId=b2000006&targetId=b2000003")
    page.get_by_role("link", name="Share this branch").click()
    expect(page.get_by_role("heading", name="Share this branch")).to_be_visible()
    page.get_by_label("Note").fill("for the reviewers")
    page.get_by_role("button", name="Create the link").click()
    link = page.locator("#share-link")
    expect(link).to_contain_text("/share/")
    url = link.inner_text().strip()

    # Someone without an account, in a browser of their own.
    fresh = browser.new_context()
    fresh.set_default_timeout(TIMEOUT_MS)
    try:
        visitor = fresh.new_page()
        response = visitor.goto(url)
        assert response is not None and response.status == 200
        expect(visitor.locator("#entry-b2000003")).to_contain_text("Add subcommands.")
        expect(visitor.locator("#entry-b2000003")).to_have_class("entry entry-user selected")
        expect(visitor.locator("body")).to_contain_text(
            "Added `init` and `run` subcommands.".replace("`", "")
        )
        expect(visitor.locator("body")).to_contain_text("for the reviewers")
        # Only this branch, and no way into the session.
        expect(visitor.locator("body")).not_to_contain_text("Add subcommands using click instead.")
        assert visitor.locator(f'a[href*="/s/{SID}"]').count() == 0

        # Revoked on the Shared links page (htmx swaps the list) ...
        page.goto(f"{server}/shared/")
        row = page.locator("table.shared-links tbody tr", has_text="for the reviewers")
        expect(row).to_contain_text("active")
        expect(row).to_contain_text("1")
        row.get_by_role("button", name="Revoke").click()
        expect(row).to_contain_text("revoked")

        # ... and gone on the next load.
        response = visitor.reload()
        assert response is not None and response.status == 410
        expect(visitor.get_by_role("heading", name="This link was revoked.")).to_be_visible()
        expect(visitor.locator("body")).not_to_contain_text("Add subcommands.")
    finally:
        fresh.close()
