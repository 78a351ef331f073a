"""Real-browser test of share links: a signed-in user shares a branch from the session page, someone without
an account opens the link in a fresh browser, the link is revoked on the Shared links page and is gone on the
next load (Playwright driving Debian's Chromium against a live multi-user daphne server: tests/browser.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BENIGN_CONSOLE_ERRORS, BROWSER_MARKS, TIMEOUT_MS, live_server, sign_in
from tests.reference import DATA
from tests.test_share import GITHUB_TOKEN, _line, _message, _text

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
# Alice owns the session: public links are the owner's to make (treeview/access.py).
SETUP = (
    "from django.contrib.auth.models import User; from treeview.models import AgentSession; "
    "alice = User.objects.create_user('alice', password='pw-alice-1'); "
    "AgentSession.objects.update(owner=alice)"
)


LONG_SID = "share-long-browser"
LONG = 2600  # entries: more than the form scans in its request (share_scan.INLINE_ENTRIES)


def _long_session(path: Path) -> None:
    header = {"type": "session", "version": 3, "id": LONG_SID, "timestamp": "2026-05-01T10:00:00.000Z"}
    lines = [_line(header)]
    for i in range(LONG):
        text = f"push with {GITHUB_TOKEN}" if i == 7 else f"step {i}"
        lines.append(_message(f"e{i}", f"e{i - 1}" if i else None, "user", _text(text), i % 60))
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("share-browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    _long_session(sessions / "long.jsonl")
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


def test_a_long_branch_is_scanned_with_progress_then_previewed(page: Page, server: str) -> None:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    sign_in(page, server, "alice", "pw-alice-1")
    page.goto(f"{server}/s/{LONG_SID}/share/?leafId=e{LONG - 1}")
    # the socket scans the branch, the page shows its progress and then reloads with the preview
    expect(page.locator("#redaction-preview")).to_contain_text("1 possible secret found", timeout=60_000)
    expect(page.locator("#share-scan")).to_have_count(0)
    expect(page.locator(".redaction-kind")).to_contain_text("GitHub token")
    page.get_by_role("button", name="Create the link").click()
    expect(page.locator("#share-link")).to_contain_text("/share/")
    assert not [e for e in errors if not e.startswith(BENIGN_CONSOLE_ERRORS)], errors


def test_without_javascript_the_long_branch_offers_a_scan_in_the_request(
    browser: Browser, server: str
) -> None:
    context = browser.new_context(java_script_enabled=False)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        sign_in(page, server, "alice", "pw-alice-1")
        page.goto(f"{server}/s/{LONG_SID}/share/?leafId=e{LONG - 2}")
        expect(page.locator("#share-scan")).to_contain_text("being scanned")
        page.get_by_role("link", name="Scan in this request instead").click()
        expect(page.locator("#redaction-preview")).to_contain_text("1 possible secret found", timeout=60_000)
    finally:
        context.close()
