from pathlib import Path

import pytest
from django.conf import settings as django_settings

VALID_HEADER = (
    '{"type":"session","version":3,"id":"0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77",'
    '"timestamp":"2026-05-01T10:00:00.000Z","cwd":"/home/dev/proj"}\n'
)
TITLED_HEADER = (
    '{"type":"session","version":3,"id":"0199aa10-2b3c-7d4e-8f50-6172839405ab",'
    '"timestamp":"2026-05-02T10:00:00.000Z","cwd":"/home/dev/omp18"}\n'
)
ENTRY = (
    '{"type":"model_change","id":"a1b2c3d4","parentId":null,'
    '"timestamp":"2026-05-01T10:00:01.000Z","model":"anthropic/claude-sonnet-4-5"}\n'
)


def title_slot(title: str) -> str:
    line = (
        f'{{"type":"title","v":1,"title":"{title}","source":"user",'
        '"updatedAt":"2026-05-01T10:00:08.000Z","pad":"'
    )
    return line + " " * (256 - len(line) - 3) + '"}\n'


@pytest.fixture
def session_dir(tmp_path: Path, settings) -> Path:
    """A session directory laid out like pi's: one folder per cwd, holding three kinds of file."""
    project = tmp_path / "--home-dev-proj--"
    project.mkdir()
    (project / "2026-05-01T10-00-00-000Z_valid.jsonl").write_text(VALID_HEADER + ENTRY)
    titled = title_slot("Fresh start") + TITLED_HEADER + ENTRY
    (project / "2026-05-02T10-00-00-000Z_titled.jsonl").write_text(titled)
    (project / "headerless.jsonl").write_text(ENTRY)
    (tmp_path / "notes.txt").write_text("not a session")
    settings.ARBOR_SESSION_DIRS = [tmp_path]
    return tmp_path


def test_title_slot_line_is_exactly_256_bytes():
    assert len(title_slot("Fresh start").encode()) == 256


def test_session_list_shows_id_cwd_and_size_of_each_file(client, session_dir):
    response = client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "<!doctype html>" in html
    assert "--home-dev-proj--/2026-05-01T10-00-00-000Z_valid.jsonl" in html
    assert "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77" in html
    assert "/home/dev/proj" in html
    assert "3 session files" in html
    assert "notes.txt" not in html


def test_session_list_reads_header_after_omp_title_slot(client, session_dir):
    html = client.get("/").content.decode()

    assert "0199aa10-2b3c-7d4e-8f50-6172839405ab" in html
    assert "/home/dev/omp18" in html


def test_headerless_file_gets_error_row_and_is_left_untouched(client, session_dir):
    path = session_dir / "--home-dev-proj--" / "headerless.jsonl"
    before = (path.read_bytes(), path.stat().st_mtime_ns)

    response = client.get("/")

    assert response.status_code == 200
    assert 'class="error"' in response.content.decode()
    assert "Unreadable: the first entry is not a session header" in response.content.decode()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_htmx_request_gets_only_the_session_list_fragment(client, session_dir):
    response = client.get("/", headers={"HX-Request": "true"})

    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="session-list">')
    assert "<html" not in html
    assert "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77" in html


def test_htmx_history_restore_gets_the_full_page(client, session_dir):
    response = client.get("/", headers={"HX-Request": "true", "HX-History-Restore-Request": "true"})

    assert "<!doctype html>" in response.content.decode()


def test_session_list_varies_on_hx_request(client, session_dir):
    response = client.get("/")

    assert "HX-Request" in response["Vary"]


def test_session_list_skips_missing_directories(client, settings, tmp_path):
    settings.ARBOR_SESSION_DIRS = [tmp_path / "missing"]

    response = client.get("/")

    assert response.status_code == 200
    assert "No session files found." in response.content.decode()


def test_session_list_refuses_post(client, session_dir):
    assert client.post("/").status_code == 405


def test_sample_sessions_are_all_listed_without_errors(client, settings):
    settings.ARBOR_SESSION_DIRS = [Path(django_settings.BASE_DIR) / "tests" / "data"]

    html = client.get("/").content.decode()

    assert "handmade/omp18_title_slot_new_entry_types.jsonl" in html
    assert "0199aa10-2b3c-7d4e-8f50-6172839405ab" in html
    assert 'class="error"' not in html
