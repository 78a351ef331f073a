"""The management commands: import_sessions, export_session and watch_sessions."""

from __future__ import annotations

import io
import json
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError, connection
from watchfiles import Change

from tests.reference import DATA, all_cases
from treeview.management.commands._reporting import ProgressLine
from treeview.management.commands.watch_sessions import SessionWatcher
from treeview.models import AgentSession, Entry
from treeview.services.append import set_label
from treeview.services.sync import sync_file
from treeview.session.jsonl import dumps
from treeview.session.migrations import stable_id_maker
from treeview.session.session_manager import SessionManager

pytestmark = pytest.mark.django_db

CASES = all_cases()


def copy_fixture(directory: Path, name: str, folder: str = "handmade") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(DATA / folder / name, target)
    return target


def header_id(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        value = json.loads(line)
        if value.get("type") == "session":
            return str(value["id"])
    raise AssertionError(f"no header in {path}")


def user_line(entry_id: str, parent: str | None, text: str = "one more thing") -> str:
    message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
    entry = {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-05-01T11:00:00.000Z",
        "message": message,
    }
    return dumps(entry) + "\n"


def last_id(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["id"])


def run(name: str, *args: str, **options: Any) -> tuple[str, str]:
    """Run a command; (stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    call_command(name, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def run_failing(name: str, *args: str, **options: Any) -> tuple[CommandError, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as raised:
        call_command(name, *args, stdout=out, stderr=err, **options)
    return raised.value, out.getvalue(), err.getvalue()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# -- import_sessions -------------------------------------------------------------------------------


def broken_files(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    # (a file whose first line is an entry is imported with a made-up header: not broken; tests/test_sync.py)
    sdk_v4 = directory / "sdk-v4.jsonl"
    sdk_v4.write_text('{"version":4,"kind":"lane","seq":1}\n' + user_line("a1", None))
    empty = directory / "empty.jsonl"
    empty.write_bytes(b"")
    garbage = directory / "garbage.jsonl"
    garbage.write_bytes(bytes(range(256)) * 8 + b"\x00\xff\xfe")
    return [sdk_v4, empty, garbage]


def test_import_of_a_directory_with_good_and_broken_files_imports_the_good_and_exits_1(
    tmp_path: Path,
) -> None:
    good = copy_fixture(tmp_path, "v3_compaction.jsonl")
    nested = copy_fixture(tmp_path / "project" / "deeper", "v3_branching_labels.jsonl")
    broken = broken_files(tmp_path / "project")
    (tmp_path / "notes.txt").write_text("not a session file")
    before = {path: path.read_bytes() for path in broken}

    error, out, err = run_failing("import_sessions", str(tmp_path))

    assert error.returncode == 1
    assert "3 of 5 files could not be imported" in str(error)
    assert "5 files: 2 new, 0 grown, 0 unchanged, 0 rewritten, 3 failed; 0 warnings." in out
    assert set(AgentSession.objects.values_list("source_path", flat=True)) == {str(good), str(nested)}
    for path in broken:
        assert f"failed: {path}: " in err
        assert path.read_bytes() == before[path]  # refused, never touched
    assert "not a session file" in err


def test_reimport_of_unchanged_files_reports_them_unchanged(tmp_path: Path) -> None:
    copy_fixture(tmp_path, "v3_compaction.jsonl")
    copy_fixture(tmp_path, "v2_hookmessage_fromhook.jsonl")
    first, _ = run("import_sessions", str(tmp_path))
    count = Entry.objects.count()

    again, err = run("import_sessions", str(tmp_path))

    assert "2 files: 2 new, 0 grown, 0 unchanged, 0 rewritten, 0 failed" in first
    assert "2 files: 0 new, 0 grown, 2 unchanged, 0 rewritten, 0 failed; 0 warnings. 0 entries added" in again
    assert err == ""
    assert Entry.objects.count() == count


def test_a_grown_file_is_reported_grown_with_the_number_of_new_entries(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    run("import_sessions", str(path))
    parent = last_id(path)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(user_line("f0000001", parent) + user_line("f0000002", "f0000001"))

    out, _ = run("import_sessions", str(path), verbosity=2)

    assert f"grown      {path} (+2 entries)" in out
    assert "1 file: 0 new, 1 grown, 0 unchanged, 0 rewritten, 0 failed; 0 warnings. 2 entries added" in out
    session = AgentSession.objects.get(source_path=str(path))
    assert session.entries.filter(entry_id__in=["f0000001", "f0000002"]).count() == 2


def test_summary_counts_warnings_per_file_and_lists_them_at_verbosity_2(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_orphans_sorting_malformed.jsonl")
    out, _ = run("import_sessions", str(path))
    assert "1 file: 1 new, 0 grown, 0 unchanged, 0 rewritten, 0 failed; 2 warnings." in out
    assert f"2 warnings: {path} (-v 2 lists them)" in out

    AgentSession.objects.all().delete()
    detailed, _ = run("import_sessions", str(path), verbosity=2)
    assert f"new        {path} (+10 entries, 2 warnings)" in detailed
    assert "  line 6: 2 JSON objects glued on one line; each was recovered" in detailed
    assert "  line 9: not valid JSON, skipped" in detailed


def test_quiet_prints_only_the_failures(tmp_path: Path) -> None:
    copy_fixture(tmp_path, "v3_compaction.jsonl")
    assert run("import_sessions", str(tmp_path), quiet=True) == ("", "")

    (sdk_v4, *_) = broken_files(tmp_path / "broken")
    error, out, err = run_failing("import_sessions", str(tmp_path), quiet=True)
    assert error.returncode == 1
    assert out == ""
    assert err.count("failed: ") == 3 and f"failed: {sdk_v4}: " in err
    assert "version 4 of the pi SDK's session store" in err


def test_a_named_file_that_does_not_exist_fails_with_its_reason(tmp_path: Path) -> None:
    error, _, err = run_failing("import_sessions", str(tmp_path / "missing.jsonl"))
    assert error.returncode == 1
    assert f"failed: {tmp_path / 'missing.jsonl'}: cannot read the file: No such file or directory" in err


def test_without_a_path_the_configured_session_directories_are_imported(
    tmp_path: Path, settings: Any
) -> None:
    path = copy_fixture(tmp_path / "sessions" / "--proj--", "v3_compaction.jsonl")
    settings.ARBOR_SESSION_DIRS = [tmp_path / "sessions", tmp_path / "not-there"]
    out, _ = run("import_sessions")
    assert f"Importing from {tmp_path / 'sessions'}\n" in out
    assert "1 file: 1 new" in out
    assert AgentSession.objects.filter(source_path=str(path)).exists()


def test_without_a_path_and_no_session_directory_it_says_so(tmp_path: Path, settings: Any) -> None:
    settings.ARBOR_SESSION_DIRS = [tmp_path / "nowhere", tmp_path / "neither"]
    out, err = run("import_sessions")
    assert out == ""
    assert f"No session directory exists (looked for: {tmp_path / 'nowhere'}, {tmp_path / 'neither'})" in err
    assert "ARBOR_SESSION_DIRS" in err


def test_on_a_terminal_a_progress_line_is_drawn_on_stderr_and_cleared(tmp_path: Path) -> None:
    copy_fixture(tmp_path, "v3_compaction.jsonl")
    copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    out, err = io.StringIO(), Terminal()
    call_command("import_sessions", str(tmp_path), stdout=out, stderr=err)
    drawn = err.getvalue()
    assert drawn.startswith("\r0/2 files  0 entries  0.0 MB  0.0 MB/s  v3_branching_labels.jsonl")
    assert drawn.endswith("\r") and "\n" not in drawn  # the line is wiped before the summary
    assert "\r" not in out.getvalue() and "2 files: 2 new" in out.getvalue()


def test_without_a_terminal_there_is_no_progress_line(tmp_path: Path) -> None:
    copy_fixture(tmp_path, "v3_compaction.jsonl")
    _, err = run("import_sessions", str(tmp_path))
    assert err == ""


def test_progress_line_redraws_at_most_ten_times_a_second() -> None:
    now = [100.0]
    written: list[str] = []
    line = ProgressLine(written.append, 3, clock=lambda: now[0], width=200)
    line.start_file("/x/a.jsonl")
    for _ in range(50):  # many callbacks within the same tenth of a second: one redraw at most
        line(1_000_000, 100)
    assert written == ["\r0/3 files  0 entries  0.0 MB  0.0 MB/s  a.jsonl"]
    now[0] += 2.0
    line(0, 0)
    assert written[-1] == "\r0/3 files  5,000 entries  50.0 MB  25.0 MB/s  a.jsonl"
    now[0] += 0.05
    line.file_done()
    assert len(written) == 2
    line.draw(force=True)
    assert written[-1].startswith("\r1/3 files  5,000 entries  50.0 MB")
    line.clear()
    assert written[-1] == "\r" + " " * (len(written[-2]) - 1) + "\r"


def test_progress_line_pads_over_a_longer_line_and_fits_the_terminal() -> None:
    written: list[str] = []
    line = ProgressLine(written.append, 1, clock=lambda: 1.0, interval=0, width=40)
    line.start_file("a-rather-long-session-file-name.jsonl")
    assert all(len(text) <= 40 for text in written)  # one column short: never wraps
    line.current = ""
    line.draw()
    assert written[-1].endswith(" ") and len(written[-1]) == len(written[-2])


# -- export_session --------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=str)
def test_export_writes_exactly_the_source_bytes_of_every_fixture(case: Any, tmp_path: Path) -> None:
    source = copy_fixture(tmp_path / "in", case.path.name, case.path.parent.name)
    run("import_sessions", str(source))
    target = tmp_path / "out.jsonl"

    out, _ = run("export_session", header_id(source), "-o", str(target))

    assert target.read_bytes() == source.read_bytes()
    assert out == f"Wrote {target} ({target.stat().st_size:,} bytes)\n"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_export_to_stdout_writes_the_same_bytes(case: Any, tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, case.path.name, case.path.parent.name)
    run("import_sessions", str(source))
    raw = io.BytesIO()
    # Like sys.stdout: a text stream over a byte buffer. The bytes go to the buffer untranslated.
    stdout = io.TextIOWrapper(raw, encoding="ascii", newline="\r\n")
    call_command("export_session", header_id(source), "-o", "-", stdout=stdout)
    stdout.flush()
    assert raw.getvalue() == source.read_bytes()


def test_export_after_arbor_appended_is_the_source_then_the_new_lines(tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    run("import_sessions", str(source))
    session = AgentSession.objects.get(source_path=str(source))
    set_label(session, "b2000001", "start")
    target = tmp_path / "out.jsonl"

    run("export_session", session.session_id, "-o", str(target))

    data = target.read_bytes()
    assert data.startswith(source.read_bytes())
    added = json.loads(data[len(source.read_bytes()) :])
    assert added["type"] == "label" and added["targetId"] == "b2000001" and added["label"] == "start"


def branched_by_the_core(source: Path, entry_id: str) -> str:
    """What ``SessionManager.open(path)`` + ``create_branched_session`` writes. The database gives v1 files
    (whose ids are made at load) the ids of ``stable_id_maker``, so the core must use them too."""
    core = SessionManager.open(source)
    if core.migrated and core.source_version == 1:
        core = SessionManager.from_bytes(
            source.read_bytes(), path=str(source.resolve()), make_id=stable_id_maker(core.session_id)
        )
    core.create_branched_session(entry_id)
    return core.serialize()


def masked(text: str) -> list[str]:
    """The lines, with what is fresh at every /branch masked: the header's id and timestamp, the ids and
    timestamps of the label entries it re-creates (all labels of a branched file are fresh), and the time of
    the title slot oh-my-pi 18 starts the file with."""
    lines = text.splitlines()
    result = []
    if json.loads(lines[0]).get("type") == "title":
        slot = json.loads(lines.pop(0))
        slot.update(updatedAt="<ts>")
        result.append(dumps(slot))
    header = json.loads(lines[0])
    header.update(id="<id>", timestamp="<ts>")
    result.append(dumps(header))
    fresh: dict[str, str] = {}
    for line in lines[1:]:
        value = json.loads(line)
        if value.get("type") != "label":
            result.append(line)
            continue
        fresh[value["id"]] = f"<label {len(fresh)}>"
        value.update(
            id=fresh[value["id"]], timestamp="<ts>", parentId=fresh.get(value["parentId"], value["parentId"])
        )
        result.append(dumps(value))
    return result


def branch_points(source: Path) -> list[str]:
    """The leaf, an entry in the middle and, if any, a labelled entry (ids as the database has them)."""
    manager = SessionManager.from_bytes(source.read_bytes(), make_id=stable_id_maker(header_id(source)))
    ids = [entry["id"] for entry in manager.entries if isinstance(entry.get("id"), str)]
    return [ids[-1], ids[len(ids) // 2], *list(manager.labels)[:1]]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_branch_export_equals_the_cores_create_branched_session(case: Any, tmp_path: Path) -> None:
    source = copy_fixture(tmp_path / "in", case.path.name, case.path.parent.name)
    run("import_sessions", str(source))
    for index, entry_id in enumerate(branch_points(source)):
        target = tmp_path / f"branch-{index}.jsonl"
        run("export_session", header_id(source), "--branch", entry_id, "-o", str(target))
        ours = target.read_text(encoding="utf-8")
        assert masked(ours) == masked(branched_by_the_core(source, entry_id)), entry_id
        first, second = (json.loads(line) for line in ours.splitlines()[:2])
        assert (second if first["type"] == "title" else first)["parentSession"] == str(source)


def test_branch_export_carries_the_labels_of_the_path(tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    run("import_sessions", str(source))
    out, _ = run("export_session", header_id(source), "--branch", "e5000001", "-o", str(tmp_path))
    (written,) = [path for path in tmp_path.glob("*.jsonl") if path != source]
    lines = written.read_text().splitlines()
    slot = json.loads(lines[0])
    assert slot["type"] == "title"  # oh-my-pi 18 starts its /branch file with a title slot
    header, *_, label = (json.loads(line) for line in lines[1:])
    # -o DIRECTORY: the file name /branch gives the new session.
    assert written.name == f"{header['timestamp'].replace(':', '-').replace('.', '-')}_{header['id']}.jsonl"
    assert out == f"Wrote {written} ({written.stat().st_size:,} bytes)\n"
    assert (label["type"], label["targetId"], label["label"]) == ("label", "b2000008", "click-version")


def test_export_of_an_unknown_session_id_is_an_error(tmp_path: Path) -> None:
    error, _, _ = run_failing("export_session", "no-such-session", "-o", str(tmp_path / "x.jsonl"))
    assert "no imported session has the id 'no-such-session'" in str(error)
    assert not (tmp_path / "x.jsonl").exists()


def test_export_of_an_unknown_entry_is_an_error_and_writes_nothing(tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    run("import_sessions", str(source))
    target = tmp_path / "x.jsonl"
    error, _, _ = run_failing("export_session", header_id(source), "--branch", "zzzz", "-o", str(target))
    assert str(error) == f"session {header_id(source)} has no entry 'zzzz'"
    assert not target.exists()


def test_export_refuses_to_overwrite_a_file_unless_forced(tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, "v3_compaction.jsonl")
    run("import_sessions", str(source))
    target = tmp_path / "exists.jsonl"
    target.write_text("keep me")

    error, _, _ = run_failing("export_session", header_id(source), "-o", str(target))
    assert str(error) == f"{target} exists (use --force to overwrite it)"
    assert target.read_text() == "keep me"

    run("export_session", header_id(source), "-o", str(target), "--force")
    assert target.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exists.jsonl", "v3_compaction.jsonl"]


def test_export_into_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    source = copy_fixture(tmp_path, "v3_compaction.jsonl")
    run("import_sessions", str(source))
    error, _, _ = run_failing("export_session", header_id(source), "-o", str(tmp_path / "no" / "x.jsonl"))
    assert "does not exist" in str(error)


def test_export_of_a_session_imported_twice_names_the_copy_it_exports(tmp_path: Path) -> None:
    first = copy_fixture(tmp_path / "a", "v3_compaction.jsonl")
    second = copy_fixture(tmp_path / "b", "v3_compaction.jsonl")
    run("import_sessions", str(first))
    run("import_sessions", str(second))
    _, err = run("export_session", header_id(first), "-o", str(tmp_path / "out.jsonl"))
    assert f"exporting the one synced last, {second} (also in: {first})" in err


# -- watch_sessions --------------------------------------------------------------------------------


def make_watcher(tmp_path: Path, verbosity: int = 1) -> tuple[SessionWatcher, list[str], list[str]]:
    out: list[str] = []
    err: list[str] = []
    return SessionWatcher([tmp_path], out=out.append, err=err.append, verbosity=verbosity), out, err


def test_a_batch_of_changes_syncs_each_changed_session_file_once(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    watcher, out, err = make_watcher(tmp_path)
    watcher.sync_all()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(user_line("f0000001", last_id(path)))
    added = copy_fixture(tmp_path / "sub", "v3_branching_labels.jsonl")
    (tmp_path / "notes.txt").write_text("x")

    results = watcher.handle_changes(
        {
            (Change.modified, str(path)),
            (Change.added, str(path)),
            (Change.added, str(added)),
            (Change.modified, str(tmp_path / "notes.txt")),
            (Change.deleted, str(tmp_path / "gone.jsonl")),
            (Change.added, str(tmp_path / "gone-again.jsonl")),  # a temporary file renamed away
        }
    )

    assert [(Path(r.path).name, r.status, r.entries_added) for r in results] == [
        ("v3_branching_labels.jsonl", "new", 15),
        ("v3_compaction.jsonl", "grown", 1),
    ]
    assert [line.split(" ", 1)[1] for line in out] == [
        f"new        {added} (+15 entries)",
        f"grown      {path} (+1 entry)",
    ]
    assert err == []


def test_a_sync_that_changed_nothing_prints_nothing(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    watcher, out, _ = make_watcher(tmp_path)
    watcher.sync_all()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"type":"message","id":"half')  # a half-written line waits for the rest
    assert [r.status for r in watcher.handle_changes([(Change.modified, str(path))])] == ["grown"]
    assert out == []


def test_a_bad_file_never_stops_the_watcher_and_is_reported_once_per_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    good = copy_fixture(tmp_path, "v3_compaction.jsonl")
    watcher, out, err = make_watcher(tmp_path)
    changes = [(Change.modified, str(bad)), (Change.modified, str(good))]

    first = watcher.handle_changes(changes)
    with open(bad, "a") as handle:
        handle.write("still not json\n")
    second = watcher.handle_changes(changes)

    assert [r.status for r in first] == ["failed", "new"] and [r.status for r in second] == [
        "failed",
        "unchanged",
    ]
    assert len(err) == 1 and f"failed     {bad}: " in err[0]
    assert len(out) == 1
    bad.write_text(good.read_text())  # fixed: a copy of the good session
    (fixed,) = watcher.handle_changes([(Change.modified, str(bad))])
    assert fixed.status == "new"
    assert len(err) == 1


def test_the_watcher_survives_a_database_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = copy_fixture(tmp_path, "v3_compaction.jsonl")
    watcher, _, err = make_watcher(tmp_path)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr("treeview.management.commands.watch_sessions.sync_file", broken)
    (result,) = watcher.handle_changes([(Change.modified, str(path))])
    assert result.status == "failed" and result.error == "OperationalError: database is locked"
    assert err and "database is locked" in err[0]


def test_catching_up_syncs_only_files_written_since_the_start(tmp_path: Path) -> None:
    old = copy_fixture(tmp_path, "v3_compaction.jsonl")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    recent = copy_fixture(tmp_path, "v3_branching_labels.jsonl")
    watcher, _, _ = make_watcher(tmp_path)
    results = watcher.catch_up(time.time())
    assert [Path(r.path) for r in results] == [recent]


def test_the_initial_sync_is_one_summary(tmp_path: Path) -> None:
    copy_fixture(tmp_path, "v3_compaction.jsonl")
    (tmp_path / "bad.jsonl").write_text("nope\n")
    watcher, out, err = make_watcher(tmp_path)
    summary = watcher.sync_all()
    assert summary.counts == {"new": 1, "grown": 0, "unchanged": 0, "rewritten": 0, "failed": 1}
    assert out == [] and err == []  # the caller prints the summary and its failures


@pytest.mark.django_db(transaction=True)
def test_the_watcher_follows_a_directory_and_imports_appended_entries(tmp_path: Path) -> None:
    path = copy_fixture(tmp_path / "sessions" / "--proj--", "v3_compaction.jsonl")
    stop, ready = threading.Event(), threading.Event()
    out = io.StringIO()
    failures: list[BaseException] = []

    def watch() -> None:
        try:
            call_command(
                "watch_sessions",
                str(tmp_path / "sessions"),
                debounce=100,
                stop_event=stop,
                ready=ready,
                stdout=out,
                stderr=out,
            )
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)
        finally:
            connection.close()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        assert ready.wait(15), out.getvalue()
        assert AgentSession.objects.filter(source_path=str(path)).exists()  # the initial sync
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(user_line("f0000001", last_id(path)))
        deadline = time.monotonic() + 10
        while not _entry_exists("f0000001"):
            assert time.monotonic() < deadline, out.getvalue()
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive() and failures == []
    text = out.getvalue()
    assert "1 file: 1 new" in text and f"grown      {path} (+1 entry)" in text
    assert text.endswith("Stopped watching.\n")


def _entry_exists(entry_id: str) -> bool:
    try:
        return Entry.objects.filter(entry_id=entry_id).exists()
    except OperationalError:  # SQLite's shared in-memory test database: the writer holds the table
        return False


def test_watching_nothing_is_an_error(tmp_path: Path, settings: Any) -> None:
    settings.ARBOR_SESSION_DIRS = [tmp_path / "nowhere"]
    error, _, _ = run_failing("watch_sessions")
    assert "No session directory exists" in str(error)
    error, _, _ = run_failing("watch_sessions", str(tmp_path / "missing"))
    assert f"cannot watch what does not exist: {tmp_path / 'missing'}" == str(error)


# -- the lead's sync layer -------------------------------------------------------------------------


def test_a_file_of_garbage_is_not_reported_as_empty(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"this is not json\n\x00\x01\x02\n")
    result = sync_file(garbage)
    assert result.status == "failed"
    assert "empty" not in (result.error or "")
