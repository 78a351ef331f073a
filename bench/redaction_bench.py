"""Benchmark the share-link redaction scanner (issue 6): ``treeview/redaction/``.

Run from the repository root::

    .venv/bin/python bench/redaction_bench.py
    .venv/bin/python bench/redaction_bench.py --profile     # cProfile of the synthetic-output scan

Measures, best of ``--repeat`` runs each:

* **fixture**: ``Redactor.scan`` over every entry of the largest real session in ``tests/data/real/``
  (entries/s, and MB/s of its JSONL bytes), then ``Redactor.redact`` with those hits;
* **synthetic tool output**: one ``toolResult`` entry whose text is ~10 MB of ordinary tool output (source
  code, ``git log`` with SHAs, ``npm`` lock lines with integrity hashes, paths, UUIDs, a base64 data URL)
  with a few realistic secrets sprinkled in; MB/s of text, and the number of hits (the planted secrets).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import sys
import time
import uuid
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from treeview.redaction import Redactor  # noqa: E402

PLANTED = [
    "export AWS_SECRET_ACCESS_KEY=Kq8vR2mN5pL9zT3wX7yB1cF4hJ6gD0sAe5Uo8Ii2\n",
    "remote: https://deploy:Xk29fLmq8Zr7@git.example.com/team/app.git\n",
    "Authorization: Bearer ghp_Zr8Xq2Lm9Kv4Tn7Bc1Wd5Hy3Pj6Fs0Ga2Ue8\n",
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "MIIEowIBAAKCAQEAq8vR2mN5pL9zT3wX7yB1cF4hJ6gD0sAe5Uo8Ii2Kq8vR2mN5\n" * 20
    + "-----END RSA PRIVATE KEY-----\n",
]


def synthetic_output(size: int, seed: int = 1) -> str:
    """About ``size`` characters of ordinary tool output with the PLANTED secrets spread through it."""
    rnd = random.Random(seed)
    sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "treeview").rglob("*.py"))[:40]]
    chunks: list[str] = []
    total = 0
    planted_every = size // (len(PLANTED) + 1)
    next_plant = planted_every
    planted = 0
    while total < size:
        pick = rnd.random()
        if pick < 0.5:
            chunk = rnd.choice(sources)
        elif pick < 0.7:
            chunk = "".join(
                f"commit {rnd.getrandbits(160):040x}\nAuthor: Dev <dev@example.com>\n\n"
                f"    Fix the thing #{i}\n\n"
                for i in range(50)
            )
        elif pick < 0.85:
            chunk = "".join(
                f'    "node_modules/pkg-{i}": {{"version": "1.{i}.0", "resolved": '
                f'"https://registry.npmjs.org/pkg-{i}/-/pkg-{i}-1.{i}.0.tgz", "integrity": '
                f'"sha512-{rnd.randbytes(48).hex()[:86]}=="}},\n'
                for i in range(50)
            )
        else:
            chunk = "".join(
                f"/home/dev/proj/src/module_{i}/file_{i}.py:{i}: {uuid.UUID(int=rnd.getrandbits(128))} ok\n"
                for i in range(80)
            )
        chunks.append(chunk)
        total += len(chunk)
        if total >= next_plant and planted < len(PLANTED):
            chunks.append(PLANTED[planted])
            planted += 1
            next_plant += planted_every
    return "".join(chunks)


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=10_000_000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()

    redactor = Redactor(["acme-internal.example.com"])
    fixture = max((ROOT / "tests/data/real").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    raw = fixture.read_bytes()
    entries = []
    for line in raw.splitlines():
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            entries.append(obj)
    mb = len(raw) / 1e6
    hits: list = []

    def scan_fixture() -> None:
        hits[:] = [h for e in entries for h in redactor.scan(e)]

    t = best(scan_fixture, args.repeat)
    by_entry: dict[str, list] = {}
    for h in hits:
        by_entry.setdefault(h.entry_id, []).append(h)
    tr = best(lambda: [redactor.redact(e, by_entry.get(e.get("id"), [])) for e in entries], args.repeat)
    print(f"fixture {fixture.name}: {len(entries)} entries, {mb:.2f} MB, {len(hits)} hits")
    print(f"  scan:   {t:.3f} s  {len(entries) / t:,.0f} entries/s  {mb / t:.1f} MB/s")
    print(f"  redact: {tr:.3f} s  {len(entries) / tr:,.0f} entries/s  {mb / tr:.1f} MB/s")

    text = synthetic_output(args.size)
    entry = {
        "type": "message",
        "id": "bench0001",
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "toolu_01",
            "toolName": "bash",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": 0,
        },
    }
    tmb = len(text.encode()) / 1e6
    if args.profile:
        prof = cProfile.Profile()
        prof.runcall(redactor.scan, entry)
        pstats.Stats(prof).sort_stats("cumulative").print_stats(20)
    found: list = []
    t = best(lambda: found.__setitem__(slice(None), redactor.scan(entry)), args.repeat)
    tr = best(lambda: redactor.redact(entry, found), args.repeat)
    print(f"synthetic tool output: {tmb:.2f} MB, {len(found)} hits ({', '.join(h.kind for h in found)})")
    print(f"  scan:   {t:.3f} s  {tmb / t:.1f} MB/s")
    print(f"  redact: {tr:.3f} s  {tmb / tr:.1f} MB/s")


if __name__ == "__main__":
    main()
