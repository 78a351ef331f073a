"""Threaded comments on entries (issue 6, review): the only code that writes :class:`Comment` rows.

A thread is a root comment (on an entry, or on a text range of it: ``quote``) and its replies, which always
point at the root: a reply to a reply joins the same thread. Comments are keyed by entry id, not by stored
row, so they survive a re-import of a rewritten session file. Each action is one transaction. The views
check who may see the session; here, only the author may edit or delete a comment, and anyone who can view
the session may resolve or reopen a thread.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from treeview.access import can_view
from treeview.models import AgentSession, Comment, Entry

__all__ = [
    "BODY_MAX_CHARS",
    "QUOTE_MAX_CHARS",
    "CommentRefused",
    "EntryCounts",
    "InvalidComment",
    "NotAuthor",
    "Thread",
    "UnknownEntry",
    "add",
    "comment_counts",
    "commented_entry_ids",
    "delete",
    "edit",
    "find",
    "is_author",
    "mentioned_users",
    "reopen",
    "resolve",
    "threads",
]

BODY_MAX_CHARS = 20_000
QUOTE_MAX_CHARS = 5_000
# At most this many distinct @names of one body are looked up (each costs an access check).
MENTIONS_MAX = 20
# ``@name`` not glued to a word or an e-mail address; Django's usernames hold letters, digits and @.+-_ .
MENTION = re.compile(r"(?<![\w@.+-])@([\w.+-]+)")


class CommentRefused(Exception):
    """Base of what an action refuses; nothing was written."""


class UnknownEntry(CommentRefused, LookupError):
    """No entry with that id in the session (the views answer 404)."""


class InvalidComment(CommentRefused, ValueError):
    """A blank or too long body, a too long quote, a reply to a comment of another entry."""


class NotAuthor(CommentRefused, PermissionError):
    """Only the author edits or deletes a comment (the views answer 403)."""


@dataclass(frozen=True, slots=True)
class EntryCounts:
    """The comments on one entry: live comments, and threads not resolved yet."""

    comments: int
    open_threads: int


@dataclass
class Thread:
    """A root comment (maybe a "deleted" placeholder kept for its replies) and its replies, oldest first."""

    root: Comment
    replies: list[Comment] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        return self.root.resolved_at is not None


# -- reading -----------------------------------------------------------------------------------------------


def entry_exists(session: AgentSession, entry_id: str) -> bool:
    """Whether the session holds an entry with this id (the header row is no entry)."""
    return Entry.objects.filter(session=session, entry_id=entry_id).exclude(type="session").exists()


def _check_entry(session: AgentSession, entry_id: str) -> None:
    if not entry_id or not entry_exists(session, entry_id):
        raise UnknownEntry(f"no entry {entry_id!r} in the session")


def threads(session: AgentSession, entry_id: str) -> list[Thread]:
    """The threads on one entry, oldest first, with authors and mentions loaded (three queries)."""
    rows = (
        Comment.objects.filter(session=session, entry_id=entry_id)
        .select_related("author", "resolved_by")
        .prefetch_related("mentions")
        .order_by("created_at", "pk")
    )
    by_root: dict[int, Thread] = {}
    replies: list[Comment] = []
    for comment in rows:
        if comment.parent_id is None:
            by_root[comment.pk] = Thread(comment)
        else:
            replies.append(comment)
    for reply in replies:
        thread = by_root.get(reply.parent_id)  # type: ignore[arg-type]
        if thread is not None:
            thread.replies.append(reply)
    return list(by_root.values())


def comment_counts(session: AgentSession) -> dict[str, EntryCounts]:
    """Entry id → its counts, for every commented entry of the session, in one aggregate query."""
    rows = (
        Comment.objects.filter(session=session)
        .values("entry_id")
        .annotate(
            live=Count("pk", filter=Q(deleted_at__isnull=True)),
            open=Count("pk", filter=Q(parent__isnull=True, resolved_at__isnull=True)),
        )
        .order_by()
    )
    return {row["entry_id"]: EntryCounts(row["live"], row["open"]) for row in rows if row["live"]}


def commented_entry_ids(session: AgentSession) -> frozenset[str]:
    """The ids of the entries with at least one live comment."""
    ids = (
        Comment.objects.filter(session=session, deleted_at__isnull=True)
        .values_list("entry_id", flat=True)
        .order_by()
        .distinct()
    )
    return frozenset(ids)


def find(session: AgentSession, entry_id: str, pk: int) -> Comment:
    """The comment ``pk`` on this entry of this session (``Comment.DoesNotExist`` otherwise)."""
    return Comment.objects.select_related("author").get(session=session, entry_id=entry_id, pk=pk)


def mentioned_users(session: AgentSession, body: str) -> list[Any]:
    """The active users named ``@username`` in ``body`` who can view the session (other names stay text)."""
    names: list[str] = []
    for match in MENTION.finditer(body):
        name = match.group(1).rstrip(".")  # "@alice." ends a sentence
        if name and name not in names:
            names.append(name)
        if len(names) >= MENTIONS_MAX:
            break
    if not names:
        return []
    users = get_user_model().objects.filter(username__in=names, is_active=True)
    return [user for user in users if can_view(user, session)]


# -- writing -----------------------------------------------------------------------------------------------


def _clean_body(body: str) -> str:
    body = body.replace("\r\n", "\n").strip()
    if not body:
        raise InvalidComment("a comment needs some text")
    if len(body) > BODY_MAX_CHARS:
        raise InvalidComment(f"a comment holds at most {BODY_MAX_CHARS:,} characters")
    return body


def is_author(comment: Comment, user: Any) -> bool:
    """Whether ``user`` wrote ``comment``."""
    return comment.author_id is not None and user is not None and comment.author_id == user.pk


def add(
    session: AgentSession,
    user: Any,
    entry_id: str,
    body: str,
    *,
    quote: str = "",
    quote_start: int | None = None,
    reply_to: int | None = None,
) -> Comment:
    """A new comment on ``entry_id`` (on the quoted text range when ``quote`` is given), or a reply to the
    comment ``reply_to``, which attaches to that comment's thread root."""
    body = _clean_body(body)
    quote = quote.strip()
    if len(quote) > QUOTE_MAX_CHARS:
        raise InvalidComment(f"a quote holds at most {QUOTE_MAX_CHARS:,} characters")
    with transaction.atomic():
        _check_entry(session, entry_id)
        parent = None
        if reply_to is not None:
            target = Comment.objects.filter(session=session, entry_id=entry_id, pk=reply_to).first()
            if target is None:
                raise InvalidComment("no such comment to reply to on this entry")
            parent = target if target.parent_id is None else target.parent
            quote, quote_start = "", None  # the thread's root holds the range
        comment = Comment.objects.create(
            session=session,
            entry_id=entry_id,
            parent=parent,
            author=user,
            body=body,
            quote=quote,
            quote_start=quote_start if quote else None,
        )
        comment.mentions.set(mentioned_users(session, body))
    return comment


def edit(comment: Comment, user: Any, body: str) -> Comment:
    """Change the body of one's own comment; its mentions are found again."""
    if not is_author(comment, user) or comment.deleted_at is not None:
        raise NotAuthor("only the author edits a comment")
    body = _clean_body(body)
    with transaction.atomic():
        comment.body = body
        comment.edited_at = timezone.now()
        comment.save(update_fields=["body", "edited_at"])
        comment.mentions.set(mentioned_users(comment.session, body))
    return comment


def delete(comment: Comment, user: Any) -> None:
    """Delete one's own comment. A thread root with replies becomes a "deleted" placeholder (no text, no
    mentions) so the replies keep their thread; a reply that leaves a placeholder root alone takes it
    along."""
    if not is_author(comment, user) or comment.deleted_at is not None:
        raise NotAuthor("only the author deletes a comment")
    with transaction.atomic():
        if comment.parent_id is None and comment.replies.exists():
            comment.body = ""
            comment.quote = ""
            comment.quote_start = None
            comment.deleted_at = timezone.now()
            comment.save(update_fields=["body", "quote", "quote_start", "deleted_at"])
            comment.mentions.clear()
            return
        root_id = comment.parent_id
        comment.delete()
        if root_id is not None:
            Comment.objects.filter(pk=root_id, deleted_at__isnull=False, replies__isnull=True).delete()


def _root(comment: Comment) -> Comment:
    return comment if comment.parent_id is None else Comment.objects.get(pk=comment.parent_id)


def resolve(comment: Comment, user: Any) -> Comment:
    """Mark the thread of ``comment`` resolved (already resolved: unchanged)."""
    with transaction.atomic():
        root = _root(comment)
        if root.resolved_at is None:
            root.resolved_at = timezone.now()
            root.resolved_by = user
            root.save(update_fields=["resolved_at", "resolved_by"])
    return root


def reopen(comment: Comment, user: Any) -> Comment:
    """Open the thread of ``comment`` again."""
    with transaction.atomic():
        root = _root(comment)
        if root.resolved_at is not None:
            root.resolved_at = None
            root.resolved_by = None
            root.save(update_fields=["resolved_at", "resolved_by"])
    return root
