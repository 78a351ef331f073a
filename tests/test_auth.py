"""Accounts: login, logout, password change, createsuperuser, invites (valid, expired, used, tampered), and
the ARBOR_SINGLE_USER setting."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.test_settings import load_settings
from treeview.models import Invite, Membership, Team
from treeview.views.accounts import create_invite, token_hash

pytestmark = pytest.mark.django_db
NEW_PASSWORD = "a-long-new-passphrase-42"


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def staff() -> User:
    return User.objects.create_user("staff", password="staff-password-1", is_staff=True)


# -- login, logout, password change ------------------------------------------------------------------------


def test_login_page_renders_in_the_site_style() -> None:
    page = Client().get("/accounts/login/")
    assert page.status_code == 200
    body = page.content.decode()
    assert 'class="site-header"' in body and 'name="username"' in body and 'name="password"' in body


def test_login_with_the_right_password_signs_in_and_goes_to_next(alice: User) -> None:
    client = Client()
    data = {"username": "alice", "password": "alice-password-1", "next": "/search/"}
    response = client.post("/accounts/login/?next=/search/", data)
    assert response.status_code == 302 and response["Location"] == "/search/"
    page = client.get("/")
    assert page.status_code == 200
    assert "alice" in page.content.decode() and "Log out" in page.content.decode()


def test_login_with_a_wrong_password_is_refused(alice: User) -> None:
    client = Client()
    response = client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 200 and "did not match" in response.content.decode()
    assert client.get("/").status_code == 302


def test_login_does_not_redirect_off_site(alice: User) -> None:
    data = {"username": "alice", "password": "alice-password-1", "next": "https://evil.example/"}
    response = Client().post("/accounts/login/", data)
    assert response.status_code == 302 and response["Location"] == "/"


def test_logout_is_a_post_and_signs_out(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get("/accounts/logout/").status_code == 405
    response = client.post("/accounts/logout/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302


def test_password_change(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get("/accounts/password/").status_code == 200
    data = {"old_password": "alice-password-1", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    response = client.post("/accounts/password/", data)
    assert response.status_code == 302 and response["Location"] == "/accounts/password/done/"
    assert client.get("/accounts/password/done/").status_code == 200
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)
    wrong_old = {**data, "old_password": "nope"}
    assert client.post("/accounts/password/", wrong_old).status_code == 200  # the form again, with the error
    alice.refresh_from_db()
    assert alice.check_password(NEW_PASSWORD)


def test_createsuperuser_works_and_can_sign_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", "root-password-123")
    call_command("createsuperuser", interactive=False, username="root", email="root@example.com", verbosity=0)
    client = Client()
    assert client.login(username="root", password="root-password-123")
    assert client.get("/admin/").status_code == 200
    assert client.get("/accounts/invites/").status_code == 200


def test_login_page_needs_the_csrf_token(alice: User) -> None:
    client = Client(enforce_csrf_checks=True)
    response = client.post("/accounts/login/", {"username": "alice", "password": "alice-password-1"})
    assert response.status_code == 403


# -- invites -----------------------------------------------------------------------------------------------


def _invite_link(client: Client) -> str:
    page = client.post("/accounts/invites/", {"note": "for bob"}).content.decode()
    found = re.search(r"http://testserver(/accounts/invite/[A-Za-z0-9_-]+/)", page)
    assert found, page
    return found.group(1)


def _accept(path: str, username: str = "bob") -> Any:
    data = {"username": username, "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    return Client().post(path, data)


def test_staff_creates_an_invite_and_only_its_hash_is_stored(staff: User) -> None:
    client = Client()
    client.force_login(staff)
    path = _invite_link(client)
    token = path.rstrip("/").rsplit("/", 1)[-1]
    assert len(token) >= 43  # 32 random bytes
    invite = Invite.objects.get()
    assert invite.token_hash == token_hash(token) and token not in invite.token_hash
    assert invite.created_by == staff and invite.note == "for bob"
    assert timedelta(days=6, hours=23) < invite.expires_at - timezone.now() <= timedelta(days=7)


def test_a_valid_invite_creates_the_account_and_signs_in(staff: User) -> None:
    _, token = create_invite(staff)
    path = f"/accounts/invite/{token}/"
    client = Client()
    page = client.get(path)
    assert page.status_code == 200 and 'name="password1"' in page.content.decode()
    assert page["Referrer-Policy"] == "no-referrer"
    data = {"username": "bob", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    response = client.post(path, data)
    assert response.status_code == 302 and response["Location"] == "/"
    bob = User.objects.get(username="bob")
    assert bob.check_password(NEW_PASSWORD) and not bob.is_staff
    assert client.get("/").status_code == 200  # signed in
    invite = Invite.objects.get()
    assert invite.used_by == bob and invite.used_at is not None


def test_an_invite_into_a_team_makes_the_new_account_a_member_with_the_chosen_role(staff: User) -> None:
    team = Team.objects.create(name="reviewers")
    client = Client()
    client.force_login(staff)
    page = client.post("/accounts/invites/", {"note": "", "team": team.pk, "role": "admin"}).content.decode()
    assert "joins <strong>reviewers</strong> as admin" in page
    path = re.search(r"http://testserver(/accounts/invite/[A-Za-z0-9_-]+/)", page)
    assert path is not None
    assert _accept(path.group(1)).status_code == 302
    bob = User.objects.get(username="bob")
    assert Membership.objects.get(user=bob).team == team
    assert Membership.objects.get(user=bob).role == Membership.Role.ADMIN


def test_a_team_admin_invites_only_into_their_own_teams(alice: User) -> None:
    mine, other = Team.objects.create(name="mine"), Team.objects.create(name="other")
    Membership.objects.create(team=mine, user=alice, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(alice)
    form = client.get("/accounts/invites/").content.decode()
    assert "mine" in form and "other" not in form
    refused = client.post("/accounts/invites/", {"team": other.pk})
    assert refused.status_code == 200 and "/accounts/invite/" not in refused.content.decode()
    assert client.post("/accounts/invites/", {}).status_code == 200  # a team is required
    assert not Invite.objects.exists()
    client.post("/accounts/invites/", {"team": mine.pk})
    assert Invite.objects.get().team == mine


def test_a_plain_member_may_not_invite(alice: User) -> None:
    Membership.objects.create(team=Team.objects.create(name="t"), user=alice)
    client = Client()
    client.force_login(alice)
    assert client.get("/accounts/invites/").status_code == 403
    assert client.post("/accounts/invites/", {"note": "x"}).status_code == 403
    assert "Invite</a>" not in client.get("/").content.decode()
    assert not Invite.objects.exists()


def test_an_invite_works_once(staff: User) -> None:
    _, token = create_invite(staff)
    assert _accept(f"/accounts/invite/{token}/").status_code == 302
    second = _accept(f"/accounts/invite/{token}/", "carol")
    assert second.status_code == 404 and "not valid" in second.content.decode()
    assert Client().get(f"/accounts/invite/{token}/").status_code == 404
    assert not User.objects.filter(username="carol").exists()


def test_an_expired_invite_is_refused(staff: User) -> None:
    invite, token = create_invite(staff)
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert Client().get(f"/accounts/invite/{token}/").status_code == 404
    assert _accept(f"/accounts/invite/{token}/").status_code == 404
    assert not User.objects.filter(username="bob").exists()


@pytest.mark.parametrize("tamper", ["flip", "short", "long", "empty-ish"])
def test_a_tampered_invite_is_refused(staff: User, tamper: str) -> None:
    _, token = create_invite(staff)
    bad = {
        "flip": ("A" if token[0] != "A" else "B") + token[1:],
        "short": token[:-1],
        "long": token + "x",
        "empty-ish": "x",
    }[tamper]
    assert Client().get(f"/accounts/invite/{bad}/").status_code == 404
    assert _accept(f"/accounts/invite/{bad}/").status_code == 404
    assert not User.objects.filter(username="bob").exists()
    assert Invite.objects.get().used_at is None


def test_a_bad_invite_form_creates_nothing_and_keeps_the_invite(staff: User) -> None:
    _, token = create_invite(staff)
    response = Client().post(
        f"/accounts/invite/{token}/", {"username": "bob", "password1": "x", "password2": "y"}
    )
    assert response.status_code == 400
    assert not User.objects.filter(username="bob").exists()
    assert Invite.objects.get().used_at is None


def test_only_staff_create_invites(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get("/accounts/invites/").status_code == 403
    assert client.post("/accounts/invites/", {"note": "x"}).status_code == 403
    anonymous = Client().post("/accounts/invites/", {"note": "x"})
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert not Invite.objects.exists()


def test_invite_forms_need_the_csrf_token(staff: User) -> None:
    _, token = create_invite(staff)
    client = Client(enforce_csrf_checks=True)
    data = {"username": "bob", "password1": NEW_PASSWORD, "password2": NEW_PASSWORD}
    assert client.post(f"/accounts/invite/{token}/", data).status_code == 403
    client.force_login(staff)
    assert client.post("/accounts/invites/", {"note": "x"}).status_code == 403
    assert Invite.objects.count() == 1 and not User.objects.filter(username="bob").exists()


# -- the setting -------------------------------------------------------------------------------------------


def test_single_user_is_the_default_with_debug_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(monkeypatch)["ARBOR_SINGLE_USER"] is True


def test_single_user_is_off_by_default_in_production(monkeypatch: pytest.MonkeyPatch) -> None:
    config = load_settings(monkeypatch, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="x" * 60)
    assert config["ARBOR_SINGLE_USER"] is False


def test_single_user_can_be_set_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings(monkeypatch, ARBOR_SINGLE_USER="0")["ARBOR_SINGLE_USER"] is False
    production = load_settings(
        monkeypatch, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="x" * 60, ARBOR_SINGLE_USER="1"
    )
    assert production["ARBOR_SINGLE_USER"] is True


# -- an invite lives only while its maker could still make it ------------------------------------------


def _team_admin_invite(alice: User) -> tuple[Team, str]:
    team = Team.objects.create(name="mine")
    Membership.objects.create(team=team, user=alice, role=Membership.Role.ADMIN)
    _, token = create_invite(alice, team=team, role=Membership.Role.ADMIN)
    return team, token


def test_an_invite_of_a_team_admin_works_while_they_are_its_admin(alice: User) -> None:
    team, token = _team_admin_invite(alice)
    assert _accept(f"/accounts/invite/{token}/").status_code == 302
    assert Membership.objects.get(user__username="bob").team == team


@pytest.mark.parametrize("change", ["demoted", "removed", "deactivated", "deleted"])
def test_an_invite_dies_with_its_makers_right_to_make_it(alice: User, change: str) -> None:
    team, token = _team_admin_invite(alice)
    membership = Membership.objects.filter(team=team, user=alice)
    if change == "demoted":
        membership.update(role=Membership.Role.MEMBER)
    elif change == "removed":
        membership.delete()
    elif change == "deactivated":
        User.objects.filter(pk=alice.pk).update(is_active=False)
    else:
        alice.delete()
    assert Client().get(f"/accounts/invite/{token}/").status_code == 404
    refused = _accept(f"/accounts/invite/{token}/")
    assert refused.status_code == 404 and "not valid" in refused.content.decode()
    assert not User.objects.filter(username="bob").exists()
    assert not Membership.objects.filter(team=team, user__username="bob").exists()


def test_a_staff_invite_dies_when_its_maker_is_no_longer_staff(staff: User) -> None:
    _, token = create_invite(staff)
    User.objects.filter(pk=staff.pk).update(is_staff=False, is_superuser=False)
    assert _accept(f"/accounts/invite/{token}/").status_code == 404
    assert not User.objects.filter(username="bob").exists()
