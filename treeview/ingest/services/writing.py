"""Writing a pushed file: placing a chunk at its offset, checking its head, and importing it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings

from treeview.ingest.models import IngestSource
from treeview.ingest.services.defaults import default_visibility
from treeview.ingest.services.sources import IngestError
from treeview.models import AgentSession
from treeview.services.sync import SyncResult, sync_file
from treeview.session.prefix import BodyHash, read_head
from treeview.session.subagents import subagent_place


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
