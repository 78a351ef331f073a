"""Uploading session files in the browser: same import as the command, per-file results and limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.reference import DATA
from treeview.models import AgentSession, ImportIssue
from treeview.services.export import export_text
from treeview.services.sync import import_upload
from treeview.session.generate import write_session

pytestmark = pytest.mark.django_db

HTMX = {"HX-Request": "true"}
MB = 1024 * 1024


@pytest.fixture(autouse=True)
def upload_dir(settings, tmp_path: Path) -> Path:
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    return settings.ARBOR_UPLOAD_DIR


def fixture_upload(name: str, folder: str = "handmade") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (DATA / folder / name).read_bytes(), "application/octet-stream")


def generated(tmp_path: Path, entries: int, seed: int = 7) -> bytes:
    path = tmp_path / f"generated-{entries}-{seed}.jsonl"
    write_session(path, entries, seed)
    return path.read_bytes()


def result_row(html: str, name: str) -> str:
    """The upload-results row of one file."""
    start = html.index(f"<code>{name}</code>")
    return html[start : html.index("</tr>", start)]


def stored_files(upload_dir: Path) -> list[Path]:
    return sorted(upload_dir.iterdir()) if upload_dir.exists() else []


def test_upload_of_one_file_imports_it(client, upload_dir):
    response = client.post("/upload/", {"files": [fixture_upload("v3_branching_labels.jsonl")]})

    assert response.status_code == 200
    html = response.content.decode()
    assert "<!doctype html>" in html
    row = result_row(html, "v3_branching_labels.jsonl")
    assert "<td>new</td>" in row
    session = AgentSession.objects.get()
    assert session.session_id == "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
    assert f"{session.entry_count} entries added" in row
    assert export_text(session).encode() == (DATA / "handmade" / "v3_branching_labels.jsonl").read_bytes()
    assert [p.parent for p in stored_files(upload_dir)] == [upload_dir]
    # The list below the results shows it.
    assert f'<tr id="session-{session.pk}"' in html


def test_upload_of_several_files_imports_each(client):
    names = ["v3_branching_labels.jsonl", "v3_compaction.jsonl", "omp18_title_slot_new_entry_types.jsonl"]

    response = client.post("/upload/", {"files": [fixture_upload(name) for name in names]})

    html = response.content.decode()
    assert [name for name in names if "<td>new</td>" in result_row(html, name)] == names
    assert AgentSession.objects.count() == 3
    assert html.index(names[0]) < html.index(names[1]) < html.index(names[2])


def test_uploading_the_same_file_again_is_unchanged(client):
    client.post("/upload/", {"files": [fixture_upload("v3_compaction.jsonl")]})

    html = client.post("/upload/", {"files": [fixture_upload("v3_compaction.jsonl")]}).content.decode()

    assert "<td>unchanged</td>" in result_row(html, "v3_compaction.jsonl")
    assert AgentSession.objects.count() == 1


def test_upload_over_the_size_limit_is_refused_and_not_stored(client, settings, tmp_path, upload_dir):
    settings.ARBOR_UPLOAD_MAX_MB = 1
    big = generated(tmp_path, 700)
    assert 1 * MB < len(big) < 4 * MB

    response = client.post(
        "/upload/",
        {"files": [SimpleUploadedFile("big.jsonl", big), fixture_upload("v3_compaction.jsonl")]},
    )

    html = response.content.decode()
    assert response.status_code == 200
    big_row = result_row(html, "big.jsonl")
    assert "<td>failed</td>" in big_row
    assert "too big: over the 1 MB limit per file" in big_row
    # The file after it in the same request is imported all the same.
    assert "<td>new</td>" in result_row(html, "v3_compaction.jsonl")
    assert AgentSession.objects.get().entry_count < 100
    assert len(stored_files(upload_dir)) == 1


def test_file_without_jsonl_extension_is_refused_and_the_others_still_import(client, upload_dir):
    files = [
        fixture_upload("v3_branching_labels.jsonl"),
        SimpleUploadedFile("notes.txt", b"just some notes\n"),
        fixture_upload("v3_compaction.jsonl"),
    ]

    html = client.post("/upload/", {"files": files}).content.decode()

    assert "<td>failed</td>" in result_row(html, "notes.txt")
    assert "not a .jsonl file" in result_row(html, "notes.txt")
    assert "<td>new</td>" in result_row(html, "v3_branching_labels.jsonl")
    assert "<td>new</td>" in result_row(html, "v3_compaction.jsonl")
    assert AgentSession.objects.count() == 2
    assert len(stored_files(upload_dir)) == 2


def test_refused_files_do_not_spoil_large_files_streamed_to_disk(client, tmp_path):
    """Over FILE_UPLOAD_MAX_MEMORY_SIZE files go to temporary files; dropping one must not close another."""
    big = generated(tmp_path, 5000)
    assert len(big) > django_settings.FILE_UPLOAD_MAX_MEMORY_SIZE
    files = [
        SimpleUploadedFile("large.jsonl", big),
        SimpleUploadedFile("notes.txt", b"notes\n"),
        SimpleUploadedFile("empty.txt", b""),
        fixture_upload("v3_compaction.jsonl"),
    ]

    html = client.post("/upload/", {"files": files}).content.decode()

    assert "<td>new</td>" in result_row(html, "large.jsonl")
    assert "not a .jsonl file" in result_row(html, "notes.txt")
    assert "not a .jsonl file" in result_row(html, "empty.txt")
    assert "<td>new</td>" in result_row(html, "v3_compaction.jsonl")
    assert AgentSession.objects.count() == 2


def test_a_headerless_file_is_imported_with_a_warning(client):
    headerless = SimpleUploadedFile(
        "headerless.jsonl",
        b'{"type":"message","id":"a1","parentId":null,"timestamp":"2026-05-01T10:00:00.000Z"}\n',
    )

    html = client.post("/upload/", {"files": [headerless]}).content.decode()

    row = result_row(html, "headerless.jsonl")
    assert "<td>failed</td>" not in row
    session = AgentSession.objects.get()
    assert session.header_raw == "" and session.entry_count == 1
    assert "no session header" in session.warnings[0]["message"]


def test_a_pi_sdk_v4_file_fails_with_a_clear_reason(client):
    v4 = SimpleUploadedFile("lanes.jsonl", b'{"version":4,"lane":"main","seq":1}\n')

    html = client.post("/upload/", {"files": [v4]}).content.decode()

    row = result_row(html, "lanes.jsonl")
    assert "<td>failed</td>" in row
    assert (
        "version 4 of the pi SDK&#x27;s session store" in row
        or "version 4 of the pi SDK's session store" in row
    )
    assert not AgentSession.objects.exists()


def test_empty_jsonl_file_fails_with_a_reason(client):
    html = client.post("/upload/", {"files": [SimpleUploadedFile("empty.jsonl", b"")]}).content.decode()

    row = result_row(html, "empty.jsonl")
    assert "<td>failed</td>" in row
    assert "not a session file" in row


def test_file_over_ten_megabytes_is_accepted(client, tmp_path):
    big = generated(tmp_path, 5000)
    assert len(big) > 10 * MB
    assert len(big) > django_settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    assert len(big) > django_settings.FILE_UPLOAD_MAX_MEMORY_SIZE

    response = client.post("/upload/", {"files": [SimpleUploadedFile("large.jsonl", big)]})

    assert response.status_code == 200
    assert "<td>new</td>" in result_row(response.content.decode(), "large.jsonl")
    session = AgentSession.objects.get()
    assert session.source_size == len(big)
    assert export_text(session).encode() == big


def test_upload_without_files_is_a_bad_request(client):
    response = client.post("/upload/", {})

    assert response.status_code == 400
    assert "Choose one or more .jsonl session files" in response.content.decode()


def test_htmx_upload_gets_the_list_fragment_with_the_results(client):
    response = client.post("/upload/", {"files": [fixture_upload("v3_compaction.jsonl")]}, headers=HTMX)

    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="session-list">')
    assert "<td>new</td>" in result_row(html, "v3_compaction.jsonl")
    assert "HX-Request" in response["Vary"]


def test_upload_refuses_get(client):
    assert client.get("/upload/").status_code == 405


def test_upload_enforces_csrf():
    browser = Client(enforce_csrf_checks=True)

    refused = browser.post("/upload/", {"files": [fixture_upload("v3_compaction.jsonl")]})
    browser.get("/")
    token = browser.cookies["csrftoken"].value
    accepted = browser.post(
        "/upload/", {"files": [fixture_upload("v3_compaction.jsonl")]}, headers={**HTMX, "X-CSRFToken": token}
    )

    assert refused.status_code == 403
    assert accepted.status_code == 200
    assert AgentSession.objects.count() == 1


def test_hostile_file_name_is_escaped_in_the_results(client):
    name = "<img src=x onerror=alert(1)>.jsonl"
    upload = SimpleUploadedFile(name, (DATA / "handmade" / "v3_compaction.jsonl").read_bytes())

    html = client.post("/upload/", {"files": [upload]}).content.decode()

    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;.jsonl" in html


def test_upload_form_works_without_javascript(client):
    html = client.get("/").content.decode()

    assert 'action="/upload/"' in html
    assert 'enctype="multipart/form-data"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="files"' in html


def test_failed_upload_is_reported_once_and_not_kept(client, upload_dir):
    """The uploader sees the reason; a file that is not a session is neither stored nor listed as an issue."""
    response = client.post("/upload/", {"files": [SimpleUploadedFile("broken.jsonl", b"not json\n")]})

    assert "not a session file" in response.content.decode()
    assert ImportIssue.objects.count() == 0
    assert not list(upload_dir.glob("*.jsonl"))
    assert "Files that failed to import" not in client.get("/").content.decode()


def test_import_upload_leaves_no_partial_file_when_the_stream_fails(upload_dir):
    def chunks():
        yield b'{"type":"session","version":3,"id":"x","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/"}\n'
        raise OSError("connection reset")

    with pytest.raises(OSError):
        import_upload("broken.jsonl", chunks())

    assert stored_files(upload_dir) == []


def test_import_upload_of_the_same_bytes_again_is_unchanged(upload_dir):
    data = (DATA / "handmade" / "v3_compaction.jsonl").read_bytes()
    assert import_upload("v3_compaction.jsonl", [data]).status == "new"

    assert import_upload("v3_compaction.jsonl", [data]).status == "unchanged"
