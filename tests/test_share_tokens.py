"""Share tokens: what a presented token opens and what it never does. Expired, revoked, over the view limit
(counted atomically, even under concurrent views), tampered, crossed with another link or session, malformed;
the token's length and randomness; and a token holder reaches nothing but the shared branch."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from tests.test_access import SECRETS, SID, _get_urls, _post_requests
from tests.test_share import (
    OTHER_BRANCH,
    SHARE_SID,
    ShareWorld,
    body,
    make_link,
    make_share_world,
    share_url,
)
from treeview.models import ShareLink
from treeview.services import share

SHARED_TEXT = "Branch A: added /healthz."


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def sw(db: Any, tmp_path: Path) -> ShareWorld:
    return make_share_world(tmp_path)


def _refused(response: Any, status: int) -> None:
    assert response.status_code == status
    page = body(response)
    assert SHARED_TEXT not in page and OTHER_BRANCH not in page
    assert response["Cache-Control"] == "no-store" and response["Referrer-Policy"] == "no-referrer"


def _all_urls(token: str) -> list[str]:
    return [share_url(token), share_url(token, "branch.jsonl"), share_url(token, "branch.md")]


# -- the token ---------------------------------------------------------------------------------------------


def test_tokens_are_long_random_and_unrelated_to_ids(sw: ShareWorld) -> None:
    tokens = [make_link(sw)[1] for _ in range(20)]
    assert len(set(tokens)) == 20
    for token in tokens:
        assert len(token) == share.TOKEN_CHARS
        # The secret part alone carries 256 bits (43 urlsafe characters); the lookup 72 more.
        assert len(token) - share.LOOKUP_CHARS >= 22
        assert all(c.isalnum() or c in "-_" for c in token)
        assert SHARE_SID not in token
    # Twenty links to the same branch by the same user: twenty unrelated lookups and tokens (nothing derived
    # from the session, the entry, the user or the row's id).
    links = list(ShareLink.objects.order_by("pk"))
    assert len({link.lookup for link in links}) == 20
    assert [token[: share.LOOKUP_CHARS] for token in tokens] == [link.lookup for link in links]
    assert all(str(link.pk) not in (link.lookup, token) for link, token in zip(links, tokens, strict=True))
    # Characters spread over the whole alphabet: a 20 × 55-character sample uses many distinct symbols.
    assert len(set("".join(tokens))) > 50


def test_the_database_holds_only_the_hash(sw: ShareWorld) -> None:
    link, token = make_link(sw)
    stored = [str(value) for value in ShareLink.objects.values().get(pk=link.pk).values()]
    assert token not in stored and token[share.LOOKUP_CHARS :] not in "".join(stored)


# -- refusals ----------------------------------------------------------------------------------------------


def test_an_expired_link_is_gone(sw: ShareWorld) -> None:
    link, token = make_link(sw)
    ShareLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    for url in _all_urls(token):
        _refused(Client().get(url), 410)
    assert "expired" in body(Client().get(share_url(token)))
    link.refresh_from_db()
    assert link.view_count == 0


def test_a_revoked_link_is_gone(sw: ShareWorld) -> None:
    link, token = make_link(sw)
    share.revoke(sw.users["owner"], link)
    for url in _all_urls(token):
        _refused(Client().get(url), 410)
    with pytest.raises(share.ShareRefused) as refusal:
        share.resolve(token)
    assert refusal.value.reason == "revoked"


def test_the_view_limit_counts_pages_and_downloads(sw: ShareWorld) -> None:
    link, token = make_link(sw, max_views=2)
    visitor = Client()
    assert visitor.get(share_url(token)).status_code == 200
    assert visitor.get(share_url(token, "branch.md")).status_code == 200
    for url in _all_urls(token):
        _refused(visitor.get(url), 410)
    assert "view limit" in body(visitor.get(share_url(token)))
    link.refresh_from_db()
    assert link.view_count == 2 and link.last_viewed_at is not None


@pytest.mark.django_db(transaction=True)
def test_concurrent_views_never_exceed_the_limit(tmp_path: Path) -> None:
    sw = make_share_world(tmp_path)
    link, token = make_link(sw, max_views=3)
    results: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def view() -> None:
        start.wait()
        try:
            for _ in range(200):
                try:
                    share.count_view(share.resolve(token))
                    outcome = "ok"
                except OperationalError as error:
                    # SQLite's shared in-memory test database refuses a write while another holds the table
                    # ("table is locked", no busy wait, unlike a database file): try again.
                    if "locked" not in str(error):
                        raise
                    time.sleep(0.01)
                    continue
                except share.ShareRefused as refusal:
                    outcome = refusal.reason
                break
        finally:
            connection.close()
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=view) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    link.refresh_from_db()
    assert results.count("ok") == 3 and link.view_count == 3
    assert set(results) - {"ok"} <= {"exhausted"}


def _tampered(token: str) -> list[str]:
    flip = "A" if token[-1] != "A" else "B"
    middle = len(token) // 2
    swap = "x" if token[middle] != "x" else "y"
    return [
        token[:-1] + flip,  # last character changed
        token[:middle] + swap + token[middle + 1 :],  # one in the middle
        ("Z" if token[0] != "Z" else "Y") + token[1:],  # the lookup changed
        token[:-1],  # truncated
        token[: share.LOOKUP_CHARS],  # only the lookup
        token + "A",  # extended
        token.upper(),
        token + "/../",
        "",
    ]


def test_a_tampered_token_opens_nothing(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    for forged in _tampered(token):
        if not forged:
            continue
        for url in _all_urls(forged):
            response = Client().get(url)
            assert response.status_code == 404, (forged, url)
            assert SHARED_TEXT not in body(response)
        with pytest.raises(share.ShareRefused) as refusal:
            share.resolve(forged)
        assert refusal.value.reason == "not_found"
    assert ShareLink.objects.get().view_count == 0


@pytest.mark.parametrize("token", ["", "a", "x" * 54, "x" * 56, "é" * 55, " " * 55, "%00" * 20])
def test_malformed_tokens_are_refused_before_any_lookup(token: str) -> None:
    with pytest.raises(share.ShareRefused) as refusal:
        share.resolve(token)
    assert refusal.value.reason == "not_found"


def test_the_lookup_of_one_link_with_the_secret_of_another_opens_nothing(sw: ShareWorld) -> None:
    _, first = make_link(sw)
    _, second = make_link(sw, leaf_id="m2")
    crossed = first[: share.LOOKUP_CHARS] + second[share.LOOKUP_CHARS :]
    response = Client().get(share_url(crossed))
    assert response.status_code == 404 and SHARED_TEXT not in body(response)
    crossed = second[: share.LOOKUP_CHARS] + first[share.LOOKUP_CHARS :]
    assert Client().get(share_url(crossed)).status_code == 404


def test_a_token_shows_only_its_own_session(sw: ShareWorld) -> None:
    # A link to another session (the world's fixture) and this one's: each shows its own branch only, whatever
    # the query asks for.
    other, other_token = share.create_link(
        sw.users["owner"], sw.world.session, leaf_id=sw.world.session.leaf_id
    )
    _, token = make_link(sw)
    page = body(
        Client().get(share_url(token) + f"?leafId={sw.world.session.leaf_id}&copy={other.session_id}")
    )
    assert SHARED_TEXT in page and SECRETS[0] not in page
    page = body(Client().get(share_url(other_token) + "?leafId=m4&targetId=m4"))
    assert SECRETS[0] in page and SHARED_TEXT not in page


def test_a_link_whose_session_was_deleted_is_gone(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    sw.session.delete()
    assert Client().get(share_url(token)).status_code == 404


def test_sharing_turned_off_answers_404_like_an_unknown_link(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    share.set_sharing(False)
    for url in _all_urls(token):
        _refused(Client().get(url), 404)
    assert body(Client().get(share_url(token))) == body(Client().get(share_url("x" * share.TOKEN_CHARS)))


def test_share_urls_answer_only_get(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    client = Client(enforce_csrf_checks=True)
    for url in _all_urls(token):
        assert client.post(url).status_code in (403, 405)
    assert ShareLink.objects.get().view_count == 0


# -- the token holder's reach (the authorization matrix's row) ---------------------------------------------


def test_a_token_holder_gets_the_share_and_nothing_else(sw: ShareWorld) -> None:
    _, token = make_link(sw)
    holder = Client()
    for url in _all_urls(token):
        assert holder.get(url).status_code == 200
    # Every session URL (this session's and the world's) still sends the holder to the login page.
    session_urls = {name: url.replace(SID, SHARE_SID) for name, url in _get_urls(sw.world).items()}
    for url in [*_get_urls(sw.world).values(), *session_urls.values(), "/", "/search/?q=a", "/shared/"]:
        response = holder.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/"), url
        assert SHARED_TEXT not in body(response)
    for url, data in _post_requests(sw.world).values():
        assert holder.post(url, data).status_code in (302, 403), url
    link = ShareLink.objects.get()
    assert holder.post(f"/shared/{link.pk}/revoke/").status_code in (302, 403)
    assert holder.post(f"/s/{SHARE_SID}/share/", {"leafId": "m6", "expires": "7d"}).status_code in (302, 403)
    link.refresh_from_db()
    assert link.revoked_at is None and ShareLink.objects.count() == 1
    # The branch's page never holds the other branch, nor a link into the session.
    page = body(holder.get(share_url(token)))
    assert OTHER_BRANCH not in page and f"/s/{SHARE_SID}/" not in page
