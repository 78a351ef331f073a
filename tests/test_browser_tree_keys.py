"""Real-browser test of the tree keys taken from the newest agents: Shift+T (pi's label times), Alt+Up /
Alt+Down (oh-my-pi's turn jumps) and Shift+Enter (oh-my-pi's navigate-and-summarize without asking), plus the
keys help that lists them (Playwright driving Chromium against a live daphne server, tests/browser.py; the
summary comes from a local model server, tests/llm_server.py)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BROWSER_MARKS, TIMEOUT_MS, live_server
from tests.llm_server import LlmServer
from tests.reference import DATA

pytestmark = BROWSER_MARKS

SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
FIXTURE = "v3_branching_labels.jsonl"
SHOTS = Path(__file__).resolve().parent.parent / "var" / "screens" / "selector"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, sessions / FIXTURE)
    with LlmServer(provider="openai", tokens=[f"token{i} " for i in range(8)], delay=0.0) as llm:
        env = {
            "ARBOR_LLM_PROVIDER": "openai",
            "ARBOR_LLM_BASE_URL": llm.base_url,
            "ARBOR_LLM_MODEL": "local-test-model",
        }
        with live_server(tmp_path, sessions, **env) as url:
            yield url


def selected(page: Page) -> str | None:
    return page.locator('#tree [role="treeitem"][aria-selected="true"]').get_attribute("data-entry-id")


def test_label_times_turn_jumps_and_shift_enter(server: str, page: Page) -> None:
    page.goto(f"{server}/s/{SID}/?filter=all&targetId=b2000008")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")
    page.locator('#tree [data-entry-id="b2000008"] a').focus()

    # Shift+T: the label's time appears after the label (in the reader's time), and goes again.
    stamp = page.locator('#tree [data-entry-id="b2000008"] time.label-time')
    expect(stamp).to_be_hidden()
    page.keyboard.press("Shift+T")
    expect(stamp).to_be_visible()
    expect(stamp).to_have_text(re.compile(r"^(\d\d/)?\d{1,2}/\d{1,2} \d\d:\d\d$|^\d\d:\d\d$"))
    page.keyboard.press("Shift+T")
    expect(stamp).to_be_hidden()

    # Alt+Up / Alt+Down: user and assistant rows only (the branch summary, labels and tool results are
    # passed over), and no wrapping at either end.
    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", "b2000007")
    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", "b2000002")
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", "b2000001")
    page.keyboard.press("Alt+ArrowDown")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", "b2000002")
    page.keyboard.press("End")
    page.keyboard.press("Alt+ArrowUp")  # from the last row ([label: start]) to the assistant above it
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", "b2000006")

    # Shift+Enter: the leaf moves there with a summary of the branch left, without the choice being asked.
    page.keyboard.press("Shift+Enter")
    expect(page.locator("#navigator-progress")).to_be_visible()
    expect(page.locator("#navigator")).to_be_hidden(timeout=TIMEOUT_MS)
    expect(page.locator("#live-status")).to_contain_text("summary of the abandoned branch was added")
    leaf = page.locator("#tree .tree-row.leaf")
    expect(leaf).to_contain_text("token0")
    assert leaf.get_attribute("data-entry-id") not in (None, "b2000006")


@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
def test_keys_help_and_label_times_fit_the_screen(
    server: str, browser: Browser, width: int, height: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.goto(f"{server}/s/{SID}/?filter=all&targetId=b2000008")
    page.locator('#tree [data-entry-id="b2000008"] a').focus()
    page.keyboard.press("Shift+T")
    page.locator("details.tree-keys > summary").click()
    help_box = page.locator("details.tree-keys dl")
    expect(help_box).to_contain_text("Shift+Enter")
    expect(page.locator('#tree [data-entry-id="b2000008"] time.label-time')).to_be_visible()
    # The help stays inside the tree pane (no overflow past the screen's right edge).
    box = help_box.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"tree-keys-{width}.png"))
    context.close()
