"""Personal API tokens, pushed files and each person's default visibility for what they push."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from treeview.models import AgentSession, Team

__all__ = ["ApiToken", "IngestSource", "PushDefaults"]


class ApiToken(models.Model):
    """A personal token for the ingest API: only its lookup (shown, to tell tokens apart) and the sha256 of
    the whole token are stored. It pushes its owner's own sessions and nothing else."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    lookup = models.CharField(max_length=16, unique=True, help_text="random, shown as the token's prefix")
    token_hash = models.CharField(max_length=64, help_text="sha256 of the whole token, hex")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    last_used_ip = models.GenericIPAddressField(null=True, blank=True)
    # The rate limit: a bucket of requests, refilled continuously (see treeview/ingest/auth.py).
    allowance = models.FloatField(default=-1, help_text="requests left in the bucket; -1: full")
    allowance_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.prefix} ({self.name or 'unnamed'})"

    @property
    def prefix(self) -> str:
        return f"arbor_{self.lookup}"


class IngestSource(models.Model):
    """One file as a person sends it: from a machine and a path there (or a web upload's name), with the
    header id it carries. The bytes are kept in ``file`` (under ``ARBOR_DATA_DIR/pushed``, named by a hash:
    nothing the client sends is ever a path here) and imported from it exactly as ``sync`` imports a file."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="ingest_sources"
    )
    machine = models.CharField(max_length=200, blank=True, help_text="the client's machine; '' for uploads")
    path = models.TextField(help_text="the path on the client, or the uploaded file's name (data only)")
    header_id = models.CharField(max_length=200, help_text="the session id its header carries")
    key = models.CharField(max_length=64, unique=True, help_text="sha256 of owner, machine, path, header id")
    session = models.ForeignKey(
        AgentSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="ingest_sources"
    )
    file = models.TextField(help_text="where the bytes are kept on the server")
    length = models.BigIntegerField(default=0, help_text="bytes stored; the file may hold more after a crash")
    imported = models.BigIntegerField(default=0, help_text="bytes of the file the session was imported from")
    slot_length = models.PositiveIntegerField(default=0, help_text="bytes of the title slot line")
    blocks = models.JSONField(default=list, blank=True, help_text="sha256 of each full block of the body")
    staged = models.BigIntegerField(default=0, help_text="bytes of a whole-file rewrite received so far")
    staged_total = models.BigIntegerField(default=0, help_text="announced length of that rewrite")
    bytes_received = models.BigIntegerField(default=0, help_text="bytes received in all (retries included)")
    bytes_stored = models.BigIntegerField(default=0, help_text="bytes that were new when received")
    created_at = models.DateTimeField(auto_now_add=True)
    pushed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.machine or 'upload'}:{self.path}"


class PushDefaults(models.Model):
    """Who sees what a person pushes or uploads, until they change it on the session: private (default),
    a team of theirs, or everyone signed in."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_defaults"
    )
    visibility = models.CharField(
        max_length=10, choices=AgentSession.Visibility.choices, default=AgentSession.Visibility.PRIVATE
    )
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")

    def __str__(self) -> str:
        return f"{self.user}: {self.visibility}"
