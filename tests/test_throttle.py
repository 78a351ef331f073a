"""Sign-in throttling (treeview/throttle.py): failed sign-ins per username and per address, on the sign-in
page, the admin's and the password change; the window ends by itself."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

pytestmark = pytest.mark.django_db
PASSWORD = "alice-password-1"


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_LOGIN_FAILURES = 5


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password=PASSWORD, is_staff=True, is_superuser=True)


def _sign_in(client: Client, username: str, password: str, url: str = "/accounts/login/") -> Any:
    return client.post(url, {"username": username, "password": password})


def test_after_five_failures_even_the_right_password_is_refused_with_429(alice: User) -> None:
    client = Client()
    for _ in range(5):
        response = _sign_in(client, "alice", "wrong")
        assert response.status_code == 200
        assert "Please enter a correct username and password" in response.content.decode()
    refused = _sign_in(client, "alice", PASSWORD)
    assert refused.status_code == 429
    assert "Too many failed sign-ins. Wait 15 minutes" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    # Letter case and spaces do not make another username.
    assert _sign_in(Client(), " ALICE", PASSWORD).status_code == 429


def test_a_success_before_the_limit_forgets_the_failures(alice: User) -> None:
    client = Client()
    for _ in range(4):
        _sign_in(client, "alice", "wrong")
    assert _sign_in(client, "alice", PASSWORD).status_code == 302
    for _ in range(4):
        assert _sign_in(Client(), "alice", "wrong").status_code == 200
    assert _sign_in(Client(), "alice", PASSWORD).status_code == 302


def test_one_address_trying_many_usernames_is_stopped(alice: User) -> None:
    client = Client(REMOTE_ADDR="203.0.113.9")
    for index in range(20):
        assert _sign_in(client, f"user{index}", "wrong").status_code == 200
    assert _sign_in(client, "alice", PASSWORD).status_code == 429
    # Someone else, from another address, signs in as usual.
    assert _sign_in(Client(REMOTE_ADDR="198.51.100.7"), "alice", PASSWORD).status_code == 302


def test_the_lockout_ends_with_its_window(settings: Any) -> None:
    # A fast hasher, so that five failures fit well inside a short window on a busy machine.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    User.objects.create_user("alice", password=PASSWORD)
    settings.ARBOR_LOGIN_WINDOW_SECONDS = 2
    started = time.monotonic()
    for _ in range(5):
        _sign_in(Client(), "alice", "wrong")
    assert _sign_in(Client(), "alice", PASSWORD).status_code == 429
    assert time.monotonic() - started < 2, "the machine is too slow for this window"
    time.sleep(2.2)
    assert _sign_in(Client(), "alice", PASSWORD).status_code == 302


def test_the_admin_sign_in_is_throttled_too(alice: User) -> None:
    for _ in range(5):
        _sign_in(Client(), "alice", "wrong", "/admin/login/")
    response = _sign_in(Client(), "alice", PASSWORD, "/admin/login/")
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in response.wsgi_request.session


def test_old_password_guesses_on_the_password_change_count(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    change = {"new_password1": "a-long-new-passphrase-42", "new_password2": "a-long-new-passphrase-42"}
    for _ in range(5):
        response = client.post("/accounts/password/", {"old_password": "wrong", **change})
        assert response.status_code == 200
    response = client.post("/accounts/password/", {"old_password": PASSWORD, **change})
    assert "Too many failed sign-ins" in response.content.decode()
    assert User.objects.get(pk=alice.pk).check_password(PASSWORD)
