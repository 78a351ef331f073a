"""Web uploads: a session file uploaded in the browser, kept and imported as a pushed file."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from treeview.ingest.models import IngestSource
from treeview.ingest.services.defaults import default_visibility
from treeview.ingest.services.sources import _key, open_source
from treeview.ingest.services.writing import _head_checked, _rehash
from treeview.models import AgentSession, ImportIssue
from treeview.services import sync
from treeview.services.sync import SyncResult, sync_file
from treeview.session.prefix import read_head


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
