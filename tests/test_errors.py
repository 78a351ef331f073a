"""Arbor's own error pages (treeview/errors.py), the favicon and the site-wide htmx configuration."""

from __future__ import annotations

import json
import re

import pytest
from django.test import RequestFactory

from treeview import errors

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("debug", [True, False])
def test_an_unknown_session_gets_arbors_404_page_even_in_debug(client, settings, debug):
    settings.DEBUG = debug

    response = client.get("/s/no-such-session/")

    html = response.content.decode()
    assert response.status_code == 404
    assert "Nothing here" in html
    assert "No imported session has this id." in html
    assert 'class="site-header"' in html  # the site's page, with its navigation
    assert "technical_404" not in html and "Using the URLconf" not in html


def test_an_unknown_entry_gets_arbors_404_page(client, settings, tmp_path):
    from tests.reference import import_fixture

    settings.DEBUG = True
    session = import_fixture(tmp_path, "v3_branching_labels.jsonl")

    response = client.get(f"/s/{session.session_id}/entry/nope/comments/")

    assert response.status_code == 404
    assert "Nothing here" in response.content.decode()


def test_an_unknown_address_gets_arbors_404_page_without_debug(client, settings):
    settings.DEBUG = False

    response = client.get("/no/such/page/")

    assert response.status_code == 404
    assert "does not lead to a session" in response.content.decode()


def test_403_and_500_pages():
    request = RequestFactory().get("/")
    from treeview.access import local_user

    request.user = local_user()

    denied = errors.permission_denied(request, PermissionError("you cannot change this session"))
    broken = errors.server_error(request)

    assert denied.status_code == 403 and "You cannot change this session." in denied.content.decode()
    assert broken.status_code == 500 and "Something went wrong" in broken.content.decode()


def test_favicon_ico_leads_to_the_icon_and_pages_link_it(client):
    response = client.get("/favicon.ico")
    page = client.get("/").content.decode()

    assert response.status_code == 301
    assert response["Location"].endswith(".svg")
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page


def test_htmx_injects_no_style_and_keeps_no_history_snapshots(client):
    html = client.get("/").content.decode()

    config = json.loads(re.search(r"name=\"htmx-config\"\s+content='([^']+)'", html).group(1))
    assert config["includeIndicatorStyles"] is False
    assert config["historyCacheSize"] == 0
    assert config["allowEval"] is False
    # Settling never copies a style attribute from the old element to the new one (a strict CSP refuses it).
    assert "style" not in config["attributesToSettle"]


def test_teams_are_in_the_navigation(client):
    html = client.get("/").content.decode()

    assert 'href="/teams/"' in html
    assert client.get("/teams/").status_code == 200
