"""Unquoted high-entropy tokens: detect-secrets' Shannon entropy plus shape filters."""

from __future__ import annotations

import math
import re

from detect_secrets.filters.heuristic import is_sequential_string
from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

from treeview.redaction.hits import MAX_TOKEN

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
