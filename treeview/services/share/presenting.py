"""Presenting a link: resolving a token, the link's state, and counting views."""

from __future__ import annotations

import hmac
from datetime import datetime

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from treeview.access import SHARE_PUBLIC, can
from treeview.models import ShareLink
from treeview.services.share.managing import sharing_enabled
from treeview.services.share.tokens import _TOKEN, LOOKUP_CHARS, ShareRefused, hash_token

# -- presenting --------------------------------------------------------------------------------------------


def _find(token: str) -> ShareLink:
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ShareRefused("not_found")
    link = (
        ShareLink.objects.select_related("session", "created_by").filter(lookup=token[:LOOKUP_CHARS]).first()
    )
    digest = hash_token(token)
    # Compared in constant time even when there is no such lookup (against a hash nobody has).
    expected = link.token_hash if link is not None else "0" * 64
    if not hmac.compare_digest(expected, digest) or link is None:
        raise ShareRefused("not_found")
    return link


def link_state(link: ShareLink, now: datetime | None = None) -> str:
    """``active``, ``revoked``, ``expired`` or ``exhausted``."""
    now = now or timezone.now()
    if link.revoked_at is not None:
        return "revoked"
    if link.expires_at <= now:
        return "expired"
    if link.max_views is not None and link.view_count >= link.max_views:
        return "exhausted"
    return "active"


def resolve(token: str) -> ShareLink:
    """The usable link this token opens. Raises :class:`ShareRefused` (with its reason) otherwise."""
    link = _find(token)
    if not sharing_enabled():
        raise ShareRefused("disabled")
    state = link_state(link)
    if state != "active":
        raise ShareRefused(state)
    if not creator_may_share(link):
        _revoke_for_good(link)
        raise ShareRefused("revoked")
    return link


def creator_may_share(link: ShareLink) -> bool:
    """Could the link's creator make it now? A link lives only while they could: decided when it is served,
    from their current rights, so every way of losing the right takes the link with it, signals or not: an
    account deactivated (even by a bulk update) or deleted, a session no longer seen (a team left, its
    visibility changed), "can write" taken back, ``ARBOR_VIEWER_RIGHTS`` no longer giving viewers public
    links (links viewers made before rights existed included). One or two small queries."""
    creator = link.created_by
    if creator is None:
        # Its account was deleted (the link is revoked then too); single-user mode makes links as "local".
        return bool(settings.ARBOR_SINGLE_USER)
    return can(creator, link.session, SHARE_PUBLIC)


def _revoke_for_good(link: ShareLink) -> None:
    """Record a link found dead that way as revoked (by nobody): it does not come back should its creator
    get the right again, and the Shared links page says so."""
    if link.revoked_at is None:
        now = timezone.now()
        ShareLink.objects.filter(pk=link.pk, revoked_at=None).update(revoked_at=now)
        link.revoked_at = now


def current_state(link: ShareLink) -> str:
    """:func:`link_state`, with an active link whose creator may no longer make it revoked on the way."""
    state = link_state(link)
    if state == "active" and not creator_may_share(link):
        _revoke_for_good(link)
        return "revoked"
    return state


def count_view(link: ShareLink) -> ShareLink:
    """Count one view, atomically: a link over its limit (or revoked or expired since) counts nothing and
    raises :class:`ShareRefused`, however many requests arrive at once."""
    now = timezone.now()
    updated = (
        ShareLink.objects.filter(pk=link.pk, revoked_at=None, expires_at__gt=now)
        .filter(Q(max_views=None) | Q(view_count__lt=F("max_views")))
        .update(view_count=F("view_count") + 1, last_viewed_at=now)
    )
    if not updated:
        link.refresh_from_db()
        state = link_state(link, now)
        raise ShareRefused(state if state != "active" else "exhausted")
    link.refresh_from_db(fields=["view_count", "last_viewed_at"])
    return link
