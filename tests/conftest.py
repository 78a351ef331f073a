"""Fixtures shared by several test modules."""

import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.core.cache import cache

from tests.browser import browser, page

# The test process shares its PostgreSQL connections between test cases, threads and the test client in ways
# a server never does (a test case's transaction, flushes between test cases, threads whose request_finished
# the test client disconnects): pooled, they deadlocked flushes and outlived their tests. The suite's own
# process connects without the pool (settings are loaded, no connection is made yet); the servers the tests
# start, and tests/test_db_pool.py, use the pool as configured.
settings.DATABASES["default"].get("OPTIONS", {}).pop("pool", None)

__all__ = ["browser", "page"]


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    """Sign-in failure counts (treeview/throttle.py) never carry from one test to the next."""
    cache.clear()
    yield
    cache.clear()


# -- the PostgreSQL run ------------------------------------------------------------------------------------
# `ARBOR_DB=postgres ./arbor test` (CI's second run) runs the tests whose outcome can depend on the
# database: those that use it (pytest-django's `django_db` mark or database fixtures) and those marked
# `database` (a live server on the configured database). The others (the pure core, and the browser tests,
# whose live servers always use their own SQLite file) would repeat the SQLite run exactly;
# ARBOR_TEST_ALL=1 runs them too.

DATABASE_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


def _uses_database(item: pytest.Item) -> bool:
    if item.get_closest_marker("django_db") or item.get_closest_marker("database"):
        return True
    return bool(DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("ARBOR_DB") != "postgres" or os.environ.get("ARBOR_TEST_ALL") == "1":
        return
    kept = [item for item in items if _uses_database(item)]
    left = [item for item in items if not _uses_database(item)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config.stash[_LEFT_TO_SQLITE] = len(left)


_LEFT_TO_SQLITE = pytest.StashKey[int]()


def _say_what_the_postgres_run_left(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if os.environ.get("ARBOR_DB") != "postgres" or os.environ.get("ARBOR_TEST_ALL") == "1":
        return
    # (under pytest-xdist the workers collect, so this process does not know how many)
    left = config.stash.get(_LEFT_TO_SQLITE, None)
    terminalreporter.write_line(
        f"PostgreSQL run: {'the ' + str(left) if left else 'the'} tests that never touch the database (the "
        "pure core, the browser tests on their own SQLite servers) are left to the SQLite run; "
        "ARBOR_TEST_ALL=1 runs them here too."
    )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    _say_what_the_postgres_run_left(terminalreporter, config)
    _say_loudly_when_chromium_is_missing(terminalreporter)


def _say_loudly_when_chromium_is_missing(terminalreporter: pytest.TerminalReporter) -> None:
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
