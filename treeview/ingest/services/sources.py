"""Pushed files and their ``IngestSource`` rows: opening one, locking it, describing it, and limits."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction

from treeview.ingest.models import IngestSource
from treeview.models import AgentSession
from treeview.services.sync import SyncResult
from treeview.session.prefix import BodyHash

PUSHED_SUBDIR = "pushed"
_MAX_MACHINE = 200
_MAX_PATH = 4096
_MAX_HEADER_ID = 200


class IngestError(Exception):
    """A push that cannot be done as asked: ``status`` 400 / 403 / 404 / 409 / 413 / 422, a ``code`` and a
    ``detail`` that says what to do; 409 answers carry the current state."""

    def __init__(self, status: int, code: str, detail: str, source: IngestSource | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.source = source


@dataclass(frozen=True)
class Pushed:
    """What one request did: bytes new to the server, bytes it already held, and the sync that followed."""

    source: IngestSource
    stored: int
    duplicate: int
    sync: SyncResult | None


def _key(owner_pk: int, machine: str, path: str, header_id: str) -> str:
    return hashlib.sha256(orjson.dumps([owner_pk, machine, path, header_id])).hexdigest()


def _pushed_file(owner_pk: int, key: str) -> Path:
    return Path(settings.ARBOR_DATA_DIR) / PUSHED_SUBDIR / f"u{owner_pk}" / f"{key}.jsonl"


def open_source(
    owner: Any, machine: Any, path: Any, header_id: Any, *, file: Path | None = None
) -> IngestSource:
    """The pushed file (``owner``, ``machine``, ``path``, ``header_id``), made on first use. The names are
    data: the file on the server is named by their hash."""
    for name, value, limit in (
        ("machine", machine, _MAX_MACHINE),
        ("path", path, _MAX_PATH),
        ("session_id", header_id, _MAX_HEADER_ID),
    ):
        if not isinstance(value, str) or len(value) > limit or "\x00" in value:
            raise IngestError(400, "bad_request", f"{name} must be a string of at most {limit} characters")
    if not path or not header_id:
        raise IngestError(400, "bad_request", "path and session_id must not be empty")
    key = _key(owner.pk, machine, path, header_id)
    existing = IngestSource.objects.filter(key=key).first()
    if existing is not None:
        return existing
    file = _pushed_file(owner.pk, key) if file is None else file
    try:
        with transaction.atomic():
            return IngestSource.objects.create(
                owner=owner, machine=machine, path=path, header_id=header_id, key=key, file=str(file)
            )
    except IntegrityError:  # made by a concurrent request
        return IngestSource.objects.get(key=key)


def _locked(owner: Any, key: str) -> IngestSource:
    source = IngestSource.objects.select_for_update().filter(key=key).first()
    if source is None or source.owner_id != owner.pk:
        # Another person's pushed file does not exist, as far as this token can tell.
        raise IngestError(404, "not_found", "no such pushed file: ask for it again with POST /api/v1/sources")
    if source.session_id is not None:
        owner_now = (
            AgentSession.objects.filter(pk=source.session_id).values_list("owner_id", flat=True).first()
        )
        if owner_now is not None and owner_now != owner.pk:
            raise IngestError(
                403, "not_owner", "the session of this file belongs to someone else now: it cannot be written"
            )
    return source


def describe(source: IngestSource) -> dict[str, Any]:
    """The state a client compares its file with: length, title slot, body hash, and the session."""
    slot_sha = hashlib.sha256(b"").hexdigest()
    body = BodyHash(source.slot_length, list(source.blocks))
    if source.length:
        with open(source.file, "rb") as handle:
            slot_sha = hashlib.sha256(handle.read(source.slot_length)).hexdigest()
            body_sha = body.digest(handle, source.length)
    else:
        body_sha = body.digest(_Empty(), 0)
    session = None
    if source.session_id is not None:
        row = AgentSession.objects.filter(pk=source.session_id).values("session_id", "entry_count").first()
        if row is not None:
            session = {
                "id": row["session_id"],
                "pk": source.session_id,
                "entries": row["entry_count"],
                "url": f"/s/{row['session_id']}/?copy={source.session_id}",
            }
    return {
        "source": source.key,
        "length": source.length,
        "slot": {"length": source.slot_length, "sha256": slot_sha},
        "body_sha256": body_sha,
        "rewrite": {"received": source.staged, "total": source.staged_total},
        "imported": source.imported == source.length,
        "session": session,
        "limits": limits(),
    }


class _Empty:
    def seek(self, offset: int) -> int:
        return 0

    def read(self, size: int = -1) -> bytes:
        return b""


def limits() -> dict[str, int]:
    return {
        "max_request_bytes": settings.ARBOR_INGEST_MAX_REQUEST_MB * 1024 * 1024,
        "max_session_bytes": settings.ARBOR_INGEST_MAX_SESSION_MB * 1024 * 1024,
        "requests_per_minute": settings.ARBOR_INGEST_RATE,
    }
