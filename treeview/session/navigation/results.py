"""Errors and results of navigation and ``/branch``: plans, choices and what a move produced."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from treeview.session.context import SessionContext

Entry = dict[str, Any]


class NavigationError(RuntimeError):
    """A tree move or branch that cannot be done; ``str()`` is the original's error text."""


class NoModelForSummary(NavigationError):
    """A summary was asked for but no model (summarizer) is available."""

    def __init__(self) -> None:
        super().__init__("No model available for summarization")


class InvalidBranchEntry(NavigationError):
    """``/branch`` was given an id that is not a user message."""

    def __init__(self) -> None:
        super().__init__("Invalid entry ID for branching")


# ---------------------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class CollectResult:
    """Entries abandoned by a move (chronological) and the deepest entry both paths share."""

    entries: list[Entry]
    common_ancestor_id: str | None


@dataclass(slots=True)
class NavigationPlan:
    """What :func:`navigate_tree` would do, computed without changing anything."""

    target_id: str
    old_leaf_id: str | None
    #: Where the leaf goes: the target, or the parent of a user/custom message (None for a root).
    new_leaf_id: str | None
    #: Text to put back in the editor (user or custom message targets only).
    editor_text: str | None
    common_ancestor_id: str | None
    entries_to_summarize: list[Entry]
    #: The target is the current leaf: navigation does nothing at all.
    is_noop: bool = False
    #: The ids of ``entries_to_summarize`` (known even when the entries were not loaded).
    abandoned_ids: list[str] = field(default_factory=list)


@dataclass(slots=True)
class NavigateResult:
    """Outcome of :func:`navigate_tree` (v15 result plus the plan's ids, for callers and tests).

    ``cancelled`` is set when a hook cancelled the move or the summary was aborted (then ``aborted`` too);
    in both cases nothing changed. ``session_context`` is the context at the new leaf (None when nothing
    moved).
    """

    editor_text: str | None = None
    cancelled: bool = False
    aborted: bool = False
    summary_entry: Entry | None = None
    session_context: SessionContext | None = None
    new_leaf_id: str | None = None
    common_ancestor_id: str | None = None
    entries_to_summarize: list[Entry] = field(default_factory=list)


@dataclass(slots=True)
class UserMessageChoice:
    """One row of the ``/branch`` picker."""

    entry_id: str
    text: str


@dataclass(slots=True)
class BranchResult:
    """Outcome of :func:`branch_from_user_message`.

    ``new_session_file`` is the path of the new session (None when cancelled or in memory);
    ``skip_conversation_restore`` is a hook's request to leave the agent's messages alone.
    """

    selected_text: str
    cancelled: bool = False
    new_session_file: str | None = None
    skip_conversation_restore: bool = False
    session_context: SessionContext | None = None
