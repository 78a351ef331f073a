"""Review: comments on entries and per-entry review statuses (keyed by entry id, not by row)."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from treeview.models.sessions import AgentSession

# -- review ------------------------------------------------------------------------------------------------
# Comments and review statuses are keyed by the entry id (a string), never by an Entry row: a re-import of a
# grown or rewritten file replaces rows but keeps the ids, and so keeps the review.


class Comment(models.Model):
    """A comment on an entry, or on a text range inside it; replies point at the thread's first comment."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="comments")
    entry_id = models.CharField(max_length=64)
    parent = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="replies",
        help_text="thread root",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="arbor_comments",
    )
    body = models.TextField(help_text="Markdown source (rendered sanitized)")
    quote = models.TextField(blank=True, help_text="the text range commented on, as selected")
    quote_start = models.PositiveIntegerField(
        null=True, blank=True, help_text="offset of the quote in the entry's text"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    edited_at = models.DateTimeField(null=True, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True, help_text="deleted by its author; replies stay")
    resolved_at = models.DateTimeField(null=True, blank=True, help_text="on the thread root")
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    mentions = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="arbor_mentions")

    class Meta:
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["session", "entry_id"])]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.entry_id}"


class ReviewStatus(models.Model):
    """The review status of one branch, named by its leaf entry. No row: unreviewed."""

    class Status(models.TextChoices):
        UNREVIEWED = "unreviewed", "unreviewed"
        APPROVED = "approved", "approved"
        NEEDS_CHANGES = "needs_changes", "needs changes"
        ABANDONED = "abandoned", "abandoned"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="review_statuses")
    leaf_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UNREVIEWED)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "leaf_id"], name="review_unique_leaf")]
        indexes = [models.Index(fields=["status", "session"])]

    def __str__(self) -> str:
        return f"{self.leaf_id}: {self.status}"
