"""Creating a link (with the redaction scan of its branch) and the share form's preview."""

from __future__ import annotations

from collections.abc import Collection
from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from treeview.access import SHARE_PUBLIC, can
from treeview.models import AgentSession, ShareLink
from treeview.redaction import Hit, redaction_record
from treeview.services.share.branch import branch_path
from treeview.services.share.managing import sharing_enabled
from treeview.services.share.redacting import team_strings
from treeview.services.share.tokens import (
    DEFAULT_EXPIRY,
    LOOKUP_CHARS,
    MAX_EXPIRY,
    MIN_EXPIRY,
    NOTE_MAX,
    QUERY_MAX,
    ShareError,
    hash_token,
    new_token,
)
from treeview.session.selector import FILTER_MODES

# -- creating ----------------------------------------------------------------------------------------------


def create_link(
    user: Any,
    session: AgentSession,
    *,
    leaf_id: str,
    target_id: str = "",
    filter_mode: str = "default",
    query: str = "",
    expires_in: timedelta = DEFAULT_EXPIRY,
    max_views: int | None = None,
    follows: bool = False,
    note: str = "",
    unmasked: Collection[str] = (),
) -> tuple[ShareLink, str]:
    """A new link to the branch root → ``leaf_id`` and its token (shown once: only its hash is kept).

    Raises :class:`ShareError` when the user may not make public links to the session (``SHARE_PUBLIC``:
    its owner, those the owner lets write, every viewer if ``ARBOR_VIEWER_RIGHTS`` says so), sharing is off,
    the entries are not the session's (or the target is not on the branch), or the expiry, view limit, note
    or unmasked hits are out of bounds.
    """
    if user is None or not can(user, session, SHARE_PUBLIC):
        raise ShareError("You cannot share this session.")
    if not sharing_enabled():
        raise ShareError("Public sharing is turned off for this site.")
    if filter_mode not in FILTER_MODES:
        raise ShareError("Unknown filter.")
    if len(query) > QUERY_MAX:
        raise ShareError(f"The search is longer than {QUERY_MAX} characters.")
    if not MIN_EXPIRY <= expires_in <= MAX_EXPIRY:
        raise ShareError("A link expires after one hour at the earliest and 90 days at the latest.")
    if max_views is not None and max_views < 1:
        raise ShareError("The view limit is at least 1.")
    if len(note) > NOTE_MAX:
        raise ShareError(f"The note is longer than {NOTE_MAX} characters.")
    with transaction.atomic():
        locked = AgentSession.objects.select_for_update().get(pk=session.pk)
        frozen_seq = locked.next_seq
        path = branch_path(locked, leaf_id, frozen_seq) if leaf_id else []
        if not path or path[-1] != leaf_id:
            raise ShareError("No entry with this id in the session.")
        if target_id and target_id not in path:
            raise ShareError("The highlighted entry is not on the shared branch.")
        strings = team_strings(user, locked)
        # the preview's scan of this very state, cached (treeview/services/share_scan.py), or scanned now
        hits = share_scan.branch_hits(locked, leaf_id, strings)
        hit_ids = {hit.id for hit in hits}
        unknown = set(unmasked) - hit_ids
        if unknown:
            raise ShareError(
                "A hit to show in clear is not in the branch any more; look at the preview again."
            )
        token = new_token()
        link = ShareLink.objects.create(
            lookup=token[:LOOKUP_CHARS],
            token_hash=hash_token(token),
            session=locked,
            created_by=user if user.pk else None,
            leaf_id=leaf_id,
            target_id=target_id,
            filter_mode=filter_mode,
            query=query,
            follows=follows,
            frozen_seq=frozen_seq,
            expires_at=timezone.now() + expires_in,
            max_views=max_views,
            note=note,
            unmasked=sorted(set(unmasked)),
            redactions=redaction_record(hits, set(unmasked)),
            masked_strings=strings,
        )
    return link, token


# -- the share form ----------------------------------------------------------------------------------------


def preview(user: Any, session: AgentSession, leaf_id: str) -> tuple[int, list[Hit]]:
    """The length of the branch root → ``leaf_id`` as it is now, and every redaction hit in it (scanned now
    unless cached; the share form has the scan run in the background first: treeview/share_scan.py)."""
    return len(branch_path(session, leaf_id)), share_scan.branch_hits(
        session, leaf_id, team_strings(user, session)
    )


# The branch scan and its caches use this package's loaders; imported last (it imports this package).
from treeview.services import share_scan  # noqa: E402
