"""Who else sees a session: grants to users, and public share links with their redactions."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from treeview.models.sessions import AgentSession


class SessionGrant(models.Model):
    """The owner lets someone write to a session they may see (treeview/access.py): move its leaf, persist the
    position, label entries, fork it and make public links. Seeing it is still up to its visibility."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="session_grants"
    )
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "user"], name="grant_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} can write {self.session_id}"


# -- sharing -----------------------------------------------------------------------------------------------


class ShareLink(models.Model):
    """A read-only link to one branch for people without an account.

    The token is ``lookup`` + a secret part; only ``lookup`` (random, for the index) and the sha256 of the
    whole token are stored, and the hash is compared in constant time.
    """

    lookup = models.CharField(max_length=16, unique=True)
    token_hash = models.CharField(max_length=64, help_text="sha256 of the whole token, hex")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="share_links")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="share_links"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    leaf_id = models.CharField(max_length=64, help_text="the branch: the path from the root to this entry")
    target_id = models.CharField(max_length=64, blank=True)
    filter_mode = models.CharField(max_length=16, default="default")
    query = models.CharField(max_length=200, blank=True)
    follows = models.BooleanField(default=False, help_text="follows new entries below the leaf")
    frozen_seq = models.BigIntegerField(help_text="entries stored before the link have a lower seq")
    expires_at = models.DateTimeField()
    max_views = models.PositiveIntegerField(null=True, blank=True)
    view_count = models.PositiveIntegerField(default=0)
    last_viewed_at = models.DateTimeField(null=True, blank=True)
    note = models.CharField(max_length=500, blank=True)
    unmasked = models.JSONField(default=list, blank=True, help_text="ids of redaction hits shown in clear")
    redactions = models.JSONField(
        default=list, blank=True, help_text="what was masked: [{entry_id, kind, fingerprint}], never the text"
    )
    masked_strings = models.JSONField(
        default=list,
        blank=True,
        help_text="team strings in force when the link was made: always masked, whatever memberships become",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"share {self.lookup} of {self.session_id}"
