"""Fixtures shared by several test modules."""

from collections.abc import Iterator

import pytest
from django.core.cache import cache

from tests.browser import browser, page

__all__ = ["browser", "page"]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Sign-in failure counts (treeview/throttle.py) never carry from one test to the next."""
    cache.clear()
    yield
    cache.clear()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly when the browser tests did not run for want of Chromium (each skip is one quiet "s")."""
    from tests.browser import CHROMIUM

    skipped = [
        report
        for report in terminalreporter.stats.get("skipped", [])
        if "browser" in getattr(report, "keywords", {}) and CHROMIUM in str(report.longrepr)
    ]
    if not skipped:
        return
    terminalreporter.write_sep("!", f"{len(skipped)} BROWSER TESTS WERE SKIPPED", red=True, bold=True)
    terminalreporter.write_line(
        f"Chromium is missing at {CHROMIUM}: the journeys in a real browser (opening sessions, the tree, "
        "phone layouts, console errors) were NOT checked.",
        red=True,
    )
    terminalreporter.write_line(
        "Install it and run again: sudo apt-get install chromium   (Debian/Ubuntu; .ci/run does this)",
        red=True,
    )
