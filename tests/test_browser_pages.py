"""Real-browser journeys of the pages outside the session page's panes (issue 12): the session list opens a
session by click and by keyboard, its filters work, no page is wider than a phone, and no page logs a console
error or a Content-Security-Policy violation. On the sample data (samples/ and tests/data/real)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import BENIGN_CONSOLE_ERRORS, BROWSER_MARKS, REPO, TIMEOUT_MS, live_server, sign_in
from tests.screens import CHECKER_ID, CONTRAST_CHECK, CSP_LISTENER, SETUP, SHOWCASE_ID

pytestmark = BROWSER_MARKS

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The live server's URL and a share link's token."""
    root = tmp_path_factory.mktemp("browser-pages")
    sessions = root / "sessions"
    shutil.copytree(REPO / "samples", sessions / "samples")
    shutil.copytree(REPO / "tests" / "data" / "real", sessions / "real")
    token_file = root / "token"
    with live_server(root, sessions, setup=SETUP.replace("{token_file}", str(token_file))) as url:
        yield url, token_file.read_text().strip()


def pages(token: str) -> list[str]:
    """Every page outside the session page, and the session page itself."""
    return [
        "/",
        "/?sort=cost",
        "/search/?q=since",
        "/review/",
        "/shared/",
        "/teams/",
        "/accounts/tokens/",
        f"/s/{SHOWCASE_ID}/share/",
        f"/share/{token}/",
        "/s/no-such-session/",
        f"/s/{SHOWCASE_ID}/",
        f"/s/{CHECKER_ID}/",  # a nested subagent's page: its breadcrumb
    ]


def test_a_click_anywhere_on_a_row_opens_its_session(page: Page, server: tuple[str, str]) -> None:
    url, _ = server
    page.goto(url + "/")
    row = page.locator(f'tr.session-row[data-href="/s/{SHOWCASE_ID}/"]')
    expect(row).to_be_visible()

    row.locator("td.col-when").click()  # not on the link: on the row

    page.wait_for_url(f"**/s/{SHOWCASE_ID}/")
    expect(page.locator("#tree")).to_be_visible()


def test_the_keyboard_moves_between_rows_and_enter_opens_one(page: Page, server: tuple[str, str]) -> None:
    url, _ = server
    page.goto(url + "/")
    titles = page.locator("tr.session-row a.title")
    expect(titles.first).to_be_visible()
    second = titles.nth(1).get_attribute("href")

    titles.first.focus()
    page.keyboard.press("ArrowDown")
    expect(titles.nth(1)).to_be_focused()
    page.keyboard.press("Enter")

    page.wait_for_url(url + second)
    expect(page.locator("#tree")).to_be_visible()


def test_filters_narrow_the_list_in_place_and_in_the_address(page: Page, server: tuple[str, str]) -> None:
    url, _ = server
    page.goto(url + "/")
    # the showcase, with its subagents nested under it, and the three real files
    expect(page.locator("tr.session-row")).to_have_count(4)

    page.select_option("#filter-agent", "pi")

    expect(page.locator("tr.session-row")).to_have_count(2)
    expect(page).to_have_url(f"{url}/?project=&agent=pi&since=&until=&review=&min_cost=&sort=project")
    page.select_option("#filter-sort", "cost")
    expect(page.locator("tr.project-row")).to_have_count(0)
    expect(page.locator(".row-project").first).to_be_visible()


def test_the_row_menu_opens_and_closes(page: Page, server: tuple[str, str]) -> None:
    url, _ = server
    page.goto(url + "/")
    menu = page.locator("details.row-menu").first
    menu.locator("summary").click()
    expect(menu.get_by_text("Download the session file")).to_be_visible()

    page.keyboard.press("Escape")

    expect(menu.get_by_text("Download the session file")).to_be_hidden()


def test_no_page_is_wider_than_a_phone(browser: Browser, server: tuple[str, str]) -> None:
    url, token = server
    context = browser.new_context(viewport=PHONE)
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    wide = {}
    for path in pages(token):
        tab.goto(url + path)
        tab.wait_for_load_state("networkidle")
        width = tab.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            wide[path] = width
    context.close()

    assert wide == {}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_meets_wcag_aa_contrast(browser: Browser, server: tuple[str, str], scheme: str) -> None:
    url, token = server
    context = browser.new_context(color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    low = {}
    for path in pages(token):
        tab.goto(url + path)
        tab.wait_for_load_state("networkidle")
        found = tab.evaluate(CONTRAST_CHECK)
        if found:
            low[path] = found
    context.close()

    assert low == {}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_page_logs_an_error_or_a_csp_violation(
    browser: Browser, server: tuple[str, str], scheme: str
) -> None:
    url, token = server
    context = browser.new_context(color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(CSP_LISTENER)
    tab = context.new_page()
    problems: dict[str, list[str]] = {}
    current = [""]

    def note(text: str) -> None:
        problems.setdefault(current[0], []).append(text)

    tab.on("console", lambda message: note(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: note(str(error)))
    for path in pages(token):
        current[0] = path
        response = tab.goto(url + path)
        tab.wait_for_load_state("networkidle")
        for violation in tab.evaluate("window.__cspViolations"):
            note(f"CSP: {violation}")
        if path == "/s/no-such-session/":
            assert response is not None and response.status == 404
    context.close()

    # The 404 page's own status is logged as a failed resource load: expected there, nowhere else.
    not_found = problems.pop("/s/no-such-session/", [])
    assert [p for p in not_found if not p.startswith(BENIGN_CONSOLE_ERRORS)] == []
    assert problems == {}


# -- the account pages, on a multi-user server ------------------------------------------------------------

ACCOUNTS_SETUP = (
    "from django.contrib.auth.models import User; "
    "User.objects.create_superuser('ada', 'ada@example.com', 'pw-ada-1')"
)


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("browser-accounts")
    sessions = root / "sessions"
    shutil.copytree(REPO / "samples", sessions / "samples")
    with live_server(root, sessions, setup=ACCOUNTS_SETUP, ARBOR_SINGLE_USER="0") as url:
        yield url


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_account_pages_fit_a_phone_read_well_and_log_nothing(
    browser: Browser, team_server: str, scheme: str
) -> None:
    context = browser.new_context(viewport=PHONE, color_scheme=scheme)
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(CSP_LISTENER)
    tab = context.new_page()
    problems: list[str] = []
    tab.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)

    def check(path: str) -> None:
        tab.wait_for_load_state("networkidle")
        width = tab.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            problems.append(f"{path}: {width} px wide")
        problems.extend(f"{path}: {low}" for low in tab.evaluate(CONTRAST_CHECK))
        problems.extend(f"{path}: CSP {v}" for v in tab.evaluate("window.__cspViolations"))

    tab.goto(team_server + "/accounts/login/")
    check("/accounts/login/")
    sign_in(tab, team_server, "ada", "pw-ada-1")
    for path in (
        "/",
        "/accounts/password/",
        "/accounts/invites/",
        "/teams/",
        "/accounts/tokens/",
        "/review/",
    ):
        tab.goto(team_server + path)
        check(path)
    context.close()

    assert problems == []
