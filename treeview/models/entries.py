"""Entries: one row per line of a session file, append-only; and the files that failed to import."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.db.models import Max

from treeview.models.sessions import AgentSession


class AppendOnlyError(RuntimeError):
    """A stored entry cannot be changed: append a new entry instead (a label, a summary ...)."""


class EntryQuerySet(models.QuerySet["Entry"]):
    def update(self, **kwargs: Any) -> int:
        raise AppendOnlyError("entries are append-only; append a new entry instead")

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AppendOnlyError("entries are append-only; append a new entry instead")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Entry]:
        if kwargs.get("update_conflicts"):
            raise AppendOnlyError("entries are append-only: no upsert over stored entries")
        return super().bulk_create(objs, *args, **kwargs)

    def in_file_order(self) -> EntryQuerySet:
        return self.order_by("seq")

    def max_seq(self) -> int:
        value = self.aggregate(m=Max("seq"))["m"]
        return -1 if value is None else int(value)


class Entry(models.Model):
    """One entry of a session: the exact line, and the columns derived from it once at import."""

    class Origin(models.TextChoices):
        FILE = "file", "read from the session file"
        ARBOR = "arbor", "appended in Arbor"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="entries")
    seq = models.BigIntegerField(
        help_text="order of arrival in the session: file order, then Arbor's appends"
    )
    line = models.PositiveIntegerField(null=True, blank=True, help_text="physical line in the source file")
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.FILE)
    in_file = models.BooleanField(default=True, help_text="part of the source file (read, or written back)")
    before = models.TextField(default="\n", help_text="exact text between the previous object and this one")
    digest = models.CharField(max_length=32, blank=True, help_text="blake2b-128 of before + raw")
    entry_id = models.CharField(max_length=64, blank=True)
    # NULL: a root (parentId null). A string is kept as written, even when no entry has that id (an orphan).
    parent_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001
    type = models.CharField(max_length=64)
    role = models.CharField(max_length=32, blank=True)
    timestamp = models.CharField(max_length=40, blank=True, help_text="as written")
    ts = models.DateTimeField(null=True, blank=True, help_text="parsed timestamp, for sorting")
    raw = models.TextField(help_text="the exact line text (without its newline)")
    # Derived once at import (pure functions of this line, plus the tool call a tool result answers).
    text = models.TextField(blank=True, help_text="the tree row text (§17.4), without label")
    search_text = models.TextField(blank=True, help_text="lower-cased searchable text (§17.6), without label")
    body_text = models.TextField(
        blank=True, default="", help_text="full text for the search across sessions ('': not indexed)"
    )
    fuzzy_text = models.TextField(
        blank=True,
        default="",
        help_text="message search text as written where oh-my-pi splits words by case ('': none)",
    )
    has_text = models.BooleanField(default=False, help_text="assistant message with non-blank text")
    stop_reason = models.CharField(max_length=32, blank=True)
    label_target = models.CharField(max_length=64, blank=True)
    label_text = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)

    objects = EntryQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="entry_unique_seq")]
        indexes = [
            models.Index(fields=["session", "entry_id"]),
            models.Index(fields=["session", "parent_id"]),
            models.Index(fields=["session", "type", "seq"]),
            models.Index(fields=["session", "label_target"]),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.entry_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or (self.pk is not None and Entry.objects.filter(pk=self.pk).exists()):
            raise AppendOnlyError(f"entry {self.entry_id} is stored; entries are append-only")
        # An insert, never an UPDATE, whatever pk the object was built with.
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)


class ImportIssue(models.Model):
    """A file that could not be imported, with the reason (shown in the session list until it imports)."""

    source_path = models.TextField(unique=True)
    error = models.TextField()
    seen_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.source_path}: {self.error}"
