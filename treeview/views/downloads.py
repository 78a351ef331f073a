"""Downloads: the whole session file, or a new session file of one branch."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpRequest, StreamingHttpResponse
from django.utils.http import content_disposition_header
from django.views.decorators.http import require_safe

from treeview.models import AgentSession
from treeview.services.export import export_branch_lines, export_lines
from treeview.session.session_manager import EntryNotFound
from treeview.views.common import session_or_404

logger = logging.getLogger(__name__)

NDJSON = "application/x-ndjson"
# Downloads go out in pieces of about this many characters (a session file can be hundreds of MB).
DOWNLOAD_CHUNK = 256 * 1024
# import_upload stores an upload as "<name>-<12 hex digits of its sha256>.jsonl".
# What import_upload adds to an upload's name: the uploader (``-u<pk>``) and the digest of the bytes.
UPLOAD_DIGEST_SUFFIX = re.compile(r"(?:-u[0-9]+)?-[0-9a-f]{12}(\.jsonl)$")


# -- downloads ---------------------------------------------------------------------------------------------


def download_name(session: AgentSession) -> str:
    """The source file's name (without the digest an upload was stored under), or ``<session id>.jsonl``."""
    if session.source_path:
        path = Path(session.source_path)
        name = path.name
        if path.parent == Path(settings.ARBOR_UPLOAD_DIR).resolve():
            name = UPLOAD_DIGEST_SUFFIX.sub(r"\1", name)
        if name.endswith(".jsonl") and len(name) > len(".jsonl"):
            return name
    return f"{session.session_id or 'session'}.jsonl"


def _encoded(pieces: Iterator[str]) -> Iterator[bytes]:
    """UTF-8 chunks of about DOWNLOAD_CHUNK characters (one per database batch, not one per line)."""
    buffer: list[str] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= DOWNLOAD_CHUNK:
            yield "".join(buffer).encode("utf-8", errors="surrogatepass")
            buffer, size = [], 0
    if buffer:
        yield "".join(buffer).encode("utf-8", errors="surrogatepass")


async def _async_chunks(chunks: Iterator[bytes], what: str) -> AsyncIterator[bytes]:
    # Under ASGI, Django would read a synchronous iterator whole into memory before sending it; this one
    # fetches the next chunk (a database query now and then) in the thread the sync ORM uses, only when the
    # server asks for it (treeview/daphne_flow.py: at the client's pace).
    take = sync_to_async(next, thread_sensitive=True)
    while True:
        try:
            chunk = await take(chunks, None)
        except Exception:
            logger.exception("download of %s failed part way; the connection is cut off", what)
            raise  # the server aborts the connection: the client sees an incomplete transfer, not a hang
        if chunk is None:
            return
        yield chunk


def _sync_chunks(chunks: Iterator[bytes], what: str) -> Iterator[bytes]:
    try:
        yield from chunks
    except Exception:
        logger.exception("download of %s failed part way; the connection is cut off", what)
        raise


def streamed(
    request: HttpRequest, pieces: Iterator[str], content_type: str, filename: str
) -> StreamingHttpResponse:
    """A download made lazily from ``pieces`` in UTF-8 chunks of about :data:`DOWNLOAD_CHUNK` characters:
    nothing is read or built before the client takes the previous chunk, and an error part way (a database
    error) ends the transfer visibly incomplete, logged."""
    chunks = _encoded(pieces)
    content: Iterator[bytes] | AsyncIterator[bytes]
    if isinstance(request, ASGIRequest):
        content = _async_chunks(chunks, filename)
    else:
        content = _sync_chunks(chunks, filename)
    response = StreamingHttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = content_disposition_header(True, filename)
    return response


@require_safe
def download_session(request: HttpRequest, session_id: str) -> StreamingHttpResponse:
    """The session file as imported (byte for byte), followed by the entries Arbor appended."""
    session = session_or_404(request, session_id)
    return streamed(request, export_lines(session), NDJSON, download_name(session))


@require_safe
def download_branch(request: HttpRequest, session_id: str, entry_id: str) -> StreamingHttpResponse:
    """A new session file holding the path root → ``entry_id``, as ``/branch`` writes it, streamed at the
    reader's pace like the whole file."""
    session = session_or_404(request, session_id)
    try:
        name, lines = export_branch_lines(session, entry_id)
    except EntryNotFound:
        raise Http404("no entry with this id in the session") from None
    return streamed(request, lines, NDJSON, name)
