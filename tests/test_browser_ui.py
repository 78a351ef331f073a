"""Real-browser tests of the session page's interface: the theme toggle, the resizable panes, copy links,
hidden custom messages on demand, the tabs and the tree as one tab stop (Playwright and Chromium, see
tests/browser.py)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BENIGN_CONSOLE_ERRORS, BROWSER_MARKS, TIMEOUT_MS, live_server
from tests.reference import DATA

pytestmark = BROWSER_MARKS

BRANCHING_SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
CUSTOM_SID = "0196b4f2-4d5e-7f60-a1b2-c3d4e5f60718"  # v3_custom_mode_ttsr: two display:false custom messages
DARK_BG = "rgb(13, 17, 23)"
LIGHT_BG = "rgb(255, 255, 255)"


@pytest.fixture(scope="module")
def live_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("browser-ui")
    sessions = root / "sessions"
    sessions.mkdir()
    for name in ("v3_branching_labels.jsonl", "v3_custom_mode_ttsr.jsonl"):
        shutil.copyfile(DATA / "handmade" / name, sessions / name)
    with live_server(root, sessions) as url:
        yield url


def open_session(page: Page, base: str, session_id: str, query: str = "") -> None:
    page.goto(f"{base}/s/{session_id}/{query}")
    expect(page.locator("#tree")).to_be_visible()


def background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


def tree_width(page: Page) -> float:
    return page.locator("#tree-column").bounding_box()["width"]


# -- theme -------------------------------------------------------------------------------------------------


def test_theme_toggle_cycles_and_is_kept_across_a_reload(page: Page, live_server_url: str) -> None:
    page.emulate_media(color_scheme="light")
    open_session(page, live_server_url, BRANCHING_SID)
    html = page.locator("html")
    toggle = page.locator("#theme-toggle")
    expect(toggle).to_be_visible()
    expect(toggle).to_contain_text("system")
    assert html.get_attribute("data-theme") is None
    assert background(page) == LIGHT_BG

    toggle.click()
    expect(html).to_have_attribute("data-theme", "light")
    expect(toggle).to_contain_text("light")
    toggle.click()
    expect(html).to_have_attribute("data-theme", "dark")
    expect(toggle).to_contain_text("dark")
    assert background(page) == DARK_BG

    page.reload()
    expect(html).to_have_attribute("data-theme", "dark")
    expect(toggle).to_contain_text("dark")
    assert background(page) == DARK_BG
    # Back to system: the attribute goes, and the system's scheme decides.
    toggle.click()
    expect(html).not_to_have_attribute("data-theme", re.compile(".*"))
    expect(toggle).to_contain_text("system")
    page.emulate_media(color_scheme="dark")
    assert background(page) == DARK_BG
    page.reload()
    assert html.get_attribute("data-theme") is None
    assert background(page) == DARK_BG


def test_theme_is_applied_before_the_first_paint(page: Page, live_server_url: str) -> None:
    page.emulate_media(color_scheme="light")
    open_session(page, live_server_url, BRANCHING_SID)
    page.locator("#theme-toggle").click()
    page.locator("#theme-toggle").click()  # dark
    # Note the theme at the moment <body> is parsed, before anything is painted: theme.js must have set it.
    page.add_init_script(
        """new MutationObserver((changes, observer) => {
          if (document.body) {
            window.themeAtBody = document.documentElement.dataset.theme ?? "none";
            observer.disconnect();
          }
        }).observe(document, { childList: true, subtree: true });"""
    )
    page.reload()
    assert page.evaluate("window.themeAtBody") == "dark"


def test_focus_is_visible_in_both_themes(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID)
    outline = "((s) => [s.outlineStyle, s.outlineColor])(getComputedStyle(document.activeElement))"
    colours = []
    for theme in ("light", "dark"):
        page.locator("#theme-toggle").click()
        expect(page.locator("html")).to_have_attribute("data-theme", theme)
        page.keyboard.press("Tab")  # the keyboard moves the focus: :focus-visible applies
        style, colour = page.evaluate(outline)
        assert style != "none"
        colours.append(colour)
        page.locator("#theme-toggle").focus()
    assert colours[0] != colours[1]  # each theme has its own focus colour


# -- resizable panes ---------------------------------------------------------------------------------------


def test_pane_handle_resizes_by_keyboard_and_the_width_is_kept(page: Page, live_server_url: str) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_session(page, live_server_url, BRANCHING_SID)
    handle = page.locator("#pane-handle")
    expect(handle).to_be_visible()
    expect(handle).to_have_attribute("role", "separator")
    expect(handle).to_have_attribute("aria-orientation", "vertical")
    expect(handle).to_have_attribute("aria-valuenow", "38")
    before = tree_width(page)
    handle.focus()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(handle).to_have_attribute("aria-valuenow", "44")
    wider = tree_width(page)
    assert wider > before + 50
    page.keyboard.press("ArrowLeft")
    expect(handle).to_have_attribute("aria-valuenow", "42")
    page.keyboard.press("End")
    expect(handle).to_have_attribute("aria-valuenow", "75")
    page.keyboard.press("Home")
    expect(handle).to_have_attribute("aria-valuenow", "15")
    page.keyboard.press("Shift+ArrowRight")
    expect(handle).to_have_attribute("aria-valuenow", "25")
    kept = tree_width(page)

    page.reload()
    expect(page.locator("#pane-handle")).to_have_attribute("aria-valuenow", "25")
    assert abs(tree_width(page) - kept) < 2
    # Double-click: back to the default, and forgotten.
    page.locator("#pane-handle").dblclick()
    expect(page.locator("#pane-handle")).to_have_attribute("aria-valuenow", "38")
    assert abs(tree_width(page) - before) < 2
    assert page.evaluate("localStorage.getItem('arbor-tree-width')") is None


def test_pane_handle_can_be_dragged(page: Page, live_server_url: str) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    open_session(page, live_server_url, BRANCHING_SID)
    box = page.locator("#pane-handle").bounding_box()
    explorer = page.locator("#explorer").bounding_box()
    before = tree_width(page)
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + 200, box["y"] + box["height"] / 2, steps=5)
    page.mouse.up()
    assert tree_width(page) > before + 150
    expected = round((box["x"] + 200 - explorer["x"]) / explorer["width"] * 100)
    assert abs(int(page.locator("#pane-handle").get_attribute("aria-valuenow")) - expected) <= 1
    assert page.evaluate("localStorage.getItem('arbor-tree-width')") is not None


def test_narrow_screens_stack_the_panes_and_hide_the_handle(page: Page, live_server_url: str) -> None:
    page.set_viewport_size({"width": 600, "height": 900})
    open_session(page, live_server_url, BRANCHING_SID)
    expect(page.locator("#pane-handle")).to_be_hidden()
    tree = page.locator("#tree-column").bounding_box()
    reading = page.locator("#reading-pane").bounding_box()
    assert reading["y"] >= tree["y"] + tree["height"] - 1
    assert abs(reading["width"] - tree["width"]) < 2
    # Nothing sticks out sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 600


# -- copy links --------------------------------------------------------------------------------------------


@pytest.fixture
def clipboard_page(browser: Browser) -> Iterator[Page]:
    """A tab allowed to read and write the clipboard; script errors fail the test as with ``page``."""
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield tab
    context.close()
    assert [error for error in errors if not error.startswith(BENIGN_CONSOLE_ERRORS)] == [], errors


def test_copy_link_copies_the_absolute_permalink(clipboard_page: Page, live_server_url: str) -> None:
    page = clipboard_page
    open_session(page, live_server_url, BRANCHING_SID, "?filter=all&targetId=b2000003")
    entry = page.locator('#conversation article[data-entry-id="b2000003"]')
    button = entry.locator("button.copy-link")
    expect(button).to_be_visible()
    expect(button).to_have_text("Copy link")
    button.click()
    expect(button).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    href = entry.locator("a.permalink").get_attribute("href")
    assert copied == live_server_url + href
    assert copied.startswith("http://") and "targetId=b2000003" in copied
    expect(page.locator("#copy-status")).to_have_text("Link copied")
    expect(button).to_have_text("Copy link", timeout=3000)
    # Still there after htmx replaced the conversation (the listener is on the document).
    page.locator('#tree [data-entry-id="b2000002"] a').click()
    expect(page.locator('#conversation article.selected[data-entry-id="b2000002"]')).to_be_visible()
    other = page.locator('#conversation article[data-entry-id="b2000002"] button.copy-link')
    other.click()
    expect(other).to_have_text("Copied")
    assert "targetId=b2000002" in page.evaluate("navigator.clipboard.readText()")


def test_without_javascript_the_permalink_works_and_no_dead_button_shows(
    browser: Browser, live_server_url: str
):
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.goto(f"{live_server_url}/s/{BRANCHING_SID}/?filter=all")
        entry = page.locator('#conversation article[data-entry-id="b2000002"]')
        expect(entry.locator("button.copy-link")).to_be_hidden()
        expect(page.locator("#theme-toggle")).to_be_hidden()
        expect(page.locator("#pane-handle")).to_be_hidden()
        entry.locator("a.permalink").click()
        expect(page).to_have_url(re.compile(r"targetId=b2000002"))
        expect(page.locator('#conversation article.selected[data-entry-id="b2000002"]')).to_be_visible()
    finally:
        context.close()


# -- hidden custom messages --------------------------------------------------------------------------------


def test_hidden_custom_message_is_shown_on_demand(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, CUSTOM_SID, "?filter=all&targetId=b2100007")
    entry = page.locator('#conversation article[data-entry-id="b2100002"]')
    summary = entry.locator("summary").first
    expect(summary).to_be_visible()
    expect(summary).to_contain_text("hidden custom message (plan-mode-context)")
    expect(summary).to_contain_text("show")
    body = entry.get_by_text("Plan mode is active. Write the plan to local://PLAN.md.")
    expect(body).to_be_hidden()
    summary.click()
    expect(body).to_be_visible()
    expect(summary).to_contain_text("hide")
    expect(entry.locator("button.copy-link")).to_be_visible()
    summary.click()
    expect(body).to_be_hidden()


# -- tabs and the Context tab following the selection ------------------------------------------------------


def test_context_tab_follows_the_selection(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID, "?filter=all&targetId=b2000003")
    context_tab = page.locator("#tab-context")
    expect(page.locator("#tab-conversation")).to_have_attribute("aria-selected", "true")
    context_tab.click()
    context = page.locator("#context")
    expect(context).to_have_class(re.compile(r"\bopen\b"))
    expect(context).to_have_attribute("data-target-id", "b2000003")
    expect(page.locator("#conversation")).to_be_hidden()
    expect(page).to_have_url(re.compile(r"tab=context"))
    expect(context_tab).to_have_attribute("aria-selected", "true")
    expect(page.locator("#tab-conversation")).to_have_attribute("aria-selected", "false")

    # A click on another row, then the keyboard: the context follows each time.
    page.locator('#tree [data-entry-id="b2000002"] a').click()
    expect(context).to_have_attribute("data-target-id", "b2000002")
    expect(page).to_have_url(re.compile(r"targetId=b2000002.*tab=context|tab=context.*targetId=b2000002"))
    expect(page.locator("#tree-filter-mode")).to_have_value("all")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    expect(context).to_have_attribute("data-target-id", "b2000001")
    expect(page.locator("#conversation")).to_be_hidden()

    # Back to the conversation: the context closes, the conversation is the selected entry's.
    page.locator("#tab-conversation").click()
    expect(page.locator("#context")).to_be_hidden()
    expect(page.locator('#conversation article.selected[data-entry-id="b2000001"]')).to_be_visible()
    expect(page).not_to_have_url(re.compile(r"tab=context"))
    page.locator('#tree [data-entry-id="b2000003"] a').click()
    expect(page.locator('#conversation article.selected[data-entry-id="b2000003"]')).to_be_visible()
    expect(page.locator("#context")).to_be_hidden()

    # The browser's back button restores the tab as it was (one step at a time, as a person presses it).
    page.go_back()
    expect(page.locator('#conversation article.selected[data-entry-id="b2000001"]')).to_be_visible()
    page.go_back()
    expect(page).to_have_url(re.compile(r"tab=context"))
    expect(page.locator("#context")).to_have_attribute("data-target-id", "b2000001")


def test_tabs_move_with_the_arrow_keys(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID)
    page.locator("#tab-conversation").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-context")).to_be_focused()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-conversation")).to_be_focused()
    page.keyboard.press("End")
    expect(page.locator("#tab-context")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#context")).to_have_class(re.compile(r"\bopen\b"))


# -- the tree: roles, one tab stop -------------------------------------------------------------------------


def test_tree_is_one_tab_stop_on_the_selected_row(page: Page, live_server_url: str) -> None:
    open_session(page, live_server_url, BRANCHING_SID, "?filter=all&targetId=b2000003")
    expect(page.locator('#tree [role="tree"]')).to_have_count(1)
    selected = page.locator('#tree [role="treeitem"][aria-selected="true"]')
    expect(selected).to_have_attribute("data-entry-id", "b2000003")
    expect(selected).to_have_attribute("aria-level", re.compile(r"^\d+$"))
    page.locator(".tree-filter button[type=submit]").focus()
    page.keyboard.press("Tab")
    expect(selected.locator("a")).to_be_focused()
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.closest('[role=treeitem]') === null")
    assert focused, "a second Tab must leave the tree"
    # The arrow keys move in the tree; Tab comes back to the row moved to.
    page.locator(".tree-filter button[type=submit]").focus()
    page.keyboard.press("Tab")
    page.keyboard.press("ArrowUp")
    moved = page.evaluate("document.activeElement.closest('[role=treeitem]').dataset.entryId")
    assert moved != "b2000003"
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    assert page.evaluate("document.activeElement.closest('[role=treeitem]')?.dataset.entryId") == moved
