"""A team's own settings: the exact strings its members' share links always mask (the redaction preview reads
them). The views check who may change them (treeview/access.py ``administers``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from treeview.models import Team, TeamSecret

#: Shorter strings would mask ordinary words all over a transcript.
MIN_SECRET_CHARS = 4
MAX_SECRET_CHARS = 2000


class BadSecret(ValueError):
    """A string that cannot be a team secret (too short, too long, a duplicate)."""


def add_secret(team: Team, value: str, label: str, user: Any) -> TeamSecret:
    """Register ``value`` (exact, case-sensitive) as a secret of ``team``."""
    if len(value.strip()) < MIN_SECRET_CHARS:
        raise BadSecret(f"A secret string needs at least {MIN_SECRET_CHARS} characters.")
    if len(value) > MAX_SECRET_CHARS:
        raise BadSecret(f"A secret string has at most {MAX_SECRET_CHARS} characters.")
    with transaction.atomic():
        if TeamSecret.objects.filter(team=team, value=value).exists():
            raise BadSecret("This team already masks that string.")
        return TeamSecret.objects.create(
            team=team, value=value, label=label.strip(), created_by=user if user.pk else None
        )


def remove_secret(team: Team, secret_pk: int) -> bool:
    """Forget one of ``team``'s secrets; whether there was one."""
    deleted, _ = TeamSecret.objects.filter(team=team, pk=secret_pk).delete()
    return bool(deleted)


def masked(value: str) -> str:
    """How a secret string shows on the team page: its length and ends, never the whole."""
    if len(value) <= 8:
        return "•" * len(value)
    return f"{value[:2]}{'•' * 6}{value[-2:]} ({len(value)} characters)"
