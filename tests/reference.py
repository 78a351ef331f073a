"""The fixtures and the original agent's real answers for them (tests/data/reference, see its README).

A reference answer was produced by oh-my-pi v15 on the fixture file. Two things differ on our side by design:

* title-slot files: v15 cannot read them, so their answers were taken on the same file without its first
  line (``*.slot-stripped.omp.json``); Arbor strips the slot itself and must give those answers;
* glued lines: v15 keeps only the first object of a line holding several, Arbor recovers every one. The
  entries Arbor recovers beyond the first are left out when comparing (``omp_view``).

v1 files get random ids on every load, so ids are compared by position (``IdMap``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from treeview.session.session_manager import SessionManager

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True)
class Case:
    name: str
    path: Path

    @property
    def reference(self) -> dict[str, Any]:
        return load_reference(self.name)

    def __str__(self) -> str:
        return self.name


def _reference_path(name: str) -> Path:
    stem = name.removesuffix(".jsonl")
    stripped = DATA / "reference" / f"{stem}.slot-stripped.omp.json"
    return stripped if stripped.exists() else DATA / "reference" / f"{stem}.omp.json"


@cache
def load_reference(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(_reference_path(name).read_text(encoding="utf-8"))
    return result


def all_cases() -> list[Case]:
    files = sorted((DATA / "handmade").glob("*.jsonl")) + sorted((DATA / "real").glob("*.jsonl"))
    return [Case(path.name, path) for path in files]


def omp_view(manager: SessionManager) -> list[int]:
    """Indexes of our entries that v15 also has (the first object of each physical line)."""
    seen: set[int] = set()
    keep: list[int] = []
    for index in range(len(manager.entries)):
        line = manager.entry_line(index)
        if line is not None and line in seen:
            continue
        if line is not None:
            seen.add(line)
        keep.append(index)
    return keep


class IdMap:
    """Translates the reference's ids into ours, by position for v1 files (random ids), else unchanged."""

    def __init__(self, manager: SessionManager, reference: dict[str, Any]) -> None:
        ours = [manager.entries[i].get("id") for i in omp_view(manager)]
        theirs = [entry["id"] for entry in reference["entries"]]
        assert len(ours) == len(theirs)
        self.positional = manager.migrated and reference.get("source_header_version") in (None, 1)
        self._map = dict(zip(theirs, ours, strict=True)) if self.positional else {}

    def __call__(self, ref_id: Any) -> Any:
        if isinstance(ref_id, list):
            return [self(item) for item in ref_id]
        if not self.positional or ref_id is None:
            return ref_id
        return self._map.get(ref_id, ref_id)


def open_case(case: Case) -> tuple[SessionManager, dict[str, Any], IdMap]:
    # These are v15's answers: read the file by v15's rules (the newest agents': tests/reference_latest.py).
    manager = SessionManager.open(case.path, agent="omp15")
    reference = case.reference
    return manager, reference, IdMap(manager, reference)


def import_fixture(tmp_path: Path, name: str, folder: str = "handmade") -> Any:
    """Import a copy of a fixture (never tests/data itself) into the test database; returns its session."""
    import shutil

    from treeview.services.sync import sync_file

    path = tmp_path / name
    shutil.copyfile(DATA / folder / name, path)
    result = sync_file(path)
    assert result.session is not None, result.error
    return result.session
