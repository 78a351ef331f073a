"""What a scan finds: ``Hit``, its id, fingerprint and mask, and the record a share link stores."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass

#: Bumped whenever a detector changes what it finds: cached scan results of other versions are not used.
RULES_VERSION = "2026-12-02.keys"
CONTEXT = 40
MIN_TEAM_STRING = 4
MIN_TOKEN = 20  # shortest bare token the high-entropy detector considers
MAX_TOKEN = 1024  # longer base64 runs are data (images, certificates), not credentials
MAX_VALUE = 4096  # longest value a header, flag or assignment rule masks

# -- hits ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One secret found in one string of one entry (spans are in that string, before masking)."""

    id: str
    entry_id: str
    path: tuple[str | int, ...]
    start: int
    end: int
    kind: str
    fingerprint: str
    before: str
    secret: str
    after: str
    #: the hit is in the key of the mapping entry at ``path`` (not in its value): masking renames the key
    in_key: bool = False


def mask_for(hit: Hit) -> str:
    """The text that replaces a masked hit: names the detector, never contains any of the secret."""
    return f"[REDACTED: {hit.kind}]"


def _mask_kind(kind: str) -> str:
    return f"[REDACTED: {kind}]"


def hit_id(entry_id: str, kind: str, secret: str) -> str:
    """Stable id of a hit: the same secret found by the same detector in the same entry always gets it."""
    return hashlib.sha256(f"{entry_id}\0{kind}\0{secret}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def redaction_record(hits: Iterable[Hit], unmasked: Collection[str] = ()) -> list[dict[str, str]]:
    """What was masked, for storing with a share link: ``{id, entry_id, kind, fingerprint}`` per hit id."""
    seen: set[str] = set()
    record = []
    for hit in hits:
        if hit.id in unmasked or hit.id in seen:
            continue
        seen.add(hit.id)
        record.append(
            {"id": hit.id, "entry_id": hit.entry_id, "kind": hit.kind, "fingerprint": hit.fingerprint}
        )
    return record


_Span = tuple[int, int, str, int]  # start, end, kind, priority (lower wins when spans overlap)
