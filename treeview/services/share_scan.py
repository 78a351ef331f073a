"""The share form's redaction scan of a whole branch: cached, and run a chunk at a time so it can report
progress (the share-scan socket, ``treeview/share_scan.py``) instead of holding a request for half a minute.

Two caches, in Django's cache (the process's memory in single-user mode, Redis when several workers serve):

* per chunk of :data:`SCAN_CHUNK` consecutive entries of a branch, counted from its root, by the hash of
  their stored lines, the redaction rules' version and the team strings: branches that share a beginning
  (every branch of a session does, up to where they part) scan it once;
* per branch (session state, leaf, rules, team strings): the preview's answer, found without reading entries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

from django.core.cache import cache

from treeview.models import AgentSession
from treeview.redaction import RULES_VERSION, Hit
from treeview.services import share

__all__ = ["SCAN_CHUNK", "branch_hits", "cached_branch_hits", "scan_steps"]

#: Entries scanned (and cached) together; progress is reported after each chunk.
SCAN_CHUNK = 500
#: Branches up to this many entries are scanned in the request (well under a second); longer ones in the
#: background, with progress over the share-scan socket.
INLINE_ENTRIES = 2000
#: Seconds a scan result is kept.
SCAN_TTL = 24 * 3600


def _strings_digest(strings: Sequence[str]) -> str:
    return hashlib.sha256("\0".join(sorted(strings)).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _branch_key(session: AgentSession, leaf_id: str, below_seq: int | None, digest: str) -> str:
    state = f"{session.pk}:{session.next_seq}:{session.entry_count}:{below_seq}"
    leaf = hashlib.sha256(leaf_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"share-scan:branch:{RULES_VERSION}:{state}:{leaf}:{digest}"


def _chunk_key(entries: Sequence[share.BranchEntry], digest: str) -> str:
    content = hashlib.sha256()
    for item in entries:
        content.update(item.raw.encode("utf-8", "surrogatepass"))
        content.update(b"\n")
    return f"share-scan:chunk:{RULES_VERSION}:{digest}:{content.hexdigest()}"


def cached_branch_hits(
    session: AgentSession, leaf_id: str, strings: Sequence[str], below_seq: int | None = None
) -> list[Hit] | None:
    """The branch's hits when a scan of exactly this state is cached, else ``None`` (reads no entry)."""
    found = cache.get(_branch_key(session, leaf_id, below_seq, _strings_digest(strings)))
    return found if isinstance(found, list) else None


def scan_steps(
    session: AgentSession,
    leaf_id: str,
    strings: Sequence[str],
    below_seq: int | None = None,
    out: list[Hit] | None = None,
) -> Iterator[tuple[int, int]]:
    """Scan the branch root → ``leaf_id`` a chunk at a time, yielding (entries done, entries in all) after
    each; the hits go to ``out`` and to the caches. A step is a few queries and at most one chunk's scan."""
    digest = _strings_digest(strings)
    branch_key = _branch_key(session, leaf_id, below_seq, digest)
    path = share.branch_path(session, leaf_id, below_seq)
    redactor = share.Redactor(list(strings))
    hits: list[Hit] = [] if out is None else out
    done = 0
    yield 0, len(path)
    for start in range(0, len(path), SCAN_CHUNK):
        entries = share.load_rows(session, path[start : start + SCAN_CHUNK], below_seq)
        key = _chunk_key(entries, digest)
        found = cache.get(key)
        if not isinstance(found, list):
            found = share.scan_branch(redactor, entries)
            cache.set(key, found, SCAN_TTL)
        hits.extend(found)
        done += len(entries)
        yield min(done, len(path)), len(path)
    cache.set(branch_key, hits, SCAN_TTL)


def branch_hits(
    session: AgentSession, leaf_id: str, strings: Sequence[str], below_seq: int | None = None
) -> list[Hit]:
    """Every hit of the branch, from the cache or scanned now (what was scanned is cached)."""
    cached = cached_branch_hits(session, leaf_id, strings, below_seq)
    if cached is not None:
        return cached
    hits: list[Hit] = []
    for _ in scan_steps(session, leaf_id, strings, below_seq, hits):
        pass
    return hits


def hit_titles(session: AgentSession, hits: Sequence[Hit]) -> dict[str, Any]:
    """entry id → parsed entry of the entries the hits are in (the preview titles them)."""
    ids = list(dict.fromkeys(hit.entry_id for hit in hits))
    return {item.entry_id: item.entry for item in share.load_rows(session, ids, None)}
