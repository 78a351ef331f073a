"""The writers of the ingest API: pushed bytes are kept in a file of the server's and imported from it exactly
as ``sync`` imports a session file (grown: only the new lines; rewritten: reconciled entry by entry; a
half-written last line waits).

Every change to one pushed file runs in one transaction with its ``IngestSource`` row locked, so two
workers (or two clients) pushing the same file are serialized; the row's ``length`` is the truth: bytes a
crashed request left beyond it are cut off before the next write. A chunk is placed at the offset the client
says: bytes the server already holds are compared, not stored again (a retried chunk is stored once).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from treeview.ingest.models import IngestSource, PushDefaults
from treeview.models import AgentSession, ImportIssue, Membership
from treeview.services import sync
from treeview.services.sync import SyncResult, sync_file
from treeview.session.jsonl import is_title_slot
from treeview.session.prefix import BodyHash, read_head
from treeview.session.subagents import subagent_place

__all__ = [
    "IngestError",
    "append",
    "default_visibility",
    "describe",
    "import_upload",
    "open_source",
    "put_slot",
    "rewrite",
    "set_defaults",
]

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


def _place(source: IngestSource, path: str, held: int, offset: int, data: bytes) -> tuple[bytes, int]:
    """Where ``data`` (sent for ``offset``) meets the ``held`` bytes of ``path``: the part already held must
    be equal (a retry); returns (the new bytes, how many were already held)."""
    if offset > held:
        raise IngestError(
            409, "gap", f"the server holds {held} bytes; send from there, not from {offset}", source
        )
    overlap = min(held - offset, len(data))
    if overlap > 0:
        with open(path, "rb") as handle:
            handle.seek(offset)
            if handle.read(overlap) != data[:overlap]:
                raise IngestError(
                    409,
                    "prefix_differs",
                    "the bytes the server holds there differ: ask for the state again",
                    source,
                )
    return data[overlap:], overlap


def _write_at(path: str, length: int, data: bytes) -> None:
    """Append ``data`` at ``length``, cutting off what a crashed request may have left beyond it."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    descriptor = os.open(path, flags, 0o600)
    try:
        if os.fstat(descriptor).st_size != length:
            os.ftruncate(descriptor, length)
        os.lseek(descriptor, length, os.SEEK_SET)
        view = memoryview(data)
        while view:
            written = os.write(descriptor, view)
            view = view[written:]
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _read_body(body: IO[bytes], limit: int) -> bytes:
    data = body.read(limit + 1)
    if len(data) > limit:
        raise IngestError(413, "request_too_large", f"at most {limit} bytes per request: send smaller chunks")
    return data


def _check_total(source: IngestSource, length: int) -> None:
    limit = settings.ARBOR_INGEST_MAX_SESSION_MB * 1024 * 1024
    if length > limit:
        raise IngestError(
            413,
            "session_too_large",
            f"a pushed session may hold at most {settings.ARBOR_INGEST_MAX_SESSION_MB} MB "
            "(ARBOR_INGEST_MAX_SESSION_MB on the server)",
            source,
        )


def _import(source: IngestSource, owner: Any) -> SyncResult | None:
    """Import the stored file as sync does; the session a first import makes gets ``owner``'s defaults."""
    visibility, team = default_visibility(owner)
    # A header-less file is read with the id the client announced (its file's name or path gives it there).
    result = sync_file(
        source.file, owner=owner, visibility=visibility, within=[], headerless_id=source.header_id
    )
    if result.status == "failed" or result.session is None:
        raise IngestError(422, "not_a_session", f"the server cannot import this file: {result.error}", source)
    session = result.session
    if session.session_id != source.header_id:
        raise IngestError(
            422,
            "header_mismatch",
            f"the file's header id is {session.session_id!r}, not {source.header_id!r} as announced",
            source,
        )
    if result.status == "new" and team is not None:
        session.teams.set([team])
    _place_pushed(source, session)
    source.session = session
    source.imported = source.length
    return result


def _place_pushed(source: IngestSource, session: AgentSession) -> None:
    """A pushed subagent transcript under the session that spawned it, by the paths on the client (the server
    names its files by hash, so the artifacts folder is only in them); and the transcripts pushed before
    their session, adopted by it. Only the same person's files from the same machine."""
    pushed = IngestSource.objects.filter(owner_id=source.owner_id, machine=source.machine)
    try:
        header = orjson.loads(session.header_raw)
    except orjson.JSONDecodeError:
        header = {}
    head = header if isinstance(header, dict) else {}
    place = subagent_place(source.path, head, exists=lambda path: pushed.filter(path=path).exists())
    parent = None
    if place is not None:
        parent_pk = (
            pushed.filter(path=place.parent_path, session__owner_id=session.owner_id)
            .exclude(session=session)
            .values_list("session", flat=True)
            .first()
        )
        parent = AgentSession.objects.filter(pk=parent_pk).first() if parent_pk is not None else None
    fields = {
        "subagent_kind": place.kind if place is not None else "",
        "agent_key": place.agent_id[:200] if place is not None else "",
        "spawned_from_path": place.parent_path if place is not None else "",
        "subagent_of": parent,
    }
    AgentSession.objects.filter(pk=session.pk).update(**fields)
    for name, value in fields.items():
        setattr(session, name, value)
    children = pushed.filter(
        session__spawned_from_path=source.path, session__owner_id=session.owner_id
    ).values("session")
    AgentSession.objects.filter(pk__in=children).exclude(pk=session.pk).update(subagent_of=session)


def _head_checked(source: IngestSource) -> None:
    with open(source.file, "rb") as handle:
        head = read_head(handle, headerless_id=source.header_id)
    if head is None:
        raise IngestError(
            422, "no_header", "the first bytes must hold the whole header line (and the title slot, if any)"
        )
    if head.session_id != source.header_id:
        raise IngestError(
            422,
            "header_mismatch",
            f"the file's header id is {head.session_id!r}, not {source.header_id!r} as announced",
            source,
        )
    source.slot_length = head.slot_length


def _rehash(source: IngestSource) -> None:
    body = BodyHash(source.slot_length, list(source.blocks))
    with open(source.file, "rb") as handle:
        body.digest(handle, source.length)
    source.blocks = body.blocks


def append(owner: Any, key: str, offset: int, body: IO[bytes], limit: int, *, more: bool = False) -> Pushed:
    """Store the bytes sent for ``offset`` of the pushed file and import what is new. ``more``: further
    chunks follow at once (a first push of a large file), so the import waits for the last one and reads
    them all in one go; a client that stops before the last leaves them stored, and its next push (or an
    empty last chunk) imports them."""
    data = _read_body(body, limit)
    with transaction.atomic():
        source = _locked(owner, key)
        source.bytes_received += len(data)
        new, held = _place(source, source.file, source.length, offset, data)
        result = None
        if new:
            _check_total(source, source.length + len(new))
            first = source.length == 0
            _write_at(source.file, source.length, new)
            source.length += len(new)
            if first:
                _head_checked(source)
            _rehash(source)
            source.bytes_stored += len(new)
        if not more and source.length and source.imported != source.length:
            result = _import(source, owner)
        source.pushed_at = timezone.now()
        source.save()
    return Pushed(source, len(new), held, result)


def put_slot(owner: Any, key: str, body: IO[bytes]) -> Pushed:
    """Replace the title slot in place (omp renames a session so): same length, a title slot line."""
    with transaction.atomic():
        source = _locked(owner, key)
        data = _read_body(body, max(source.slot_length, 1))
        source.bytes_received += len(data)
        if not source.slot_length or len(data) != source.slot_length or not data.endswith(b"\n"):
            raise IngestError(
                409,
                "slot_differs",
                f"the title slot here is {source.slot_length} bytes: send the file again",
                source,
            )
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict) or not is_title_slot(value):
            raise IngestError(422, "not_a_slot", "that is not a title slot line")
        with open(source.file, "r+b") as handle:
            if handle.read(len(data)) == data:
                return Pushed(source, 0, len(data), None)
            handle.seek(0)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        source.bytes_stored += len(data)
        result = _import(source, owner)
        source.pushed_at = timezone.now()
        source.save()
    return Pushed(source, len(data), 0, result)


def rewrite(owner: Any, key: str, offset: int, total: int, body: IO[bytes], limit: int) -> Pushed:
    """A whole new version of the file (the prefix differs), sent in chunks into a staging file; the last
    chunk replaces the stored file, which is then reconciled as sync reconciles a rewritten file."""
    data = _read_body(body, limit)
    with transaction.atomic():
        source = _locked(owner, key)
        source.bytes_received += len(data)
        _check_total(source, total)
        staging = source.file + ".rewrite"
        if offset == 0:
            source.staged, source.staged_total = 0, total
        elif total != source.staged_total:
            raise IngestError(
                409, "rewrite_changed", "another rewrite started: send the file again from 0", source
            )
        new, held = _place(source, staging, source.staged, offset, data)
        if source.staged + len(new) > total:
            raise IngestError(400, "bad_request", f"more bytes than the {total} announced")
        if new or offset == 0:
            _write_at(staging, source.staged, new)
        source.staged += len(new)
        result = None
        if source.staged == total:
            os.replace(staging, source.file)
            source.length, source.staged, source.staged_total = total, 0, 0
            source.blocks = []
            _head_checked(source)
            _rehash(source)
            result = _import(source, owner)
        source.bytes_stored += len(new)
        source.pushed_at = timezone.now()
        source.save()
    return Pushed(source, len(new), held, result)


# -- web uploads ----------------------------------------------------------------------------------------


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            yield chunk


def _sha256_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except FileNotFoundError:
        return None


def import_upload(name: str, chunks: Iterable[bytes], owner: Any) -> SyncResult:
    """A file uploaded in the browser by ``owner``: a grown or rewritten version of a session they uploaded
    before under the same name (same header id) syncs that session; anything else is a new session of theirs.
    Never another person's row (their uploads are their own files, named by their identity)."""
    if owner is None or getattr(owner, "pk", None) is None:
        return sync.import_upload(name, chunks, owner)
    upload_dir = Path(settings.ARBOR_UPLOAD_DIR)
    upload_dir.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    temporary = upload_dir / f".upload-{os.getpid()}-{threading.get_ident()}-{id(chunks)}.part"
    try:
        with open(temporary, "wb") as handle:
            for chunk in chunks:
                digest.update(chunk)
                handle.write(chunk)
        with open(temporary, "rb") as handle:
            head = read_head(handle)
        if head is None:
            # Not a session file (or no complete header): the import says why, as for any upload.
            return sync.import_upload(name, _file_chunks(temporary), owner)
        stem = Path(name).name.removesuffix(".jsonl")[:80] or "session"
        source = _upload_source(owner, stem, head.session_id, upload_dir)
        with transaction.atomic():
            source = IngestSource.objects.select_for_update().get(pk=source.pk)
            target = Path(source.file)
            if _sha256_file(target) != digest.hexdigest():
                os.replace(temporary, target)  # the same bytes again: kept as they were (syncs as unchanged)
            source.length = target.stat().st_size
            source.blocks = []
            _head_checked(source)
            _rehash(source)
            visibility, team = default_visibility(owner)
            result = sync_file(target, owner=owner, visibility=visibility, within=[])
            if result.status == "failed" or result.session is None:
                if source.session_id is None:
                    target.unlink(missing_ok=True)
                    ImportIssue.objects.filter(source_path=result.path).delete()
                return result
            if result.status == "new" and team is not None:
                result.session.teams.set([team])
            source.session = result.session
            source.imported = source.length
            source.pushed_at = timezone.now()
            source.save()
        return result
    finally:
        temporary.unlink(missing_ok=True)


def _upload_source(owner: Any, stem: str, header_id: str, upload_dir: Path) -> IngestSource:
    key = _key(owner.pk, "", stem, header_id)
    source = open_source(owner, "", stem, header_id, file=upload_dir / f"{stem}-u{owner.pk}-{key[:12]}.jsonl")
    if source.session_id is None and not Path(source.file).exists():
        # Uploaded before uploads were kept by name: that session (theirs, same id and name) is the one.
        earlier = (
            AgentSession.objects.filter(
                owner=owner,
                session_id=header_id,
                source_path__startswith=str(upload_dir / f"{stem}-u{owner.pk}-"),
            )
            .order_by("-synced_at", "-pk")
            .first()
        )
        if earlier is not None:
            IngestSource.objects.filter(pk=source.pk).update(file=earlier.source_path, session=earlier)
            source.refresh_from_db()
    return source


# -- defaults ----------------------------------------------------------------------------------------------


def default_visibility(user: Any) -> tuple[str, Any]:
    """(visibility, team or None) for a session ``user`` pushes or uploads: their setting, else private. The
    team of a ``teams`` setting counts only while ``user`` is still one of its members (the setting was made
    when they were): a team they left gets none of their new sessions, which stay private instead."""
    defaults = PushDefaults.objects.filter(user=user).select_related("team").first()
    if defaults is None:
        return AgentSession.Visibility.PRIVATE, None
    team = defaults.team if defaults.visibility == AgentSession.Visibility.TEAMS else None
    if defaults.visibility == AgentSession.Visibility.TEAMS and (
        team is None or not Membership.objects.filter(team=team, user=user.pk).exists()
    ):
        return AgentSession.Visibility.PRIVATE, None
    return defaults.visibility, team


def set_defaults(user: Any, visibility: str, team: Any) -> PushDefaults:
    """Set ``user``'s default visibility (``team`` only counts for the ``teams`` visibility)."""
    if visibility not in AgentSession.Visibility.values:
        raise ValueError(f"unknown visibility {visibility!r}")
    chosen = team if visibility == AgentSession.Visibility.TEAMS else None
    defaults, _ = PushDefaults.objects.update_or_create(
        user=user, defaults={"visibility": visibility, "team": chosen}
    )
    return defaults
