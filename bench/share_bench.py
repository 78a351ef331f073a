"""Benchmark share links (issue 6) on a generated session: the share form's preview (a scan of the whole
branch), making the link, the public page (only its window of entries is read and drawn) and the downloads.

Run from the repository root::

    .venv/bin/python bench/share_bench.py                   # 100,000 entries (seed 1, as bench/run.py)
    .venv/bin/python bench/share_bench.py --entries 10000 --views 5

A fresh SQLite database in a temporary directory; the session is generated with
``treeview.session.generate.write_session`` and imported with ``sync_file``. The branch shared is the path to
the stored leaf. Page views are timed through Django's test client (the whole request: token check, view
count, path and filter from the explorer tree, reading, scanning and rendering the window); the first view
builds the explorer tree (cold), the others reuse it (warm, median).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _timed(label: str, call: object) -> object:
    start = time.perf_counter()
    result = call()  # type: ignore[operator]
    print(f"{label:<28} {time.perf_counter() - start:8.2f} s")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--views", type=int, default=5, help="warm page views (median)")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="arbor-share-bench-")
    os.environ.update(
        ARBOR_DATA_DIR=data,
        ARBOR_SESSION_DIRS=os.path.join(data, "none"),
        ARBOR_DB="sqlite",
        ARBOR_SINGLE_USER="1",
        DJANGO_SETTINGS_MODULE="sessions_site.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from treeview.access import local_user
    from treeview.models import AgentSession
    from treeview.services import share
    from treeview.services.sync import sync_file
    from treeview.session.generate import write_session

    call_command("migrate", verbosity=0)
    path = os.path.join(data, "session.jsonl")
    write_session(path, args.entries, 1)
    print(f"session: {args.entries:,} entries, {os.path.getsize(path) / 1e6:.0f} MB")
    result = sync_file(path)
    assert result.session is not None, result.error
    session = AgentSession.objects.get(pk=result.session.pk)
    user = local_user()
    entries, hits = _timed("preview (scan the branch)", lambda: share.preview(user, session, session.leaf_id))
    size = sum(len(item.raw) for item in entries) / 1e6
    print(f"  branch: {len(entries):,} entries, {size:.0f} MB of JSON, {len(hits)} hits")
    _, token = _timed("create the link", lambda: share.create_link(user, session, leaf_id=session.leaf_id))
    client = Client(HTTP_HOST="127.0.0.1")
    url = f"/share/{token}/"
    _timed("page, cold explorer tree", lambda: client.get(url))
    warm = []
    for _ in range(args.views):
        start = time.perf_counter()
        response = client.get(url)
        warm.append(time.perf_counter() - start)
        assert response.status_code == 200
    print(f"{'page, warm (median)':<28} {statistics.median(warm):8.2f} s")
    for suffix in ("branch.jsonl", "branch.md"):
        response = _timed(f"download {suffix}", lambda s=suffix: _drain(client.get(url + s)))
    return 0


def _drain(response: object) -> int:
    if getattr(response, "streaming", False):
        return sum(len(chunk) for chunk in response.streaming_content)  # type: ignore[attr-defined]
    return len(response.content)  # type: ignore[attr-defined]


if __name__ == "__main__":
    raise SystemExit(main())
