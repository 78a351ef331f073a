"""Share links: a read-only view of one branch of a session for people without an account.

A token is ``lookup`` (random, :data:`LOOKUP_CHARS` characters, for the index) followed by a secret part of
256 bits; the database keeps the lookup and the sha256 of the whole token, and the hash is compared in
constant time. Nothing in a token is derived from an id. What a link serves passes the redaction engine
(``treeview.redaction``): every hit not unmasked by the sharer is masked, opaque provider payloads are
dropped, and what was masked at creation is recorded on the link (kind and fingerprint, never the text).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from treeview import explorer
from treeview.access import SHARE_PUBLIC, can, can_manage
from treeview.models import AgentSession, ShareLink, SiteSettings, TeamSecret
from treeview.redaction import Hit, Redactor, redaction_record
from treeview.session.jsonl import dumps, loads
from treeview.session.selector import FILTER_MODES

__all__ = [
    "DEFAULT_EXPIRY",
    "MAX_EXPIRY",
    "MIN_EXPIRY",
    "BranchEntry",
    "ShareError",
    "ShareRefused",
    "branch_path",
    "chunks",
    "count_view",
    "create_link",
    "hash_token",
    "link_path",
    "link_state",
    "load_entries",
    "load_rows",
    "preview",
    "redact_entries",
    "redacted_batches",
    "redactor_for",
    "resolve",
    "revoke",
    "scan_branch",
    "sharing_enabled",
    "shown_ids",
]

DEFAULT_EXPIRY = timedelta(days=7)
MIN_EXPIRY = timedelta(hours=1)
MAX_EXPIRY = timedelta(days=90)
NOTE_MAX = 500
QUERY_MAX = 200
#: Characters of the lookup part (urlsafe base64: 6 bits each, 72 bits) and of the secret part (256 bits).
LOOKUP_CHARS = 12
SECRET_BYTES = 32
SECRET_CHARS = 43
TOKEN_CHARS = LOOKUP_CHARS + SECRET_CHARS
#: Ids per ``IN (...)`` query: SQLite allows 32,766 variables per statement (999 before 3.32).
IN_CHUNK = 900
_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{{TOKEN_CHARS}}}")


class ShareError(ValueError):
    """A link cannot be made as asked (the message says why, for the form)."""


class ShareRefused(Exception):
    """A presented token opens nothing. ``reason``: ``not_found`` (unknown, malformed or tampered),
    ``disabled`` (public sharing is off), ``revoked``, ``expired`` or ``exhausted`` (view limit reached)."""

    STATUS = {"not_found": 404, "disabled": 404, "revoked": 410, "expired": 410, "exhausted": 410}
    MESSAGES = {
        "not_found": "This link does not exist.",
        "disabled": "This link does not exist.",
        "revoked": "This link was revoked.",
        "expired": "This link has expired.",
        "exhausted": "This link has reached its view limit.",
    }

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    @property
    def status(self) -> int:
        return self.STATUS[self.reason]

    @property
    def message(self) -> str:
        return self.MESSAGES[self.reason]


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", errors="surrogatepass")).hexdigest()


def new_token() -> str:
    """A fresh token: a random lookup and a random 256-bit secret (urlsafe, :data:`TOKEN_CHARS` long)."""
    lookup = secrets.token_urlsafe(LOOKUP_CHARS * 6 // 8)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    assert len(lookup) == LOOKUP_CHARS and len(secret) == SECRET_CHARS
    return lookup + secret


def sharing_enabled() -> bool:
    return SiteSettings.current().public_sharing


def set_sharing(enabled: bool) -> None:
    """Turn public sharing on or off for the whole site (every link answers 404 while it is off)."""
    with transaction.atomic():
        SiteSettings.current()
        SiteSettings.objects.filter(pk=1).update(public_sharing=enabled)


# -- the branch --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BranchEntry:
    """One entry of a shared branch: its row's order and exact text, and the parsed entry."""

    seq: int
    entry_id: str
    raw: str
    entry: dict[str, Any]


def _parents(session: AgentSession, below_seq: int | None) -> dict[str, str | None]:
    """entry id → parent id of the session's entries (of those stored before ``below_seq``)."""
    rows = session.entries.exclude(type="session")
    if below_seq is not None:
        rows = rows.filter(seq__lt=below_seq)
    parents: dict[str, str | None] = {}
    for entry_id, parent_id in rows.order_by("seq").values_list("entry_id", "parent_id"):
        parents[entry_id] = parent_id  # a later row with the same id wins, as in the tree
    return parents


def branch_path(session: AgentSession, leaf_id: str, below_seq: int | None = None) -> list[str]:
    """The ids root → ``leaf_id`` through parent links (empty when the leaf is not there); stops at a missing
    parent or a repeated id, so a cycle cannot hang it."""
    parents = _parents(session, below_seq)
    path: list[str] = []
    seen: set[str] = set()
    current: str | None = leaf_id
    while current is not None and current in parents and current not in seen:
        seen.add(current)
        path.append(current)
        current = parents[current]
    path.reverse()
    return path


def chunks(items: Sequence[Any], size: int = IN_CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size``: one ``IN (...)`` query each, never past a backend's limit."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _load(session: AgentSession, ids: Sequence[str], below_seq: int | None) -> list[BranchEntry]:
    found: dict[str, BranchEntry] = {}
    for chunk in chunks(ids):
        rows = session.entries.filter(entry_id__in=chunk).exclude(type="session")
        if below_seq is not None:
            rows = rows.filter(seq__lt=below_seq)
        for seq, entry_id, raw in sorted(rows.values_list("seq", "entry_id", "raw")):
            previous = found.get(entry_id)
            if previous is not None and previous.seq > seq:
                continue  # the later row of a repeated id wins, as in the tree
            try:
                parsed = loads(raw)
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                parsed = {"type": "", "id": entry_id}
            found[entry_id] = BranchEntry(seq, entry_id, raw, parsed)
    return [found[i] for i in ids if i in found]


load_rows = _load


def link_path(link: ShareLink) -> tuple[str, list[str]]:
    """The leaf a link shows now and the ids root → it, from the session's cached explorer tree (no entry is
    read): frozen, the link's leaf; following, the session's current leaf when it descends from it."""
    session = link.session
    stored = explorer.explorer_tree(session, session.leaf_id)
    leaf = link.leaf_id
    if link.follows and session.leaf_id and leaf in set(stored.path_ids(session.leaf_id)):
        leaf = session.leaf_id
    if leaf not in stored.flat.by_id:
        return leaf, []
    return leaf, stored.path_ids(leaf)


def shown_ids(link: ShareLink, leaf: str, path: Sequence[str]) -> list[str]:
    """The ids of ``path`` (root → ``leaf``) the tree selector shows under the link's filter and search, from
    the explorer's tree drawn for ``leaf`` (cached, its flags computed at import: no entry is parsed)."""
    mode = link.filter_mode if link.filter_mode in FILTER_MODES else "default"
    tree = explorer.explorer_tree(link.session, leaf)
    on_path = set(path)
    visible = tree.visible(mode, link.query, agent=link.session.rules.agent)  # type: ignore[arg-type]
    return [i for n in visible.nodes if (i := n.node.entry.get("id")) in on_path]


def load_entries(link: ShareLink, ids: Sequence[str]) -> list[BranchEntry]:
    """These entries of the link's session, in the order given (frozen: only those stored before the link)."""
    return _load(link.session, ids, None if link.follows else link.frozen_seq)


def redact_entries(link: ShareLink, entries: Iterable[BranchEntry]) -> Iterator[RedactedEntry]:
    """``entries`` as the link serves them: each hit not in ``link.unmasked`` masked, opaque payloads dropped
    (entries that arrived after a following link was made included)."""
    redactor = link_redactor(link)
    unmasked = set(link.unmasked or ())
    for item in entries:
        redacted = redactor.redact(item.entry, redactor.scan(item.entry), unmasked)
        changed = redacted != item.entry
        yield RedactedEntry(item.entry_id, redacted, dumps(redacted) if changed else item.raw, changed)


def redacted_batches(link: ShareLink, batch: int = 500) -> Iterator[list[RedactedEntry]]:
    """The link's whole branch, redacted, a batch of entries at a time (downloads stream it)."""
    _, path = link_path(link)
    for start in range(0, len(path), batch):
        yield list(redact_entries(link, load_entries(link, path[start : start + batch])))


# -- redaction ---------------------------------------------------------------------------------------------


def team_strings(user: Any, session: AgentSession) -> list[str]:
    """The strings masked in what ``user`` shares of ``session``: the secrets of the user's teams and of the
    teams the session is shared with (single-user mode: every team's)."""
    secrets_ = TeamSecret.objects.all()
    if not settings.ARBOR_SINGLE_USER:
        mine = Q(team__memberships__user=user) if user is not None and user.pk else Q(pk__in=[])
        secrets_ = secrets_.filter(mine | Q(team__sessions=session.pk))
    values = {value for value in secrets_.values_list("value", flat=True) if value}
    return sorted(values)


def redactor_for(user: Any, session: AgentSession) -> Redactor:
    return Redactor(team_strings(user, session))


def link_strings(link: ShareLink) -> list[str]:
    """The team strings a link masks: those in force when it was made (kept with it, so leaving a team or
    a session leaving a team unmasks nothing) and any added since."""
    return sorted(set(link.masked_strings or ()) | set(team_strings(link.created_by, link.session)))


def link_redactor(link: ShareLink) -> Redactor:
    return Redactor(link_strings(link))


def scan_branch(redactor: Redactor, entries: Iterable[BranchEntry]) -> list[Hit]:
    """Every redaction hit of the branch, in order."""
    hits: list[Hit] = []
    for item in entries:
        hits.extend(redactor.scan(item.entry))
    return hits


@dataclass(frozen=True, slots=True)
class RedactedEntry:
    """An entry as a link serves it: ``raw`` is the stored line when redaction changed nothing (byte-exact),
    else the redacted entry serialized as the agent writes JSON."""

    entry_id: str
    entry: dict[str, Any]
    raw: str
    changed: bool


def redact_value(link: ShareLink, value: dict[str, Any]) -> dict[str, Any]:
    """Any other mapping a link serves (the session header, the title), with every hit masked."""
    redactor = link_redactor(link)
    return redactor.redact(value, redactor.scan(value), ())


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


# -- the share form ----------------------------------------------------------------------------------------


def preview(user: Any, session: AgentSession, leaf_id: str) -> tuple[int, list[Hit]]:
    """The length of the branch root → ``leaf_id`` as it is now, and every redaction hit in it (scanned now
    unless cached; the share form has the scan run in the background first: treeview/share_scan.py)."""
    return len(branch_path(session, leaf_id)), share_scan.branch_hits(
        session, leaf_id, team_strings(user, session)
    )


# The branch scan and its caches use this module's loaders; imported last (it imports this module).
from treeview.services import share_scan  # noqa: E402
