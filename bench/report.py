"""What the benchmark scripts share: the targets line and rewriting their block in BENCHMARKS.md."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path


def targets_line(checks: Iterable[tuple[str, bool, str]]) -> str:
    """``Targets (100k): name limit: met, …`` from (name, met?, limit) triples."""
    return (
        "Targets (100k): "
        + ", ".join(f"{n} {limit}: {'met' if ok else '**missed**'}" for n, ok, limit in checks)
        + "."
    )


def replace_block(path: Path, begin: str, end: str, table: str, section: str) -> None:
    """Put ``table`` between the markers ``begin`` and ``end`` of ``path`` (or in a new ``section``)."""
    block = f"{begin}\n{table}\n{end}"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + f"\n\n## {section}\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")
