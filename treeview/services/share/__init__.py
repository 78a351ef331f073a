"""Share links: a read-only view of one branch of a session for people without an account.

A token is ``lookup`` (random, :data:`LOOKUP_CHARS` characters, for the index) followed by a secret part of
256 bits; the database keeps the lookup and the sha256 of the whole token, and the hash is compared in
constant time. Nothing in a token is derived from an id. What a link serves passes the redaction engine
(``treeview.redaction``): every hit not unmasked by the sharer is masked, opaque provider payloads are
dropped, and what was masked at creation is recorded on the link (kind and fingerprint, never the text).

Modules: ``tokens`` (limits, errors, tokens), ``branch`` (the shared branch and its entries),
``redacting``, ``creating`` (and the share form's preview), ``presenting`` (resolving a token) and
``managing`` (the site-wide switch, revoking, a user's links).
"""

# share_scan builds its redactor as ``share.Redactor``.
from treeview.redaction import Redactor as Redactor
from treeview.services.share.branch import (
    BranchEntry,
    branch_path,
    chunks,
    link_path,
    load_entries,
    load_rows,
    shown_ids,
)
from treeview.services.share.creating import create_link, preview
from treeview.services.share.managing import (
    grant_removed,
    links_for,
    may_revoke,
    membership_removed,
    revoke,
    set_sharing,
    sharing_enabled,
    user_deleted,
    user_saved,
)
from treeview.services.share.presenting import (
    count_view,
    creator_may_share,
    current_state,
    link_state,
    resolve,
)
from treeview.services.share.redacting import (
    redact_entries,
    redact_value,
    redacted_batches,
    redactor_for,
    scan_branch,
    team_strings,
)
from treeview.services.share.tokens import (
    DEFAULT_EXPIRY,
    LOOKUP_CHARS,
    MAX_EXPIRY,
    MIN_EXPIRY,
    NOTE_MAX,
    QUERY_MAX,
    TOKEN_CHARS,
    ShareError,
    ShareRefused,
    hash_token,
)

__all__ = [
    "DEFAULT_EXPIRY",
    "LOOKUP_CHARS",
    "MAX_EXPIRY",
    "MIN_EXPIRY",
    "NOTE_MAX",
    "QUERY_MAX",
    "TOKEN_CHARS",
    "BranchEntry",
    "ShareError",
    "ShareRefused",
    "branch_path",
    "chunks",
    "count_view",
    "create_link",
    "creator_may_share",
    "current_state",
    "grant_removed",
    "hash_token",
    "link_path",
    "link_state",
    "links_for",
    "load_entries",
    "load_rows",
    "may_revoke",
    "membership_removed",
    "preview",
    "redact_entries",
    "redact_value",
    "redacted_batches",
    "redactor_for",
    "resolve",
    "revoke",
    "scan_branch",
    "set_sharing",
    "sharing_enabled",
    "shown_ids",
    "team_strings",
    "user_deleted",
    "user_saved",
]
