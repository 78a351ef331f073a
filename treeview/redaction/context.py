"""Detectors that need context: lines holding a secret-sounding word (env lines, headers, flags)."""

from __future__ import annotations

import re

from detect_secrets.filters.heuristic import is_sequential_string, is_templated_secret
from detect_secrets.plugins import keyword as ds_keyword
from detect_secrets.plugins.aws import AWSKeyDetector

from treeview.redaction.hits import MAX_VALUE, _Span

# -- detectors that need context: lines holding a secret-sounding word ---------------------------------------


def _looks_random(token: str) -> bool:
    """Has letters and digits, as generated keys do (filters words and long identifiers behind a prefix)."""
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


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
