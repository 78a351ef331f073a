"""Appending to a session in the database (issue 3): the append-only guard, labels, the position marker for
the agent, opt-in write-back to the source file and its refusals, and concurrent appends from two processes.

Concurrency and SQLite: pytest-django creates SQLite test databases in memory
(``file:memorydb_default?mode=memory&cache=shared``), which another process cannot open. The fixture
``shared_database`` (this module only) therefore points the ``default`` connection of the test at a
migrated file database under ``tmp_path``, with the project's own SQLite options (WAL, IMMEDIATE
transactions), and puts the original connection back afterwards. On PostgreSQL the test database
(``test_<NAME>``) is shared as it is.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, connections, transaction
from django.db.utils import load_backend

from tests.reference import DATA
from treeview.models import AgentSession, AppendOnlyError, Entry
from treeview.services.append import UnknownEntry, WriteBackRefused, move_leaf, persist_position, set_label
from treeview.services.export import export_text
from treeview.services.sync import sync_file
from treeview.session.entries import DISCARDED_ENTRY_BRANCH
from treeview.session.jsonl import dumps
from treeview.session.session_manager import SessionManager

REPO = Path(__file__).resolve().parent.parent
FIXTURE = "v3_branching_labels.jsonl"
LAST = "e5000001"  # the fixture's last entry, so the leaf after an import
LABELS_AFTER_IMPORT = {"b2000008": "click-version"}  # "start" on b2000001 is cleared by c3000003
BASE_KEYS = ["type", "id", "parentId", "timestamp"]


# -- helpers -------------------------------------------------------------------------------------------------


def copy_fixture(tmp_path: Path, name: str = FIXTURE, folder: str = "handmade") -> Path:
    target = tmp_path / name
    shutil.copyfile(DATA / folder / name, target)
    return target


def imported(tmp_path: Path, name: str = FIXTURE, folder: str = "handmade") -> tuple[AgentSession, Path]:
    """A fresh copy of a fixture, imported with ``sync_file``: (session, the file as the session names it)."""
    result = sync_file(copy_fixture(tmp_path, name, folder))
    assert result.status == "new", result.error
    assert result.session is not None
    return result.session, Path(result.session.source_path)


def entry_rows(session: AgentSession) -> list[tuple[Any, ...]]:
    """Every column of every entry of the session, in order."""
    fields = [f.attname for f in Entry._meta.concrete_fields]
    return list(Entry.objects.filter(session=session).order_by("seq").values_list(*fields))


def session_row(session: AgentSession) -> dict[str, Any]:
    return AgentSession.objects.filter(pk=session.pk).values().get()


def agent_line(entry_id: str, parent_id: str | None, text: str = "and now?") -> str:
    """A line as the agent appends it (a user message)."""
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1777629700000}
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": "2026-05-01T11:00:00.000Z",
        "message": message,
    }
    return dumps(entry)


def append_bytes(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)
    later_mtime(path)


def rewrite_in_place(path: Path, old: bytes, new: bytes, offset: int = 0) -> None:
    """Overwrite ``old`` (its first occurrence after ``offset``) with ``new`` of the same size, in place."""
    assert len(old) == len(new)
    data = path.read_bytes()
    position = data.index(old, offset)
    with path.open("r+b") as handle:
        handle.seek(position)
        handle.write(new)
    later_mtime(path)


def later_mtime(path: Path) -> None:
    """Make sure the change shows in the mtime (file systems keep coarse timestamps: two writes within the
    same tick have the same mtime)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def assert_refused(session: AgentSession, path: Path, action: Callable[[], Any]) -> WriteBackRefused:
    """``action`` raises WriteBackRefused and changes nothing: not the file, not an entry, not the session."""
    file_before = path.read_bytes() if path.exists() else None
    entries_before, session_before = entry_rows(session), session_row(session)
    with pytest.raises(WriteBackRefused) as refused:
        action()
    assert (path.read_bytes() if path.exists() else None) == file_before
    assert entry_rows(session) == entries_before
    assert session_row(session) == session_before
    return refused.value


def core_of_export(session: AgentSession) -> SessionManager:
    """The exported file as the agent (the core) loads it: leaf = last line."""
    core = SessionManager.from_text(export_text(session))
    assert core.warnings == []
    return core


@pytest.fixture
def write_back(settings: Any) -> None:
    settings.ARBOR_WRITE_BACK = True


@pytest.fixture
def no_write_back(settings: Any) -> None:
    settings.ARBOR_WRITE_BACK = False


# -- the append-only guard -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_stored_entry_refuses_save_and_every_queryset_update(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    before = entry_rows(session)
    entry = session.entries.get(entry_id="b2000001")
    original = entry.raw
    entry.raw = "{}"
    entry.label_text = "edited"
    attempts: list[Callable[[], Any]] = [
        entry.save,
        lambda: entry.save(update_fields=["raw"]),
        lambda: Entry.objects.filter(session=session).update(raw="{}"),
        lambda: Entry.objects.update(label_text="x"),
        lambda: session.entries.filter(type="label").update(label_text="x"),  # the related manager too
        lambda: Entry.objects.bulk_update([entry], ["raw"]),
        lambda: Entry.objects.update_or_create(session=session, seq=entry.seq, defaults={"raw": "{}"}),
    ]
    for attempt in attempts:
        # In a savepoint: bulk_update's own atomic block would otherwise leave the test's transaction broken.
        with pytest.raises(AppendOnlyError), transaction.atomic():
            attempt()
    assert entry_rows(session) == before
    entry.refresh_from_db()
    assert entry.raw == original


@pytest.mark.django_db
def test_an_entry_built_with_a_stored_pk_does_not_overwrite_the_stored_row(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    before = entry_rows(session)
    stored = session.entries.get(entry_id="b2000001")
    impostor = Entry(pk=stored.pk, session=session, seq=stored.seq, type="message", raw="{}")
    with pytest.raises((AppendOnlyError, IntegrityError)), transaction.atomic():
        impostor.save()
    assert entry_rows(session) == before


@pytest.mark.django_db
def test_bulk_create_cannot_upsert_over_stored_entries(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    before = entry_rows(session)
    stored = session.entries.get(entry_id="b2000001")
    clash = Entry(session=session, seq=stored.seq, type="message", raw="{}")
    with pytest.raises((AppendOnlyError, IntegrityError)), transaction.atomic():
        Entry.objects.bulk_create(
            [clash], update_conflicts=True, unique_fields=["session", "seq"], update_fields=["raw"]
        )
    assert entry_rows(session) == before


# -- labels --------------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_set_label_appends_a_label_entry_under_the_leaf_and_moves_the_leaf(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    assert session.leaf_id == LAST
    assert session.resolved_labels() == LABELS_AFTER_IMPORT
    count = session.entries.count()

    row = set_label(session, "b2000006", "deploy")

    assert session.entries.count() == count + 1
    entry = json.loads(row.raw)
    assert list(entry) == [*BASE_KEYS, "targetId", "label"]
    assert entry["type"] == "label" and entry["parentId"] == LAST  # a child of the current leaf (§10.9)
    assert entry["targetId"] == "b2000006" and entry["label"] == "deploy"
    assert row.raw == dumps(entry)
    assert (row.type, row.entry_id, row.parent_id) == ("label", entry["id"], LAST)
    assert (row.label_target, row.label_text) == ("b2000006", "deploy")
    assert row.origin == Entry.Origin.ARBOR and not row.in_file
    assert session.leaf_id == row.entry_id  # §9.1: the leaf moves to the label entry
    assert AgentSession.objects.get(pk=session.pk).leaf_id == row.entry_id
    assert session.resolved_labels() == {**LABELS_AFTER_IMPORT, "b2000006": "deploy"}

    core = core_of_export(session)
    assert core.leaf_id == session.leaf_id
    assert core.labels == session.resolved_labels()


@pytest.mark.django_db
def test_set_label_hangs_the_label_at_a_moved_leaf_and_at_no_leaf(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    move_leaf(session, "b2000004")
    first = set_label(session, "b2000004", "look here")
    assert json.loads(first.raw)["parentId"] == "b2000004"
    assert session.leaf_id == first.entry_id
    move_leaf(session, None)  # resetLeaf: the next append is a new root (§10.7)
    assert session.leaf_id is None
    second = set_label(session, "b2000002", "argparse")
    assert json.loads(second.raw)["parentId"] is None and second.parent_id is None
    assert session.leaf_id == second.entry_id
    core = core_of_export(session)
    assert core.leaf_id == second.entry_id
    assert core.labels == session.resolved_labels()
    assert core.labels == {**LABELS_AFTER_IMPORT, "b2000004": "look here", "b2000002": "argparse"}


@pytest.mark.django_db
@pytest.mark.parametrize("cleared", [None, "", "   "], ids=["None", "empty", "blank"])
def test_clearing_a_label_writes_a_label_entry_without_a_label_key(
    tmp_path: Path, cleared: str | None
) -> None:
    session, _ = imported(tmp_path)
    row = set_label(session, "b2000008", cleared)
    entry = json.loads(row.raw)
    assert list(entry) == [*BASE_KEYS, "targetId"]  # no "label" key at all, as the original writes it
    assert '"label":' not in row.raw
    assert entry["targetId"] == "b2000008" and entry["parentId"] == LAST
    assert row.label_text == ""
    assert session.leaf_id == row.entry_id
    assert session.resolved_labels() == {}
    core = core_of_export(session)
    assert core.labels == {} and core.leaf_id == row.entry_id


@pytest.mark.django_db
def test_labels_after_several_changes_agree_with_the_core(tmp_path: Path) -> None:
    session, path = imported(tmp_path)
    # The same actions through the core, on the same file: labels and their order must agree.
    core = SessionManager.open(path)
    actions: list[tuple[str, str | None]] = [
        ("b2000006", "deploy"),
        ("b2000001", "start again"),
        ("b2000006", None),
        ("b2000003", "subcommands"),
        ("b2000006", "deploy 2"),
    ]
    for target, label in actions:
        set_label(session, target, label)
        core.append_label_change(target, label)
        assert session.resolved_labels() == core.labels
    exported = core_of_export(session)
    assert exported.labels == core.labels
    assert list(exported.labels.items()) == list(core.labels.items())
    assert exported.leaf_id == session.leaf_id
    # One chain of label entries, each a child of the one before.
    new = list(session.entries.filter(origin=Entry.Origin.ARBOR).order_by("seq"))
    assert [r.parent_id for r in new] == [LAST] + [r.entry_id for r in new[:-1]]


@pytest.mark.django_db
def test_resolved_labels_keep_the_order_of_the_core_when_a_target_is_relabelled(tmp_path: Path) -> None:
    session, path = imported(tmp_path)
    set_label(session, "b2000006", "deploy")
    set_label(session, "b2000008", "renamed")  # already labelled: stays first in a JS Map
    core = core_of_export(session)
    assert list(core.labels.items()) == [("b2000008", "renamed"), ("b2000006", "deploy")]
    assert list(session.resolved_labels().items()) == list(core.labels.items())


@pytest.mark.django_db
def test_labelling_an_unknown_entry_raises_and_appends_nothing(tmp_path: Path) -> None:
    session, _ = imported(tmp_path)
    entries_before, session_before = entry_rows(session), session_row(session)
    with pytest.raises(UnknownEntry) as unknown:
        set_label(session, "nope1234", "x")
    assert str(unknown.value) == "Entry nope1234 not found"
    # The header's id is not an entry either.
    with pytest.raises(UnknownEntry):
        set_label(session, session.session_id, "x")
    with pytest.raises(UnknownEntry) as moved:
        move_leaf(session, "nope1234")
    assert str(moved.value) == "Entry nope1234 not found"
    assert entry_rows(session) == entries_before
    assert session_row(session) == session_before


# -- the position marker for the agent -----------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("target", ["b2000004", "b2000007", LAST, None])
def test_persist_position_appends_the_v18_marker_at_the_leaf(tmp_path: Path, target: str | None) -> None:
    session, path = imported(tmp_path)
    original = SessionManager.open(path)
    expected = original.build_session_context(target)
    count = session.entries.count()

    move_leaf(session, target)
    assert session.leaf_id == target
    assert session.entries.count() == count  # moving the leaf appends nothing
    marker = persist_position(session)

    assert session.entries.count() == count + 1
    entry = json.loads(marker.raw)
    assert entry["type"] == "branch_summary" and entry["summary"] == ""
    assert entry["parentId"] == target
    assert entry["fromId"] == (target if target is not None else "root")
    assert entry["details"]["kind"] == DISCARDED_ENTRY_BRANCH
    assert marker.parent_id == target and marker.type == "branch_summary"
    assert session.leaf_id == marker.entry_id
    # The same shape as the core's own branchWithSummary (§10.8) with the same arguments.
    original.branch_with_summary(target, "", entry["details"])
    built = original.get_leaf_entry()
    assert built is not None
    assert list(built) == list(entry)
    assert {k: v for k, v in built.items() if k not in ("id", "timestamp")} == {
        k: v for k, v in entry.items() if k not in ("id", "timestamp")
    }

    core = core_of_export(session)  # the agent reopening the file: leaf = last line = the marker
    assert core.leaf_id == marker.entry_id
    context = core.build_session_context()
    assert context.messages == expected.messages
    assert context == expected


# -- write-back ----------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_write_back_appends_exactly_the_new_line_and_the_next_sync_sees_no_change(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path)
    old = path.read_bytes()
    row = set_label(session, "b2000006", "deploy")

    assert path.read_bytes() == old + row.raw.encode() + b"\n"
    assert row.in_file and row.origin == Entry.Origin.ARBOR
    assert row.line == old.count(b"\n") + 1
    count = Entry.objects.filter(session=session).count()

    again = sync_file(path)
    assert again.status == "unchanged" and again.entries_added == 0
    assert Entry.objects.filter(session=session).count() == count
    assert Entry.objects.filter(session=session, entry_id=row.entry_id).count() == 1
    session.refresh_from_db()
    assert export_text(session).encode() == path.read_bytes()
    agent = SessionManager.open(path)
    assert agent.leaf_id == row.entry_id == session.leaf_id
    assert agent.labels == session.resolved_labels() == {**LABELS_AFTER_IMPORT, "b2000006": "deploy"}

    # The agent appends after Arbor: only its line is new.
    append_bytes(path, (agent_line("f6000001", row.entry_id) + "\n").encode())
    grown = sync_file(path)
    assert grown.status == "grown" and grown.entries_added == 1
    session.refresh_from_db()
    assert session.leaf_id == "f6000001"
    assert export_text(session).encode() == path.read_bytes()

    # A rewrite in place (same size) is reconciled without duplicating Arbor's line.
    rewrite_in_place(path, b'"cwd":"/home/dev/proj"', b'"cwd":"/home/dev/jorp"')
    rewritten = sync_file(path)
    assert rewritten.status == "rewritten", rewritten.error
    assert (rewritten.entries_added, rewritten.entries_removed) == (0, 0)
    session.refresh_from_db()
    assert session.cwd == "/home/dev/jorp"
    assert Entry.objects.filter(session=session, entry_id=row.entry_id).count() == 1
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_write_back_of_the_position_marker_makes_the_agent_resume_at_the_leaf(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path)
    expected = SessionManager.open(path).build_session_context("b2000004")
    old = path.read_bytes()
    move_leaf(session, "b2000004")
    assert path.read_bytes() == old  # moving the leaf writes nothing
    marker = persist_position(session)
    assert path.read_bytes() == old + marker.raw.encode() + b"\n"
    agent = SessionManager.open(path)
    assert agent.leaf_id == marker.entry_id
    assert agent.build_session_context() == expected
    assert sync_file(path).status == "unchanged"
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_write_back_is_refused_when_the_agent_appended_since_the_last_sync(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path)
    append_bytes(path, (agent_line("f6000001", LAST) + "\n").encode())

    refused = assert_refused(session, path, lambda: set_label(session, "b2000006", "deploy"))
    assert str(path) in str(refused) and "sync" in str(refused)
    assert_refused(session, path, lambda: persist_position(session))

    assert sync_file(path).status == "grown"
    session.refresh_from_db()
    grown = path.read_bytes()
    row = set_label(session, "b2000006", "deploy")  # the retry after a sync succeeds
    assert json.loads(row.raw)["parentId"] == "f6000001"
    assert path.read_bytes() == grown + row.raw.encode() + b"\n"
    assert sync_file(path).status == "unchanged"
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_write_back_is_refused_when_the_file_was_rewritten_with_the_same_size(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path)
    size = path.stat().st_size
    rewrite_in_place(path, b"Write a CLI argument parser", b"Wrote a CLI argument parser")
    assert path.stat().st_size == size
    refused = assert_refused(session, path, lambda: set_label(session, "b2000006", "deploy"))
    assert str(path) in str(refused) and "sync" in str(refused)
    assert sync_file(path).status == "rewritten"
    session.refresh_from_db()
    rewritten = path.read_bytes()
    row = set_label(session, "b2000006", "deploy")
    assert path.read_bytes() == rewritten + row.raw.encode() + b"\n"
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_write_back_is_refused_while_the_file_ends_in_a_half_written_line(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path)
    line = agent_line("f6000001", LAST)
    half, rest = line[:40], line[40:]
    append_bytes(path, half.encode())

    # Not synced yet: the file is longer than Arbor saw.
    assert_refused(session, path, lambda: set_label(session, "b2000006", "deploy"))
    # Synced: the half line is pending; appending would glue Arbor's line onto it.
    synced = sync_file(path)
    assert synced.status in ("grown", "unchanged") and synced.entries_added == 0
    session.refresh_from_db()
    assert session.pending_raw == half
    assert_refused(session, path, lambda: set_label(session, "b2000006", "deploy"))
    assert_refused(session, path, lambda: persist_position(session))
    assert path.read_bytes().endswith(half.encode())

    # The agent finishes its line: sync, then Arbor's append goes through.
    append_bytes(path, (rest + "\n").encode())
    assert sync_file(path).entries_added == 1
    session.refresh_from_db()
    before = path.read_bytes()
    row = set_label(session, "b2000006", "deploy")
    assert json.loads(row.raw)["parentId"] == "f6000001"
    assert path.read_bytes() == before + row.raw.encode() + b"\n"
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_write_back_is_refused_for_a_v1_file(tmp_path: Path, write_back: None) -> None:
    session, path = imported(tmp_path, "v1_index_compaction.jsonl")
    assert session.format_version == 1
    target = session.entries.filter(type="message").order_by("seq").values_list("entry_id", flat=True)[0]
    refused = assert_refused(session, path, lambda: set_label(session, target, "old"))
    assert "version 1" in str(refused)
    assert_refused(session, path, lambda: persist_position(session))


@pytest.mark.django_db
def test_write_back_is_refused_when_the_file_is_gone(tmp_path: Path, write_back: None) -> None:
    session, path = imported(tmp_path)
    path.unlink()
    refused = assert_refused(session, path, lambda: set_label(session, "b2000006", "deploy"))
    assert str(path) in str(refused)


@pytest.mark.django_db
def test_without_write_back_the_file_is_untouched_and_the_export_adds_the_new_lines(
    tmp_path: Path, no_write_back: None
) -> None:
    session, path = imported(tmp_path)
    old = path.read_bytes()
    label = set_label(session, "b2000006", "deploy")
    move_leaf(session, "b2000004")
    marker = persist_position(session)

    assert path.read_bytes() == old
    for row in (label, marker):
        assert not row.in_file and row.line is None and row.origin == Entry.Origin.ARBOR
    added = label.raw.encode() + b"\n" + marker.raw.encode() + b"\n"
    assert export_text(session).encode() == old + added
    assert sync_file(path).status == "unchanged"
    assert export_text(session).encode() == old + added

    # The agent appends: its line is imported, Arbor's entries are kept and still exported after the file.
    append_bytes(path, (agent_line("f6000001", LAST) + "\n").encode())
    grown = sync_file(path)
    assert grown.status == "grown" and grown.entries_added == 1
    session.refresh_from_db()
    assert export_text(session).encode() == path.read_bytes() + added
    # A rewrite of the file keeps them too.
    rewrite_in_place(path, b"Write a CLI argument parser", b"Wrote a CLI argument parser")
    rewritten = sync_file(path)
    assert rewritten.status == "rewritten" and rewritten.entries_removed == rewritten.entries_added
    session.refresh_from_db()
    assert export_text(session).encode() == path.read_bytes() + added
    assert session.entries.filter(origin=Entry.Origin.ARBOR).count() == 2


@pytest.mark.django_db
def test_write_back_notices_an_in_place_title_slot_rewrite_of_a_large_file(
    tmp_path: Path, write_back: None
) -> None:
    session, path = imported(tmp_path, "oh-my-pi_large-session_v3-migrated_title-slot.jsonl", "real")
    data = path.read_bytes()
    assert len(data) > 3 * 64 * 1024
    slot_line = data[: data.index(b"\n")]
    slot = json.loads(slot_line)
    assert slot["type"] == "title" and len(slot_line) == 255
    # As omp renames: a new title, the pad shortened so that the line keeps its 256 bytes.
    renamed = "Renamed in place"
    pad = slot["pad"][: len(slot["pad"]) - len(renamed) + len(slot["title"])]
    new_slot = dumps({**slot, "title": renamed, "pad": pad}).encode()
    assert len(new_slot) == len(slot_line)
    rewrite_in_place(path, slot_line, new_slot)

    target = session.entries.filter(type="message").order_by("seq").values_list("entry_id", flat=True)[0]
    try:
        set_label(session, target, "deploy")
    except WriteBackRefused:  # a fix may refuse: then sync and retry
        sync_file(path)
        session.refresh_from_db()
        set_label(session, target, "deploy")
    sync_file(path)
    session.refresh_from_db()
    assert session.title == renamed
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_written_entries_never_point_at_entries_missing_from_the_file(tmp_path: Path, settings: Any) -> None:
    session, path = imported(tmp_path)
    settings.ARBOR_WRITE_BACK = False
    database_only = set_label(session, "b2000006", "deploy")
    settings.ARBOR_WRITE_BACK = True
    try:
        written = set_label(session, "b2000003", "subcommands")
    except WriteBackRefused:
        return  # refusing is a correct answer
    assert database_only.entry_id in session.entries.values_list("entry_id", flat=True)
    agent = SessionManager.open(path)
    parent = json.loads(written.raw)["parentId"]
    assert parent is None or parent in agent.by_id, f"the file names a parent it does not contain: {parent}"


# -- concurrency ---------------------------------------------------------------------------------------------

APPENDS = 50

# One worker process: Django with the test database, wait for the start signal, then APPENDS labels.
WORKER = """
import json, os, sys, time
os.environ["DJANGO_SETTINGS_MODULE"] = "sessions_site.settings"
from django.conf import settings
settings.DATABASES["default"].update(json.loads(os.environ["ARBOR_TEST_DATABASE"]))
import django
django.setup()
from treeview.models import AgentSession
from treeview.services.append import set_label

pk, count, name, ready, go = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
session = AgentSession.objects.get(pk=pk)
open(ready, "w").close()
deadline = time.monotonic() + 60
while not os.path.exists(go):
    if time.monotonic() > deadline:
        sys.exit("no start signal")
    time.sleep(0.001)
for i in range(count):
    set_label(session, "b2000001" if i % 2 else "b2000008", f"{name}-{i}")
"""


def _shareable(settings_dict: dict[str, Any]) -> dict[str, Any]:
    """The connection settings another process needs (JSON)."""
    keys = ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT", "OPTIONS")
    shared = {key: copy.deepcopy(settings_dict[key]) for key in keys if key in settings_dict}
    shared["NAME"] = str(shared["NAME"])
    return shared


@pytest.fixture
def shared_database(transactional_db: None, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The test database as other processes and threads can open it: the full settings of the connection.

    SQLite test databases are in memory (invisible to other processes), so here the ``default`` connection is
    swapped for one to a migrated file database with the same options, and put back afterwards (the in-memory
    connection stays open and untouched; pytest-django flushes it as usual).
    """
    if connection.vendor != "sqlite" or not connection.is_in_memory_db():
        yield copy.deepcopy(connection.settings_dict)
        return
    original = connections["default"]
    settings_dict = copy.deepcopy(original.settings_dict)
    settings_dict["NAME"] = str(tmp_path / "shared.sqlite3")
    wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, "default")
    connections["default"] = wrapper
    try:
        call_command("migrate", verbosity=0, interactive=False)
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA journal_mode")
            assert cursor.fetchone()[0] == "wal"
        assert settings_dict["OPTIONS"].get("transaction_mode") == "IMMEDIATE"
        yield copy.deepcopy(settings_dict)
    finally:
        wrapper.close()
        connections["default"] = original


def _run_processes(session: AgentSession, database: dict[str, Any], tmp_path: Path, write_back: bool) -> None:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessions_site.settings",
        "ARBOR_TEST_DATABASE": json.dumps(_shareable(database)),
        "ARBOR_WRITE_BACK": "1" if write_back else "0",
    }
    go = tmp_path / "go"
    workers = []
    try:
        for name in ("a", "b"):
            ready = tmp_path / f"ready-{name}"
            out = (tmp_path / f"worker-{name}.log").open("w")
            command = [sys.executable, "-c", WORKER, str(session.pk), str(APPENDS), name, str(ready), str(go)]
            process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
            workers.append((name, process, ready, out))
        deadline = time.monotonic() + 120
        while not all(ready.exists() for _, _, ready, _ in workers):
            for name, process, _, _ in workers:
                assert process.poll() is None, (tmp_path / f"worker-{name}.log").read_text()
            assert time.monotonic() < deadline, "the workers did not start"
            time.sleep(0.01)
        go.touch()  # both are waiting: start them together
        for name, process, _, out in workers:
            process.wait(timeout=300)
            out.close()
            log = (tmp_path / f"worker-{name}.log").read_text()
            assert process.returncode == 0, log
            assert log == "", log
    finally:
        for _, process, _, out in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
            out.close()


def _run_threads(session: AgentSession, database: dict[str, Any], write_back: bool, settings: Any) -> None:
    settings.ARBOR_WRITE_BACK = write_back
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        # A connection of its own to the shared database, as a request thread of the server has.
        wrapper = load_backend(database["ENGINE"]).DatabaseWrapper(copy.deepcopy(database), "default")
        connections["default"] = wrapper
        try:
            mine = AgentSession.objects.get(pk=session.pk)
            start.wait(timeout=30)
            for i in range(APPENDS):
                set_label(mine, "b2000001" if i % 2 else "b2000008", f"{name}-{i}")
        except BaseException as error:  # reported by the test
            errors.append(error)
        finally:
            wrapper.close()

    threads = [threading.Thread(target=work, args=(name,)) for name in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads)
    assert errors == []


def _check_one_chain(
    session: AgentSession, path: Path, before: dict[str, Any], old_bytes: bytes, write_back: bool
) -> None:
    """Exactly 2 × APPENDS new entries, serialized into one chain; nothing lost, nothing duplicated."""
    new = list(Entry.objects.filter(session=session, seq__gte=before["next_seq"]).order_by("seq"))
    assert len(new) == 2 * APPENDS
    assert Entry.objects.filter(session=session).count() == before["count"] + 2 * APPENDS
    assert [row.seq for row in new] == list(range(before["next_seq"], before["next_seq"] + 2 * APPENDS))
    ids = [row.entry_id for row in new]
    assert len(set(ids)) == len(ids)
    assert not set(ids) & before["ids"]
    assert [row.parent_id for row in new] == [before["leaf"], *ids[:-1]]
    for row in new:
        entry = json.loads(row.raw)
        assert (entry["id"], entry["parentId"]) == (row.entry_id, row.parent_id)
    # Each worker's labels arrive in its own order, all of them.
    for name in ("a", "b"):
        texts = [row.label_text for row in new if row.label_text.startswith(f"{name}-")]
        assert texts == [f"{name}-{i}" for i in range(APPENDS)]
    session.refresh_from_db()
    assert session.next_seq == before["next_seq"] + 2 * APPENDS
    assert session.entry_count == before["count"] + 2 * APPENDS
    assert session.leaf_id == ids[-1]
    core = core_of_export(session)
    assert core.leaf_id == ids[-1]
    assert core.labels == session.resolved_labels()
    if write_back:
        assert path.read_bytes() == old_bytes + b"".join(row.raw.encode() + b"\n" for row in new)
        assert all(row.in_file for row in new)
        assert [row.line for row in new] == [new[0].line + i for i in range(len(new))]
        assert sync_file(path).status == "unchanged"
        assert export_text(session).encode() == path.read_bytes()
    else:
        assert path.read_bytes() == old_bytes
        assert not any(row.in_file for row in new)


def _before(session: AgentSession) -> dict[str, Any]:
    session.refresh_from_db()
    return {
        "next_seq": session.next_seq,
        "count": session.entries.count(),
        "leaf": session.leaf_id,
        "ids": set(session.entries.values_list("entry_id", flat=True)),
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("write_back", [False, True], ids=["db-only", "write-back"])
def test_two_processes_appending_to_one_session_are_serialized(
    shared_database: dict[str, Any], tmp_path: Path, write_back: bool
) -> None:
    session, path = imported(tmp_path)
    before, old_bytes = _before(session), path.read_bytes()
    _run_processes(session, shared_database, tmp_path, write_back)
    _check_one_chain(session, path, before, old_bytes, write_back)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("write_back", [False, True], ids=["db-only", "write-back"])
def test_two_threads_appending_to_one_session_are_serialized(
    shared_database: dict[str, Any], tmp_path: Path, write_back: bool, settings: Any
) -> None:
    session, path = imported(tmp_path)
    before, old_bytes = _before(session), path.read_bytes()
    _run_threads(session, shared_database, write_back, settings)
    _check_one_chain(session, path, before, old_bytes, write_back)
