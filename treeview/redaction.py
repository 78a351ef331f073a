"""Redaction for share links: find secrets in session entries, mask them, drop opaque provider payloads.

Pure Python (no Django). Detectors, most specific first:

* known token formats, using detect-secrets' plugin patterns (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  SendGrid, Twilio, npm, PyPI, Square, Discord, Telegram, Mailchimp, Azure storage) plus formats it lacks
  (GitHub fine-grained ``github_pat_``, Anthropic ``sk-ant-``, OpenAI project keys, Google, Hugging Face ...);
* private-key blocks (PEM, OpenSSH, PGP, PuTTY), whole block as one hit, also JSON-escaped (``\\n``) and
  base64-wrapped (kubeconfig ``client-key-data``); JWTs (validated with detect-secrets' JWT check);
* passwords in URLs (detect-secrets' basic-auth pattern), ``Authorization:`` and API-key headers, ``curl -u``,
  ``--password=`` flags, ``Password=`` in connection strings;
* ``.env``-style ``KEY=value`` lines whose key names a secret (the value only), and detect-secrets' keyword
  patterns for quoted literals (``password = "..."``, ``"api_key": "..."``);
* unquoted high-entropy tokens (detect-secrets' Shannon entropy, plus shape filters);
* team strings: exact, case-sensitive substrings.

Deliberately *not* masked (documented false negatives, chosen to keep ordinary sessions readable): bare
hex strings of any length (git SHAs, content hashes, UUIDs; hex secrets are caught only after a
secret-looking key, header or flag), random tokens shorter than 20 characters without such context, base64
runs longer than 1024 characters (images, certificates, bundles), and strings under structural keys (ids,
timestamps, model names) or in image ``data``.

Thread-safety: detect-secrets keeps global settings and its high-entropy plugins swap their regex while
scanning, so this module never calls its scan functions; it compiles the plugins' patterns once at import and
only calls pure functions (``is_formally_valid``, ``calculate_shannon_entropy``, heuristic filters). A
``Redactor`` holds no mutable state after ``__init__`` and can be shared between threads.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from detect_secrets.filters.heuristic import is_sequential_string, is_templated_secret
from detect_secrets.plugins import keyword as ds_keyword
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.basic_auth import BasicAuthDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString
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

__all__ = ["RULES_VERSION", "Hit", "Redactor", "drop_opaque", "mask_for", "redaction_record", "scan_entries"]

#: Bumped whenever a detector changes what it finds: cached scan results of other versions are not used.
RULES_VERSION = "2026-12-02.keys"
CONTEXT = 40
MIN_TEAM_STRING = 4
MIN_TOKEN = 20  # shortest bare token the high-entropy detector considers
MAX_TOKEN = 1024  # longer base64 runs are data (images, certificates), not credentials
MAX_VALUE = 4096  # longest value a header, flag or assignment rule masks

# Keys dropped from every copy: encrypted reasoning and provider replay state (spec §6, §5.5, §9.4).
OPAQUE_KEYS = frozenset(
    {
        "thinkingSignature",
        "thoughtSignature",
        "textSignature",
        "providerPayload",
        "encrypted_content",
        "encryptedContent",
        "openaiRemoteCompaction",
    }
)
_THINKING_TYPES = frozenset({"thinking", "redacted_thinking", "redactedThinking", "reasoning"})
_REDACTED_THINKING_TYPES = frozenset({"redactedThinking", "redacted_thinking"})

# String values under these keys are structure, not content (except inside free-form tool-call arguments): ids
# and fixed vocabularies, and the provider's model names. Names a tool or an extension chose (toolName,
# customType ...) are content: a share shows them, so they are scanned.
STRUCTURAL_KEYS = frozenset(
    {
        "api",
        "provider",
        "model",
        "modelId",
        "id",
        "parentId",
        "timestamp",
        "type",
        "role",
        "toolCallId",
        "stopReason",
        "thinkingLevel",
        "serviceTier",
        "mimeType",
        "targetId",
        "fromId",
        "firstKeptEntryId",
        "responseId",
        "itemId",
        "mode",
        "hash",
        "pad",
    }
)

# Keys of the session format itself: not scanned as strings outside free-form arguments (a team string that
# happens to be one of them must not rename the format's fields). Every other key is scanned: tool arguments,
# ``details`` and extension data can use a secret as a key.
SCHEMA_KEYS = STRUCTURAL_KEYS | frozenset(
    {
        "message",
        "content",
        "text",
        "thinking",
        "name",
        "arguments",
        "toolName",
        "details",
        "usage",
        "input",
        "output",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "cost",
        "total",
        "summary",
        "label",
        "data",
        "isError",
        "errorMessage",
        "customType",
        "display",
        "version",
        "cwd",
        "parentSession",
        "tokensBefore",
        "signature",
        "redacted",
        "command",
        "exitCode",
        "cancelled",
        "truncated",
        "fullOutputPath",
        "excludeFromContext",
        "fromHook",
        "title",
    }
)

# -- hits ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    """One secret found in one string of one entry (spans are in that string, before masking)."""

    id: str
    entry_id: str
    path: tuple[str | int, ...]
    start: int
    end: int
    kind: str
    fingerprint: str
    before: str
    secret: str
    after: str
    #: the hit is in the key of the mapping entry at ``path`` (not in its value): masking renames the key
    in_key: bool = False


def mask_for(hit: Hit) -> str:
    """The text that replaces a masked hit: names the detector, never contains any of the secret."""
    return f"[REDACTED: {hit.kind}]"


def _mask_kind(kind: str) -> str:
    return f"[REDACTED: {kind}]"


def hit_id(entry_id: str, kind: str, secret: str) -> str:
    """Stable id of a hit: the same secret found by the same detector in the same entry always gets it."""
    return hashlib.sha256(f"{entry_id}\0{kind}\0{secret}".encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def redaction_record(hits: Iterable[Hit], unmasked: Collection[str] = ()) -> list[dict[str, str]]:
    """What was masked, for storing with a share link: ``{id, entry_id, kind, fingerprint}`` per hit id."""
    seen: set[str] = set()
    record = []
    for hit in hits:
        if hit.id in unmasked or hit.id in seen:
            continue
        seen.add(hit.id)
        record.append(
            {"id": hit.id, "entry_id": hit.entry_id, "kind": hit.kind, "fingerprint": hit.fingerprint}
        )
    return record


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


def _looks_random(token: str) -> bool:
    """Has letters and digits, as generated keys do (filters words and long identifiers behind a prefix)."""
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


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

# -- private-key blocks --------------------------------------------------------------------------------------

_PEM_BEGIN = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK)?-----|---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"
)
_PUTTY = re.compile(r"PuTTY-User-Key-File-[0-9]+:")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:,\-\s]++|\\[nr])*+")  # for a block whose END line is missing
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{16,}")
MAX_KEY_BLOCK = 64_000


def _private_key_spans(s: str) -> Iterator[tuple[int, int]]:
    """Whole private-key blocks, BEGIN line to END line (or to the end of the key material when cut off)."""
    pos = 0
    next_end = -2  # position of the next END marker at or after `pos` (-1: none), found once per marker
    while (m := _PEM_BEGIN.search(s, pos)) is not None:
        if next_end != -1 and next_end < m.end():
            next_end = s.find("-----END ", m.end())
            if next_end == -1:
                next_end = s.find("---- END ", m.end())
        if next_end != -1 and next_end - m.end() <= MAX_KEY_BLOCK:
            close = s.find("-----", next_end + 9, next_end + 200)
            close2 = s.find("----", next_end + 9, next_end + 200)
            end = close + 5 if close != -1 else (close2 + 4 if close2 != -1 else next_end + 9)
        else:  # truncated output: mask everything that still looks like key material
            end = _PEM_BODY.match(s, m.end(), m.end() + MAX_KEY_BLOCK).end()  # type: ignore[union-attr]
        # markers inside this region end at the same place: scan on after it (linear on hostile input)
        pos = max(end, m.end())
        material = _KEY_MATERIAL.finditer(s, m.end(), end)
        if next(material, None) is not None and next(material, None) is not None:
            yield m.start(), end  # a marker mentioned in prose, with no key after it, is no hit
    pos = 0
    while (m := _PUTTY.search(s, pos)) is not None:
        mac = s.find("Private-MAC:", m.end(), m.end() + MAX_KEY_BLOCK)
        if mac == -1:
            end = _PEM_BODY.match(s, m.end(), m.end() + MAX_KEY_BLOCK).end()  # type: ignore[union-attr]
        else:
            nl = s.find("\n", mac)
            end = len(s) if nl == -1 else nl
        pos = max(end, m.end())
        yield m.start(), end


_PUBLIC_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*(?:CERTIFICATE|PUBLIC KEY)(?: [A-Z]+)*)-----")


def _public_blocks(s: str) -> list[tuple[int, int]]:
    """Certificates and public keys: long base64 lines that are meant to be shared."""
    blocks = []
    for m in _PUBLIC_BEGIN.finditer(s):
        end = s.find("-----END", m.end(), m.end() + MAX_KEY_BLOCK)
        blocks.append((m.end(), len(s) if end == -1 else end))
    return blocks


def _inside(blocks: list[tuple[int, int]], pos: int) -> bool:
    return any(lo <= pos < hi for lo, hi in blocks)


# -- detectors that need context: lines holding a secret-sounding word ---------------------------------------

# Searched in the lower-cased text (`re` is ~7x faster without IGNORECASE).
# No capturing groups: they stop `re` from skipping ahead by first character (8x slower).
_TRIGGER = re.compile(r"pass|pwd|secret|token|key|auth|credential|private|dsn|salt|aws|--user|-u ")
_TRIGGER_GROUP = {
    "pass": 1,
    "pwd": 1,
    "secret": 2,
    "token": 3,
    "key": 4,
    "auth": 5,
    "credential": 6,
    "private": 6,
    "dsn": 6,
    "salt": 6,
    "aws": 7,
    "--user": 8,
    "-u ": 8,
}

_SECRET_NAME = re.compile(
    r"pass(?:wd|word|phrase)?(?![a-z])|pwd|secret|token|api_?key|apikey|auth(?!or)|credential|private_?key"
    r"|access_?key|client_?key|session_?key|signing_?key|encryption_?key|master_?key|_key$|^key$|dsn$|salt$",
    re.IGNORECASE,
)
# Key names that contain a secret word but hold configuration, not the secret.
_NOT_SECRET_NAME = re.compile(
    r"(?:_|^)(?:url|uri|endpoint|host|hostname|port|path|file|dir|expiry|expires?|expiration|ttl|timeout|length"
    r"|len|enabled|disabled|enable|type|name|id|user|username|email|region|version|header|prefix|mode|method"
    r"|provider|scopes?|audience|issuer|algorithm|algo|count|limit|max|min|size|format|field|policy|rotation"
    r"|days|hours|seconds|required|cache)$|^(?:max|min|num|n)_",
    re.IGNORECASE,
)
_ENV_LINE = re.compile(
    r"[ \t]*(?:export[ \t]+|set[ \t]+|setx[ \t]+|\$env:|-e[ \t]+)?"
    r"([A-Za-z_][A-Za-z0-9_.\-]*)([ \t]*)=(?![=~])"
    r"([ \t]*)([^\n]*)"
)
_COLON_LINE = re.compile(r"[ \t\-]*[\"']?([A-Za-z_][A-Za-z0-9_.\-]*)[\"']?[ \t]*:[ \t]+([^\s\"'#]+)[ \t]*$")
_AUTH_HEADER = re.compile(
    r"(?i:proxy-)?(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?i:bearer|basic|token|digest|bot|apikey|key|sso-key|negotiate)[ \t]+)?([^\s\"'`,;@]{8,})"
)
_KEY_HEADER = re.compile(
    r"(?i:x-api-key|api-key|apikey|x-auth-token|x-access-token|private-token|x-goog-api-key|anthropic-api-key"
    r"|openai-api-key|x-api-token|x-secret)[\"']?[ \t]*[:=][ \t]*[\"']?([^\s\"'`,;@]{8,})"
)
_CLI_FLAG = re.compile(
    r"(?<![\w-])--?(?i:password|passwd|pass|token|api-key|apikey|api_key|secret|client-secret|auth-token"
    r"|access-token|private-key-password)(?:=|[ \t]+)[\"'`]?([^\s\"'`@]{4,})"
)
_INLINE_ASSIGN = re.compile(
    r"(?i:[a-z0-9_.\-]*(?:token|secret|passw(?:or)?d|pwd|api_?key|apikey|access_?key|auth)[a-z0-9_\-]*)"
    r"=([^\s&\"',;<>()]{8,})"
)
_CONN_PASSWORD = re.compile(r"(?:^|[;\s\"'])(?i:password|pwd)=([^;\"'\s]{3,})")
_CURL_USER = re.compile(r"(?:^|\s)(?:-u|--user)[ \t]+[\"']?[^\s:\"']+:([^\s\"'@]{3,})(?=[\s\"']|$)")
_AWS_CONTEXT = AWSKeyDetector.denylist[1]
_KEYWORD_REGEXES = tuple(ds_keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items())

_ENV_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_PLACEHOLDER_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "secret",
        "changeme",
        "token",
        "example",
        "placeholder",
        "dummy",
        "redacted",
    }
)
_NULLISH = frozenset({"none", "null", "nil", "true", "false", "undefined", "empty", "required", "optional"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+")
_URL_NO_CREDS = re.compile(r"[a-z][a-z0-9+.\-]*://[^@\s]*", re.IGNORECASE)


def _is_placeholder(value: str) -> bool:
    """Template references, null-likes, masks and repeated characters: nothing to hide."""
    if len(value) < 3 or value.lower() in _NULLISH:
        return True
    if "REDACTED" in value or "..." in value or "\u2026" in value or len(set(value)) <= 2:
        return True
    lower = value.lower()
    if lower in _PLACEHOLDER_WORDS or lower.startswith("your"):
        return True
    if lower.startswith("my") and any(w in lower for w in ("pass", "secret", "token", "key")):
        return True  # --password=mypassword in documentation
    if value[0] in "$%" or value.startswith(("{{", "<", "[", "{")) or is_templated_secret(value):
        return True
    return is_sequential_string(value)


def _strip_value(value: str) -> tuple[int, int]:
    """The span of a config value inside ``value``: quotes, trailing comments and separators removed."""
    lo, hi = 0, len(value)
    while hi > lo and value[hi - 1] in " \t\r;,":
        hi -= 1
    if hi - lo >= 2 and value[lo] in "\"'`" and value.find(value[lo], lo + 1, hi) != -1:
        q = value[lo]
        return lo + 1, value.find(q, lo + 1, hi)
    hash_at = value.find(" #", lo, hi)
    if hash_at != -1:
        hi = hash_at
        while hi > lo and value[hi - 1] in " \t":
            hi -= 1
    return lo, hi


def _env_value_ok(key: str, value: str, code_style: bool) -> bool:
    if _is_placeholder(value) or len(value) < 4:
        return False
    if any(c in value for c in "()[]") or value.startswith(("=", ">", "<", "!")):
        return False
    if value.isdigit() and len(value) < 8:
        return False
    if _DOTTED.fullmatch(value) and not any(c.isdigit() for c in value):
        return False  # settings.SECRET_KEY, process.env.TOKEN, os.environ
    if _URL_NO_CREDS.fullmatch(value):
        return False  # a URL with credentials is masked by the URL detector
    if code_style and _IDENT.fullmatch(value) and not any(c.isdigit() for c in value):
        return False  # `token = make_token` in code is a reference, not a literal
    if _ENV_NAME.fullmatch(value) or value.lower() in _PLACEHOLDER_WORDS:
        return False  # API_KEY=OTHER_NAME, PASSWORD=changeme
    return value.lower() != key.lower()


def _secret_key_name(key: str) -> bool:
    return bool(_SECRET_NAME.search(key)) and not _NOT_SECRET_NAME.search(key)


def _plausible_token(value: str) -> bool:
    """A single-token value after `Key: ` that looks generated rather than a word of prose."""
    if len(value) < 8 or _is_placeholder(value) or value.isalpha() and value.islower():
        return False
    return _looks_random(value) or any(c in value for c in "+/=_-") and not value.isalpha()


# -- high-entropy tokens ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}={0,2}")
_HEXISH = re.compile(r"[0-9a-fA-F\-]+={0,2}")
_NON_SECRET_PREFIXES = (
    "sha1-",
    "sha256-",
    "sha384-",
    "sha512-",
    "toolu_",
    "srvtoolu_",
    "call_",
    "msg_",
    "chatcmpl-",
    "resp_",
    "req_",
    "rs_",
    "fc_",
    "cus_",
    "ch_",
    "pi_",
    "evt_",
    "sub_",
    "price_",
    "prod_",
    "file-",
    "file_",
    "asst_",
    "thread_",
    "run_",
    "batch_",
    "AAAAB3NzaC1",  # ssh public keys (ssh-rsa, ssh-dss)
    "AAAAC3NzaC1",
    "AAAAE2VjZHNh",
    "LS0tLS1CRUdJTi",  # base64 PEM: the private-key rule decides; certificates are public
)
_WORD = re.compile(r"[a-z]{3,}|[A-Z][a-z]{2,}(?:[A-Z][a-z]{2,})*")
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
_ENTROPY = Base64HighEntropyString()


def _class_switches(token: str) -> int:
    prev = ""
    switches = 0
    for c in token:
        cls = "u" if c.isupper() else "l" if c.islower() else "d" if c.isdigit() else "o"
        if cls != prev:
            switches += 1
            prev = cls
    return switches


def _high_entropy(s: str, start: int, token: str) -> bool:
    n = len(token)
    if n > MAX_TOKEN or _HEXISH.fullmatch(token) or token.startswith(_NON_SECRET_PREFIXES):
        return False
    if s.endswith(("base64,", "blob:sha256:", "h1:", "sha256:", "sha512:", "sha384:"), 0, start):
        return False  # data URLs, go.sum and other content hashes
    if token[0] == "/" or token.count("/") >= 2 and any(_WORD.fullmatch(seg) for seg in token.split("/")):
        return False  # a file path
    if not (any(c.isdigit() for c in token) and any(c.isupper() for c in token)):
        return False
    if not any(c.islower() for c in token):
        return False
    # Random base62/64 changes character class at ~60% of characters; camelCase and paths far less often.
    if _class_switches(token) < 0.38 * n:
        return False
    if sum(len(w) for w in _CAMEL_WORD.findall(token)) * 2 >= n:
        return False  # mostly words: Base64HighEntropyString, getUserById2
    if is_sequential_string(token):
        return False
    return _ENTROPY.calculate_shannon_entropy(token) >= 0.82 * math.log2(min(n, 64))


# -- the scanner ---------------------------------------------------------------------------------------------

_Span = tuple[int, int, str, int]  # start, end, kind, priority (lower wins when spans overlap)


class Redactor:
    """Finds secrets in entry objects and produces masked copies. Safe to share between threads."""

    def __init__(self, team_strings: Sequence[str] = ()) -> None:
        unique = {t for t in team_strings if isinstance(t, str) and len(t.strip()) >= MIN_TEAM_STRING}
        # longest first, so a team string containing another is masked whole
        self.team_strings: tuple[str, ...] = tuple(sorted(unique, key=lambda t: (-len(t), t)))

    # -- public ----------------------------------------------------------------------------------------------

    def scan(self, entry: Mapping[str, Any]) -> list[Hit]:
        """All hits in one entry object, in document order; overlapping detections are merged into one hit."""
        if not isinstance(entry, Mapping):
            return []
        raw_id = entry.get("id")
        entry_id = raw_id if isinstance(raw_id, str) else ("" if raw_id is None else str(raw_id))
        hits: list[Hit] = []
        for path, s, in_key in _strings(entry):
            spans = self.find_spans(s)
            if spans:
                hits.extend(_hits_for(entry_id, path, s, spans, in_key))
        return hits

    def redact(
        self,
        entry: Mapping[str, Any],
        hits: Sequence[Hit] | None = None,
        unmasked: Collection[str] = (),
    ) -> dict[str, Any]:
        """A deep copy of entry with opaque payloads dropped and every hit whose id is not in `unmasked`
        replaced by mask_for(hit); hits=None scans first."""
        if hits is None:
            hits = self.scan(entry)
        out = drop_opaque(entry)
        by_path: dict[tuple[str | int, ...], list[Hit]] = {}
        in_keys: dict[tuple[str | int, ...], list[Hit]] = {}
        for hit in hits:
            if hit.id not in unmasked and hit.secret:
                (in_keys if hit.in_key else by_path).setdefault(hit.path, []).append(hit)
        for path, path_hits in by_path.items():
            parent, key = _resolve(out, path)
            if parent is None:
                continue
            s = parent[key]
            if not isinstance(s, str):
                continue
            parent[key] = _masked(s, path_hits)
        # Keys last, deepest first: renaming a key changes the paths below it, never those above.
        for path in sorted(in_keys, key=len, reverse=True):
            parent, key = _resolve(out, path)
            if isinstance(parent, dict) and isinstance(key, str):
                _rename_key(parent, key, _masked(key, in_keys[path]))
        return out

    # -- detection on one string -----------------------------------------------------------------------------

    def find_spans(self, s: str) -> list[_Span]:
        """Merged, sorted (start, end, kind, priority) spans of secrets in one string."""
        spans: list[_Span] = []
        for team in self.team_strings:
            pos = s.find(team)
            while pos != -1:
                spans.append((pos, pos + len(team), "Team secret", 0))
                pos = s.find(team, pos + len(team))
        if len(s) < 8:
            return _merge(spans)
        for start, end in _private_key_spans(s):
            spans.append((start, end, "Private key", 0))
        for rule in _KNOWN:
            for m in rule.pattern.finditer(s):
                start, end = _group_span(m, rule.group)
                if start >= end:
                    continue
                if rule.confirm is not None:
                    confirmed = rule.confirm(s, start, end)
                    if confirmed is None:
                        continue
                    start, end = confirmed
                if rule.boundary and start > 0 and s[start - 1] in _TOKEN_CHARS:
                    continue  # a known prefix inside a longer word ("task-ant-...")
                if rule.check is not None and not rule.check(s[start:end]):
                    continue
                spans.append((start, end, rule.kind, rule.priority))
        _context_spans(s, spans)
        public = _public_blocks(s)
        for m in _TOKEN.finditer(s):
            if _high_entropy(s, m.start(), m.group()) and not _inside(public, m.start()):
                spans.append((m.start(), m.end(), "High-entropy string", 9))
        return _merge(spans)


def _masked(s: str, hits: Sequence[Hit]) -> str:
    """``s`` with every hit's span replaced by its mask."""
    leftovers = []
    for hit in sorted(hits, key=lambda h: h.start, reverse=True):
        if 0 <= hit.start <= hit.end <= len(s) and s[hit.start : hit.end] == hit.secret:
            s = s[: hit.start] + mask_for(hit) + s[hit.end :]
        else:  # stale span (hits from another scan): mask the text wherever it is
            leftovers.append(hit)
    for hit in leftovers:
        s = s.replace(hit.secret, mask_for(hit))
    return s


def _rename_key(mapping: dict[str, Any], old: str, new: str) -> None:
    """Rename a key in place, keeping the order; a masked key that collides with another gets a number."""
    if new == old:
        return
    candidate, n = new, 1
    while candidate in mapping:
        n += 1
        candidate = f"{new} ({n})"
    items = list(mapping.items())
    mapping.clear()
    for k, v in items:
        mapping[candidate if k == old else k] = v


def _group_span(m: re.Match[str], group: int | None) -> tuple[int, int]:
    if group is not None:
        return m.span(group)
    if m.re.groups:
        for g in range(1, m.re.groups + 1):
            if m.group(g):
                return m.span(g)
    return m.span()


def _context_spans(s: str, spans: list[_Span]) -> None:
    """Secrets recognised by what surrounds them: env lines, headers, flags, keyword assignments.

    Only lines holding a trigger word are examined, and only the rules that word can start.
    """
    low = s.lower()
    env_checked = -1
    pos = 0
    n = len(s)
    line_start = line_end = -1
    covered: dict[int, int] = {}  # trigger group -> end of the last window its rules ran on
    while True:
        m = _TRIGGER.search(low, pos)
        if m is None:
            return
        pos = m.end()
        if m.start() >= line_end:
            line_start = s.rfind("\n", 0, m.start()) + 1
            line_end = s.find("\n", m.start())
            if line_end == -1:
                line_end = n
            covered.clear()
        if line_start != env_checked and m.start() - line_start <= 200:
            env_checked = line_start
            _line_rules(s, line_start, line_end, spans)
        group = _TRIGGER_GROUP[m.group()]
        if m.end() + 64 <= covered.get(group, -1):
            continue  # a dense line: the last window of this group already holds this trigger and its value
        lo = max(line_start, m.start() - 40)
        hi = min(line_end, m.end() + 300)
        covered[group] = hi
        window = s[lo:hi]
        for pattern, kind, prio in _WINDOW_RULES[group]:
            for wm in pattern.finditer(window):
                start, end = lo + wm.start(1), lo + wm.end(1)
                if end == hi and hi < line_end:  # the value runs past the window: take the rest of its token
                    stop = min(line_end, start + MAX_VALUE)
                    while end < stop and not s[end].isspace() and s[end] not in "\"',;":
                        end += 1
                value = s[start:end]
                if kind in _HEADER_KINDS and not _header_value_ok(value):
                    continue
                inline = kind == "Secret assignment"  # `f(token=make_token)` is code
                if kind not in _HEADER_KINDS and not _env_value_ok("password", value, code_style=inline):
                    continue
                if inline and not _looks_random(value):
                    continue
                spans.append((start, end, kind, prio))
        if group <= _KEYWORD_GROUPS and ("'" in window or '"' in window or "`" in window):
            for pattern, g in _KEYWORD_REGEXES:
                for wm in pattern.finditer(window):
                    start, end = wm.span(g)
                    value = window[start:end]
                    if len(value) < 4 or _is_placeholder(value) or not _keyword_value_ok(value):
                        continue
                    spans.append((lo + start, lo + end, "Secret keyword", 6))


def _header_value_ok(value: str) -> bool:
    if not _env_value_ok("authorization", value, code_style=True):
        return False  # `apiKey = process.env.OPENAI_API_KEY`
    return _looks_random(value) or len(value) >= 16


def _keyword_value_ok(value: str) -> bool:
    # detect-secrets' keyword patterns also match `password = "" + x`, "%s" formats, and f-string holes
    if _ENV_NAME.fullmatch(value):
        return False  # "apiKey": "OPENAI_API_KEY" names an environment variable
    return not any(c in value for c in "{}%") and value.strip() == value


_AUTH = (_AUTH_HEADER, "Authorization header", 3)
_KEYH = (_KEY_HEADER, "API key header", 3)
_FLAG = (_CLI_FLAG, "Password in command", 4)
_CONN = (_CONN_PASSWORD, "Password in connection string", 4)
_INLINE = (_INLINE_ASSIGN, "Secret assignment", 5)
# Rules per trigger group (see _TRIGGER); groups up to _KEYWORD_GROUPS also run the keyword patterns.
_WINDOW_RULES: dict[int, tuple[tuple[re.Pattern[str], str, int], ...]] = {
    0: (),
    1: (_FLAG, _CONN, _INLINE),  # pass, pwd
    2: (_FLAG, _KEYH, _INLINE),  # secret
    3: (_FLAG, _KEYH, _INLINE),  # token
    4: (_KEYH, _FLAG, _INLINE),  # key
    5: (_AUTH, _KEYH, _FLAG, _INLINE),  # auth
    6: (),  # credential, private, dsn, salt
    7: ((_AWS_CONTEXT, "AWS secret key", 1),),  # aws
    8: ((_CURL_USER, "Password in command", 4),),  # curl -u user:pass
}
_KEYWORD_GROUPS = 6

_HEADER_KINDS = frozenset({"Authorization header", "API key header"})


def _line_rules(s: str, line_start: int, line_end: int, spans: list[_Span]) -> None:
    """`KEY=value` (.env, shell exports, ini) and `key: value` (YAML) lines whose key names a secret."""
    cm = _COLON_LINE.match(s, line_start, line_end)
    if cm and _secret_key_name(cm.group(1)):
        value = cm.group(2).rstrip(",;")
        if _plausible_token(value) and _env_value_ok(cm.group(1), value, code_style=True):
            spans.append((cm.start(2), cm.start(2) + len(value), ".env value", 5))
    m = _ENV_LINE.match(s, line_start, line_end)
    if m is None or not _secret_key_name(m.group(1)):
        return
    key = m.group(1)
    raw_start = m.start(4)
    raw = m.group(4)
    lo, hi = _strip_value(raw)
    value = raw[lo:hi]
    quoted = lo > 0
    if not quoted:  # `PGPASSWORD=x psql ...`: an unquoted value ends at the first blank
        blank = next((i for i, c in enumerate(value) if c.isspace()), len(value))
        value = value[:blank]
        hi = lo + blank
    # a lower-case key is code (`secret=secret_value`); `DB_PASSWORD=x` is an env file
    if _env_value_ok(key, value, code_style=not key.isupper() and not quoted):
        spans.append((raw_start + lo, raw_start + hi, ".env value", 5))


def _merge(spans: list[_Span]) -> list[_Span]:
    if len(spans) < 2:
        return spans
    spans.sort()
    merged = [spans[0]]
    for start, end, kind, prio in spans[1:]:
        m_start, m_end, m_kind, m_prio = merged[-1]
        if start < m_end:
            if prio < m_prio:
                m_kind, m_prio = kind, prio
            merged[-1] = (m_start, max(end, m_end), m_kind, m_prio)
        else:
            merged.append((start, end, kind, prio))
    return merged


def _hits_for(
    entry_id: str, path: tuple[str | int, ...], s: str, spans: list[_Span], in_key: bool = False
) -> Iterator[Hit]:
    for i, (start, end, kind, _prio) in enumerate(spans):
        secret = s[start:end]
        yield Hit(
            id=hit_id(entry_id, kind, secret),
            entry_id=entry_id,
            path=path,
            start=start,
            end=end,
            kind=kind,
            fingerprint=_fingerprint(secret),
            before=_before(s, spans, i),
            secret=secret,
            after=_after(s, spans, i),
            in_key=in_key,
        )


def _before(s: str, spans: list[_Span], i: int) -> str:
    """Up to CONTEXT characters before span i, with earlier secrets shown masked."""
    lo = max(0, spans[i][0] - CONTEXT)
    parts = []
    pos = spans[i][0]
    j = i - 1
    while j >= 0 and spans[j][1] > lo:
        parts.append(s[spans[j][1] : pos])
        parts.append(_mask_kind(spans[j][2]))
        pos = spans[j][0]
        j -= 1
    if pos > lo:
        parts.append(s[lo:pos])
    return "".join(reversed(parts))


def _after(s: str, spans: list[_Span], i: int) -> str:
    hi = min(len(s), spans[i][1] + CONTEXT)
    parts = []
    pos = spans[i][1]
    j = i + 1
    while j < len(spans) and spans[j][0] < hi:
        parts.append(s[pos : spans[j][0]])
        parts.append(_mask_kind(spans[j][2]))
        pos = spans[j][1]
        j += 1
    if pos < hi:
        parts.append(s[pos:hi])
    return "".join(parts)


# -- walking and copying entries -----------------------------------------------------------------------------


def _materialize(link: Any) -> tuple[str | int, ...]:
    """A path from its (key, parent) links, built only for yielded strings: deep nesting stays linear."""
    out = []
    while link is not None:
        out.append(link[0])
        link = link[1]
    return tuple(reversed(out))


def _is_image(obj: Mapping[Any, Any]) -> bool:
    mime = obj.get("mimeType")
    return obj.get("type") in ("image", "image_url") or (isinstance(mime, str) and mime.startswith("image/"))


def _strings(entry: Mapping[str, Any]) -> Iterator[tuple[tuple[str | int, ...], str, bool]]:
    """Every scannable string of an entry with its path and whether it is a key (then the path leads to the
    value under it), in document order (iterative: no depth limit). Keys are strings a share shows too."""
    stack: list[tuple[Any, Any, bool | None]] = [(entry, None, False)]
    seen: set[int] = set()
    while stack:
        obj, link, free = stack.pop()
        if free is None:  # a key
            yield _materialize(link), obj, True
        elif isinstance(obj, str):
            yield _materialize(link), obj, False
        elif isinstance(obj, Mapping):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            image = _is_image(obj)
            kind = obj.get("type")
            children: list[tuple[Any, Any, bool | None]] = []
            for key, value in obj.items():
                if key in OPAQUE_KEYS:
                    continue
                if isinstance(key, str) and (free or key not in SCHEMA_KEYS):
                    children.append((key, (key, link), None))
                if not free and key in STRUCTURAL_KEYS:
                    continue
                if key == "data" and (image or kind in _REDACTED_THINKING_TYPES):
                    continue
                if key == "signature" and kind in _THINKING_TYPES:
                    continue
                children.append((value, (key, link), free or key == "arguments"))
            stack.extend(reversed(children))
        elif isinstance(obj, list | tuple):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            stack.extend((obj[i], (i, link), free) for i in range(len(obj) - 1, -1, -1))


def _resolve(root: Any, path: tuple[str | int, ...]) -> tuple[Any, Any]:
    node = root
    for key in path[:-1]:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None, None
    if not path:
        return None, None
    key = path[-1]
    try:
        node[key]
    except (KeyError, IndexError, TypeError):
        return None, None
    return node, key


def _shell(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, list | tuple):
        return []
    return value


def drop_opaque(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy without encrypted reasoning and provider replay payloads.

    Drops ``thinkingSignature``, ``thoughtSignature``, ``textSignature``, ``providerPayload``,
    ``encrypted_content`` and ``preserveData.openaiRemoteCompaction`` wherever they are, a thinking block's
    raw ``signature``, and empties the ``data`` of redacted-thinking blocks (the block stays, so content
    indexes and the entry's shape are unchanged). Everything else, including id/parentId/type, is copied.
    """
    root: Any = _shell(entry)
    if root is entry:  # not a container (hostile input): nothing to copy
        return cast(dict[str, Any], root)
    memo: dict[int, Any] = {id(entry): root}
    stack: list[tuple[Any, Any]] = [(entry, root)]
    while stack:
        src, dst = stack.pop()
        if isinstance(src, Mapping):
            kind = src.get("type")
            for key, value in src.items():
                if key in OPAQUE_KEYS or (key == "signature" and kind in _THINKING_TYPES):
                    continue
                if key == "data" and kind in _REDACTED_THINKING_TYPES:
                    dst[key] = ""
                    continue
                dst[key] = _copy_child(value, memo, stack)
        else:
            for value in src:
                dst.append(_copy_child(value, memo, stack))
    return root  # type: ignore[no-any-return]


def _copy_child(value: Any, memo: dict[int, Any], stack: list[tuple[Any, Any]]) -> Any:
    child = _shell(value)
    if child is value:
        return value
    if id(value) in memo:
        return memo[id(value)]
    memo[id(value)] = child
    stack.append((value, child))
    return child


def scan_entries(entries: Iterable[Mapping[str, Any]], team_strings: Sequence[str] = ()) -> list[Hit]:
    """Hits of every entry, in order (one Redactor for all)."""
    redactor = Redactor(team_strings)
    hits: list[Hit] = []
    for entry in entries:
        hits.extend(redactor.scan(entry))
    return hits
