"""Shared pieces of the real-browser tests: a live daphne server on a fresh data directory, Chromium's flags,
and the ``browser``/``page`` fixtures (registered in ``tests/conftest.py``).

``live_server(root, sessions)`` migrates a new SQLite database under ``root``, imports ``sessions`` and serves
it with daphne in a subprocess; extra environment variables configure it (``ARBOR_LLM_*`` and so on). The
tests need no database of the test process and run the same whichever database the rest of the suite uses.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

#: Debian's Chromium; ARBOR_CHROMIUM points elsewhere (a missing path skips the browser tests).
CHROMIUM = os.environ.get("ARBOR_CHROMIUM", "/usr/bin/chromium")
REPO = Path(__file__).resolve().parent.parent

#: Apply to a browser test module: ``pytestmark = BROWSER_MARKS``.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason=f"{CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)",
    ),
]
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
ASGI_APP = "sessions_site.asgi:application"
BENIGN_CONSOLE_ERRORS = ("Failed to load resource", "htmx:sendAbort", "htmx:afterRequest")


def free_port() -> int:
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


def server_env(root: Path, **extra: str) -> dict[str, str]:
    """The environment of a live server whose data lives under ``root`` (SQLite, no agent directories)."""
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "REDIS_URL")}
    env.update(
        ARBOR_DB="sqlite",
        ARBOR_DATA_DIR=str(root / "data"),
        ARBOR_SESSION_DIRS=str(root / "no-agent-dirs"),
        ARBOR_WRITE_BACK="0",
        DJANGO_SETTINGS_MODULE="sessions_site.settings",
        PYTHONUNBUFFERED="1",
    )
    env.pop("ARBOR_REDIS_URL", None)
    env.update(extra)
    return env


@contextlib.contextmanager
def daphne(env: dict[str, str], log: Path, *, timeout: float = 30) -> Iterator[str]:
    """daphne on a free port with ``env`` (output appended to ``log``); yields its base URL once ``/``
    answers. Also used by ``bench/explorer_bench.py``."""
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), ASGI_APP],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_until_serving(url + "/", process, time.monotonic() + timeout)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def live_server(root: Path, sessions: Path, *, setup: str = "", **extra: str) -> Iterator[str]:
    """daphne serving a new data directory under ``root`` with ``sessions`` imported; yields its base URL.

    ``setup`` is Python run in ``manage.py shell`` after the import (users, teams, owners for a multi-user
    test: pass ``ARBOR_SINGLE_USER="0"`` too)."""
    env = server_env(root, **extra)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=120)
    subprocess.run(
        [*manage, "import_sessions", "-q", str(sessions)], cwd=REPO, env=env, check=True, timeout=120
    )
    if setup:
        subprocess.run([*manage, "shell", "-c", setup], cwd=REPO, env=env, check=True, timeout=120)
    with daphne(env, root / "daphne.log") as url:
        yield url


def sign_in(page: Page, base_url: str, username: str, password: str) -> None:
    """Sign in through the login form (multi-user live servers)."""
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit], input[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh browser context's tab; script errors and htmx error events fail the test. Not errors: the
    missing favicon, and a request aborted by a newer one (hx-sync "replace": sendAbort + afterRequest)."""
    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    yield tab
    context.close()
    assert [error for error in errors if not error.startswith(BENIGN_CONSOLE_ERRORS)] == [], errors
