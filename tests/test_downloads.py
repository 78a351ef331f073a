"""Downloading a session (byte for byte) or one branch of it; the position marker as the agent reads it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from tests.reference import DATA, all_cases
from treeview.models import AgentSession
from treeview.services.append import move_leaf, set_label
from treeview.services.export import export_branch, export_branch_lines, load_manager
from treeview.services.sync import sync_file
from treeview.session.session_manager import EntryNotFound, SessionManager

pytestmark = pytest.mark.django_db

CASES = all_cases()


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path: Path) -> Path:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    settings.ARBOR_WRITE_BACK = False
    return settings.ARBOR_UPLOAD_DIR


def imported(tmp_path: Path, source: Path) -> tuple[AgentSession, Path]:
    path = tmp_path / source.name
    shutil.copyfile(source, path)
    result = sync_file(path)
    assert result.session is not None, result.error
    return result.session, path


def body(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def masked(text: str, known_ids: set[str], *, positional: bool) -> str:
    """The file with what ``/branch`` makes fresh (session id, label entry ids: named in order of appearance;
    their timestamps: ``<now>``) masked; with ``positional``, every entry id too (a v1 file gets new ids at
    each load)."""
    names: dict[str, str] = {}
    lines = []
    for line in text.splitlines(keepends=True):
        entry = json.loads(line)
        fresh = entry.get("type") == "session" or entry.get("id") not in known_ids
        if (fresh or positional) and isinstance(entry.get("id"), str):
            names.setdefault(entry["id"], f"<id {len(names)}>")
        if fresh and isinstance(entry.get("timestamp"), str):
            line = line.replace(f'"timestamp":{json.dumps(entry["timestamp"])}', '"timestamp":"<now>"', 1)
        if entry.get("type") == "title" and isinstance(entry.get("updatedAt"), str):
            # oh-my-pi 18's /branch file starts with a title slot stamped with the new session's time.
            line = line.replace(f'"updatedAt":{json.dumps(entry["updatedAt"])}', '"updatedAt":"<now>"', 1)
        for value, name in names.items():
            line = line.replace(json.dumps(value), json.dumps(name))
        lines.append(line)
    return "".join(lines)


# -- the whole session -----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_download_is_the_source_file_byte_for_byte(client, tmp_path, case):
    session, path = imported(tmp_path, case.path)

    response = client.get(f"/s/{session.session_id}/download.jsonl")

    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    assert response["Content-Disposition"] == f'attachment; filename="{case.path.name}"'
    assert body(response) == path.read_bytes()


def test_download_under_asgi_streams_the_same_bytes(tmp_path):
    session, path = imported(tmp_path, DATA / "real" / "oh-my-pi_large-session_v3-migrated_title-slot.jsonl")

    async def fetch() -> tuple[bool, list[bytes]]:
        response = await AsyncClient().get(f"/s/{session.session_id}/download.jsonl")
        assert response.status_code == 200
        return response.is_async, [chunk async for chunk in response.streaming_content]

    is_async, chunks = async_to_sync(fetch)()

    # An async iterator: Django would read a sync one whole into memory before sending it.
    assert is_async
    assert len(chunks) > 1
    assert b"".join(chunks) == path.read_bytes()


def test_download_allows_head(client, tmp_path):
    session, _ = imported(tmp_path, DATA / "handmade" / "v3_compaction.jsonl")

    assert client.head(f"/s/{session.session_id}/download.jsonl").status_code == 200


def test_download_of_unknown_session_is_404(client):
    assert client.get("/s/nope/download.jsonl").status_code == 404


def test_download_of_an_upload_is_named_after_the_uploaded_file(client):
    source = DATA / "handmade" / "v3_compaction.jsonl"
    with source.open("rb") as handle:
        client.post("/upload/", {"files": [handle]})
    session = AgentSession.objects.get()

    response = client.get(f"/s/{session.session_id}/download.jsonl")

    assert response["Content-Disposition"] == 'attachment; filename="v3_compaction.jsonl"'
    assert body(response) == source.read_bytes()


def test_download_of_a_session_without_a_file_is_named_after_its_id(client):
    AgentSession.objects.create(session_id="abc-123", header_raw='{"type":"session","id":"abc-123"}')

    response = client.get("/s/abc-123/download.jsonl")

    assert response["Content-Disposition"] == 'attachment; filename="abc-123.jsonl"'
    assert body(response) == b'{"type":"session","id":"abc-123"}'


def test_two_copies_of_one_session_are_downloaded_each_from_its_own_file(client, tmp_path):
    source = DATA / "handmade" / "v3_compaction.jsonl"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, first_path = imported(tmp_path / "a", source)
    grown = source.read_bytes() + (
        b'{"type":"custom","customType":"note","id":"ffff0001","parentId":null,'
        b'"timestamp":"2026-05-01T12:00:00.000Z"}\n'
    )
    (tmp_path / "b" / source.name).write_bytes(grown)
    second = sync_file(tmp_path / "b" / source.name).session
    assert second.session_id == first.session_id

    html = client.get("/").content.decode()
    by_copy = {
        copy.pk: body(client.get(f"/s/{copy.session_id}/download.jsonl?copy={copy.pk}"))
        for copy in (first, second)
    }

    assert f"/s/{first.session_id}/download.jsonl?copy={first.pk}" in html
    assert f"/s/{second.session_id}/download.jsonl?copy={second.pk}" in html
    assert by_copy == {first.pk: first_path.read_bytes(), second.pk: grown}
    assert client.get(f"/s/{first.session_id}/download.jsonl?copy=999999").status_code == 404
    assert client.get(f"/s/{first.session_id}/download.jsonl?copy=nope").status_code == 404


# -- one branch --------------------------------------------------------------------------------------------


def branch_targets(session: AgentSession) -> list[str]:
    """The leaf and a message halfway through the file."""
    messages = list(session.entries.filter(type="message").order_by("seq").values_list("entry_id", flat=True))
    targets = [session.leaf_id]
    if messages:
        targets.append(messages[len(messages) // 2])
    return [target for target in targets if target]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_branch_download_is_what_the_core_branch_writes(client, tmp_path, case):
    session, path = imported(tmp_path, case.path)
    ours = load_manager(session)

    for entry_id in branch_targets(session):
        response = client.get(f"/s/{session.session_id}/branch/{entry_id}.jsonl")

        assert response.status_code == 200, entry_id
        assert response["Content-Type"] == "application/x-ndjson"
        assert response.streaming  # at the reader's pace (tests/test_downloads_stream.py)
        text = body(response).decode()
        core = SessionManager.open(path)
        positional = core.migrated
        # A v1 file gets fresh ids at each load: the same entry is at the same position.
        position = next(i for i, entry in enumerate(ours.entries) if entry.get("id") == entry_id)
        core_ids = {entry["id"] for entry in core.entries if isinstance(entry.get("id"), str)}
        core.create_branched_session(core.entries[position]["id"])
        expected = core.serialize()
        our_ids = {entry["id"] for entry in ours.entries if isinstance(entry.get("id"), str)}
        assert masked(text, our_ids, positional=positional) == masked(
            expected, core_ids, positional=positional
        )
        lines = text.splitlines()
        header = json.loads(lines[1] if json.loads(lines[0])["type"] == "title" else lines[0])
        assert header["parentSession"] == session.source_path
        filename = re.fullmatch(r'attachment; filename="(.+)"', response["Content-Disposition"])[1]
        assert filename.endswith(f"_{header['id']}.jsonl")
        assert filename.startswith(header["timestamp"].replace(":", "-").replace(".", "-"))


class _Fresh:
    """Deterministic stand-ins for what ``/branch`` draws at random (session id, time, label ids)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, *args: object) -> str:
        self.count += 1
        return f"fresh{self.count:04d}"

    def now(self) -> str:
        self.count += 1
        return f"2026-01-01T00:00:{self.count % 60:02d}.000Z"


def _deterministic(monkeypatch) -> _Fresh:
    from treeview.session.session_manager import branching

    fresh = _Fresh()
    monkeypatch.setattr(branching, "new_session_id", fresh)
    monkeypatch.setattr(branching, "generate_id", fresh)
    monkeypatch.setattr(branching, "iso_now", fresh.now)
    return fresh


def _never(*args: object) -> None:
    raise AssertionError("the whole session was loaded")


LATEST = sorted((DATA / "latest").glob("*.jsonl"))


@pytest.mark.parametrize("source", [case.path for case in CASES] + LATEST, ids=lambda p: p.name)
def test_the_streamed_branch_is_the_branch_built_whole_byte_for_byte(monkeypatch, tmp_path, source):
    session, _ = imported(tmp_path, source)
    rows = session.entries.exclude(type="session").order_by("seq").values_list("entry_id", flat=True)
    ids = [entry_id for entry_id in rows if entry_id]
    # the leaf, the first and a middle entry, and a label (its path ends on a dropped label entry)
    labels = list(session.entries.filter(type="label").values_list("entry_id", flat=True)[:1])
    targets = {session.leaf_id, *ids[:1], *ids[len(ids) // 2 : len(ids) // 2 + 1], *labels} - {None, ""}
    assert targets
    fresh = _deterministic(monkeypatch)
    current = json.loads(session.header_raw).get("version", 1) >= 3
    for entry_id in sorted(targets):
        fresh.count = 0
        whole_name, whole = export_branch(session, entry_id)
        fresh.count = 0
        with monkeypatch.context() as patched:
            if current:  # streamed: the session is never loaded whole (only v1 and v2 files are)
                patched.setattr("treeview.services.export.load_manager", _never)
            name, lines = export_branch_lines(session, entry_id)
            text = "".join(lines)
        assert (name, text) == (whole_name, whole), entry_id
    with pytest.raises(EntryNotFound):
        export_branch_lines(session, "no-such-entry")


def test_a_branch_with_arbor_entries_and_relabels_streams_the_same_bytes(monkeypatch, tmp_path):
    session, _ = imported(tmp_path, DATA / "handmade" / "v3_branching_labels.jsonl")
    labels = session.resolved_labels()
    target, *others = labels
    set_label(session, target, "renamed by Arbor")
    if others:
        set_label(session, others[0], None)
    move_leaf(session, target)
    session.refresh_from_db()
    assert session.entries.filter(in_file=False).exists()
    fresh = _deterministic(monkeypatch)
    for entry_id in (target, session.leaf_id):
        fresh.count = 0
        whole = export_branch(session, entry_id)
        fresh.count = 0
        name, lines = export_branch_lines(session, entry_id)
        assert (name, "".join(lines)) == whole


def test_branch_download_keeps_the_labels_on_the_path(client, tmp_path):
    session, _ = imported(tmp_path, DATA / "handmade" / "v3_branching_labels.jsonl")
    labels = session.resolved_labels()
    assert labels

    text = body(client.get(f"/s/{session.session_id}/branch/{session.leaf_id}.jsonl")).decode()

    branched = SessionManager.from_text(text)
    path = {entry["id"] for entry in load_manager(session).get_branch(session.leaf_id)}
    assert branched.labels == {target: label for target, label in labels.items() if target in path}


def test_branch_download_of_unknown_entry_or_session_is_404(client, tmp_path):
    session, _ = imported(tmp_path, DATA / "handmade" / "v3_compaction.jsonl")

    assert client.get(f"/s/{session.session_id}/branch/nope.jsonl").status_code == 404
    assert client.get(f"/s/nope/branch/{session.leaf_id}.jsonl").status_code == 404


def test_the_list_links_both_downloads(client, tmp_path):
    session, _ = imported(tmp_path, DATA / "handmade" / "v3_compaction.jsonl")

    html = client.get("/").content.decode()

    assert f'<a href="/s/{session.session_id}/download.jsonl" download>Download the session file</a>' in html
    assert (
        f'<a href="/s/{session.session_id}/branch/{session.leaf_id}.jsonl" download>'
        "Download the active branch</a>" in html
    )


# -- persist position, as the agent sees it ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["v3_branching_labels.jsonl", "v3_compaction.jsonl", "omp18_title_slot_new_entry_types.jsonl"]
)
def test_persisted_position_is_where_the_agent_resumes(client, tmp_path, name):
    session, path = imported(tmp_path, DATA / "handmade" / name)
    source = path.read_bytes()
    messages = list(session.entries.filter(type="message").order_by("seq").values_list("entry_id", flat=True))
    arbor_leaf = messages[len(messages) // 2]
    assert arbor_leaf != session.leaf_id
    move_leaf(session, arbor_leaf)
    assert SessionManager.from_text(source.decode()).leaf_id != arbor_leaf

    assert client.post(f"/s/{session.session_id}/persist-position/").status_code == 200
    downloaded = body(client.get(f"/s/{session.session_id}/download.jsonl"))

    assert downloaded.startswith(source)
    added = downloaded[len(source) :]
    assert added.endswith(b"\n") and added.count(b"\n") == 1
    agent = SessionManager.from_text(downloaded.decode())
    marker = agent.get_leaf_entry()
    assert marker is not None
    assert marker["parentId"] == arbor_leaf
    assert marker["type"] == "branch_summary"
    assert marker["summary"] == ""
    assert marker["details"]["kind"] == "discarded-entry-branch"
    assert path.read_bytes() == source  # write-back is off: the agent's file is untouched
    # The agent's context at the marker is the one at Arbor's leaf: the empty summary adds nothing.
    before = SessionManager.from_text(source.decode())
    before.branch(arbor_leaf)
    assert agent.build_session_context().messages == before.build_session_context().messages
