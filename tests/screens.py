"""``./arbor screens [--out DIR]``: a screenshot tour of every screen, on the sample data.

A live daphne (tests/browser.py) serves a fresh database with the sample sessions (samples/ and
tests/data/real), a comment, a review status and a share link; headless Chromium visits every screen at a
1440x900 desktop and a 390x844 phone, light and dark, and writes ``<screen>-<size>-<scheme>.png`` into DIR.
It reports, per screen, what a person would notice: a page wider than the window, text below WCAG AA
contrast, console errors and Content-Security-Policy violations. The exit status is 1 when any screen has
such a problem.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

from tests.browser import CHROMIUM, CHROMIUM_ARGS, REPO, live_server

SHOWCASE_ID = "0197a5c2-4e1b-7d20-8c3a-5f6e7d8c9b01"
CHECKER_ID = "0197a5ca-11d0-7b3e-8e4f-2a6b7c8d9e13"  # the showcase's nested subagent (Reviewer.Checker)
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
SCHEMES = ("light", "dark")

# Run in `manage.py shell` after the import: what the review, comment and share screens show.
SETUP = f"""
from pathlib import Path
from treeview.access import local_user
from treeview.models import AgentSession
from treeview.services import comments, review, share
user = local_user()
session = AgentSession.objects.get(session_id="{SHOWCASE_ID}")
entry = session.entries.filter(type="message", role="user").order_by("seq").first()
comments.add(session, user, entry.entry_id, "Should `--until` be inclusive too?")
review.set_review_status(session, session.leaf_id, "approved", user)
link, token = share.create_link(user, session, leaf_id=session.leaf_id, note="for the pull request")
Path("{{token_file}}").write_text(token)
"""

#: A function (for page.evaluate) listing the texts below WCAG AA contrast.
CONTRAST_CHECK = (
    (Path(__file__).resolve().parent / "contrast.js").read_text(encoding="utf-8").split("\n", 2)[2]
)

# Collects CSP violations into window.__cspViolations (read after each screen).
CSP_LISTENER = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`);
});
"""


@dataclass
class Screen:
    name: str
    path: str
    # Something to do once the page is loaded (open a tab, a dialog ...).
    act: Callable[[Page], None] | None = None


@dataclass
class Findings:
    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, shot: str, problem: str) -> None:
        self.problems.setdefault(shot, []).append(problem)


def _context_tab(page: Page) -> None:
    tab = page.locator("[data-tab='context'], a:has-text('Context'), button:has-text('Context')").first
    if tab.count():
        tab.click()
        page.wait_for_timeout(500)


def _click_then_wait(selector: str, opened: str) -> Callable[[Page], None]:
    def act(page: Page) -> None:
        target = page.locator(selector).first
        if target.count():
            target.click()
            page.locator(opened).first.wait_for(state="visible", timeout=5000)

    return act


def screens(token: str) -> list[Screen]:
    detail = f"/s/{SHOWCASE_ID}/"
    listed = [
        Screen("list", "/"),
        Screen("list-filtered", "/?sort=cost&agent=omp"),
        Screen("search", "/search/?q=since+UTC"),
        Screen(
            "list-subagents", "/", act=_click_then_wait("details.row-subagents summary", ".subagent-list")
        ),
    ]
    session = [
        Screen(f"session-{mode}", f"{detail}?filter={mode}")
        for mode in ("default", "no-tools", "user-only", "labeled-only", "all", "commented")
    ]
    return [
        *listed,
        *session,
        Screen("session-context", detail, act=_context_tab),
        # A subagent's transcript: the breadcrumb to the showcase and its subagent, and their task calls.
        Screen("session-subagent", f"/s/{CHECKER_ID}/"),
        # The first prompt carries the setup's comment.
        Screen("session-comments", f"{detail}?targetId=5c000003"),
        Screen("dialog-navigate", detail, act=_click_then_wait("#go-here", "dialog#navigator[open]")),
        Screen(
            "dialog-branch",
            detail,
            act=_click_then_wait("[data-branch-picker-open]", "dialog#branch-picker[open]"),
        ),
        Screen("share-preview", f"{detail}share/"),
        Screen("share-page", f"/share/{token}/"),
        Screen("shared-links", "/shared/"),
        Screen("review", "/review/"),
        Screen("teams", "/teams/"),
        Screen("tokens", "/accounts/tokens/"),
        Screen("not-found", "/s/no-such-session/"),
    ]


def tour(base_url: str, token: str, out: Path, only: set[str] | None = None) -> Findings:
    findings = Findings()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for size, (width, height) in SIZES.items():
            for scheme in SCHEMES:
                context = browser.new_context(
                    viewport={"width": width, "height": height}, color_scheme=scheme
                )
                context.add_init_script(CSP_LISTENER)
                page = context.new_page()
                errors: list[str] = []
                page.on("console", lambda m, e=errors: e.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda error, e=errors: e.append(str(error)))
                for screen in screens(token):
                    if only and screen.name not in only:
                        continue
                    shot = f"{screen.name}-{size}-{scheme}"
                    errors.clear()
                    page.goto(base_url + screen.path)
                    page.wait_for_load_state("networkidle")
                    if screen.act:
                        screen.act(page)
                    page.screenshot(
                        path=str(out / f"{shot}.png"), full_page=not screen.name.startswith("session")
                    )
                    wide = page.evaluate("document.documentElement.scrollWidth")
                    if wide > width:
                        findings.add(shot, f"{wide} px wide in a {width} px window")
                    for low in page.evaluate(CONTRAST_CHECK):
                        findings.add(shot, f"contrast: {low}")
                    for violation in page.evaluate("window.__cspViolations || []"):
                        findings.add(shot, f"CSP violation: {violation}")
                    for error in errors:
                        if screen.name == "not-found" and "404" in error:
                            continue  # the 404 page's own status
                        findings.add(shot, f"console: {error}")
                context.close()
        browser.close()
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./arbor screens", description=__doc__)
    parser.add_argument("--out", type=Path, default=REPO / "var" / "screens", help="default: var/screens")
    parser.add_argument("--only", action="append", help="a screen name (repeatable): list, review, ...")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"screens: {CHROMIUM} is missing (apt-get install chromium)", file=sys.stderr)
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="arbor-screens-") as tmp:
        root = Path(tmp)
        sessions = root / "sessions"
        shutil.copytree(REPO / "samples", sessions / "samples")
        shutil.copytree(REPO / "tests" / "data" / "real", sessions / "real")
        token_file = root / "token"
        setup = SETUP.replace("{token_file}", str(token_file))
        with live_server(root, sessions, setup=setup) as url:
            findings = tour(url, token_file.read_text().strip(), out, set(args.only or []) or None)
    shots = sorted(out.glob("*.png"))
    print(f"screens: {len(shots)} screenshots in {out}")
    for shot, problems in sorted(findings.problems.items()):
        for problem in problems:
            print(f"  {shot}: {problem}")
    if findings.problems:
        print(f"screens: {len(findings.problems)} screenshots show a problem (above)", file=sys.stderr)
        return 1
    print("screens: no page wider than its window, no low contrast, no console error, no CSP violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
