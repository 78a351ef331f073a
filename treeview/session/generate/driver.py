"""The driver (``_Generator.run``) and the public ``generate_session`` and ``write_session``."""

from __future__ import annotations

import os
from collections.abc import Iterator

from treeview.session.generate.conversation import _Conversation
from treeview.session.generate.primitives import _iso
from treeview.session.jsonl import dumps


class _Generator(_Conversation):
    """Simulates one long omp session; :meth:`run` yields the serialized lines."""

    # -- driver ----------------------------------------------------------------------------------------------

    def header(self) -> str:
        rng = self.rng
        ms = self.now
        # UUIDv7: 48-bit ms timestamp, version 7, variant 10xx, random rest.
        hexstr = f"{ms:012x}"
        session_id = (
            f"{hexstr[:8]}-{hexstr[8:12]}-7{rng.getrandbits(12):03x}-"
            f"{8 + rng.getrandbits(2):x}{rng.getrandbits(12):03x}-{rng.getrandbits(48):012x}"
        )
        return dumps(
            {"type": "session", "version": 3, "id": session_id, "timestamp": _iso(ms), "cwd": self.cwd}
        )

    def run(self) -> Iterator[str]:
        yield self.header()
        # Every new omp SDK session starts with model_change (no role) + thinking_level_change (§5.3).
        self._append("model_change", model=f"{self.model.provider}/{self.model.id}")
        self._append("thinking_level_change", thinkingLevel="medium")
        rng = self.rng
        while self.count < self.target:
            r = rng.random()
            if r < 0.035 and self.turns > 2:
                self._rewind()
            elif r < 0.05 and self.turns > 5:
                self._excursion()
            else:
                self._turn_or_extra()
            yield from self._drain()
        yield from self._drain()

    def _drain(self) -> Iterator[str]:
        out = self.out
        if not out:
            return
        # Stop exactly at the requested number of entries (count includes what is buffered).
        excess = self.count - self.target
        if excess > 0:
            del out[len(out) - excess :]
            self.count = self.target
        yield from out
        out.clear()


def generate_session(entries: int, seed: int) -> Iterator[str]:
    """Yield the lines (without newlines) of a synthetic omp v15-style session.

    The header comes first, then exactly ``entries`` entries. The output depends only on ``(entries, seed)``;
    the session for a smaller ``entries`` is a prefix of the one for a larger ``entries`` with the same seed.
    """
    if entries < 0:
        raise ValueError("entries must be >= 0")
    return _Generator(entries, seed).run()


def write_session(path: str | os.PathLike[str], entries: int, seed: int) -> int:
    """Write :func:`generate_session` output to ``path`` (UTF-8, one line per entry, trailing newline).

    The file is written to a temporary name next to ``path`` and renamed into place, so an interrupted run
    never leaves a half-written session behind. Returns the number of bytes written.
    """
    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    size = 0
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
            batch: list[str] = []
            for line in generate_session(entries, seed):
                batch.append(line)
                if len(batch) >= 512:
                    chunk = "\n".join(batch) + "\n"
                    size += len(chunk.encode("utf-8"))
                    fh.write(chunk)
                    batch.clear()
            if batch:
                chunk = "\n".join(batch) + "\n"
                size += len(chunk.encode("utf-8"))
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return size
