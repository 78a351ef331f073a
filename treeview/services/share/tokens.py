"""Limits, errors and tokens of share links: what a token looks like and how it is stored (hashed)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import timedelta

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
