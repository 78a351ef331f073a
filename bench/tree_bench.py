"""What a person feels in the tree pane, measured in Chromium against a running Arbor (no setup of its own).

    .venv/bin/python bench/tree_bench.py http://127.0.0.1:8000 <session id> [--repeat 5]

On the session's page (``filter=all``, 1440x900): how long from a key press (ArrowDown) until the conversation
shows the newly selected entry (the keys' preview, debounced 120 ms, included); from a filter change until the
tree shows the new filter; how long rows stay blank after a jump of the scroll position (as dragging the
scroll bar does) until the rows of the view are there; and how many elements the page and the tree pane hold
(after load, after scrolling through the tree). Medians and maxima of ``--repeat`` runs, as JSON.

Times are taken inside the page (``performance.now()``): from the input event (the key's ``keydown``, the
select's ``change``, the scroll) until the frame painted after the content is there (a MutationObserver sees
it; then one animation frame and a task), so the harness's own round trips to Chromium are not counted. Each
is also given as seen from this script (``*_harness``), which adds those round trips.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

ROW_HEIGHT = 20  # static/explorer.js
COUNTS = """() => ({
  page: document.getElementsByTagName('*').length,
  tree: document.getElementById('tree').getElementsByTagName('*').length,
  rows: document.querySelectorAll('#tree [role=treeitem]').length,
})"""
# Whether every row of the pane's view (below the sticky filter bar) is in the list (none blank).
VIEW_FILLED = """() => {
  const pane = document.getElementById('tree-column');
  const list = document.querySelector('#tree .tree-rows');
  const listTop = list.getBoundingClientRect().top - pane.getBoundingClientRect().top + pane.scrollTop;
  // Rows under the sticky filter bar are hidden by it (as explorer.js counts the view).
  const header = document.querySelector('#tree .tree-filter')?.offsetHeight ?? 0;
  const top = pane.scrollTop + header - listTop;
  const first = Math.max(0, Math.floor(top / ROW_HEIGHT));
  const bottom = pane.scrollTop + pane.clientHeight - listTop;
  const last = Math.min(Number(list.dataset.shown) - 1, Math.ceil(bottom / ROW_HEIGHT) - 1);
  for (let i = first; i <= last; i++) {
    if (!list.querySelector(`:scope > [data-index="${i}"]`)) return false;
  }
  return true;
}""".replace("ROW_HEIGHT", str(ROW_HEIGHT))


# In the page: stamps the input events, and the paint after the conversation shows the selected row's entry,
# after the tree holds the rows of another filter, after the rows of the view are all there.
STAMPS = """() => {
  const t = (window.__bench = { input: 0, shown: 0, painted: 0, watch: null });
  const paint = () => requestAnimationFrame(() => setTimeout(() => { t.painted = performance.now(); }, 0));
  const check = () => {
    if (!t.input || t.shown || !t.watch) return;
    if (t.watch()) { t.shown = performance.now(); paint(); }
  };
  for (const type of ['keydown', 'change', 'click']) {
    document.addEventListener(type, () => { t.input = performance.now(); t.shown = 0; t.painted = 0; }, true);
  }
  new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true });
  window.__benchCheck = check;
}"""
WATCH_PREVIEW = """() => { window.__bench.watch = () => {
  const row = document.querySelector('#tree [aria-selected="true"]');
  return Boolean(row && document.querySelector(
    `#conversation article.selected[data-entry-id="${row.dataset.entryId}"]`));
}; }"""
WATCH_FILTER = """() => {
  const before = document.querySelector('#tree .tree-rows');
  window.__bench.watch = () => {
    const list = document.querySelector('#tree .tree-rows.virtual');
    return Boolean(list && list !== before);
  };
}"""
WATCH_CONTEXT = """() => {
  const before = document.getElementById('context');
  window.__bench.watch = () => {
    const pane = document.getElementById('context');
    return Boolean(pane && pane !== before && !pane.hidden && pane.querySelector('.context-state'));
  };
}"""
# A scroll jump in the page: set the position, then a frame after every row of the view is there.
JUMP = """(top) => new Promise((resolve) => {
  const pane = document.getElementById('tree-column');
  const filled = FILLED;
  const started = performance.now();
  pane.scrollTop = top;
  const poll = () => {
    if (filled()) {
      requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - started), 0));
    } else {
      requestAnimationFrame(poll);
    }
  };
  requestAnimationFrame(poll);
})""".replace("FILLED", VIEW_FILLED)


def _in_page(page: Any, _event: str = "") -> float:
    page.wait_for_function("() => window.__bench.painted > window.__bench.input && window.__bench.shown")
    return float(page.evaluate("() => (window.__bench.painted - window.__bench.input) / 1000"))


def _summary(values: list[float]) -> dict[str, float]:
    return {"median_ms": round(statistics.median(values) * 1000, 1), "max_ms": round(max(values) * 1000, 1)}


def measure(base: str, session_id: str, repeat: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    result: dict[str, Any] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
        page.set_default_timeout(30_000)
        page.goto(f"{base}/s/{session_id}/?filter=all")
        page.wait_for_selector("#tree .tree-rows.virtual")
        result["dom_after_load"] = page.evaluate(COUNTS)
        page.evaluate(STAMPS)
        # Key preview: ArrowDown, then the conversation shows the new selection.
        previews, previews_harness = [], []
        page.evaluate(WATCH_PREVIEW)
        for _ in range(repeat):
            page.locator('#tree [aria-selected="true"] > a').focus()
            page.wait_for_timeout(300)
            started = time.perf_counter()
            page.keyboard.press("ArrowDown")
            selected = page.locator('#tree [aria-selected="true"]').get_attribute("data-entry-id")
            page.wait_for_selector(f'#conversation article.selected[data-entry-id="{selected}"]')
            previews_harness.append(time.perf_counter() - started)
            previews.append(_in_page(page))
        result["key_preview"] = _summary(previews)
        result["key_preview_harness"] = _summary(previews_harness)
        # Filter switch: the select changes, the tree comes back with the new mode's rows.
        switches, switches_harness = [], []
        modes = ["default", "no-tools", "user-only", "all"]
        for i in range(repeat):
            mode = modes[i % len(modes)]
            if page.locator("#tree-filter-mode").input_value() == mode:
                mode = modes[(i + 1) % len(modes)]
            page.evaluate(WATCH_FILTER)
            page.wait_for_timeout(300)
            started = time.perf_counter()
            page.locator("#tree-filter-mode").select_option(mode)
            page.wait_for_function(
                f"() => new URL(location.href).searchParams.get('filter') === '{mode}' || "
                f"('{mode}' === 'default' && !new URL(location.href).searchParams.get('filter'))"
            )
            page.wait_for_selector("#tree .tree-rows.virtual")
            switches_harness.append(time.perf_counter() - started)
            switches.append(_in_page(page))
        result["filter_switch"] = _summary(switches)
        result["filter_switch_harness"] = _summary(switches_harness)
        page.locator("#tree-filter-mode").select_option("all")
        page.wait_for_function("() => new URL(location.href).searchParams.get('filter') === 'all'")
        page.wait_for_selector("#tree .tree-rows.virtual")
        # Scroll jumps: time until the rows in view are all there.
        shown = int(page.locator("#tree .tree-rows").get_attribute("data-shown") or 0)
        rng = random.Random(1)
        blanks = []
        for _ in range(repeat * 4):
            target = rng.randrange(0, max(1, shown - 50))
            blanks.append(float(page.evaluate(JUMP, target * ROW_HEIGHT)) / 1000)
            page.wait_for_timeout(200)
        result["scroll_jump_blank"] = _summary(blanks)
        # Scrolling through the tree a wheel step at a time: the longest any step left rows blank.
        steps = []
        for _ in range(60):
            started = time.perf_counter()
            page.mouse.move(200, 600)
            page.mouse.wheel(0, 400)
            page.wait_for_function(VIEW_FILLED, polling="raf")
            steps.append(time.perf_counter() - started)
        result["wheel_step_blank"] = _summary(steps)
        result["dom_after_scrolling"] = page.evaluate(COUNTS)
        # Search: a word typed into the search box (a key every 80 ms, as a person types), from the last key
        # until the tree shows the matches.
        searches = []
        words = ["src", "parse", "config", "error", "test"]
        for i in range(repeat):
            page.locator("#tree-search").fill("")
            page.wait_for_function("() => !new URL(location.href).searchParams.get('q')")
            page.wait_for_selector("#tree .tree-rows.virtual")
            page.wait_for_timeout(300)
            page.evaluate(WATCH_FILTER)
            word = words[i % len(words)]
            page.locator("#tree-search").press_sequentially(word, delay=80)
            page.wait_for_function(f"() => new URL(location.href).searchParams.get('q') === '{word}'")
            searches.append(_in_page(page))
        result["search_after_last_key"] = _summary(searches)
        # The Context tab: a click, until the tab shows what the model receives.
        tabs = []
        for _ in range(repeat):
            page.locator("#tab-conversation").click()
            page.wait_for_function("() => !new URL(location.href).searchParams.get('tab')")
            page.wait_for_timeout(300)
            page.evaluate(WATCH_CONTEXT)
            page.locator("#tab-context").click()
            tabs.append(_in_page(page, "click"))
        result["context_tab"] = _summary(tabs)
        result["rows_shown"] = shown
        browser.close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base")
    parser.add_argument("session_id")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.base.rstrip("/"), args.session_id, args.repeat), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
