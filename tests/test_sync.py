"""Importing and syncing session files into the database, and exporting them back byte for byte."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.reference import DATA, all_cases, import_fixture
from treeview.models import AgentSession, Entry, ImportIssue
from treeview.services.append import move_leaf, set_label
from treeview.services.export import export_branch, export_text, load_manager
from treeview.services.sync import sync_file, sync_paths
from treeview.session.jsonl import dumps, title_slot
from treeview.session.session_manager import SessionManager

pytestmark = pytest.mark.django_db

CASES = all_cases()


def copy_fixture(tmp_path: Path, name: str, folder: str = "handmade") -> Path:
    target = tmp_path / name
    shutil.copyfile(DATA / folder / name, target)
    return target


def entry_line(
    entry_id: str, parent: str | None, text: str = "more", ts: str = "2026-05-01T11:00:00.000Z"
) -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    return dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts, "message": message})


@pytest.mark.parametrize("case", CASES, ids=str)
def test_export_of_an_untouched_import_is_the_source_file_byte_for_byte(case, tmp_path: Path) -> None:
    path = tmp_path / case.path.name
    shutil.copyfile(case.path, path)
    result = sync_file(path)
    assert result.status == "new", result.error
    assert export_text(result.session).encode() == path.read_bytes()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_the_database_agrees_with_the_core_on_every_fixture(case, tmp_path: Path) -> None:
    path = tmp_path / case.path.name
    shutil.copyfile(case.path, path)
    session = sync_file(path).session
    core = SessionManager.open(case.path)
    rows = list(session.entries.order_by("seq"))
    assert [r.type for r in rows] == [e.get("type") for e in core.entries]
    assert [r.parent_id for r in rows][: len(rows)] == [
        e.get("parentId") if isinstance(e.get("parentId"), str) else None for e in core.entries
    ] or core.migrated  # v1 ids are made at import: compared through load_manager below
    manager = load_manager(session)
    assert session.leaf_id == manager.leaf_id
    assert session.resolved_labels() == manager.labels
    assert session.entry_count == len(core.entries)
    assert [e["id"] for e in manager.entries] == [r.entry_id for r in rows]


def test_v1_ids_are_the_same_at_every_import(tmp_path: Path) -> None:
    first = sync_file(copy_fixture(tmp_path, "v1_index_compaction.jsonl")).session
    ids = list(first.entries.order_by("seq").values_list("entry_id", flat=True))
    first.delete()
    second = sync_file(tmp_path / "v1_index_compaction.jsonl").session
    assert list(second.entries.order_by("seq").values_list("entry_id", flat=True)) == ids
    compaction = json.loads(second.entries.get(type="compaction").raw)
    assert "firstKeptEntryIndex" in compaction  # the stored line is the file's own text
    assert load_manager(second).by_id[ids[5]]["firstKeptEntryId"] == ids[3]


def test_reimport_of_an_unchanged_file_changes_nothing(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    session = sync_file(path).session
    count = Entry.objects.count()
    again = sync_file(path)
    assert again.status == "unchanged" and again.entries_added == 0
    assert Entry.objects.count() == count
    assert again.session.pk == session.pk


def test_a_grown_file_imports_only_the_new_lines(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    session = sync_file(path).session
    with path.open("a") as handle:
        handle.write(entry_line("f0000001", "e5000001") + "\n")
        handle.write("garbage that is not json\n")
        handle.write(entry_line("f0000002", "f0000001") + "\n")
    result = sync_file(path)
    assert result.status == "grown" and result.entries_added == 2
    assert result.bytes_read < 2000
    session.refresh_from_db()
    assert session.leaf_id == "f0000002"
    assert session.entry_count == 17
    assert export_text(session).encode() == path.read_bytes()
    assert any("not valid JSON" in w["message"] for w in session.warnings)


def test_a_half_written_last_line_waits_for_the_next_sync(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    sync_file(path)
    line = entry_line("f0000001", "e5000001")
    with path.open("a") as handle:
        handle.write(line[:40])
    result = sync_file(path)
    assert result.status == "grown" and result.entries_added == 0
    assert result.warnings == []
    assert export_text(result.session).encode() == path.read_bytes()
    with path.open("a") as handle:
        handle.write(line[40:] + "\n")
    result = sync_file(path)
    assert result.status == "grown" and result.entries_added == 1
    assert result.session.entries.get(entry_id="f0000001").raw == line
    assert export_text(result.session).encode() == path.read_bytes()


def test_a_rewritten_file_is_reconciled_without_duplicates(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    session = sync_file(path).session
    first_pks = set(session.entries.values_list("pk", flat=True))
    # omp's title change: the header gains keys and the whole file is rewritten atomically.
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header.update(title="Parser work", titleSource="user")
    path.write_text("\n".join([dumps(header), *lines[1:]]) + "\n")
    result = sync_file(path)
    assert result.status == "rewritten"
    assert result.entries_added == 0 and result.entries_removed == 0
    session.refresh_from_db()
    assert session.title == "Parser work"
    assert set(session.entries.values_list("pk", flat=True)) == first_pks
    assert export_text(session).encode() == path.read_bytes()


def test_a_rewrite_that_changes_an_entry_replaces_only_what_changed(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    session = sync_file(path).session
    lines = path.read_text().splitlines()
    pruned = json.loads(lines[5])
    pruned["message"]["prunedAt"] = 1777630000000
    lines[5] = dumps(pruned)
    path.write_text("\n".join(lines) + "\n")
    result = sync_file(path)
    assert result.status == "rewritten"
    assert result.entries_removed == len(lines) - 5 and result.entries_added == len(lines) - 5
    assert Entry.objects.filter(session=session).count() == len(lines) - 1
    assert len(set(session.entries.values_list("entry_id", flat=True))) == len(lines) - 1
    assert export_text(session).encode() == path.read_bytes()


def test_a_shrunk_file_is_a_rewrite_and_keeps_what_is_still_there(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    sync_file(path)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-2]) + "\n")
    result = sync_file(path)
    assert result.status == "rewritten" and result.entries_removed == 2 and result.entries_added == 0
    assert export_text(result.session).encode() == path.read_bytes()


def test_a_directory_with_good_and_broken_files(tmp_path: Path) -> None:
    good = copy_fixture(tmp_path, "v3_compaction.jsonl")
    nested = tmp_path / "project" / "deeper"
    nested.mkdir(parents=True)
    other = nested / "x.jsonl"
    shutil.copyfile(DATA / "handmade" / "v2_hookmessage_fromhook.jsonl", other)
    headerless = nested / "headerless.jsonl"
    headerless.write_text('{"type":"message","id":"a","parentId":null}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(bytes(range(256)) * 10)
    (tmp_path / "notes.txt").write_text("not a session")
    before = {p: p.read_bytes() for p in (headerless, empty, binary)}
    results = {Path(r.path).name: r for r in sync_paths([tmp_path])}
    assert set(results) == {
        "v3_compaction.jsonl",
        "x.jsonl",
        "headerless.jsonl",
        "empty.jsonl",
        "binary.jsonl",
    }
    assert results["v3_compaction.jsonl"].status == "new" and results["x.jsonl"].status == "new"
    # a file whose first line is an entry is read with a made-up header, and says so
    assert results["headerless.jsonl"].status == "new"
    assert "no session header" in results["headerless.jsonl"].warnings[0]["message"]
    for name in ("empty.jsonl", "binary.jsonl"):
        assert results[name].status == "failed"
        assert "not a session file" in results[name].error
    assert {p: p.read_bytes() for p in before} == before
    assert ImportIssue.objects.count() == 2
    assert AgentSession.objects.count() == 3
    assert good.exists()
    empty.write_text(Path(good).read_text())
    assert sync_file(empty).status in {"new"}
    assert ImportIssue.objects.count() == 1


def test_branch_export_equals_the_cores_branched_session(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    session = sync_file(path).session
    name, text = export_branch(session, "e5000001")
    core = SessionManager.open(path)
    core.create_branched_session("e5000001")
    expected = core.serialize()
    ours, theirs = text.splitlines(), expected.splitlines()
    assert len(ours) == len(theirs)
    # oh-my-pi 18's /branch file starts with a title slot (stamped with the new session's time).
    assert json.loads(ours[0])["type"] == json.loads(theirs[0])["type"] == "title"
    ours, theirs = ours[1:], theirs[1:]
    assert ours[1:-1] == theirs[1:-1]  # the path, byte for byte
    header, label = json.loads(ours[0]), json.loads(ours[-1])
    assert name == f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"
    assert list(header) == list(json.loads(theirs[0]))
    assert header["parentSession"] == str(path)
    assert {k: v for k, v in label.items() if k not in ("id", "timestamp")} == {
        k: v for k, v in json.loads(theirs[-1]).items() if k not in ("id", "timestamp")
    }


def test_a_moved_file_is_the_same_session(tmp_path: Path, settings) -> None:
    # Inside the session directories only (tests/test_takeover.py: anywhere else it is a new session).
    settings.ARBOR_SESSION_DIRS = [tmp_path]
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    session = sync_file(path).session
    moved = tmp_path / "renamed-dir"
    moved.mkdir()
    target = moved / path.name
    path.rename(target)
    result = sync_file(target)
    assert result.session.pk == session.pk and result.entries_added == 0
    assert AgentSession.objects.count() == 1
    result.session.refresh_from_db()
    assert result.session.source_path == str(target)


def test_title_slot_rewritten_in_place_updates_the_title(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "omp18_title_slot_new_entry_types.jsonl")
    session = sync_file(path).session
    data = path.read_bytes()
    slot = json.loads(data[:256])
    slot["title"] = "Renamed"
    line = dumps({**slot, "pad": ""})
    line = dumps({**slot, "pad": " " * (255 - len(line.encode()))})
    path.write_bytes(line.encode() + b"\n" + data[256:])
    result = sync_file(path)
    assert result.status == "rewritten" and result.entries_added == 0
    session.refresh_from_db()
    assert session.title == "Renamed"
    assert export_text(session).encode() == path.read_bytes()


@pytest.mark.django_db
def test_a_big_import_refreshes_the_planner_statistics(tmp_path, monkeypatch):
    from django.db import connection

    from treeview.services.sync import files

    monkeypatch.setattr(files, "ANALYZE_AFTER", 5)
    import_fixture(tmp_path, "v3_branching_labels.jsonl")
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'treeview_entry'")
        else:
            cursor.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'treeview_entry'")
        assert cursor.fetchone()[0] > 0


# -- duplicate ids and parent cycles (issue 11 #13): the warnings the core's inspect gives ------------------


def _header(session_id: str = "links") -> str:
    return dumps({"type": "session", "version": 3, "id": session_id, "timestamp": "2026-05-01T10:00:00.000Z"})


def _inspect_warnings(path: Path) -> list[dict[str, object]]:
    manager = SessionManager.open(path)
    manager.get_tree()
    return [w.as_dict() for w in manager.warnings]


def test_duplicate_ids_and_parent_cycles_are_import_warnings(tmp_path: Path) -> None:
    path = tmp_path / "links.jsonl"
    lines = [
        _header(),
        entry_line("a1", None),
        entry_line("b1", "a1"),
        entry_line("b1", "a1", text="again"),  # line 4: duplicate
        entry_line("c1", "c2"),  # c1 <-> c2: a cycle
        entry_line("c2", "c1"),
    ]
    path.write_text("\n".join(lines) + "\n")

    session = sync_file(path).session

    expected = _inspect_warnings(path)
    assert {"line": 4, "message": "duplicate id 'b1': the later entry replaces the earlier one"} in expected
    assert any("cycle" in str(w["message"]) for w in expected)
    assert sorted(session.warnings, key=str) == sorted(expected, key=str)


def test_a_grown_file_warns_of_a_new_duplicate_and_a_cycle_through_old_entries(tmp_path: Path) -> None:
    path = tmp_path / "links.jsonl"
    # x1 waits for a parent that is not there yet (an orphan), so it is a root for now.
    path.write_text("\n".join([_header(), entry_line("a1", None), entry_line("x1", "y1")]) + "\n")
    assert sync_file(path).session.warnings == []
    with path.open("a") as handle:
        handle.write(entry_line("a1", None, text="dup") + "\n" + entry_line("y1", "x1") + "\n")

    result = sync_file(path)

    assert result.status == "grown"
    messages = [w["message"] for w in result.session.warnings]
    assert "duplicate id 'a1': the later entry replaces the earlier one" in messages
    assert any("cycle" in m for m in messages)
    assert sorted(result.session.warnings, key=str) == sorted(_inspect_warnings(path), key=str)
    # Synced again unchanged, nothing is reported twice.
    with path.open("a") as handle:
        handle.write(entry_line("z1", "a1") + "\n")
    again = sync_file(path).session.warnings
    assert sorted(again, key=str) == sorted(result.session.warnings, key=str)


def test_the_list_shows_the_link_warnings(tmp_path: Path, client) -> None:
    path = tmp_path / "links.jsonl"
    lines = [_header(), entry_line("a1", None), entry_line("a1", None, text="again")]
    path.write_text("\n".join(lines) + "\n")
    sync_file(path)

    html = client.get("/").content.decode()

    assert "duplicate id &#x27;a1&#x27;: the later entry replaces the earlier one" in html


def test_a_line_nested_too_deep_is_skipped_and_the_file_keeps_syncing(tmp_path: Path) -> None:
    header = '{"type":"session","version":3,"id":"deep","timestamp":"2026-05-01T10:00:00.000Z","cwd":"/w"}'
    deep = '{"type":"custom","id":"d1","parentId":"u1","data":' + "[" * 2000 + "]" * 2000 + "}"
    nearly = '{"type":"custom","id":"d2","parentId":"u1","data":' + "[" * 1000 + "]" * 1000 + "}"
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join([header, entry_line("u1", None), deep, nearly, entry_line("u2", "d2")]) + "\n")
    result = sync_file(path)
    assert result.status == "new", result.error
    assert [w["line"] for w in result.warnings] == [3]
    assert "nested more than 1,024 levels deep" in result.warnings[0]["message"]
    session = result.session
    assert [e.entry_id for e in session.entries.order_by("seq")] == ["u1", "d2", "u2"]
    # The agent goes on writing: the file grows and syncs, the deep line stays skipped, nothing is lost.
    with path.open("a") as handle:
        handle.write(entry_line("u3", "u2", ts="2026-05-01T12:00:00.000Z") + "\n")
    grown = sync_file(path)
    assert grown.status == "grown", grown.error
    assert grown.entries_added == 1
    assert export_text(AgentSession.objects.get(pk=session.pk)).encode() == path.read_bytes()
    # A branch through the 1,000-deep entry is written exactly (the serializer does not run out of stack).
    assert nearly in export_branch(AgentSession.objects.get(pk=session.pk), "u3")[1]


TOTALS = (
    "entry_count",
    "first_timestamp",
    "last_timestamp",
    "input_tokens",
    "output_tokens",
    "message_count",
    "tool_call_count",
    "branch_point_count",
    "models_used",
    "leaf_id",
    "title",
    "next_seq",
)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_a_file_grown_in_steps_has_the_totals_of_a_whole_read(case, tmp_path: Path) -> None:
    """The totals a grown file adds up from its new lines equal those a full pass over the session gives."""
    from treeview.services.sync import update_totals

    lines = case.path.read_bytes().splitlines(keepends=True)
    if len(lines) < 4:
        pytest.skip("too short to grow in steps")
    path = tmp_path / case.path.name
    cuts = sorted({2, len(lines) // 2, len(lines) - 1, len(lines)})
    path.write_bytes(b"".join(lines[: cuts[0]]))
    assert sync_file(path).status == "new"
    grew = 0
    for cut in cuts[1:]:
        path.write_bytes(b"".join(lines[:cut]))
        result = sync_file(path)
        # (a v1 file is migrated whole: it is re-read, and its totals come from the full pass)
        assert result.status in ("grown", "unchanged", "rewritten"), result.error
        grew += result.status in ("grown", "rewritten")
        session = AgentSession.objects.get(pk=result.session.pk)
        added = {name: getattr(session, name) for name in TOTALS}
        added_cost = session.cost
        update_totals(session)
        assert added == {name: getattr(session, name) for name in TOTALS}
        assert added_cost == pytest.approx(session.cost)
    assert grew


def test_branch_points_added_up_as_a_file_grows(tmp_path: Path) -> None:
    """A second child makes a branch point; a third child of the same parent does not make another."""
    line = entry_line
    header = {
        "type": "session",
        "version": 3,
        "id": "0196b4f0-0000-7000-8000-00000000b001",
        "timestamp": "2026-05-01T10:00:00.000Z",
        "cwd": "/w",
    }
    path = tmp_path / "grow.jsonl"
    steps = [
        [dumps(header), line("a0000001", None), line("a0000002", "a0000001")],
        [line("a0000003", "a0000001")],
        [line("a0000004", "a0000001"), line("a0000005", "a0000004")],
        [line("a0000006", "a0000005"), line("a0000007", "a0000005"), line("a0000008", "a0000002")],
    ]
    expected = [0, 1, 1, 2]
    written: list[str] = []
    for step, want in zip(steps, expected, strict=True):
        written += step
        path.write_text("\n".join(written) + "\n")
        session = sync_file(path).session
        assert session.branch_point_count == want


# -- oh-my-pi's gzip archives (agent/archive/sessions/**/*.jsonl.gz) -----------------------------------------


def archive(tmp_path: Path, name: str = "v3_branching_labels.jsonl") -> tuple[Path, bytes]:
    import gzip

    data = (DATA / "handmade" / name).read_bytes()
    target = tmp_path / "archive" / "sessions" / "--w--" / f"{name}.gz"
    target.parent.mkdir(parents=True)
    target.write_bytes(gzip.compress(data))
    return target, data


def test_an_archive_is_read_without_unpacking_and_exports_the_session(tmp_path: Path) -> None:
    from treeview.services.sync import find_session_files

    path, data = archive(tmp_path)
    assert list(find_session_files([tmp_path])) == [path]
    result = sync_file(path, within=[tmp_path])
    assert result.status == "new", result.error
    assert export_text(result.session).encode() == data
    assert result.session.entry_count == len(SessionManager.from_text(data.decode()).entries)
    assert sync_file(path, within=[tmp_path]).status == "unchanged"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # nothing unpacked beside it


def test_a_truncated_archive_fails_with_a_clear_reason(tmp_path: Path) -> None:
    path, _ = archive(tmp_path)
    path.write_bytes(path.read_bytes()[:-40])
    result = sync_file(path, within=[tmp_path])
    assert result.status == "failed"
    assert "truncated" in (result.error or "")
    assert not AgentSession.objects.exists()


def test_an_archive_is_never_written(tmp_path: Path, settings) -> None:
    from treeview.services.append import set_label

    settings.ARBOR_WRITE_BACK = True
    path, _ = archive(tmp_path)
    settings.ARBOR_SESSION_DIRS = [str(tmp_path)]
    session = sync_file(path).session
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    set_label(session, "b2000001", "kept in Arbor")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before
    session.refresh_from_db()
    assert session.resolved_labels()["b2000001"] == "kept in Arbor"


# -- a file whose first line is not a header (issue 13) ---------------------------------------------------

HEADERLESS_UUID = "0198c0de-1111-7222-8333-444455556666"


def _headerless_lines() -> list[str]:
    """Three entries of a session whose header line was cut off (a tool that embeds pi, or a hand edit)."""
    return [
        entry_line("h1", None, "Start here.", "2026-05-01T09:00:00.000Z"),
        entry_line("h2", "h1", "Started."),
        entry_line("h3", "h2", "And go on."),
    ]


def _write(path: Path, lines: list[str], prefix: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(prefix + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_headerless_file_is_imported_with_a_warning_and_a_made_up_header(tmp_path: Path) -> None:
    path = _write(tmp_path / f"2026-05-01T10-00-00-000Z_{HEADERLESS_UUID}.jsonl", _headerless_lines())
    result = sync_file(path)
    assert result.status == "new", result.error
    session = result.session
    assert session.session_id == HEADERLESS_UUID  # the file name's UUID
    assert session.cwd == "" and session.header_raw == ""
    assert session.created_at == json.loads(_headerless_lines()[0])["timestamp"]
    assert session.entry_count == 3 and session.leaf_id == "h3"
    [warning] = result.warnings
    assert warning["line"] == 1 and "no session header" in warning["message"]
    assert "never writes to this file" in warning["message"]
    assert session.warnings == result.warnings
    # the download is the file as it is, byte for byte (no header added to it)
    assert export_text(session).encode() == path.read_bytes()
    # Arbor's own reading of it has the made-up header and the whole tree
    manager = load_manager(session)
    assert manager.session_id == HEADERLESS_UUID and [e["id"] for e in manager.get_branch()] == [
        "h1",
        "h2",
        "h3",
    ]


def test_without_a_uuid_in_its_name_the_id_is_stable_for_the_path(tmp_path: Path) -> None:
    first = _write(tmp_path / "a" / "cut.jsonl", _headerless_lines())
    second = _write(tmp_path / "b" / "cut.jsonl", _headerless_lines())
    one, other = sync_file(first).session, sync_file(second).session
    assert one.session_id != other.session_id
    first.write_text(first.read_text() + entry_line("h4", "h3", "Gone on.") + "\n")
    again = sync_file(first)
    assert again.status == "grown" and again.session.pk == one.pk
    assert again.session.session_id == one.session_id and again.session.entry_count == 4
    first.write_text("".join(line + "\n" for line in _headerless_lines()[:2]))  # cut down again: re-read
    rewritten = sync_file(first)
    assert rewritten.status == "rewritten" and rewritten.session.pk == one.pk
    assert rewritten.session.session_id == one.session_id
    assert export_text(rewritten.session).encode() == first.read_bytes()


def test_a_title_slot_then_entries_keeps_the_slot_and_the_bytes(tmp_path: Path) -> None:
    slot = title_slot("Cut down", "2026-05-01T10:00:00.000Z")
    path = _write(tmp_path / "slot.jsonl", _headerless_lines(), prefix=dumps(slot).ljust(255) + "\n")
    session = sync_file(path).session
    assert session.title == "Cut down" and session.header_raw == ""
    assert export_text(session).encode() == path.read_bytes()
    assert load_manager(session).leaf_id == "h3"


def test_arbor_never_writes_into_a_headerless_file(tmp_path: Path, settings) -> None:
    settings.ARBOR_WRITE_BACK = True
    path = _write(tmp_path / "sessions" / "cut.jsonl", _headerless_lines())
    before = path.read_bytes()
    session = sync_file(path).session
    label = set_label(session, "h2", "kept in Arbor")
    move_leaf(session, "h1")
    assert path.read_bytes() == before  # the agents would not open it: appending would not change that
    assert not label.in_file
    session.refresh_from_db()
    assert session.resolved_labels() == {"h2": "kept in Arbor"}
    # what Arbor added is in the download (after the file's bytes) and survives the next sync
    assert export_text(session).encode().startswith(before)
    assert sync_file(path).status == "unchanged"


def test_a_headerless_branch_downloads_as_a_file_the_agents_open(tmp_path: Path) -> None:
    path = _write(tmp_path / f"x_{HEADERLESS_UUID}.jsonl", _headerless_lines())
    session = sync_file(path).session
    name, text = export_branch(session, "h2")
    branched = SessionManager.from_text(text)
    assert branched.header["parentSession"] == str(path)
    assert [e["id"] for e in branched.get_branch()] == ["h1", "h2"] and name.endswith(".jsonl")


def test_a_pi_sdk_v4_file_is_refused_with_what_it_is(tmp_path: Path) -> None:
    path = _write(tmp_path / "lanes.jsonl", ['{"version":4,"lane":"main","seq":1}', *_headerless_lines()])
    before = path.read_bytes()
    result = sync_file(path)
    assert result.status == "failed"
    assert "version 4 of the pi SDK's session store" in result.error
    assert "pi 1.6 reads session versions 1 to 3 only" in result.error
    assert path.read_bytes() == before and not AgentSession.objects.exists()


def test_the_session_page_says_the_file_has_no_header_and_is_not_written(client, tmp_path: Path) -> None:
    session = sync_file(_write(tmp_path / f"x_{HEADERLESS_UUID}.jsonl", _headerless_lines())).session
    normal = sync_file(copy_fixture(tmp_path, "v3_compaction.jsonl")).session
    page = client.get(f"/s/{session.session_id}/").content.decode()
    assert 'class="headerless-note"' in page and "never writes to it" in page
    assert 'class="headerless-note"' not in client.get(f"/s/{normal.session_id}/").content.decode()


def test_a_headerless_branch_streams_the_bytes_it_builds_whole(monkeypatch, tmp_path: Path) -> None:
    from tests.test_downloads import _deterministic
    from treeview.services.export import export_branch_lines

    session = sync_file(_write(tmp_path / f"x_{HEADERLESS_UUID}.jsonl", _headerless_lines())).session
    set_label(session, "h1", "start")
    fresh = _deterministic(monkeypatch)
    whole = export_branch(session, "h3")
    fresh.count = 0
    name, lines = export_branch_lines(session, "h3")
    assert (name, "".join(lines)) == whole
