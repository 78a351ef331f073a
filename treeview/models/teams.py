"""Teams: members and their roles, invitations, and the team strings share links mask."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Team(models.Model):
    """People who review sessions together: a session shared with a team is visible to its members."""

    name = models.CharField(max_length=150, unique=True)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="teams")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        MEMBER = "member", "member"
        ADMIN = "admin", "admin"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="membership_unique_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class Invite(models.Model):
    """A single-use link that lets a new person choose a username and password (only its hash is stored)."""

    token_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the token, hex")
    note = models.CharField(max_length=200, blank=True, help_text="who it is for")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="invites",
        help_text="the new account joins this team",
    )
    role = models.CharField(max_length=8, choices=Membership.Role.choices, default=Membership.Role.MEMBER)

    def __str__(self) -> str:
        return f"invite {self.pk} ({self.note or 'no note'})"


class TeamSecret(models.Model):
    """An exact string a team wants masked in everything its members share (a hostname, a customer name)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="secrets")
    value = models.TextField()
    label = models.CharField(max_length=100, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.label or f"{self.team}: secret {self.pk}"
