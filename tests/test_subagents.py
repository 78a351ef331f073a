"""oh-my-pi's subagent transcripts: imported under the session that spawned them, nested, idempotent."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.subagent_tree import SESSION_ID, STEM, build_tree, parent_lines
from treeview.models import AgentSession
from treeview.services.sync import sync_file, sync_paths
from treeview.session.jsonl import dumps
from treeview.session.subagents import ADVISOR, CLONE, TASK, subagent_place

pytestmark = pytest.mark.django_db


def by_key() -> dict[str, AgentSession]:
    return {s.agent_key or "session": s for s in AgentSession.objects.all()}


# -- the layout, without the database ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "agent_id"),
    [
        ("Anna.jsonl", TASK, "Anna"),
        ("Anna-2.jsonl", TASK, "Anna-2"),
        ("__advisor.jsonl", ADVISOR, "__advisor"),
        ("__advisor.security.jsonl", ADVISOR, "__advisor.security"),
        ("Tan-9876.jsonl", CLONE, "Tan-9876"),
    ],
)
def test_a_file_in_a_session_folder_is_a_subagent_of_that_session(name, kind, agent_id) -> None:
    place = subagent_place(f"/s/{STEM}/{name}", {}, exists=lambda p: p == f"/s/{STEM}.jsonl")
    assert place is not None
    assert (place.parent_path, place.agent_id, place.kind) == (f"/s/{STEM}.jsonl", agent_id, kind)


def test_a_nested_subagent_belongs_to_its_parent_subagent() -> None:
    place = subagent_place(f"/s/{STEM}/Anna/Anna.Cy.jsonl", {}, exists=lambda p: p == f"/s/{STEM}/Anna.jsonl")
    assert place is not None and (place.parent_path, place.agent_id) == (f"/s/{STEM}/Anna.jsonl", "Anna.Cy")


def test_a_session_of_its_own_is_no_subagent() -> None:
    # a session directory's files: the folder's ".jsonl" is no file
    assert subagent_place(f"/s/--home-dev-shop--/{STEM}.jsonl", {}, exists=lambda p: False) is None
    # a fork names its parent by id: still a session of its own
    assert subagent_place(f"/s/{STEM}.jsonl", {"parentSession": SESSION_ID}, exists=lambda p: False) is None


def test_a_subagent_whose_parent_file_is_gone_is_known_by_its_header_or_its_name() -> None:
    gone = {"parentSession": f"/old/place/{STEM}.jsonl"}
    assert subagent_place(f"/s/{STEM}/Anna.jsonl", gone, exists=lambda p: False) is not None
    assert subagent_place(f"/s/{STEM}/Anna.jsonl", {}, exists=lambda p: False) is None
    assert subagent_place(f"/s/{STEM}/__advisor.jsonl", {}, exists=lambda p: False) is not None


# -- import and sync ----------------------------------------------------------------------------------------


def test_import_of_a_subagent_tree_shows_one_session_with_its_subagents_under_it(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    results = sync_paths([tmp_path])
    assert {r.status for r in results} == {"new"}, [r.error for r in results]
    assert len(results) == 6  # the session and five transcripts; Anna.md is no session file
    rows = by_key()
    session = rows["session"]
    assert AgentSession.objects.filter(subagent_of__isnull=True).get() == session
    assert session.subagent_kind == "" and session.session_id == SESSION_ID
    assert {s.agent_key for s in session.subagents.all()} == {"Anna", "Bob", "__advisor", "Tan-1234"}
    assert rows["Anna.Cy"].subagent_of == rows["Anna"]
    assert rows["Anna"].spawned_from_path == str(paths["session"])
    kinds = {key: row.subagent_kind for key, row in rows.items()}
    assert kinds == {
        "session": "",
        "Anna": "task",
        "Anna.Cy": "task",
        "Bob": "task",
        "__advisor": "advisor",
        "Tan-1234": "clone",
    }


def test_children_synced_before_their_parent_are_adopted_by_it(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    for name in ("Anna.Cy", "Anna", "Bob", "session"):  # deepest first
        sync_file(paths[name])
    rows = by_key()
    assert rows["Anna.Cy"].subagent_of == rows["Anna"]
    assert rows["Anna"].subagent_of == rows["session"]
    assert rows["Bob"].subagent_of == rows["session"]


def test_resync_is_idempotent(tmp_path: Path) -> None:
    build_tree(tmp_path)
    sync_paths([tmp_path])
    before = {s.agent_key: (s.pk, s.subagent_of_id) for s in AgentSession.objects.all()}
    again = sync_paths([tmp_path])
    assert {r.status for r in again} == {"unchanged"}
    assert {s.agent_key: (s.pk, s.subagent_of_id) for s in AgentSession.objects.all()} == before


def test_a_rewritten_parent_keeps_its_subagents(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    sync_paths([tmp_path])
    lines = parent_lines()
    lines[1] = lines[1].replace("Split the shop", "Split the whole shop")
    paths["session"].write_text("".join(line + "\n" for line in lines))
    result = sync_file(paths["session"])
    assert result.status == "rewritten"
    assert result.session.subagents.count() == 4


def test_a_grown_subagent_stays_under_its_parent(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    sync_paths([tmp_path])
    with open(paths["Bob"], "a") as handle:
        message = {"role": "user", "content": [{"type": "text", "text": "and more"}]}
        line = {
            "type": "message",
            "id": "b0000009",
            "parentId": "b0000002",
            "timestamp": "2026-05-01T10:09:00.000Z",
        }
        handle.write(dumps({**line, "message": message}) + "\n")
    result = sync_file(paths["Bob"])
    assert result.status == "grown"
    assert result.session.subagent_of == by_key()["session"]


def test_a_subagent_whose_parent_is_missing_is_listed_on_its_own_with_its_kind(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    paths["session"].unlink()
    sync_paths([tmp_path])
    rows = by_key()
    assert "session" not in rows
    assert rows["Anna"].subagent_kind == "task" and rows["Anna"].subagent_of is None
    assert rows["Anna.Cy"].subagent_of == rows["Anna"]  # its own parent is there


def test_deleting_the_parent_row_leaves_its_subagents(tmp_path: Path) -> None:
    build_tree(tmp_path)
    sync_paths([tmp_path])
    by_key()["session"].delete()
    assert by_key()["Anna"].subagent_of is None


def test_an_upload_of_the_same_name_adopts_no_one(tmp_path: Path, settings, django_user_model) -> None:
    from treeview.services.sync import import_upload

    settings.ARBOR_UPLOAD_DIR = str(tmp_path / "uploads")
    build_tree(tmp_path / "sessions")
    sync_paths([tmp_path / "sessions"])
    user = django_user_model.objects.create_user("mallory", password="x")
    text = (tmp_path / "sessions" / f"{STEM}.jsonl").read_bytes()
    result = import_upload(f"{STEM}.jsonl", [text], owner=user)
    assert result.session.subagents.count() == 0
    assert by_key()["Anna"].subagent_of.owner is None


# -- lineage ------------------------------------------------------------------------------------------------


def _moved(tmp_path: Path) -> tuple[Path, Path]:
    old = tmp_path / "--home-dev-shop--" / "old.jsonl"
    old.parent.mkdir()
    old.write_text("".join(line + "\n" for line in parent_lines()))
    return old, tmp_path / "--home-dev-new--" / "new.jsonl"


def test_a_moved_session_listing_its_earlier_file_keeps_its_row(tmp_path: Path, settings) -> None:
    settings.ARBOR_SESSION_DIRS = [str(tmp_path)]
    old, new = _moved(tmp_path)
    # an older copy of the id whose file is gone too: the header says which row is this one
    decoy = tmp_path / "decoy.jsonl"
    shutil.copyfile(old, decoy)
    sync_file(decoy)
    first = sync_file(old).session
    decoy.unlink()
    lines = parent_lines()
    lines[0] = lines[0][:-1] + f',"previousSessionFiles":["{old}"]}}'
    new.parent.mkdir()
    new.write_text("".join(line + "\n" for line in lines))
    os.unlink(old)
    result = sync_file(new)
    assert result.session.pk == first.pk
    assert AgentSession.objects.get(pk=first.pk).source_path == str(new)
    assert AgentSession.objects.count() == 2  # the decoy's row stays as it was


def test_an_earlier_file_outside_the_session_dirs_is_never_adopted(tmp_path: Path, settings) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    settings.ARBOR_SESSION_DIRS = [str(sessions)]
    outside = tmp_path / "upload.jsonl"
    outside.write_text("".join(line + "\n" for line in parent_lines("someone-else")))
    theirs = sync_file(outside, within=[]).session
    outside.unlink()
    lines = parent_lines("someone-else")
    lines[0] = lines[0][:-1] + f',"previousSessionFiles":["{outside}"]}}'
    new = sessions / "new.jsonl"
    new.write_text("".join(line + "\n" for line in lines))
    mine = sync_file(new).session
    assert mine.pk != theirs.pk


def test_parent_session_as_an_id_or_a_path_names_the_parent(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    sync_paths([tmp_path])
    rows = by_key()
    assert rows["Tan-1234"].parent() == rows["session"]  # by id
    assert rows["Anna"].parent() == rows["session"]  # by path
    fork = tmp_path / "fork.jsonl"
    fork.write_text(
        dumps(
            {
                "type": "session",
                "version": 3,
                "id": "fork-1",
                "timestamp": "t",
                "cwd": "/",
                "parentSession": str(paths["session"]),
            }
        )
        + "\n"
    )
    forked = sync_file(fork).session
    assert forked.parent() == rows["session"] and forked.subagent_of is None
    # the forks of a session are its forks, not its subagents
    assert list(rows["session"].forks()) == [forked]


# -- pushed files (the server names them by hash: the client's paths place them) --------------------------


def test_pushed_subagents_nest_under_their_pushed_session(tmp_path: Path, settings, client) -> None:
    import orjson
    from django.contrib.auth.models import User

    from treeview.ingest.tokens import create_token

    settings.ARBOR_SINGLE_USER = False
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    paths = build_tree(tmp_path / "laptop")
    alice = User.objects.create_user("alice", password="pw")
    auth = {"Authorization": f"Bearer {create_token(alice, 'laptop')[1]}"}

    def push(path: Path) -> AgentSession:
        data = path.read_bytes()
        sid = orjson.loads(data.split(b"\n", 1)[0])["id"]
        body = orjson.dumps({"machine": "laptop", "path": str(path), "session_id": sid})
        key = client.post("/api/v1/sources", body, content_type="application/json", headers=auth).json()[
            "source"
        ]
        response = client.post(
            f"/api/v1/sources/{key}/append?offset=0",
            data,
            content_type="application/octet-stream",
            headers=auth,
        )
        assert response.status_code == 200, response.content
        row = AgentSession.objects.filter(session_id=sid).order_by("-pk").first()
        assert row is not None
        return row

    cy = push(paths["Anna.Cy"])  # before its parent: placed by its header's parentSession
    assert cy.subagent_kind == "task" and cy.subagent_of is None
    anna = push(paths["Anna"])
    session = push(paths["session"])
    bob = push(paths["Bob"])
    rows = {s.session_id: s for s in AgentSession.objects.all()}
    assert rows[cy.session_id].subagent_of_id == anna.pk
    assert rows[anna.session_id].subagent_of_id == session.pk
    assert rows[bob.session_id].subagent_of_id == session.pk
    assert rows[session.session_id].subagent_of_id is None and rows[session.session_id].subagent_kind == ""
    # another person's push of the same files from a machine of the same name joins none of them
    mallory = User.objects.create_user("mallory", password="pw")
    auth = {"Authorization": f"Bearer {create_token(mallory, 'laptop')[1]}"}
    theirs = AgentSession.objects.filter(owner=mallory)
    push(paths["Anna"])
    assert theirs.get().subagent_kind == "task" and theirs.get().subagent_of is None
    assert AgentSession.objects.get(pk=cy.pk).subagent_of_id == anna.pk


def test_a_subagent_is_titled_by_its_task_and_a_clone_as_a_fork(tmp_path: Path) -> None:
    paths = build_tree(tmp_path)
    for name in ("session", "Anna", "Tan-1234"):  # the parent first: its title is known
        sync_file(paths[name])
    rows = by_key()
    assert rows["Anna"].title == ""  # the list and the page show its first prompt, its task
    assert rows["Tan-1234"].title.startswith("Fork of ")


def test_an_archived_session_keeps_its_subagents(tmp_path: Path) -> None:
    import gzip

    # omp's archive (`omp gc`): the session file gzipped, its artifacts folder moved beside it as it is
    archive = tmp_path / "archive" / "sessions" / "--home-dev-shop--"
    paths = build_tree(archive)
    paths["session"].with_name(paths["session"].name + ".gz").write_bytes(
        gzip.compress(paths["session"].read_bytes())
    )
    paths["session"].unlink()
    results = sync_paths([tmp_path])
    assert {r.status for r in results} == {"new"}, [r.error for r in results]
    rows = by_key()
    assert rows["session"].source_path.endswith(".jsonl.gz")
    assert AgentSession.objects.filter(subagent_of__isnull=True).get() == rows["session"]
    assert rows["Anna"].subagent_of == rows["session"] and rows["Anna.Cy"].subagent_of == rows["Anna"]


def test_an_upload_named_like_an_artifact_is_a_session_of_its_own(tmp_path: Path, settings) -> None:
    from treeview.services.sync import import_upload

    settings.ARBOR_UPLOAD_DIR = str(tmp_path / "uploads")
    paths = build_tree(tmp_path / "sessions")
    for name in ("Tan-1234", "__advisor", "Anna"):
        result = import_upload(f"{name}.jsonl", [paths[name].read_bytes()])
        assert result.status == "new", result.error
        assert (result.session.subagent_kind, result.session.agent_key) == ("", "")


def test_the_migration_places_the_transcripts_imported_before_it(tmp_path: Path) -> None:
    import importlib

    from django.apps import apps

    migration = importlib.import_module("treeview.migrations.0009_subagents_family")
    build_tree(tmp_path)
    sync_paths([tmp_path])
    # as a database from before the migration has them: sessions of their own
    AgentSession.objects.update(
        title="Fork of the old way"
    )  # what sync named them when the parent came first
    AgentSession.objects.update(subagent_kind="", agent_key="", spawned_from_path="", subagent_of=None)
    migration.place_imported(apps, None)
    rows = by_key()
    assert AgentSession.objects.filter(subagent_of__isnull=True).get() == rows["session"]
    assert rows["Anna.Cy"].subagent_of == rows["Anna"] and rows["__advisor"].subagent_kind == "advisor"
    assert rows["Anna"].title == "" and rows["Tan-1234"].title == "Fork of the old way"
    assert rows["session"].title == "Fork of the old way"  # a session of its own keeps its title


def test_a_fork_of_a_session_that_moved_since_still_names_it(tmp_path: Path, settings) -> None:
    settings.ARBOR_SESSION_DIRS = [str(tmp_path)]
    old, new = _moved(tmp_path)
    lines = parent_lines()
    lines[0] = lines[0][:-1] + f',"previousSessionFiles":["{old}"]}}'
    new.parent.mkdir()
    new.write_text("".join(line + "\n" for line in lines))
    old.unlink()
    moved = sync_file(new).session
    fork = tmp_path / "--home-dev-shop--" / "fork.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "fork-2",
        "timestamp": "t",
        "cwd": "/",
        "parentSession": str(old),
    }
    fork.write_text(dumps(header) + "\n")
    forked = sync_file(fork).session
    assert forked.parent() == moved
    assert list(moved.forks()) == [forked]
