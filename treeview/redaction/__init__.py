"""Redaction for share links: find secrets in session entries, mask them, drop opaque provider payloads.

Pure Python (no Django). Detectors, most specific first:

* known token formats, using detect-secrets' plugin patterns (AWS, GitHub, GitLab, Slack, Stripe, OpenAI,
  SendGrid, Twilio, npm, PyPI, Square, Discord, Telegram, Mailchimp, Azure storage) plus formats it lacks
  (GitHub fine-grained ``github_pat_``, Anthropic ``sk-ant-``, OpenAI project keys, Google, Hugging Face ...);
* private-key blocks (PEM, OpenSSH, PGP, PuTTY), whole block as one hit, also JSON-escaped (``\n``) and
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

from treeview.redaction.entries import drop_opaque
from treeview.redaction.hits import RULES_VERSION, Hit, mask_for, redaction_record
from treeview.redaction.scan import Redactor, scan_entries

__all__ = ["RULES_VERSION", "Hit", "Redactor", "drop_opaque", "mask_for", "redaction_record", "scan_entries"]
