"""The push operations: append bytes, put the title slot, rewrite the whole file."""

from __future__ import annotations

import os
from typing import IO, Any

import orjson
from django.db import transaction
from django.utils import timezone

from treeview.ingest.services.sources import IngestError, Pushed, _locked
from treeview.ingest.services.writing import (
    _check_total,
    _head_checked,
    _import,
    _place,
    _read_body,
    _rehash,
    _write_at,
)
from treeview.session.jsonl import is_title_slot


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
