"""``./arbor test`` without Chromium: the skipped browser tests are announced at the end (conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_browser_test(chromium: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_browser_pages.py::test_the_row_menu_opens_and_closes",
        ],
        cwd=REPO,
        env={**os.environ, "ARBOR_CHROMIUM": chromium},
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def test_a_missing_chromium_is_reported_loudly_at_the_end(tmp_path: Path) -> None:
    out = run_browser_test(str(tmp_path / "no-chromium"))

    assert "1 BROWSER TESTS WERE SKIPPED" in out
    assert "apt-get install chromium" in out
