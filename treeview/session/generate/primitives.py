"""The generator's state and primitives (time, ids, emitting an entry), the base of its layers."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

from treeview.session.generate.corpus import _make_code_corpus, _make_prose_corpus
from treeview.session.generate.vocabulary import _DIRS, _EXTS, _MODELS, _PROJECTS, _STEMS, _USERS
from treeview.session.jsonl import dumps


def _iso(ms: int) -> str:
    """``new Date(ms).toISOString()``: UTC, exactly three fraction digits, a literal ``Z``."""
    dt = datetime.fromtimestamp(ms // 1000, UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


class _Primitives:
    """The generator's state and its primitives: time, ids, emitting entries."""

    def __init__(self, entries: int, seed: int) -> None:
        self.target = entries
        self.rng = rng = random.Random(seed)
        self.code = _make_code_corpus(rng, 5000)
        self.prose = _make_prose_corpus(rng, 3000)
        self.files = [
            rng.choice(_DIRS)
            + "/"
            + rng.choice(_STEMS)
            + rng.choice(["", "-utils", "-types"])
            + rng.choice(_EXTS)
            for _ in range(240)
        ]
        project = rng.choice(_PROJECTS)
        self.cwd = f"/home/{rng.choice(_USERS)}/work/{project}"
        # Somewhere in 2026, deterministic for the seed.
        self.now = 1_767_225_600_000 + rng.randrange(300 * 86_400_000)
        self.ids: set[str] = (
            set()
        )  # membership only: never iterated (iteration order depends on the hash seed)
        self.leaf: str | None = None
        # The current path, root first, as parallel lists of ids and kinds ("user", "assistant", "toolResult",
        # "compaction", "other"). Truncated on rewinds, swapped on excursions.
        self.path: list[str] = []
        self.kinds: list[str] = []
        self.out: list[str] = []
        self.count = 0
        self.model = _MODELS[0]
        self.context_tokens = 12_000  # estimated context size (system prompt and tools count too)
        self.last_compaction_index = -1  # index in self.path of the last compaction on the path
        self.labelled: dict[str, str] = {}  # target id -> label, insertion ordered (deterministic)
        self.read_files: dict[str, None] = {}
        self.modified_files: dict[str, None] = {}
        self.turns = 0

    # -- primitives ----------------------------------------------------------------------------------------

    def _tick(self, lo: int, hi: int) -> int:
        """Advance the clock by a random number of ms and return the new time."""
        self.now += self.rng.randint(lo, hi)
        return self.now

    def _new_id(self) -> str:
        # omp v15: the last 8 hex chars of a random UUID, retried until unique in the file.
        while True:
            candidate = f"{self.rng.getrandbits(32):08x}"
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def _emit(self, entry: dict[str, Any], kind: str) -> str:
        """Serialize an entry whose base keys are already set, make it the leaf and extend the path."""
        line = dumps(entry)
        self.out.append(line)
        self.count += 1
        if kind in ("user", "assistant", "toolResult"):
            # What the model sees grows with every message (a rough chars/4 token estimate).
            self.context_tokens += len(line) // 4
        entry_id: str = entry["id"]
        self.leaf = entry_id
        self.path.append(entry_id)
        self.kinds.append(kind)
        return entry_id

    def _base(self, entry_type: str) -> dict[str, Any]:
        return {
            "type": entry_type,
            "id": self._new_id(),
            "parentId": self.leaf,
            "timestamp": _iso(self._tick(1, 40)),
        }

    def _append(self, entry_type: str, kind: str = "other", **fields: Any) -> str:
        entry = self._base(entry_type)
        entry.update(fields)
        return self._emit(entry, kind)

    def _append_message(self, message: dict[str, Any], kind: str, entry_delay: int = 2) -> str:
        # The entry is written a moment after the message object was created (message.timestamp <= entry).
        self.now += self.rng.randint(0, entry_delay)
        entry: dict[str, Any] = {
            "type": "message",
            "id": self._new_id(),
            "parentId": self.leaf,
            "timestamp": _iso(self.now),
            "message": message,
        }
        return self._emit(entry, kind)
