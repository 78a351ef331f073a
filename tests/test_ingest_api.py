"""The ingest API (treeview/ingest): tokens, the prefix handshake, append-only chunks, idempotent retries,
rewrites reconciled as sync does, the half-written tail, limits and every JSON error, by route and token."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from tests.reference import DATA
from treeview.ingest.models import ApiToken, IngestSource
from treeview.ingest.services import set_defaults
from treeview.ingest.tokens import create_token, revoke_token
from treeview.models import AgentSession, Comment, Membership, Team
from treeview.services import comments as comment_service
from treeview.services.export import export_text
from treeview.session.prefix import BodyHash, read_head

pytestmark = pytest.mark.django_db

FIXTURE = DATA / "handmade" / "v3_branching_labels.jsonl"
SLOTTED = DATA / "handmade" / "omp18_title_slot_new_entry_types.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"


@pytest.fixture(autouse=True)
def _site(settings: Any, tmp_path: Path) -> None:
    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    settings.ARBOR_UPLOAD_DIR = tmp_path / "data" / "uploads"


@pytest.fixture
def alice() -> User:
    return User.objects.create_user("alice", password="pw")


@pytest.fixture
def token(alice: User) -> str:
    return create_token(alice, "laptop")[1]


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _state(client: Client, token: str, path: str = "/home/a/s.jsonl", sid: str = SID, **extra: Any) -> Any:
    body = {"machine": "laptop", "path": path, "session_id": sid, **extra}
    return client.post(
        "/api/v1/sources", orjson.dumps(body), content_type="application/json", headers=_auth(token)
    )


def _append(client: Client, token: str, key: str, offset: int, data: bytes) -> Any:
    return client.post(
        f"/api/v1/sources/{key}/append?offset={offset}",
        data,
        content_type="application/octet-stream",
        headers=_auth(token),
    )


def _rewrite(client: Client, token: str, key: str, offset: int, total: int, data: bytes) -> Any:
    return client.post(
        f"/api/v1/sources/{key}/rewrite?offset={offset}&total={total}",
        data,
        content_type="application/octet-stream",
        headers=_auth(token),
    )


def _body_sha(data: bytes) -> str:
    import io

    head = read_head(io.BytesIO(data))
    assert head is not None
    return BodyHash(head.slot_length).digest(io.BytesIO(data), len(data))


def _session() -> AgentSession:
    return IngestSource.objects.get().session


# -- tokens ------------------------------------------------------------------------------------------------


def test_a_token_is_random_hashed_and_shown_once(alice: User) -> None:
    row, token = create_token(alice, "laptop", expires_days=30)
    assert token.startswith(f"arbor_{row.lookup}_") and len(token) >= 6 + 10 + 1 + 43
    assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert token not in str(ApiToken.objects.values_list())
    assert create_token(alice)[1] != token


def test_create_token_command_prints_a_working_token(alice: User, capsys: Any) -> None:
    call_command("create_token", "alice", "--name", "ci", "--expires", "2")
    token = capsys.readouterr().out.strip()
    response = Client().get("/api/v1/me", headers=_auth(token))
    assert response.status_code == 200 and response.json()["user"] == "alice"
    row = ApiToken.objects.get()
    assert row.name == "ci" and row.expires_at is not None
    assert timedelta(days=1) < row.expires_at - timezone.now() <= timedelta(days=2)


def test_last_use_is_recorded_with_the_address(token: str) -> None:
    Client().get("/api/v1/me", headers=_auth(token), REMOTE_ADDR="10.1.2.3")
    row = ApiToken.objects.get()
    assert row.last_used_at is not None and row.last_used_ip == "10.1.2.3"


def test_the_tokens_page_creates_shows_once_and_revokes(alice: User) -> None:
    client = Client()
    client.force_login(alice)
    created = client.post("/accounts/tokens/", {"name": "laptop", "expires": "30"})
    assert created.status_code == 200 and created["Cache-Control"] == "no-store"
    token = created.context["new_token"]
    assert token in created.content.decode()
    listing = client.get("/accounts/tokens/").content.decode()
    assert token not in listing and ApiToken.objects.get().prefix in listing
    assert Client().get("/api/v1/me", headers=_auth(token)).status_code == 200
    row = ApiToken.objects.get()
    assert client.post(f"/accounts/tokens/{row.pk}/revoke/").status_code == 302
    refused = Client().get("/api/v1/me", headers=_auth(token))
    assert refused.status_code == 401 and refused.json()["error"] == "token_revoked"


def test_nobody_revokes_anothers_token(alice: User, token: str) -> None:
    bob = User.objects.create_user("bob", password="pw")
    client = Client()
    client.force_login(bob)
    assert client.post(f"/accounts/tokens/{ApiToken.objects.get().pk}/revoke/").status_code == 404
    assert ApiToken.objects.get().revoked_at is None


def test_a_token_opens_no_web_page(token: str) -> None:
    for url in ("/", f"/s/{SID}/", "/accounts/tokens/"):
        response = Client().get(url, headers=_auth(token))
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


# -- pushing -----------------------------------------------------------------------------------------------


def test_first_push_then_append_sends_only_new_bytes(token: str, alice: User) -> None:
    data = FIXTURE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    client = Client()
    state = _state(client, token).json()
    assert state["length"] == 0 and state["session"] is None

    first = _append(client, token, state["source"], 0, data[:cut])
    assert first.status_code == 200, first.content
    assert first.json()["status"] == "new" and first.json()["length"] == cut
    session = _session()
    assert session.owner == alice and session.visibility == "private"

    state = _state(client, token).json()
    assert state["length"] == cut and state["body_sha256"] == _body_sha(data[:cut])
    second = _append(client, token, state["source"], cut, data[cut:]).json()
    assert second["status"] == "grown" and second["stored"] == len(data) - cut
    source = IngestSource.objects.get()
    assert source.bytes_received == len(data) and source.bytes_stored == len(data)
    session.refresh_from_db()
    assert export_text(session).encode() == data
    assert session.entry_count == AgentSession.objects.get(pk=session.pk).entries.count()


def test_a_chunk_sent_twice_is_stored_once(token: str) -> None:
    data = FIXTURE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, data[:cut])
    _append(client, token, key, cut, data[cut:])

    again = _append(client, token, key, cut, data[cut:])
    overlapping = _append(client, token, key, 0, data)

    assert again.status_code == 200 and again.json()["stored"] == 0
    assert again.json()["duplicate"] == len(data) - cut
    assert overlapping.status_code == 200 and overlapping.json()["stored"] == 0
    session = _session()
    assert export_text(session).encode() == data
    assert session.entries.count() == session.entry_count


def test_a_chunk_that_does_not_fit_is_a_conflict_with_the_state(token: str) -> None:
    data = FIXTURE.read_bytes()
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, data[:300])

    gap = _append(client, token, key, 400, data[400:])
    different = _append(client, token, key, 100, b"x" * 300)

    assert gap.status_code == 409 and gap.json()["error"] == "gap"
    assert gap.json()["state"]["length"] == 300
    assert different.status_code == 409 and different.json()["error"] == "prefix_differs"
    assert IngestSource.objects.get().length == 300


def test_a_half_written_tail_waits_and_is_exported_as_it_is(token: str) -> None:
    data = FIXTURE.read_bytes()
    last = data.rindex(b"\n", 0, len(data) - 1) + 1
    half = last + (len(data) - last) // 2
    client = Client()
    key = _state(client, token).json()["source"]
    first = _append(client, token, key, 0, data[:half]).json()
    session = _session()
    assert export_text(session).encode() == data[:half]
    assert session.pending_raw

    rest = _append(client, token, key, half, data[half:]).json()

    session.refresh_from_db()
    assert rest["entries_added"] == 1 and first["length"] == half
    assert export_text(session).encode() == data and not session.pending_raw


def test_a_rewritten_file_is_reconciled_and_keeps_comments(token: str, alice: User) -> None:
    data = FIXTURE.read_bytes()
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, data)
    session = _session()
    comment_service.add(session, alice, "b2000002", "Keep this.")
    lines = data.split(b"\n")
    rewritten = b"\n".join(lines[:-3]) + b"\n"  # shorter: the last entries gone

    state = _state(client, token).json()
    assert state["body_sha256"] != _body_sha(rewritten)
    half = len(rewritten) // 2
    assert _rewrite(client, token, key, 0, len(rewritten), rewritten[:half]).json()["length"] == len(data)
    done = _rewrite(client, token, key, half, len(rewritten), rewritten[half:]).json()

    assert done["status"] == "rewritten" and done["length"] == len(rewritten)
    session.refresh_from_db()
    assert AgentSession.objects.count() == 1
    assert export_text(session).encode() == rewritten
    assert session.entry_count == session.entries.count() == len([x for x in lines[:-3] if x]) - 1
    assert Comment.objects.get().session_id == session.pk


def test_a_renamed_title_slot_travels_alone(token: str) -> None:
    data = SLOTTED.read_bytes()
    client = Client()
    key = _state(client, token, sid=_sid(data)).json()["source"]
    _append(client, token, key, 0, data)
    slot_end = data.index(b"\n") + 1
    slot = orjson.loads(data[:slot_end])
    slot["title"] = "Renamed"
    line = orjson.dumps({**slot, "pad": ""})
    new_slot = orjson.dumps({**slot, "pad": " " * (slot_end - 1 - len(line))}) + b"\n"
    assert len(new_slot) == slot_end

    response = client.put(
        f"/api/v1/sources/{key}/slot", new_slot, content_type="application/octet-stream", headers=_auth(token)
    )

    assert response.status_code == 200, response.content
    session = _session()
    assert session.title == "Renamed"
    assert export_text(session).encode() == new_slot + data[slot_end:]
    assert response.json()["slot"]["sha256"] == hashlib.sha256(new_slot).hexdigest()


def _sid(data: bytes) -> str:
    import io

    head = read_head(io.BytesIO(data))
    assert head is not None
    return head.session_id


def test_the_header_must_match_the_announced_id(token: str) -> None:
    client = Client()
    key = _state(client, token, sid="someone-else").json()["source"]
    response = _append(client, token, key, 0, FIXTURE.read_bytes())
    assert response.status_code == 422 and response.json()["error"] == "header_mismatch"
    assert not AgentSession.objects.exists()


def test_the_same_session_pushed_again_after_a_restart_grows_the_same_row(token: str) -> None:
    data = FIXTURE.read_bytes()
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, data)
    pk = _session().pk
    # Another path (or machine) is another file: a copy, never a merge.
    other = _state(client, token, path="/home/a/copy.jsonl").json()["source"]
    _append(client, token, other, 0, data)
    assert AgentSession.objects.count() == 2
    assert IngestSource.objects.get(key=key).session_id == pk


def test_default_visibility_applies_to_pushed_sessions(token: str, alice: User) -> None:
    team = Team.objects.create(name="core")
    Membership.objects.create(team=team, user=alice)
    set_defaults(alice, "teams", team)
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, FIXTURE.read_bytes())
    session = _session()
    assert session.visibility == "teams" and list(session.teams.all()) == [team]


def test_a_team_left_since_the_defaults_were_set_gets_no_new_sessions(token: str, alice: User) -> None:
    team = Team.objects.create(name="core")
    membership = Membership.objects.create(team=team, user=alice)
    set_defaults(alice, "teams", team)
    membership.delete()  # the stored default still names the team
    client = Client()
    key = _state(client, token).json()["source"]
    _append(client, token, key, 0, FIXTURE.read_bytes())
    session = _session()
    assert session.visibility == "private" and not session.teams.exists()
    described = client.get("/api/v1/me", headers=_auth(token)).json()
    assert described["default_visibility"] == {"visibility": "private", "team": None}


def test_the_defaults_form_offers_only_ones_own_teams(alice: User) -> None:
    mine, theirs = Team.objects.create(name="mine"), Team.objects.create(name="theirs")
    Membership.objects.create(team=mine, user=alice)
    client = Client()
    client.force_login(alice)
    assert (
        client.post("/accounts/tokens/defaults/", {"visibility": "teams", "team": theirs.pk}).status_code
        == 400
    )
    assert (
        client.post("/accounts/tokens/defaults/", {"visibility": "teams", "team": mine.pk}).status_code == 302
    )
    assert alice.push_defaults.team == mine


# -- limits ------------------------------------------------------------------------------------------------


def test_limits_answer_413_and_429_with_json(token: str, settings: Any) -> None:
    settings.ARBOR_INGEST_MAX_REQUEST_MB = 1
    client = Client()
    key = _state(client, token).json()["source"]
    big = _append(client, token, key, 0, b"x" * (1024 * 1024 + 1))
    assert big.status_code == 413 and big.json()["error"] == "request_too_large"

    settings.ARBOR_INGEST_MAX_SESSION_MB = 1
    settings.ARBOR_INGEST_MAX_REQUEST_MB = 4
    whole = _rewrite(client, token, key, 0, 2 * 1024 * 1024, b"x")
    assert whole.status_code == 413 and whole.json()["error"] == "session_too_large"

    settings.ARBOR_INGEST_RATE = 3
    answers = [client.get("/api/v1/me", headers=_auth(token)) for _ in range(6)]
    assert answers[-1].status_code == 429
    assert answers[-1].json()["error"] == "rate_limited" and int(answers[-1]["Retry-After"]) >= 1


# -- the authorization matrix: every route and token state ------------------------------------------------


ROUTES = ("api_me", "api_sources", "api_append", "api_slot", "api_rewrite")
STATES = ("none", "malformed", "unknown", "revoked", "expired", "someone_elses", "disabled", "cookie")


def _call(client: Client, route: str, key: str, headers: dict[str, str]) -> Any:
    data = FIXTURE.read_bytes()
    if route == "api_me":
        return client.get("/api/v1/me", headers=headers)
    if route == "api_sources":
        body = orjson.dumps({"machine": "m", "path": "/p.jsonl", "session_id": SID})
        return client.post("/api/v1/sources", body, content_type="application/json", headers=headers)
    if route == "api_append":
        return client.post(
            f"/api/v1/sources/{key}/append?offset=0",
            data,
            content_type="application/octet-stream",
            headers=headers,
        )
    if route == "api_slot":
        return client.put(
            f"/api/v1/sources/{key}/slot", b"{}\n", content_type="application/octet-stream", headers=headers
        )
    return client.post(
        f"/api/v1/sources/{key}/rewrite?offset=0&total={len(data)}",
        data,
        content_type="application/octet-stream",
        headers=headers,
    )


@pytest.mark.parametrize("state", STATES)
@pytest.mark.parametrize("route", ROUTES)
def test_every_route_refuses_every_bad_token(route: str, state: str, alice: User, token: str) -> None:
    # Alice's pushed file, which nobody else may touch.
    key = _state(Client(), token).json()["source"]
    bob = User.objects.create_user("bob", password="pw")
    client = Client()
    headers: dict[str, str] = {}
    if state == "malformed":
        headers = _auth("not-a-token")
    elif state == "unknown":
        headers = _auth(token[:-4] + "AAAA")
    elif state == "revoked":
        row, other = create_token(alice)
        revoke_token(row)
        headers = _auth(other)
    elif state == "expired":
        row, other = create_token(alice)
        ApiToken.objects.filter(pk=row.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
        headers = _auth(other)
    elif state == "someone_elses":
        headers = _auth(create_token(bob)[1])
    elif state == "disabled":
        carol = User.objects.create_user("carol", password="pw", is_active=True)
        headers = _auth(create_token(carol)[1])
        User.objects.filter(pk=carol.pk).update(is_active=False)
    elif state == "cookie":
        client.force_login(alice)  # a browser's session is not a token

    response = _call(client, route, key, headers)

    assert response["Content-Type"] == "application/json"
    body = response.json()
    assert set(body) >= {"error", "detail"} or response.status_code == 200
    if state in ("none", "malformed", "unknown", "revoked", "expired", "cookie"):
        assert response.status_code == 401, (route, state, body)
        assert response["WWW-Authenticate"].startswith("Bearer")
    elif state == "disabled":
        assert response.status_code == 403, (route, state, body)
    elif route in ("api_me", "api_sources"):
        # Bob's own identity, and Bob's own (new, separate) pushed file.
        assert response.status_code == 200 and body.get("source") != key
    else:
        assert response.status_code == 404, (route, state, body)
    source = IngestSource.objects.get(key=key)
    assert source.length == 0 and source.bytes_received == 0
    assert not AgentSession.objects.filter(owner=alice).exists()


def test_another_users_session_is_never_written(alice: User, token: str) -> None:
    """A session given to someone else (a superuser changed its owner) is refused with 403."""
    client = Client()
    key = _state(client, token).json()["source"]
    data = FIXTURE.read_bytes()
    _append(client, token, key, 0, data[:400])
    bob = User.objects.create_user("bob", password="pw")
    AgentSession.objects.filter(pk=_session().pk).update(owner=bob)

    response = _append(client, token, key, 400, data[400:])

    assert response.status_code == 403 and response.json()["error"] == "not_owner"


def test_every_api_url_is_in_the_matrix() -> None:
    from treeview.ingest.urls import api_patterns

    assert {p.name for p in api_patterns} == set(ROUTES)


def test_wrong_methods_and_malformed_requests_answer_json(token: str) -> None:
    client = Client()
    assert client.post("/api/v1/me", headers=_auth(token)).status_code == 405
    bad = client.post("/api/v1/sources", b"[", content_type="application/json", headers=_auth(token))
    assert bad.status_code == 400 and bad.json()["error"] == "bad_request"
    key = _state(client, token).json()["source"]
    offset = _append(client, token, key, -1, b"x")
    assert offset.status_code == 400 and offset.json()["error"] == "bad_request"
    # A path from the client is data: it never names a file on the server.
    evil = _state(client, token, path="../../../../etc/passwd").json()
    stored = Path(IngestSource.objects.get(key=evil["source"]).file)
    assert stored.name == f"{evil['source']}.jsonl" and "etc" not in stored.parts


# -- web uploads of a grown or rewritten session ----------------------------------------------------------


def _upload(client: Client, name: str, data: bytes) -> str:
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post("/upload/", {"files": [SimpleUploadedFile(name, data)]})
    assert response.status_code == 200
    html = response.content.decode()
    start = html.index(f"<code>{name}</code>")
    return html[start : html.index("</tr>", start)]


def test_uploading_a_grown_version_syncs_the_same_session(alice: User) -> None:
    data = FIXTURE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    client = Client()
    client.force_login(alice)
    assert "<td>new</td>" in _upload(client, "mine.jsonl", data[:cut])
    session = AgentSession.objects.get()
    comment_service.add(session, alice, "b2000001", "Keep this.")

    grown = _upload(client, "mine.jsonl", data)
    same = _upload(client, "mine.jsonl", data)
    rewritten = b"\n".join(data.split(b"\n")[:-3]) + b"\n"
    reconciled = _upload(client, "mine.jsonl", rewritten)

    assert "<td>updated</td>" in grown and "<td>unchanged</td>" in same and "<td>updated</td>" in reconciled
    assert AgentSession.objects.count() == 1
    session.refresh_from_db()
    assert export_text(session).encode() == rewritten
    assert Comment.objects.get().session_id == session.pk
    # Another name is another file: a copy of one's own.
    assert "<td>new</td>" in _upload(client, "other.jsonl", data)
    assert AgentSession.objects.count() == 2


def test_someone_elses_upload_of_the_same_name_is_their_own(alice: User) -> None:
    data = FIXTURE.read_bytes()
    client = Client()
    client.force_login(alice)
    _upload(client, "mine.jsonl", data[:400])
    bob = User.objects.create_user("bob", password="pw")
    theirs = Client()
    theirs.force_login(bob)

    assert "<td>new</td>" in _upload(theirs, "mine.jsonl", data)

    mine = AgentSession.objects.get(owner=alice)
    assert export_text(mine).encode() == data[:400]
    assert AgentSession.objects.get(owner=bob).visibility == "private"


# -- live pages --------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_push_reaches_open_list_and_session_pages(settings: Any, tmp_path: Path) -> None:
    from asgiref.sync import sync_to_async
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from treeview.routing import websocket_urlpatterns

    application = URLRouter(websocket_urlpatterns)
    alice = await sync_to_async(User.objects.create_user)("alice", password="pw")
    token = (await sync_to_async(create_token)(alice))[1]
    data = FIXTURE.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    client = Client()
    key = (await sync_to_async(_state)(client, token)).json()["source"]
    listing = WebsocketCommunicator(application, "/ws/sessions/")
    listing.scope["user"] = alice
    assert (await listing.connect(timeout=5))[0]

    await sync_to_async(_append)(client, token, key, 0, data[:cut])

    assert await listing.receive_json_from(timeout=10) == {"type": "changed"}
    page = WebsocketCommunicator(application, f"/ws/s/{SID}/")
    page.scope["user"] = alice
    assert (await page.connect(timeout=5))[0]
    await sync_to_async(_append)(client, token, key, cut, data[cut:])
    changed = await page.receive_json_from(timeout=10)
    assert changed["type"] == "changed" and changed["reason"] == "grown"
    assert changed["leaf"] == (await sync_to_async(lambda: _session().leaf_id)())
    await listing.disconnect()
    await page.disconnect()


async def test_a_body_declared_too_large_is_refused_before_it_is_read(settings: Any) -> None:
    from treeview.ingest.asgi import BodyLimit

    settings.ARBOR_INGEST_MAX_REQUEST_MB = 1
    reached: list[str] = []
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope["path"])

    async def receive() -> dict[str, Any]:
        raise AssertionError("the body must not be read")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    big = {"type": "http", "path": "/api/v1/sources/k/append", "headers": [(b"content-length", b"999999999")]}
    await BodyLimit(app)(big, receive, send)
    assert sent[0]["status"] == 413 and orjson.loads(sent[1]["body"])["error"] == "request_too_large"
    assert reached == []
    small = {**big, "headers": [(b"content-length", b"100")]}
    await BodyLimit(app)(small, receive, send)
    page = {"type": "http", "path": "/upload/", "headers": [(b"content-length", b"999999999")]}
    await BodyLimit(app)(page, receive, send)
    assert reached == ["/api/v1/sources/k/append", "/upload/"]


def test_the_tokens_pages_need_a_signed_in_user() -> None:
    from treeview.ingest.urls import token_patterns

    assert {p.name for p in token_patterns} == {"tokens", "token_revoke", "push_defaults"}
    anonymous = Client()
    for url in ("/accounts/tokens/", "/accounts/tokens/1/revoke/", "/accounts/tokens/defaults/"):
        response = anonymous.post(url) if url != "/accounts/tokens/" else anonymous.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


def test_chunks_with_more_to_come_are_imported_at_the_last_one(token: str) -> None:
    data = FIXTURE.read_bytes()
    third = len(data) // 3
    client = Client()
    key = _state(client, token).json()["source"]

    def chunk(offset: int, end: int, more: bool) -> Any:
        suffix = "&more=1" if more else ""
        return client.post(
            f"/api/v1/sources/{key}/append?offset={offset}{suffix}",
            data[offset:end],
            content_type="application/octet-stream",
            headers=_auth(token),
        ).json()

    first = chunk(0, third, True)
    assert first["session"] is None and first["imported"] is False and first["length"] == third
    second = chunk(third, 2 * third, True)
    assert second["session"] is None and not AgentSession.objects.exists()
    # The client stopped here; its next push finds the bytes stored and sends the rest (or nothing).
    last = chunk(2 * third, len(data), False)
    assert last["imported"] is True and last["status"] == "new"
    assert export_text(_session()).encode() == data
    # An empty last chunk imports what a stopped push left stored.
    other = _state(client, token, path="/home/a/other.jsonl").json()["source"]
    _append(client, token, other, 0, b"")
    client.post(
        f"/api/v1/sources/{other}/append?offset=0&more=1",
        data,
        content_type="application/octet-stream",
        headers=_auth(token),
    )
    assert AgentSession.objects.count() == 1
    done = _append(client, token, other, len(data), b"").json()
    assert done["status"] == "new" and AgentSession.objects.count() == 2
