"""Moving around the session tree (spec §13) and ``/branch`` (spec §14).

Ported from omp v15 ``AgentSession.navigateTree`` / ``AgentSession.branch`` and
``collectEntriesForBranchSummary``. The agent-only steps of the original (replacing the agent's messages,
MCP selections, todo phases, provider sessions) are the caller's business; everything that decides what
happens to the session file lives here.

A tree move never writes anything unless a branch summary is hung at the destination, and then exactly one
``branch_summary`` entry is appended. An aborted summary changes nothing.


Modules: ``results`` (errors and results), ``planning`` (pure helpers and the navigation plan), ``tree``
(``navigate_tree``) and ``branching`` (``branch_from_user_message``).
"""

from treeview.session.navigation.branching import branch_from_user_message
from treeview.session.navigation.planning import (
    NavigationSource,
    abandoned_ids,
    collect_entries_for_branch_summary,
    extract_user_message_text,
    prepare_navigation,
    user_messages_for_branching,
)
from treeview.session.navigation.results import (
    BranchResult,
    CollectResult,
    InvalidBranchEntry,
    NavigateResult,
    NavigationError,
    NavigationPlan,
    NoModelForSummary,
    UserMessageChoice,
)
from treeview.session.navigation.tree import SummaryDecision, decide_summary, navigate_tree

__all__ = [
    "BranchResult",
    "CollectResult",
    "InvalidBranchEntry",
    "NavigateResult",
    "NavigationError",
    "NavigationPlan",
    "NavigationSource",
    "NoModelForSummary",
    "SummaryDecision",
    "UserMessageChoice",
    "abandoned_ids",
    "branch_from_user_message",
    "collect_entries_for_branch_summary",
    "decide_summary",
    "extract_user_message_text",
    "navigate_tree",
    "prepare_navigation",
    "user_messages_for_branching",
]
