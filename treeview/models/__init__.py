"""Sessions and their entries, as imported from the agents' files.

An ``Entry`` row is one line of a session file (or one entry Arbor appended), with its exact text and the
columns the views filter, sort and search on. Rows are never updated: the file is append-only, and so is the
table (``Entry.save`` and ``EntryQuerySet.update`` refuse). Labels are label entries, resolved per target.

One module per subject: sessions.py (``AgentSession``), entries.py (``Entry``, ``ImportIssue``), teams.py,
sharing.py (grants, share links), review.py (comments, review statuses), site.py (``SiteSettings``).
"""

from treeview.models.entries import AppendOnlyError, Entry, EntryQuerySet, ImportIssue
from treeview.models.review import Comment, ReviewStatus
from treeview.models.sessions import AgentSession, SubagentKind
from treeview.models.sharing import SessionGrant, ShareLink
from treeview.models.site import SiteSettings
from treeview.models.teams import Invite, Membership, Team, TeamSecret

__all__ = [
    "AgentSession",
    "AppendOnlyError",
    "Comment",
    "Entry",
    "EntryQuerySet",
    "ImportIssue",
    "Invite",
    "Membership",
    "ReviewStatus",
    "SessionGrant",
    "ShareLink",
    "SiteSettings",
    "SubagentKind",
    "Team",
    "TeamSecret",
]
