"""The team profile of docs/deploy.md: `check --deploy` clean, WhiteNoise's static files, daphne's
`--proxy-headers` behind a TLS proxy, and `./arbor serve` starting and stopping its workers."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.browser import REPO, free_port, server_env
from tests.live_push import Server

PRODUCTION = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "k" * 10 + "production-profile-test-key-0123456789abcdefghijklmnop",
    "DJANGO_ALLOWED_HOSTS": "arbor.example.com,127.0.0.1",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://arbor.example.com",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_SECURE_HSTS_PRELOAD": "1",
}


#: What nginx sends (docs/deploy.md); daphne reads X-Forwarded-Proto only along with X-Forwarded-For.
PROXIED = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return server_env(tmp_path, ARBOR_STATIC_ROOT=str(tmp_path / "static"), **PRODUCTION, **extra)


def test_check_deploy_is_clean_for_the_documented_environment(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers)

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_static_files_and_https_behind_a_proxy(tmp_path: Path) -> None:
    env = _env(tmp_path)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v", "0"], cwd=REPO, env=env, check=True, timeout=300)
    subprocess.run(
        [*manage, "collectstatic", "--noinput", "-v", "0"], cwd=REPO, env=env, check=True, timeout=300
    )
    server = Server(tmp_path, env, [free_port()])
    try:
        _start_behind_proxy(server)
        url = server.url
        proxied = PROXIED
        # Plain HTTP straight to the worker: redirected to HTTPS.
        status, headers, _ = _get(url + "/accounts/login/")
        assert status == 301 and headers["Location"].startswith("https://")
        # From the TLS proxy (X-Forwarded-Proto), daphne --proxy-headers makes it an HTTPS request.
        status, headers, body = _get(url + "/accounts/login/", **proxied)
        assert status == 200, body[:300]
        assert "Strict-Transport-Security" in headers
        css = re.search(rb'href="(/static/[^"]+\.css)"', body)
        assert css is not None and re.search(rb"\.[0-9a-f]{12}\.css$", css.group(1)), "a hashed name"
        status, headers, _ = _get(url + css.group(1).decode(), **proxied, **{"Accept-Encoding": "gzip"})
        assert status == 200
        assert "immutable" in headers["Cache-Control"] and headers.get("Content-Encoding") == "gzip"
    finally:
        server.stop()


def _start_behind_proxy(server: Server) -> None:
    port = server.ports[0]
    log = (server.root / "daphne.log").open("ab")
    server.processes.append(
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "daphne",
                "--proxy-headers",
                "-b",
                "127.0.0.1",
                "-p",
                str(port),
                "sessions_site.asgi:application",
            ],
            cwd=REPO,
            env=server.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    )
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            status, _, _ = _get(f"{server.url}/accounts/login/", **PROXIED)
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("daphne did not start")


def test_arbor_serve_starts_the_workers_and_stops_them_all(tmp_path: Path) -> None:
    port = free_port()
    second = port + 1
    env = _env(tmp_path)
    process = subprocess.Popen(
        ["bash", "arbor", "serve", "--workers", "2", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        answered: set[int] = set()
        while time.monotonic() < deadline and answered != {port, second}:
            for each in (port, second):
                try:
                    status, _, _ = _get(f"http://127.0.0.1:{each}/accounts/login/", **PROXIED)
                    if status == 200:
                        answered.add(each)
                except OSError:
                    pass
            if process.poll() is not None:
                break
            time.sleep(0.3)
        assert answered == {port, second}, (
            process.stdout.read().decode() if process.poll() is not None else ""
        )
        # SIGTERM to the script alone (as systemd's KillMode=mixed would): it stops every worker.
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) in (0, 143)
        time.sleep(1)
        for each in (port, second):
            try:
                _get(f"http://127.0.0.1:{each}/accounts/login/")
            except OSError:
                continue
            raise AssertionError(f"a worker still answers on {each}")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_production_profile_without_collectstatic_links_the_plain_names(tmp_path: Path) -> None:
    """A quick try of the production profile (DEBUG off, no `collectstatic`): pages link the files by their
    own names (WhiteNoise finds them) instead of failing with a 500 on every page."""
    from sessions_site.static_storage import StaticStorage

    storage = StaticStorage(location=str(tmp_path / "empty"), base_url="/static/")
    assert storage.url("theme.js") == "/static/theme.js"
    assert storage.url("favicon.svg") == "/static/favicon.svg"
