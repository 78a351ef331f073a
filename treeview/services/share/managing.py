"""Managing links: the site-wide switch, revoking, the signals that revoke, and a user's links."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from treeview.access import SHARE_PUBLIC, can, can_manage
from treeview.models import AgentSession, ShareLink, SiteSettings
from treeview.services.share.branch import chunks


def sharing_enabled() -> bool:
    return SiteSettings.current().public_sharing


def set_sharing(enabled: bool) -> None:
    """Turn public sharing on or off for the whole site (every link answers 404 while it is off)."""
    with transaction.atomic():
        SiteSettings.current()
        SiteSettings.objects.filter(pk=1).update(public_sharing=enabled)


# -- managing ----------------------------------------------------------------------------------------------


def may_revoke(user: Any, link: ShareLink) -> bool:
    """The link's creator, a manager of its session (``can_manage``) or a superuser."""
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    if user.is_superuser or (link.created_by_id is not None and link.created_by_id == user.pk):
        return True
    return can_manage(user, link.session)


def revoke(user: Any, link: ShareLink) -> ShareLink:
    """Revoke a link; the next request with its token is refused. Raises ``PermissionError`` when ``user``
    may not."""
    if not may_revoke(user, link):
        raise PermissionError("only the link's creator, the session's managers and superusers revoke it")
    with transaction.atomic():
        ShareLink.objects.filter(pk=link.pk, revoked_at=None).update(
            revoked_at=timezone.now(), revoked_by=user if user.pk else None
        )
    link.refresh_from_db()
    return link


def revoke_links_of(user: Any, *, only_unseen: bool = False, session: Any = None) -> int:
    """Revoke the active links ``user`` made (``only_unseen``: only those they could not make now;
    ``session``: only that session's); how many. Called when an account is deactivated or deleted, leaves a
    team, or loses "can write" on a session."""
    links = ShareLink.objects.filter(created_by=user.pk, revoked_at=None).select_related("session")
    if session is not None:
        links = links.filter(session=session)
    if only_unseen:
        pks = [link.pk for link in links if not can(user, link.session, SHARE_PUBLIC)]
    else:
        pks = list(links.values_list("pk", flat=True))
    now = timezone.now()
    return sum(
        ShareLink.objects.filter(pk__in=chunk, revoked_at=None).update(revoked_at=now)
        for chunk in chunks(pks)
    )


def user_saved(sender: object, instance: Any, **kwargs: Any) -> None:
    """Signal receiver: a deactivated account's links stop working."""
    if not instance.is_active:
        revoke_links_of(instance)


def user_deleted(sender: object, instance: Any, **kwargs: Any) -> None:
    """Signal receiver (before the delete, while the links still name the account): its links stop working."""
    revoke_links_of(instance)


def membership_removed(sender: object, instance: Any, **kwargs: Any) -> None:
    """Signal receiver: someone left a team; their links they could not make now stop working for good."""
    user = get_user_model().objects.filter(pk=instance.user_id).first()
    if user is not None:
        revoke_links_of(user, only_unseen=True)


def grant_removed(sender: object, instance: Any, **kwargs: Any) -> None:
    """Signal receiver: "can write" was taken back; the links it let its holder make stop working for good
    (given again, it does not bring them back). The session's own deletion takes its links anyway."""
    user = get_user_model().objects.filter(pk=instance.user_id).first()
    session = AgentSession.objects.filter(pk=instance.session_id).first()
    if user is not None and session is not None:
        revoke_links_of(user, only_unseen=True, session=session)


def links_for(user: Any) -> Any:
    """The links the Shared links page lists: a user's own; a superuser's (and single-user mode's) all."""
    links = ShareLink.objects.select_related("session", "created_by").order_by("-created_at", "-pk")
    if settings.ARBOR_SINGLE_USER or (user.is_active and user.is_superuser):
        return links
    return links.filter(created_by=user)
