"""Real-browser tests of the session page: Playwright driving Debian's Chromium against a live daphne server.

The server runs in a subprocess on a free port with its own data directory (a fresh SQLite database, migrated,
with the fixtures imported), so these tests need no database of the test process and run the same whichever
database the rest of the suite uses.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright

from tests.reference import DATA

CHROMIUM = "/usr/bin/chromium"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)",
    ),
]

REPO = Path(__file__).resolve().parent.parent
BRANCHING_SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
XSS_SID = "xss-browser-session"
PAYLOAD = '<script>alert("x")</script><img src=x onerror=alert(1)>'
# The flags Chromium needs as root on a machine with no screen and a closed network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 10_000
BENIGN_CONSOLE_ERRORS = ("Failed to load resource", "htmx:sendAbort", "htmx:afterRequest")


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_serving(url: str, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise RuntimeError(f"daphne did not answer {url} in time")


@pytest.fixture(scope="module")
def live_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """daphne serving a fresh data directory with the branching fixture and the hostile session imported."""
    root = tmp_path_factory.mktemp("browser")
    sessions = root / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_branching_labels.jsonl", sessions / "v3_branching_labels.jsonl")
    write_hostile_session(sessions / "xss.jsonl")
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env.update(
        ARBOR_DB="sqlite",
        ARBOR_DATA_DIR=str(root / "data"),
        ARBOR_SESSION_DIRS=str(root / "no-agent-dirs"),
        ARBOR_WRITE_BACK="0",
        DJANGO_SETTINGS_MODULE="sessions_site.settings",
        PYTHONUNBUFFERED="1",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=120)
    subprocess.run(
        [*manage, "import_sessions", "-q", str(sessions)], cwd=REPO, env=env, check=True, timeout=120
    )
    port = _free_port()
    log = (root / "daphne.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "daphne",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            "sessions_site.asgi:application",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(url + "/", process, time.monotonic() + 30)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    # Script errors and htmx error events (a failed swap) fail the test. Not errors: the missing favicon, and
    # a request aborted by a newer one (hx-sync "replace"), which htmx logs as sendAbort + afterRequest.
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield tab
    context.close()
    assert [error for error in errors if not error.startswith(BENIGN_CONSOLE_ERRORS)] == [], errors


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
    assert texts and all("click" in text.lower() for text in texts)
    # The box keeps the focus and what was typed across the swap.
    expect(box).to_be_focused()
    expect(box).to_have_value("click")
    # Down from the search box goes to the rows; Enter opens the row (leaving the box sends no extra search).
    page.keyboard.press("ArrowDown")
    chosen = selected_id(page)
    assert chosen is not None
    page.keyboard.press("Enter")
    expect(page.locator(f'#conversation article.selected[data-entry-id="{chosen}"]')).to_be_visible()
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
    page.keyboard.press("ArrowUp")  # wraps to the last row
    assert selected_id(page) == ids[-1]
    page.keyboard.press("ArrowDown")  # and back to the first
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
