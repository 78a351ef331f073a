"""Real-browser tests of the session page: Playwright driving Debian's Chromium against a live daphne server
(see ``tests/browser.py``)."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.browser import BROWSER_MARKS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

BRANCHING_SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
XSS_SID = "xss-browser-session"
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _entry(entry_id: str, parent: str | None, second: int, **fields: object) -> dict[str, object]:
    stamp = f"2026-05-01T10:00:{second:02d}.000Z"
    return {"id": entry_id, "parentId": parent, "timestamp": stamp, **fields}


def write_hostile_session(path: Path) -> None:
    """A session whose every text field tries to run script: messages, tools, labels, custom types."""
    link = '[click me](javascript:alert(2)) <a href="javascript:alert(3)">raw link</a>'
    text = f"{PAYLOAD} {link} <svg onload=alert(4)></svg>"
    lines: list[dict[str, object]] = [
        {
            "type": "session",
            "version": 3,
            "id": XSS_SID,
            "timestamp": "2026-05-01T10:00:00.000Z",
            "cwd": PAYLOAD,
        },
        _entry(
            "x0000001",
            None,
            1,
            type="message",
            message={"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
        ),
        _entry(
            "x0000002",
            "x0000001",
            2,
            type="message",
            message={
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": text},
                    {"type": "text", "text": text},
                    {"type": "toolCall", "id": "call_1", "name": PAYLOAD, "arguments": {"command": PAYLOAD}},
                ],
                "stopReason": "toolUse",
                "timestamp": 2,
            },
        ),
        _entry(
            "x0000003",
            "x0000002",
            3,
            type="message",
            message={
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": PAYLOAD,
                "content": [{"type": "text", "text": text}],
                "isError": False,
                "timestamp": 3,
            },
        ),
        _entry("x0000004", "x0000003", 4, type="custom", customType=PAYLOAD, data={"html": PAYLOAD}),
        _entry(
            "x0000005",
            "x0000004",
            5,
            type="custom_message",
            customType=PAYLOAD,
            content=text,
            display=True,
        ),
        _entry("x0000006", "x0000005", 6, type="label", targetId="x0000001", label=PAYLOAD),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


@pytest.fixture(scope="module")
def live_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """daphne serving a fresh data directory with the branching fixture and the hostile session imported."""
    root = tmp_path_factory.mktemp("browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    write_hostile_session(sessions / "xss.jsonl")
    with live_server(root, sessions) as url:
        yield url


def open_session(page: Page, base: str, session_id: str, query: str = "") -> None:
    page.goto(f"{base}/s/{session_id}/{query}")
    expect(page.locator("#tree")).to_be_visible()


def row_ids(page: Page) -> list[str]:
    return page.locator('#tree [role="treeitem"]').evaluate_all("rows => rows.map(r => r.dataset.entryId)")


def selected_id(page: Page) -> str | None:
    return page.locator('#tree [role="treeitem"][aria-selected="true"]').get_attribute("data-entry-id")


# -- filters, search, labels -------------------------------------------------------------------------------


def test_alt_keys_switch_the_filter_and_the_row_count_changes(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID)
    rows = page.locator('#tree [role="treeitem"]')
    default_count = rows.count()
    page.keyboard.press("Alt+A")
    expect(page).to_have_url(re.compile(r"filter=all"))
    expect(page.locator("#tree-filter-mode")).to_have_value("all")
    all_count = rows.count()
    assert all_count > default_count
    page.keyboard.press("Alt+U")
    expect(page.locator("#tree-filter-mode")).to_have_value("user-only")
    expect(page).to_have_url(re.compile(r"filter=user-only"))
    user_count = rows.count()
    assert 0 < user_count < default_count
    expect(page.locator(".tree-count")).to_contain_text(f"{user_count} of")
    # Ctrl+O cycles forward from user-only, Shift+Ctrl+O goes back.
    page.keyboard.press("Control+O")
    expect(page.locator("#tree-filter-mode")).to_have_value("labeled-only")
    page.keyboard.press("Shift+Control+O")
    expect(page.locator("#tree-filter-mode")).to_have_value("user-only")


def test_typing_in_search_filters_the_rows_and_escape_clears_it(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID)
    before = len(row_ids(page))
    box = page.locator("#tree-search")
    box.click()
    page.keyboard.type("click", delay=30)
    expect(page).to_have_url(re.compile(r"q=click"))
    expect(page.locator('#tree [role="treeitem"]')).not_to_have_count(before)
    texts = page.locator('#tree [role="treeitem"]').all_inner_texts()
    # The session reads by oh-my-pi 18's rules, whose fuzzy search also finds "CLI" for "click" (a word the
    # token starts with, at most two characters short).
    assert texts and all("click" in text.lower() or "cli" in text.lower() for text in texts)
    assert any("click" in text.lower() for text in texts)
    # The box keeps the focus and what was typed across the swap.
    expect(box).to_be_focused()
    expect(box).to_have_value("click")
    # Down from the search box goes to the rows and previews the row (leaving the box sends no extra search).
    page.keyboard.press("ArrowDown")
    chosen = selected_id(page)
    assert chosen is not None
    expect(page.locator(f'#conversation article.selected[data-entry-id="{chosen}"]')).to_be_visible()
    expect(box).to_have_value("click")
    page.keyboard.press("Escape")
    expect(box).to_have_value("")
    expect(page.locator('#tree [role="treeitem"]')).to_have_count(before)


def test_shift_l_edits_the_label_inline(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID, "?filter=all")
    page.keyboard.press("Home")
    target = selected_id(page)
    assert target is not None
    page.keyboard.press("Shift+L")
    editor = page.locator("#tree input.label-editor")
    expect(editor).to_be_focused()
    page.keyboard.type("browser-label")
    page.keyboard.press("Enter")
    row = page.locator(f'#tree [role="treeitem"][data-entry-id="{target}"]')
    expect(row.locator(".label-chip")).to_have_text("browser-label")
    expect(page.locator("#tree input.label-editor")).to_have_count(0)
    # Escape cancels without saving.
    page.keyboard.press("Shift+L")
    expect(page.locator("#tree input.label-editor")).to_have_value("browser-label")
    page.keyboard.type("not saved")
    page.keyboard.press("Escape")
    expect(page.locator("#tree input.label-editor")).to_have_count(0)
    expect(row.locator(".label-chip")).to_have_text("browser-label")


# -- keyboard navigation and deep links --------------------------------------------------------------------


def test_arrow_keys_move_the_selection_and_enter_opens_the_entry(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID, "?filter=all")
    ids = row_ids(page)
    assert len(ids) > 3
    page.keyboard.press("Home")
    assert selected_id(page) == ids[0]
    page.keyboard.press("ArrowUp")  # no wrap-around: the first row stays selected
    assert selected_id(page) == ids[0]
    page.keyboard.press("End")
    page.keyboard.press("ArrowDown")  # nor at the end
    assert selected_id(page) == ids[-1]
    page.keyboard.press("Home")
    assert selected_id(page) == ids[0]
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    chosen = ids[2]
    assert selected_id(page) == chosen
    expect(page.locator(f'#tree [data-entry-id="{chosen}"] a')).to_be_focused()
    page.keyboard.press("ArrowLeft")  # its parent row
    parent = page.locator(f'#tree [data-entry-id="{chosen}"]').get_attribute("data-parent-id")
    assert selected_id(page) == parent
    page.keyboard.press("ArrowRight")
    assert selected_id(page) == chosen
    page.keyboard.press("End")
    assert selected_id(page) == ids[-1]
    page.keyboard.press("Home")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(rf"targetId={chosen}"))
    expect(page.locator(f'#conversation article.selected[data-entry-id="{chosen}"]')).to_be_visible()
    # The tree keeps the keyboard after the swap.
    expect(page.locator(f'#tree [data-entry-id="{chosen}"] a')).to_be_focused()


def test_deep_link_opens_on_the_target_entry(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID, "?targetId=b2000003&filter=all")
    expect(page.locator('#conversation article.selected[data-entry-id="b2000003"]')).to_be_visible()
    assert selected_id(page) == "b2000003"


# -- hostile content ---------------------------------------------------------------------------------------


def test_hostile_session_runs_no_script_and_injects_no_element(page: Page, live_server_url: str) -> None:
    dialogs: list[str] = []

    def dismiss(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    for query in [
        "?filter=all",
        "?filter=all&targetId=x0000005",
        "?targetId=x0000003",
        "?filter=labeled-only",
    ]:
        open_session(page, live_server_url, XSS_SID, query)
        assert page.locator('#tree [role="treeitem"]').count() > 0
        assert page.locator("img[onerror], svg[onload], [onload], [onerror]").count() == 0
        assert page.locator('a[href^="javascript:" i]').count() == 0
        sources = page.locator("script").evaluate_all("scripts => scripts.map(s => s.getAttribute('src'))")
        assert sources and all(src and src.startswith("/static/") for src in sources), sources
    # A hostile label typed in through the inline editor is shown as text too.
    open_session(page, live_server_url, XSS_SID, "?filter=all")
    scripts = page.locator("script").count()
    page.keyboard.press("Home")
    page.keyboard.press("Shift+L")
    page.locator("#tree input.label-editor").fill(PAYLOAD)
    page.keyboard.press("Enter")
    expect(page.locator("#tree .label-chip").first).to_have_text(PAYLOAD)
    assert page.locator("script").count() == scripts
    assert page.locator("img[onerror]").count() == 0
    page.wait_for_timeout(200)  # an injected onerror would fire as soon as its image fails to load
    assert dialogs == []
