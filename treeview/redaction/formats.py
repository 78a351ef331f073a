"""Detectors of known token formats: whole-string regexes with literal prefixes (fast in ``re``)."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from treeview.redaction.context import _is_placeholder, _looks_random

# -- detectors: known formats (whole-string regexes with literal prefixes, fast in `re`) ---------------------


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    priority: int
    group: int | None = None  # None: the first non-empty group if the pattern has groups, else the match
    check: Callable[[str], bool] | None = None
    boundary: bool = False  # the match must not continue a longer token on its left
    # for patterns searched by a literal part: (string, start, end) -> the full span, or None
    confirm: Callable[[str, int, int], tuple[int, int] | None] | None = None


def _jwt_valid(token: str) -> bool:
    return JwtTokenDetector.is_formally_valid(token)


def _pem_b64_is_private(token: str) -> bool:
    head = token[:120]
    head = head[: len(head) // 4 * 4]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head)
    except (binascii.Error, ValueError):
        return False


_KNOWN: list[_Rule] = []
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _rule(kind: str, pattern: re.Pattern[str] | str, priority: int = 2, **kw: Any) -> None:
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    boundary = kw.get("group") is None and not compiled.groups and "confirm" not in kw
    _KNOWN.append(_Rule(kind, compiled, priority, boundary=boundary, **kw))


_rule("AWS access key", AWSKeyDetector.denylist[0], 1)
for _p in GitHubTokenDetector.denylist:
    _rule("GitHub token", _p, 1, group=0)
_rule("GitHub token", r"github_pat_[A-Za-z0-9_]{22,255}", 1)
for _p in GitLabTokenDetector.denylist:
    _rule("GitLab token", _p, 1, group=0)
_rule("Slack token", SlackDetector.denylist[0], 1)
_rule("Slack webhook", SlackDetector.denylist[1], 1)
_rule("Slack token", r"xapp-\d-[A-Za-z0-9-]{20,}", 1)
for _p in StripeDetector.denylist:
    _rule("Stripe key", _p, 1)
_rule("Stripe key", r"sk_test_[0-9a-zA-Z]{20,}", 1)
_rule("Stripe key", r"rk_test_[0-9a-zA-Z]{20,}", 1)
_rule("Stripe key", r"whsec_[A-Za-z0-9]{24,}", 1)
_rule("Anthropic API key", r"sk-ant-[A-Za-z0-9_\-]{20,}", 1)
_rule("OpenAI API key", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}", 1)
_rule("API key", r"sk-[A-Za-z0-9]{32,}", 3, check=lambda t: _looks_random(t[3:]))
_rule("Google API key", r"AIza[0-9A-Za-z_\-]{35}", 1)
_rule("Google OAuth secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}", 1)
_rule("Google OAuth token", r"ya29\.[0-9A-Za-z_\-]{20,}", 1)
_rule("Hugging Face token", r"hf_[A-Za-z0-9]{30,}", 1, check=_looks_random)
_rule("DigitalOcean token", r"do[opr]_v1_[a-f0-9]{64}", 1)
_rule("Shopify token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", 1)
_rule("npm token", r"npm_[A-Za-z0-9]{36}", 1)
# detect-secrets' npm pattern starts with `//.+/` (quadratic on long lines); anchor on the literal instead
_rule("npm token", r":_authToken=([^\s\"']{8,})", 1)
for _p in PypiTokenDetector.denylist:
    _rule("PyPI token", _p, 1)
for _p in SendGridDetector.denylist:
    _rule("SendGrid key", _p, 1)
for _p in TwilioKeyDetector.denylist:
    _rule("Twilio key", _p, 2)
for _p in SquareOAuthDetector.denylist:
    _rule("Square token", _p, 1)
for _p in DiscordBotTokenDetector.denylist:
    _rule("Discord token", _p, 2)
_rule("Azure storage key", r"AccountKey=([A-Za-z0-9+/]{20,}={0,2})", 1)
_rule("Azure storage key", r"SharedAccessKey=([A-Za-z0-9+/]{20,}={0,2})", 1)
_rule("Azure SAS signature", r"[?&;]sig=([A-Za-z0-9%+/]{20,}(?:=|%3D){0,2})", 1)
_rule("Password in URL", r"://:([^\s:/?#\[\]@]{3,})@", 2, check=lambda v: not _is_placeholder(v))
_rule(
    "JWT",
    # the lookbehind after the literal keeps `re`'s fast prefix search and starts only at token boundaries
    r"eyJ(?<![A-Za-z0-9_\-]eyJ)[A-Za-z0-9_\-]{4,}+={0,2}\.[A-Za-z0-9_\-]{4,}+={0,2}(?:\.[A-Za-z0-9_\-]++={0,2})?",
    2,
    check=_jwt_valid,  # detect-secrets' JWT check: header and payload decode to JSON
)
_rule("Private key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2}", 0, check=_pem_b64_is_private)
# detect-secrets' basic-auth pattern: the password between "user:" and "@" in a URL.
_rule(
    "Password in URL",
    BasicAuthDetector.denylist[0],
    2,
    group=1,
    check=lambda v: not _is_placeholder(v),
)


# detect-secrets' Mailchimp and Telegram patterns start with a character class and its OpenAI pattern
# backtracks over `[...]*` before its marker (slow or quadratic on megabytes of text): search their literal
# part, then confirm the full match with the plugin's own pattern around it.
_MAILCHIMP = MailchimpDetector.denylist[0]
_TELEGRAM = TelegramBotTokenDetector.denylist[0]
_OPENAI = OpenAIDetector.denylist[0]


def _confirm_mailchimp(s: str, start: int, end: int) -> tuple[int, int] | None:
    lo = start - 32
    if lo < 0 or (lo > 0 and s[lo - 1].isalnum()):
        return None
    m = _MAILCHIMP.match(s, lo)
    return (lo, m.end()) if m else None


def _confirm_telegram(s: str, start: int, end: int) -> tuple[int, int] | None:
    lo = start
    while lo > 0 and start - lo < 10 and s[lo - 1].isdigit():
        lo -= 1
    if lo > 0 and s[lo - 1].isalnum():
        return None
    m = _TELEGRAM.match(s, lo)
    return (lo, m.end()) if m else None


def _confirm_openai(s: str, start: int, end: int) -> tuple[int, int] | None:
    lo = max(0, start - 256)
    for m in _OPENAI.finditer(s, lo, min(len(s), end + 64)):
        if m.start() <= start and end <= m.end():
            return m.span()
    return None


_rule("OpenAI API key", r"T3BlbkFJ", 1, confirm=_confirm_openai)
_rule("Mailchimp key", r"-us[0-9]{1,2}", 2, confirm=_confirm_mailchimp)
_rule("Telegram bot token", r":(?<=[0-9]:)[0-9A-Za-z_\-]{35}", 2, confirm=_confirm_telegram)
