"""Large imports: rows go to the database in batches on a writer thread; the result must not depend on it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from django.db import connection

from treeview.models import AgentSession, Entry, ImportIssue
from treeview.services import sync
from treeview.services.columns import entry_facts
from treeview.services.export import export_text
from treeview.services.sync import entry_rows, importer
from treeview.session.generate import write_session

pytestmark = pytest.mark.django_db

ENTRIES = 4500  # more than two batches: the writer thread takes every batch but the last


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    write_session(path, ENTRIES, seed=7)
    return path


def stored_rows() -> list[dict[str, Any]]:
    rows = list(Entry.objects.order_by("session_id", "seq").values())
    for row in rows:
        del row["id"], row["session_id"]
    return rows


def test_batched_import_stores_the_same_rows_as_a_single_batch(
    big_session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    threads = []
    original = entry_rows._RowWriter.__init__

    def spy(self: Any, conn: Any) -> None:
        original(self, conn)
        threads.append(self.thread)

    monkeypatch.setattr(entry_rows._RowWriter, "__init__", spy)
    result = sync.sync_file(path)
    assert result.status == "new" and result.entries_added == ENTRIES
    assert len(threads) == 1 and not threads[0].is_alive()
    batched = stored_rows()
    assert export_text(result.session).encode() == path.read_bytes()
    result.session.delete()

    monkeypatch.setattr(importer, "BATCH_SIZE", ENTRIES + 1)  # everything in the last batch: no writer thread
    again = sync.sync_file(path)
    assert again.entries_added == ENTRIES and len(threads) == 1
    assert stored_rows() == batched


def test_every_stored_row_has_the_columns_of_its_line(big_session: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    session = sync.sync_file(path).session
    tool_calls: dict[str, Any] = {}
    for row in session.entries.order_by("seq"):
        facts = entry_facts(orjson.loads(row.raw), tool_calls)
        assert (row.entry_id, row.parent_id, row.type, row.role, row.ts) == (
            facts.entry_id,
            facts.parent_id,
            facts.type,
            facts.role,
            facts.ts,
        )
        assert (row.text, row.search_text, row.model, row.cost) == (
            facts.text,
            facts.search_text,
            facts.model,
            facts.cost,
        )
    assert session.entry_count == ENTRIES == session.next_seq


def test_a_database_error_on_the_writer_thread_fails_the_import_and_stores_nothing(
    big_session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    calls = []
    insert = entry_rows.insert_entry_rows

    def failing(rows: list[tuple[Any, ...]], conn: Any = None) -> None:
        calls.append(threading.current_thread())
        if len(calls) == 2:
            raise RuntimeError("disk full")
        insert(rows, conn)

    monkeypatch.setattr(entry_rows, "insert_entry_rows", failing)  # the writer thread's batches
    monkeypatch.setattr(importer, "insert_entry_rows", failing)  # the last batch
    result = sync.sync_file(path)
    assert result.status == "failed" and "disk full" in (result.error or "")
    assert calls[0] is not threading.main_thread()
    assert not AgentSession.objects.exists() and not Entry.objects.exists()
    assert ImportIssue.objects.get().error == result.error
    assert threading.active_count() == 1 or all(
        t.name != "arbor-import-writer" for t in threading.enumerate()
    )


def test_a_constraint_violation_on_the_writer_thread_rolls_the_import_back(
    big_session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    add = importer._Importer._add
    count = []

    def bad_line(self: Any, value: Any, raw: str, before: str, digest: str, line: int) -> None:
        count.append(1)
        add(self, value, raw, before, digest, -1 if len(count) == 2500 else line)  # CHECK (line >= 0)

    monkeypatch.setattr(importer._Importer, "_add", bad_line)
    result = sync.sync_file(path)
    assert result.status == "failed" and "IntegrityError" in (result.error or "")
    assert not AgentSession.objects.exists() and not Entry.objects.exists()
    monkeypatch.undo()
    assert sync.sync_file(path).entries_added == ENTRIES


def test_an_error_while_reading_stops_the_writer_before_the_rollback(
    big_session: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    seen = []

    def facts(entry: Any, tool_calls: Any) -> Any:
        seen.append(1)
        if len(seen) == 3000:
            raise ValueError("boom")
        return entry_facts(entry, tool_calls)

    monkeypatch.setattr(importer, "entry_facts", facts)
    result = sync.sync_file(path)
    assert result.status == "failed" and "boom" in (result.error or "")
    assert not Entry.objects.exists()
    assert all(t.name != "arbor-import-writer" for t in threading.enumerate())
    # The connection is still usable (no statement left running on it).
    monkeypatch.undo()
    assert sync.sync_file(path).entries_added == ENTRIES


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL only")
@pytest.mark.django_db(transaction=True)
def test_raw_lines_are_lz4_compressed_and_the_setting_ends_with_the_import(
    big_session: Path, tmp_path: Path
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(big_session.read_bytes())
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
        )
        if not cursor.fetchone()[0]:
            pytest.skip("server built without lz4")
        cursor.execute("SHOW default_toast_compression")
        before = cursor.fetchone()[0]
    assert sync.sync_file(path).status == "new"
    with connection.cursor() as cursor:
        cursor.execute("SHOW default_toast_compression")
        assert cursor.fetchone()[0] == before
        cursor.execute(
            "SELECT DISTINCT pg_column_compression(raw) FROM treeview_entry"
            " WHERE pg_column_compression(raw) IS NOT NULL"
        )
        assert [row[0] for row in cursor.fetchall()] == ["lz4"]
