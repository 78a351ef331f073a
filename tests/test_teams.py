"""The Teams page (treeview/views/teams.py): who sees which team, and only a team's admins (and superusers)
see and change the exact strings its members' share links mask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.test_access import World, _world
from treeview.models import TeamSecret
from treeview.services import teams as team_service

SECRET = "corp-internal.example.net"
HTMX = {"HX-Request": "true"}


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def world(db: Any, tmp_path: Path) -> World:
    return _world(tmp_path)


def _add(world: World, role: str, value: str = SECRET, **headers: str) -> Any:
    url = f"/teams/{world.team.pk}/secrets/"
    return world.client(role).post(url, {"value": value, "label": "intranet"}, headers=headers)


def test_members_see_their_teams_and_members_but_not_other_teams(world: World) -> None:
    page = world.client("member").get("/teams/").content.decode()
    assert "reviewers" in page and "@team_admin" in page and "@member" in page
    assert "others" not in page and "@outsider" not in page
    assert "Secret strings" not in page  # not an admin
    outsider = world.client("outsider").get("/teams/").content.decode()
    assert "reviewers" not in outsider and "@member" not in outsider and "others" in outsider


def test_signed_out_visitors_are_sent_to_sign_in(world: World) -> None:
    response = Client().get("/teams/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_a_team_admin_adds_a_secret_string_shown_masked(world: World) -> None:
    response = _add(world, "team_admin")
    assert response.status_code == 302 and response["Location"] == f"/teams/#team-{world.team.pk}"
    secret = TeamSecret.objects.get()
    assert (
        secret.team == world.team
        and secret.value == SECRET
        and secret.created_by == world.users["team_admin"]
    )
    page = world.client("team_admin").get("/teams/").content.decode()
    assert "intranet" in page and "co••••••et (25 characters)" in page
    assert SECRET not in page


def test_with_htmx_the_team_card_comes_back_with_errors_in_place(world: World) -> None:
    response = _add(world, "team_admin", "abc", **HTMX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith(f'<article id="team-{world.team.pk}"') and "at least 4 characters" in body
    assert not TeamSecret.objects.exists()
    response = _add(world, "team_admin", **HTMX)
    assert response.status_code == 200 and "co••••••et" in response.content.decode()
    duplicate = _add(world, "team_admin", **HTMX)
    assert "already masks that string" in duplicate.content.decode()
    assert TeamSecret.objects.count() == 1


def test_members_outsiders_and_anonymous_cannot_change_secrets(world: World) -> None:
    assert _add(world, "member").status_code == 403
    assert _add(world, "outsider").status_code == 404
    assert _add(world, "anonymous").status_code == 302
    secret = team_service.add_secret(world.team, SECRET, "x", world.users["team_admin"])
    remove = f"/teams/{world.team.pk}/secrets/{secret.pk}/remove/"
    assert world.client("member").post(remove).status_code == 403
    assert world.client("outsider").post(remove).status_code == 404
    assert TeamSecret.objects.count() == 1
    assert world.client("superuser").post(remove).status_code == 302
    assert not TeamSecret.objects.exists()


def test_a_secret_of_another_team_cannot_be_removed_through_mine(world: World) -> None:
    other = world.users["outsider"].teams.get()
    secret = team_service.add_secret(other, SECRET, "x", world.users["outsider"])
    response = world.client("team_admin").post(f"/teams/{world.team.pk}/secrets/{secret.pk}/remove/")
    assert response.status_code == 404
    assert TeamSecret.objects.filter(pk=secret.pk).exists()


def test_team_posts_need_the_csrf_token(world: World) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.users["team_admin"])
    response = client.post(f"/teams/{world.team.pk}/secrets/", {"value": SECRET})
    assert response.status_code == 403
    assert not TeamSecret.objects.exists()


def test_short_and_long_strings_are_refused() -> None:
    with pytest.raises(team_service.BadSecret):
        team_service.masked("x") and team_service.add_secret(None, "   ab ", "", None)  # type: ignore[arg-type]
    assert team_service.masked("abcd") == "••••"
