"""Real-browser tests of the tree pane on a big generated session: one continuous virtual tree (rows load as
the pane scrolls, keys across the whole tree without wrap-around), deep rows readable, the selection in view
after a deep link, a filter change and a search, key previews, live updates that fetch only the rows in view,
and the phone layout (Playwright driving Debian's Chromium against a live daphne server: tests/browser.py)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BROWSER_MARKS, TIMEOUT_MS, live_server
from treeview.session.generate import write_session

pytestmark = BROWSER_MARKS

ENTRIES = 8_000
DEEP = 5_000  # the deep link's row among the visible rows of filter=all
ROW_HEIGHT = 20


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """daphne serving a generated session of 8,000 entries (about 120 branch points, rows 80 levels deep):
    (base URL, session id)."""
    root = tmp_path_factory.mktemp("tree")
    sessions = root / "sessions"
    sessions.mkdir()
    path = sessions / "big.jsonl"
    write_session(path, ENTRIES, seed=11)
    session_id = json.loads(path.read_text(encoding="utf-8").splitlines()[0])["id"]
    with live_server(root, sessions) as url:
        yield url, session_id


def row_at(base: str, session_id: str, index: int, query: str = "filter=all") -> str:
    """The id of visible row ``index``, from the rows endpoint."""
    with urllib.request.urlopen(f"{base}/s/{session_id}/rows/?{query}&start={index}&count=1") as answer:
        html = answer.read().decode()
    match = re.search(r'data-entry-id="([^"]+)"', html)
    assert match is not None
    return match.group(1)


STATE = """() => {
  const selected = document.querySelector('#tree [role="treeitem"][aria-selected="true"]');
  const text = selected?.querySelector('.tree-text')?.getBoundingClientRect();
  const pane = document.getElementById('tree-column').getBoundingClientRect();
  const filter = document.querySelector('#tree .tree-filter').getBoundingClientRect();
  return {
    id: selected?.dataset.entryId ?? null,
    index: selected ? Number(selected.dataset.index) : null,
    textLeft: text?.left, textTop: text?.top, textBottom: text?.bottom,
    paneLeft: pane.left, paneRight: pane.right, paneTop: filter.bottom, paneBottom: pane.bottom,
    treeElements: document.getElementById('tree').getElementsByTagName('*').length,
    shown: Number(document.querySelector('#tree .tree-rows').dataset.shown),
    indexes: Array.from(document.querySelectorAll('#tree [role="treeitem"]'), (r) => Number(r.dataset.index)),
  };
}"""


def state(page: Page) -> dict[str, object]:
    return page.evaluate(STATE)


def assert_selection_in_view(page: Page, entry_id: str) -> None:
    expect(page.locator('#tree [role="treeitem"][aria-selected="true"]')).to_have_attribute(
        "data-entry-id", entry_id
    )
    now = state(page)
    # The row's text starts inside the pane (a deep row's gutter is folded), and the row is in view.
    assert now["paneLeft"] <= now["textLeft"] < now["paneRight"] - 100, now  # type: ignore[operator]
    assert now["paneTop"] <= now["textTop"] and now["textBottom"] <= now["paneBottom"], now  # type: ignore[operator]


def open_page(page: Page, base: str, session_id: str, query: str) -> None:
    page.goto(f"{base}/s/{session_id}/{query}")
    expect(page.locator("#tree .tree-rows.virtual")).to_be_visible()


def test_deep_link_shows_the_selected_row_inside_the_pane(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    target = row_at(base, session_id, DEEP)
    open_page(page, base, session_id, f"?filter=all&targetId={target}")
    assert_selection_in_view(page, target)
    now = state(page)
    assert now["index"] == DEEP and now["shown"] > DEEP
    assert now["treeElements"] < 3_000  # type: ignore[operator]
    # Every row's text starts inside the pane, the deepest too; the full text is the row's title.
    lefts = page.locator("#tree .tree-text").evaluate_all(
        "spans => spans.map(s => s.getBoundingClientRect().left)"
    )
    assert max(lefts) < now["paneRight"] - 150  # type: ignore[operator]
    assert page.locator("#tree .tree-depth").count() > 0
    title = page.locator(f'#tree [data-entry-id="{target}"] > a').get_attribute("title")
    text = page.locator(f'#tree [data-entry-id="{target}"] .tree-text').text_content()
    assert title and text and title.endswith(text)


def test_scrolling_from_the_leaf_to_the_end_and_back_to_the_top(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    open_page(page, base, session_id, "?filter=all")
    shown = int(state(page)["shown"])  # type: ignore[call-overload]
    pane = page.locator("#tree-column")
    for target in (shown - 1, 0, shown // 2):
        # Jump there (as dragging the scroll bar does): the rows in view arrive without a click.
        pane.evaluate(f"(pane) => {{ pane.scrollTop = {target * ROW_HEIGHT} }}")
        started = time.monotonic()
        page.wait_for_function(
            f"() => document.querySelector('#tree [data-index=\"{target}\"]') !== null", timeout=5_000
        )
        assert time.monotonic() - started < 2.0
        now = state(page)
        assert now["treeElements"] < 3_000, now["treeElements"]  # type: ignore[operator]
        assert len(now["indexes"]) < 500  # type: ignore[arg-type]
    # Scrolling row by row through a few hundred rows keeps the DOM small and every row in place.
    for _ in range(30):
        pane.evaluate(f"(pane) => {{ pane.scrollTop += {10 * ROW_HEIGHT} }}")
        page.wait_for_timeout(20)
    page.wait_for_timeout(500)
    now = state(page)
    indexes = sorted(now["indexes"])  # type: ignore[arg-type]
    assert indexes == sorted(set(indexes)) and now["treeElements"] < 3_000  # type: ignore[operator]
    tops = page.locator("#tree [role=treeitem]").evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.index), r.offsetTop])"
    )
    assert all(top == index * ROW_HEIGHT for index, top in tops)


def test_keys_move_across_the_whole_tree_without_wrapping(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    open_page(page, base, session_id, "?filter=all")
    shown = int(state(page)["shown"])  # type: ignore[call-overload]
    page.locator('#tree [aria-selected="true"] > a').focus()
    page.keyboard.press("End")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-index", str(shown - 1))
    page.keyboard.press("ArrowDown")  # no wrap-around
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-index", str(shown - 1))
    assert_selection_in_view(page, row_at(base, session_id, shown - 1))
    page.keyboard.press("Home")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-index", "0")
    page.keyboard.press("ArrowUp")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-index", "0")
    page.keyboard.press("PageDown")
    after_page = int(page.locator('#tree [aria-selected="true"]').get_attribute("data-index") or 0)
    assert after_page > 10
    for _ in range(5):
        page.keyboard.press("ArrowDown")
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-index", str(after_page + 5))
    expect(page.locator('#tree [aria-selected="true"] > a')).to_be_focused()
    assert_selection_in_view(page, row_at(base, session_id, after_page + 5))


def test_moving_with_the_keys_previews_the_conversation(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    target = row_at(base, session_id, 300)
    open_page(page, base, session_id, f"?filter=all&targetId={target}")
    page.evaluate("() => { document.getElementById('tree').dataset.marked = 'kept'; }")
    page.locator('#tree [aria-selected="true"] > a').focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    second = row_at(base, session_id, 302)
    # The conversation follows the selection without Enter; the address says which entry is shown.
    article = page.locator(f'#conversation article.selected[data-entry-id="{second}"]')
    expect(article).to_be_visible(timeout=TIMEOUT_MS)  # a first render of a long path (a loaded machine)
    expect(page).to_have_url(re.compile(f"targetId={second}"))
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", second)
    expect(page.locator('#tree [aria-selected="true"] > a')).to_be_focused()
    assert_selection_in_view(page, second)
    # Only what describes the entry was swapped: the tree (its rows and scroll) is the one the page had, and
    # the forms that carry the selection follow it (a filter change and Save label act on the new entry).
    assert page.evaluate("() => document.getElementById('tree').dataset.marked") == "kept"
    expect(page.locator("#tree-target-id")).to_have_value(second)
    expect(page.locator('#label-form input[name="target_id"]')).to_have_value(second)
    # Moving the leaf stays an explicit choice: Enter on the previewed entry opens the navigator.
    page.keyboard.press("Enter")
    expect(page.locator("#navigator")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#navigator")).to_be_hidden()


def test_the_selection_stays_in_view_after_a_filter_change_and_a_search(
    page: Page, big: tuple[str, str]
) -> None:
    base, session_id = big
    target = row_at(base, session_id, DEEP)
    open_page(page, base, session_id, f"?filter=all&targetId={target}")
    page.locator("#tree-filter-mode").select_option("default")
    expect(page).to_have_url(re.compile("targetId="))
    expect(page.locator("#tree-filter-mode")).to_have_value("default")
    page.wait_for_function("() => document.querySelector('#tree .tree-rows.virtual') !== null")
    selected = page.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
    assert selected is not None
    assert_selection_in_view(page, selected)
    page.locator("#tree-search").fill("src")
    page.wait_for_function("() => new URL(location.href).searchParams.get('q') === 'src'")
    expect(page.locator("#tree .tree-rows.virtual")).to_be_visible()
    selected = page.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
    assert selected is not None
    assert_selection_in_view(page, selected)


def test_shift_l_works_while_the_search_box_has_text(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    open_page(page, base, session_id, "?filter=all&q=read")
    expect(page.locator("#tree-search")).to_have_value("read")
    page.locator('#tree [aria-selected="true"] > a').focus()
    target = page.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
    page.keyboard.press("Shift+L")
    editor = page.locator("#tree .label-editor")
    expect(editor).to_be_focused()
    # The row being labelled stays visible beside the editor.
    row = page.locator(f'#tree [data-entry-id="{target}"]')
    expect(row.locator(".tree-text")).to_be_visible()
    # The editor names the selected row (found by oh-my-pi 18's fuzzy search: its text need not hold "read").
    assert (editor.get_attribute("aria-label") or "").startswith("Label of the selected entry: [")
    page.keyboard.type("from-search")
    page.keyboard.press("Enter")
    # A save re-flattens the session's tree: seconds on a loaded machine.
    chip = page.locator(f'#tree [data-entry-id="{target}"] .label-chip')
    expect(chip).to_have_text("from-search", timeout=TIMEOUT_MS)


def test_a_live_change_fetches_only_the_rows_in_view(
    page: Page, big: tuple[str, str], browser: Browser
) -> None:
    base, session_id = big
    open_page(page, base, session_id, "?filter=all")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    other = page.context.new_page()
    other.goto(f"{base}/s/{session_id}/?filter=all")
    other.locator('#tree [aria-selected="true"] > a').focus()
    target = other.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
    other.keyboard.press("Shift+L")
    other.keyboard.type("seen-live")
    other.keyboard.press("Enter")
    chip = page.locator(f'#tree [data-entry-id="{target}"] .label-chip')
    expect(chip).to_have_text("seen-live", timeout=TIMEOUT_MS)
    # The conversation showed the branch to the leaf, which the label extended: the reading pane and the
    # forms follow too (the label field of the selected entry), the tree is not loaded again.
    expect(page.locator("#label-input")).to_have_value("seen-live", timeout=TIMEOUT_MS)
    expect(page.locator(f'#conversation article.selected[data-entry-id="{target}"]')).to_be_visible()
    other.close()
    fetched = [url for url in requests if f"/s/{session_id}/" in url]
    rows = [url for url in fetched if "/rows/?" in url]
    assert rows and all(re.search(r"count=\d+", url) for url in rows), fetched
    assert [url for url in fetched if url not in rows] == [
        f"{base}/s/{session_id}/?filter=all&targetId={target}"
    ], fetched


SET_HIDDEN = """(hidden) => {
  for (const [name, value] of [["hidden", hidden], ["visibilityState", hidden ? "hidden" : "visible"]]) {
    Object.defineProperty(document, name, { configurable: true, get: () => value });
  }
  document.dispatchEvent(new Event("visibilitychange"));
}"""


def test_a_page_in_a_background_tab_refreshes_when_shown_again(
    page: Page, big: tuple[str, str], browser: Browser
) -> None:
    """A change fetches nothing for a hidden page; showing the page brings the change at once."""
    base, session_id = big
    open_page(page, base, session_id, "?filter=all")
    expect(page.locator("#navigator-root")).to_have_attribute("data-live", "true")
    target = page.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
    page.evaluate(
        "window.__changes = 0; document.addEventListener('arbor:socket', "
        "(event) => { if (event.detail.type === 'changed') window.__changes += 1; })"
    )
    page.evaluate(SET_HIDDEN, True)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    other = page.context.new_page()
    other.goto(f"{base}/s/{session_id}/?filter=all&targetId={target}")
    other.locator('#tree [aria-selected="true"] > a').focus()
    other.keyboard.press("Shift+L")
    other.keyboard.type("while-hidden")
    other.keyboard.press("Enter")
    expect(other.locator(f'#tree [data-entry-id="{target}"] .label-chip')).to_have_text(
        "while-hidden", timeout=TIMEOUT_MS
    )
    other.close()
    # The change reached the hidden page (its socket is open) and it fetched nothing.
    page.wait_for_function("window.__changes > 0", timeout=TIMEOUT_MS)
    page.wait_for_timeout(1000)  # well past the refresh's delay
    assert [url for url in requests if f"/s/{session_id}/" in url] == []
    expect(page.locator(f'#tree [data-entry-id="{target}"]')).not_to_contain_text("while-hidden")
    page.evaluate(SET_HIDDEN, False)
    expect(page.locator(f'#tree [data-entry-id="{target}"] .label-chip')).to_have_text(
        "while-hidden", timeout=TIMEOUT_MS
    )
    assert any("/rows/?" in url for url in requests), requests


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_phone_tree_is_readable_and_a_tap_shows_the_conversation(
    browser: Browser, big: tuple[str, str], scheme: str
) -> None:
    base, session_id = big
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    target = row_at(base, session_id, DEEP)
    open_page(page, base, session_id, f"?filter=all&targetId={target}")
    assert_selection_in_view(page, target)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    shots = Path("/tmp/explorer-shots")
    if shots.is_dir():
        # caret="initial": hiding the caret leaves style="" on inputs, which htmx's settle then copies (CSP).
        page.screenshot(path=str(shots / f"test-phone-{scheme}.png"), caret="initial")
    tapped = page.locator(f'#tree [role=treeitem][data-index="{DEEP + 2}"] > a')
    entry = tapped.evaluate("(a) => a.parentElement.dataset.entryId")
    tapped.click()
    article = page.locator(f'#conversation article.selected[data-entry-id="{entry}"]')
    expect(article).to_be_in_viewport(timeout=TIMEOUT_MS)
    context.close()
    assert [error for error in errors if not error.startswith("Failed to load resource")] == [], errors


def test_a_filter_that_keeps_the_selection_brings_the_reading_pane_up_to_date(
    page: Page, big: tuple[str, str]
) -> None:
    """The server sends the tree alone after a filter change with a selection; the reading pane then comes
    again, the same entry, its links and forms carrying the new filter."""
    base, session_id = big
    user = row_at(base, session_id, 10, "filter=user-only")
    open_page(page, base, session_id, f"?filter=all&targetId={user}")
    answers: list[str] = []
    page.on(
        "response",
        lambda response: (
            answers.append(response.request.headers.get("hx-target", ""))
            if response.url.startswith(f"{base}/s/{session_id}/?")
            else None
        ),
    )
    page.locator("#tree-filter-mode").select_option("no-tools")
    expect(page).to_have_url(re.compile("filter=no-tools"))
    expect(page.locator('#tree [aria-selected="true"]')).to_have_attribute("data-entry-id", user)
    selected = page.locator(f'#conversation article.selected[data-entry-id="{user}"] a.permalink')
    expect(selected).to_have_attribute("href", re.compile(f"filter=no-tools&targetId={user}"))
    expect(page.locator("#branch-header input[name=filter]")).to_have_value("no-tools")
    assert answers[:2] == ["tree", "selection"], answers


# Every element of the session page's header that sticks out of a 390 px screen, or scrolls sideways inside
# it (the totals table's wrapper once cut the cost column and scrolled): "tag.class right/scroll widths".
HEADER_OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const element of document.querySelectorAll('.session-header, .session-header *')) {
    if (element.closest('.visually-hidden')) continue;
    const box = element.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) continue;
    const name = `${element.tagName.toLowerCase()}.${element.className}`;
    if (box.left < -0.5 || box.right > width + 0.5) out.push(`${name} left=${box.left} right=${box.right}`);
    const scrolls = ['auto', 'scroll'].includes(getComputedStyle(element).overflowX);
    if (scrolls && element.scrollWidth > element.clientWidth + 1) {
      out.push(`${name} scrolls ${element.scrollWidth} > ${element.clientWidth}`);
    }
  }
  return out;
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_phone_header_fits_the_screen_with_every_total(
    browser: Browser, big: tuple[str, str], scheme: str
) -> None:
    """At 390 px the header's totals (both rows, down to the cost) are all on screen, none cut and none
    scrolled to, each with its name."""
    base, session_id = big
    context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme)
    page = context.new_page()
    open_page(page, base, session_id, "?filter=all")
    assert page.evaluate(HEADER_OVERFLOW) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    for row in ("totals-branch", "totals-tree"):
        cost = page.locator(f".session-totals .{row} td[data-label=Cost]")
        expect(cost).to_be_visible()
        assert cost.evaluate("(td) => getComputedStyle(td, '::before').content") == '"Cost "'
        assert cost.evaluate("(td) => td.getBoundingClientRect().right") <= 390
    context.close()


def test_back_after_a_filter_change_brings_a_working_tree_back(page: Page, big: tuple[str, str]) -> None:
    base, session_id = big
    open_page(page, base, session_id, "?filter=all")
    # htmx makes no copy of the page before a swap that pushes an address (none is kept: Back asks the
    # server), so a search or a filter change does not serialize the whole page first.
    page.evaluate(
        "() => { window.__snapshots = 0; document.body.addEventListener('htmx:beforeHistorySave', "
        "() => { window.__snapshots += 1; }); }"
    )
    page.locator("#tree-filter-mode").select_option("user-only")
    expect(page).to_have_url(re.compile("filter=user-only"))
    expect(page.locator("#tree-filter-mode")).to_have_value("user-only")
    page.locator("#tree-search").press_sequentially("read", delay=20)
    expect(page).to_have_url(re.compile("q=read"))
    assert page.evaluate("window.__snapshots") == 0
    page.go_back()
    expect(page).to_have_url(re.compile("filter=user-only"))
    page.go_back()
    expect(page).to_have_url(re.compile("filter=all"))
    expect(page.locator("#tree-filter-mode")).to_have_value("all")
    expect(page.locator("#tree .tree-rows.virtual")).to_be_visible()
    # The rows stand at their places again (the page came from the server: no CSP error).
    tops = page.locator("#tree [role=treeitem]").evaluate_all(
        "rows => rows.map(r => [Number(r.dataset.index), r.offsetTop])"
    )
    assert tops and all(top == index * ROW_HEIGHT for index, top in tops)
