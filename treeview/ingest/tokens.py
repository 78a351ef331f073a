"""Personal API tokens: made, checked, rate-limited and revoked.

A token is ``arbor_<lookup>_<secret>``: a random 10-character lookup (stored, shown to tell tokens apart) and
256 random bits. Only the sha256 of the whole token is stored and it is compared in constant time. A check
that fails says why (missing, malformed, unknown, revoked, expired, account disabled) so that the push client
can tell its user what to do; none of those answers says anything about another person's token.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from treeview.ingest.models import ApiToken

__all__ = ["TokenRefused", "check_token", "create_token", "revoke_token"]

_LOOKUP_ALPHABET = "abcdefghijklmnopqrstuvwxyz234567"
_LOOKUP_CHARS = 10
_TOKEN = re.compile(r"arbor_([a-z2-7]{10})_([A-Za-z0-9_-]{43})")
#: last_used_at is written at most this often (a busy client must not turn every request into a write).
_TOUCH_EVERY = timedelta(seconds=30)


class TokenRefused(Exception):
    """Why a request's token does not let it in: ``status`` 401 (no valid token), 403 (the account is
    disabled) or 429 (too many requests; ``retry_after`` seconds)."""

    def __init__(self, status: int, code: str, detail: str, retry_after: int = 0) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.retry_after = retry_after


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(user: Any, name: str = "", expires_days: int | None = None) -> tuple[ApiToken, str]:
    """A new token for ``user``; returns the row and the token, which is never shown again."""
    lookup = "".join(secrets.choice(_LOOKUP_ALPHABET) for _ in range(_LOOKUP_CHARS))
    token = f"arbor_{lookup}_{secrets.token_urlsafe(32)}"
    expires = timezone.now() + timedelta(days=expires_days) if expires_days else None
    row = ApiToken.objects.create(
        user=user, name=name.strip()[:100], lookup=lookup, token_hash=_hash(token), expires_at=expires
    )
    return row, token


def revoke_token(token: ApiToken) -> None:
    """Revoke ``token``: the next request with it is refused."""
    ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


def _bearer(header: str) -> str | None:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def check_token(authorization: str, address: str | None) -> ApiToken:
    """The token of an ``Authorization`` header, checked, counted against its rate and marked as used.
    Raises :class:`TokenRefused`."""
    if not authorization:
        raise TokenRefused(401, "token_missing", "send a personal API token: Authorization: Bearer arbor_…")
    token = _bearer(authorization)
    match = _TOKEN.fullmatch(token or "")
    if match is None:
        raise TokenRefused(401, "token_malformed", "that is not an Arbor API token (arbor_<lookup>_<secret>)")
    with transaction.atomic():
        row = ApiToken.objects.select_for_update().select_related("user").filter(lookup=match[1]).first()
        # Compared in constant time (a missing row is compared against a dummy hash all the same).
        expected = row.token_hash if row is not None else "0" * 64
        if not hmac.compare_digest(expected, _hash(match[0])) or row is None:
            raise TokenRefused(
                401, "token_unknown", "this token is not known here: create one on the API tokens page"
            )
        now = timezone.now()
        if row.revoked_at is not None:
            raise TokenRefused(401, "token_revoked", "this token was revoked: create a new one")
        if row.expires_at is not None and row.expires_at <= now:
            raise TokenRefused(401, "token_expired", "this token has expired: create a new one")
        if not row.user.is_active:
            raise TokenRefused(403, "account_disabled", "the account of this token is disabled")
        _spend(row, now)
        fields = ["allowance", "allowance_at"]
        if row.last_used_at is None or now - row.last_used_at >= _TOUCH_EVERY or row.last_used_ip != address:
            row.last_used_at, row.last_used_ip = now, address
            fields += ["last_used_at", "last_used_ip"]
        row.save(update_fields=fields)
    return row


def _spend(row: ApiToken, now: Any) -> None:
    """Take one request out of the token's bucket (``ARBOR_INGEST_RATE`` a minute, as many at once)."""
    rate = settings.ARBOR_INGEST_RATE
    allowance = float(rate) if row.allowance < 0 or row.allowance_at is None else row.allowance
    if row.allowance_at is not None:
        allowance = min(float(rate), allowance + (now - row.allowance_at).total_seconds() * rate / 60)
    if allowance < 1:
        wait = int((1 - allowance) * 60 / rate) + 1
        raise TokenRefused(
            429,
            "rate_limited",
            f"more than {rate} requests a minute with this token: retry in {wait} s",
            wait,
        )
    row.allowance, row.allowance_at = allowance - 1, now
