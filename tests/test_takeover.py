"""No sync or upload re-points, re-owns or merges a session that belongs to others (issue 11 #2, #11, #14).

A session id is public (it is in every page URL), so nothing may be decided by it alone: a file "moves" only
inside the session directories, an upload never adopts another person's row, and no sync changes an owner.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from tests.reference import DATA
from treeview.models import AgentSession, Comment, ImportIssue, ReviewStatus
from treeview.services import comments as comment_service
from treeview.services import review as review_service
from treeview.services.export import export_text
from treeview.services.sync import find_session_files, import_upload, sync_file, sync_paths

pytestmark = pytest.mark.django_db

FIXTURE = "v3_branching_labels.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"


@pytest.fixture
def dirs(settings: Any, tmp_path: Path) -> tuple[Path, Path]:
    settings.ARBOR_SINGLE_USER = False
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    settings.ARBOR_SESSION_DIRS = [sessions]
    settings.ARBOR_UPLOAD_DIR = tmp_path / "uploads"
    return sessions, settings.ARBOR_UPLOAD_DIR


def _users() -> dict[str, User]:
    return {name: User.objects.create_user(name, password="pw") for name in ("reviewer", "attacker")}


def _logged_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_upload_never_takes_over_a_session_whose_file_is_gone(dirs: tuple[Path, Path]) -> None:
    sessions, _ = dirs
    users = _users()
    source = sessions / FIXTURE
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    original = sync_file(source).session
    assert original is not None and original.owner_id is None and original.visibility == "signed_in"
    comment_service.add(original, users["reviewer"], "b2000002", "Careful with the parser.")
    review_service.set_review_status(original, original.leaf_id, "approved", users["reviewer"])
    source.unlink()

    # Someone else uploads a file with the same header id (taken from a page URL), different content.
    forged = (DATA / "handmade" / FIXTURE).read_bytes().replace(b"Write a CLI argument parser", b"Own it")
    response = _logged_in(users["attacker"]).post(
        "/upload/", {"files": SimpleUploadedFile("forged.jsonl", forged)}
    )

    assert response.status_code == 200
    kept = AgentSession.objects.get(pk=original.pk)
    assert kept.owner_id is None and kept.visibility == "signed_in"
    assert kept.source_path == str(source.resolve())
    assert b"Own it" not in export_text(kept).encode()
    # The comment and the review stay where they were; the upload is the attacker's own private copy.
    assert Comment.objects.get().session_id == kept.pk
    assert ReviewStatus.objects.get().session_id == kept.pk
    copy = AgentSession.objects.exclude(pk=kept.pk).get()
    assert copy.owner == users["attacker"] and copy.visibility == "private"
    assert not Comment.objects.filter(session=copy).exists()
    # The attacker still cannot open the reviewer's comments through their copy.
    assert "Careful with the parser." not in _logged_in(users["attacker"]).get(f"/s/{SID}/").content.decode()


def test_an_upload_never_overwrites_someone_elses_upload_whose_file_is_gone(dirs: tuple[Path, Path]) -> None:
    users = _users()
    data = (DATA / "handmade" / FIXTURE).read_bytes()
    first = import_upload("mine.jsonl", [data], owner=users["reviewer"])
    assert first.session is not None
    Path(first.session.source_path).unlink()

    forged = data.replace(b"Write a CLI argument parser", b"Own it")
    second = import_upload("mine.jsonl", [forged], owner=users["attacker"])

    assert second.session is not None and second.session.pk != first.session.pk
    kept = AgentSession.objects.get(pk=first.session.pk)
    assert kept.owner == users["reviewer"] and kept.source_path == first.session.source_path
    assert export_text(kept).encode() == data


def test_a_moved_file_outside_the_session_directories_is_a_new_session(dirs: tuple[Path, Path]) -> None:
    sessions, _ = dirs
    source = sessions / FIXTURE
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    original = sync_file(source).session
    assert original is not None
    elsewhere = sessions.parent / "elsewhere"
    elsewhere.mkdir()
    source.rename(elsewhere / FIXTURE)

    result = sync_file(elsewhere / FIXTURE)

    assert result.status == "new" and result.session is not None and result.session.pk != original.pk
    assert AgentSession.objects.get(pk=original.pk).source_path == str(source.resolve())


def test_a_moved_file_inside_the_session_directories_keeps_its_session(dirs: tuple[Path, Path]) -> None:
    sessions, _ = dirs
    source = sessions / "a" / FIXTURE
    source.parent.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    original = sync_file(source).session
    assert original is not None
    target = sessions / "b" / FIXTURE
    target.parent.mkdir()
    source.rename(target)

    result = sync_file(target)

    assert result.session is not None and result.session.pk == original.pk
    assert AgentSession.objects.count() == 1


def test_a_move_never_changes_an_owner(dirs: tuple[Path, Path]) -> None:
    """A file of a session someone owns (a fork written next to the original) keeps that owner when moved."""
    sessions, _ = dirs
    users = _users()
    source = sessions / "a" / FIXTURE
    source.parent.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    original = sync_file(source).session
    AgentSession.objects.filter(pk=original.pk).update(owner=users["reviewer"], visibility="private")
    target = sessions / "b" / FIXTURE
    target.parent.mkdir()
    source.rename(target)

    result = sync_file(target, owner=users["attacker"])

    assert result.session is not None and result.session.pk == original.pk
    kept = AgentSession.objects.get(pk=original.pk)
    assert kept.owner == users["reviewer"] and kept.visibility == "private"


def test_a_file_that_now_holds_another_session_leaves_the_old_one_and_its_comments(
    dirs: tuple[Path, Path],
) -> None:
    sessions, _ = dirs
    users = _users()
    source = sessions / "current.jsonl"
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    original = sync_file(source).session
    comment_service.add(original, users["reviewer"], "b2000002", "Careful with the parser.")
    shutil.copyfile(DATA / "handmade" / "v3_compaction.jsonl", source)

    result = sync_file(source)

    assert result.session is not None and result.session.pk != original.pk
    kept = AgentSession.objects.get(pk=original.pk)
    assert kept.session_id == SID and kept.entry_count == original.entry_count
    assert Comment.objects.get().session_id == kept.pk
    assert export_text(result.session).encode() == source.read_bytes()


# -- #11: the upload answer names no other session's file --------------------------------------------------


def test_the_upload_answer_never_names_another_sessions_file(dirs: tuple[Path, Path]) -> None:
    sessions, _ = dirs
    users = _users()
    source = sessions / "secret-project" / FIXTURE
    source.parent.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    site = sync_file(source).session
    AgentSession.objects.filter(pk=site.pk).update(visibility="private")

    client = _logged_in(users["attacker"])
    upload = SimpleUploadedFile("mine.jsonl", (DATA / "handmade" / FIXTURE).read_bytes())
    response = client.post("/upload/", {"files": upload})

    copy = AgentSession.objects.get(owner=users["attacker"])
    for text in (response.content.decode(), client.get("/").content.decode(), str(copy.warnings)):
        assert "secret-project" not in text and str(sessions) not in text


# -- #14: symbolic links -----------------------------------------------------------------------------------


def test_a_link_leaving_the_session_directory_is_not_followed(
    dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    sessions, _ = dirs
    outside = tmp_path / "outside.jsonl"
    shutil.copyfile(DATA / "handmade" / FIXTURE, outside)
    os.symlink(outside, sessions / "passwd.jsonl")
    os.symlink("/etc/passwd", sessions / "etc.jsonl")
    inside = sessions / "real" / "v3_compaction.jsonl"
    inside.parent.mkdir()
    shutil.copyfile(DATA / "handmade" / "v3_compaction.jsonl", inside)
    os.symlink(inside, sessions / "alias.jsonl")

    found = list(find_session_files([sessions]))
    results = sync_paths([sessions])

    assert sessions / "passwd.jsonl" not in found and sessions / "etc.jsonl" not in found
    # The link inside the directory is followed (to the same session as its target).
    assert {r.path for r in results} == {str(inside.resolve())}
    assert not AgentSession.objects.filter(source_path__in=[str(outside), "/etc/passwd"]).exists()
    assert not ImportIssue.objects.filter(source_path="/etc/passwd").exists()
    # Named directly (a watcher's event), a link out of a session directory is refused too.
    direct = sync_file(sessions / "passwd.jsonl")
    assert direct.status == "failed" and "symbolic link" in (direct.error or "")
    assert AgentSession.objects.count() == 1


def test_write_back_never_writes_through_a_link(
    dirs: tuple[Path, Path], settings: Any, tmp_path: Path
) -> None:
    from treeview.services.append import WriteBackRefused, set_label

    sessions, _ = dirs
    settings.ARBOR_WRITE_BACK = True
    source = sessions / FIXTURE
    shutil.copyfile(DATA / "handmade" / FIXTURE, source)
    session = sync_file(source).session
    # The file is swapped for a link to another file with the same bytes (the checks on size and content
    # would pass): Arbor must not append to what the link leads to.
    elsewhere = tmp_path / "victim.jsonl"
    shutil.copy2(source, elsewhere)
    source.unlink()
    os.symlink(elsewhere, source)
    before = elsewhere.read_bytes()

    with pytest.raises(WriteBackRefused, match="symbolic link"):
        set_label(session, "b2000001", "x")

    assert elsewhere.read_bytes() == before
    # A directory on the way swapped for a link is refused the same way.
    source.unlink()
    real = sessions / "real"
    real.mkdir()
    shutil.copy2(elsewhere, real / FIXTURE)
    moved = sync_file(real / FIXTURE).session
    (real / FIXTURE).rename(elsewhere)
    real.rmdir()
    os.symlink(tmp_path, real)
    with pytest.raises(WriteBackRefused, match="symbolic link"):
        set_label(moved, "b2000001", "x")
    assert elsewhere.read_bytes() == before


def test_a_fork_is_never_written_where_a_link_leads(
    dirs: tuple[Path, Path], settings: Any, tmp_path: Path
) -> None:
    from treeview.services.fork import fork_dir

    sessions, _ = dirs
    settings.ARBOR_WRITE_BACK = True
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    project = sessions / "project"
    project.mkdir()
    shutil.copyfile(DATA / "handmade" / FIXTURE, project / FIXTURE)
    session = sync_file(project / FIXTURE).session
    assert fork_dir(session) == project
    # The project directory is swapped for a link to another directory (one inside the session directories
    # too: the new file must not follow the link there either).
    other = sessions / "other"
    project.rename(other)
    os.symlink(other, project)

    assert fork_dir(session) == tmp_path / "data" / "forks"
