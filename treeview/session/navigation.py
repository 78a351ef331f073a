"""Moving around the session tree (spec §13) and ``/branch`` (spec §14).

Ported from omp v15 ``AgentSession.navigateTree`` / ``AgentSession.branch`` and
``collectEntriesForBranchSummary``. The agent-only steps of the original (replacing the agent's messages,
MCP selections, todo phases, provider sessions) are the caller's business; everything that decides what
happens to the session file lives here.

A tree move never writes anything unless a branch summary is hung at the destination, and then exactly one
``branch_summary`` entry is appended. An aborted summary changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .branch_summary import (
    DEFAULT_RESERVE_TOKENS,
    AbortSignal,
    Summarizer,
    TokenCounter,
    generate_branch_summary,
)
from .context import SessionContext
from .hooks import (
    SESSION_BEFORE_BRANCH,
    SESSION_BEFORE_TREE,
    SESSION_TREE,
    HookRunner,
    SessionBeforeBranchEvent,
    SessionBeforeTreeEvent,
    SessionBranchEvent,
    SessionTreeEvent,
    TreePreparation,
    result_field,
)
from .jsonl import UNDEFINED
from .session_manager import EntryNotFound, SessionManager

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


# ---------------------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------------------


def extract_user_message_text(content: Any) -> str:
    """The text of a user (or custom) message: a string as is, text blocks joined with ``""``."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return ""


class NavigationSource(Protocol):
    """What planning a move reads: a :class:`SessionManager`, or a database-backed view of a session."""

    def get_leaf_id(self) -> str | None: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def path_ids(self, entry_id: str) -> list[str]:
        """The ids root → ``entry_id`` through parent links; ``[]`` for an unknown id."""
        ...

    def get_entries(self, entry_ids: Sequence[str]) -> list[Entry]:
        """The entries with these ids, in that order (all known)."""
        ...


def abandoned_ids(
    source: NavigationSource, old_leaf_id: str | None, target_id: str
) -> tuple[list[str], str | None]:
    """The ids a move abandons, oldest first, and the deepest entry both paths share (§13.1).

    The common ancestor is the deepest entry of the *target's* path that is also on the old path (so a
    target on the old path is its own common ancestor). The abandoned entries run from just below it to the
    old leaf, including compactions and labels. Linear in the path lengths, and the linear parts run in C
    (paths can be 100,000 entries deep).
    """
    if not old_leaf_id:
        return [], None
    old_path = source.path_ids(old_leaf_id)
    target_path = source.path_ids(target_id)
    shared = _shared_prefix(old_path, target_path)
    below = target_path[shared:]
    # In a tree nothing deeper on the target's path is on the old path; a parent cycle could make it so.
    if set(below).isdisjoint(old_path):
        return old_path[shared:], (target_path[shared - 1] if shared else None)
    common = next(filter(set(old_path).__contains__, reversed(below)))
    return old_path[old_path.index(common) + 1 :], common


def _shared_prefix(first: Sequence[str], second: Sequence[str]) -> int:
    """How many leading ids two root-first paths share, by bisection: in a tree, paths that agree at one
    depth agree above it. Whatever the links, the paths agree at the returned length - 1 (if not 0)."""
    low, high = 0, min(len(first), len(second))
    while low < high:
        middle = (low + high + 1) // 2
        if first[middle - 1] == second[middle - 1]:
            low = middle
        else:
            high = middle - 1
    return low


def collect_entries_for_branch_summary(
    source: NavigationSource, old_leaf_id: str | None, target_id: str
) -> CollectResult:
    """Entries between the old leaf and the common ancestor with ``target_id``, oldest first (§13.1)."""
    ids, common_ancestor_id = abandoned_ids(source, old_leaf_id, target_id)
    return CollectResult(source.get_entries(ids), common_ancestor_id)


SKILL_PROMPT_TYPE = "skill-prompt"


def _agent(source: Any) -> str:
    return str(getattr(source, "agent", "omp"))


def _rewinds_at_leaf(source: Any, target_id: str) -> bool:
    """oh-my-pi 18 rewinds past a user message even when it is the leaf (a turn aborted before any reply):
    the leaf goes to its parent and the text to the editor. v15 and pi treat the leaf as a no-op."""
    if _agent(source) != "omp":
        return False
    target = source.get_entry(target_id)
    message = target.get("message") if target is not None and target.get("type") == "message" else None
    return isinstance(message, Mapping) and message.get("role") == "user"


def prepare_navigation(
    source: NavigationSource, target_id: str, *, load_entries: bool = True
) -> NavigationPlan:
    """Work out a move to ``target_id`` without doing it (used by ``navigate`` previews and the CLI).

    Raises :class:`EntryNotFound` for an unknown target. Moving to the current leaf is a no-op plan. With
    ``load_entries=False`` only the abandoned ids are worked out (a move without a summary needs no more).
    """
    old_leaf_id = source.get_leaf_id()
    if target_id == old_leaf_id and not _rewinds_at_leaf(source, target_id):
        return NavigationPlan(
            target_id=target_id,
            old_leaf_id=old_leaf_id,
            new_leaf_id=old_leaf_id,
            editor_text=None,
            common_ancestor_id=target_id,
            entries_to_summarize=[],
            is_noop=True,
        )
    target = source.get_entry(target_id)
    if target is None:
        raise EntryNotFound(target_id)
    ids, common_ancestor_id = abandoned_ids(source, old_leaf_id, target_id)

    new_leaf_id: str | None
    editor_text: str | None = None
    message = target.get("message")
    if target.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "user":
        # Selecting a user message means "edit and resend it": the leaf goes to its parent.
        new_leaf_id = target.get("parentId")
        editor_text = extract_user_message_text(message.get("content"))
    elif target.get("type") == "custom_message" and not (
        _agent(source) == "omp" and target.get("customType") == SKILL_PROMPT_TYPE
    ):
        # oh-my-pi 18 lands on a skill prompt (it is the turn's request, not text to edit).
        new_leaf_id = target.get("parentId")
        editor_text = extract_user_message_text(target.get("content"))
    else:
        new_leaf_id = target_id
    return NavigationPlan(
        target_id=target_id,
        old_leaf_id=old_leaf_id,
        # A falsy parentId ("" in a hand-edited file) is a root, as in the original's null checks.
        new_leaf_id=new_leaf_id or None,
        editor_text=editor_text,
        common_ancestor_id=common_ancestor_id,
        entries_to_summarize=source.get_entries(ids) if load_entries else [],
        abandoned_ids=ids,
    )


def user_messages_for_branching(manager: SessionManager) -> list[UserMessageChoice]:
    """Every user message with non-empty text, all branches, in file order (the ``/branch`` picker)."""
    choices: list[UserMessageChoice] = []
    for entry in manager.entries:
        message = entry.get("message")
        if entry.get("type") != "message" or not isinstance(message, Mapping):
            continue
        if message.get("role") != "user" or not isinstance(entry.get("id"), str):
            continue
        text = extract_user_message_text(message.get("content"))
        if text:
            choices.append(UserMessageChoice(entry["id"], text))
    return choices


# ---------------------------------------------------------------------------------------------------------
# navigateTree
# ---------------------------------------------------------------------------------------------------------


def _hook_summary(result: Any) -> tuple[str, Any] | None:
    """The ``(summary, details)`` an extension supplied in a ``session_before_tree`` result, if any."""
    supplied = result_field(result, "summary")
    # JS truthiness: any object counts, even an empty one (it then carries no text and writes nothing).
    if supplied is None or supplied is False or supplied == "":
        return None
    text = result_field(supplied, "summary")
    details = result_field(supplied, "details", UNDEFINED)
    return (text if isinstance(text, str) else "", UNDEFINED if details is None else details)


@dataclass(slots=True)
class SummaryDecision:
    """What :func:`decide_summary` settled: cancel the move, or go on with or without a summary text."""

    cancelled: bool = False
    aborted: bool = False
    text: str | None = None
    details: Any = UNDEFINED
    from_extension: bool = False


async def decide_summary(
    plan: NavigationPlan,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    summarizer: Summarizer | None = None,
    hooks: HookRunner | None = None,
    signal: AbortSignal | None = None,
    context_window: int | None = None,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    count_tokens: TokenCounter | None = None,
) -> SummaryDecision:
    """Run ``session_before_tree`` and, if asked, the summarizer, for a planned move (§13.2 steps 3-5).

    Nothing is written: the caller applies the decision. Raises :class:`NoModelForSummary` when a summary is
    asked for without a summarizer and :class:`NavigationError` with the model's error text.
    """
    if summarize and summarizer is None:
        raise NoModelForSummary()
    signal = signal or AbortSignal()
    hook_summary: tuple[str, Any] | None = None
    if hooks is not None and hooks.has_handlers(SESSION_BEFORE_TREE):
        preparation = TreePreparation(
            target_id=plan.target_id,
            old_leaf_id=plan.old_leaf_id,
            common_ancestor_id=plan.common_ancestor_id,
            entries_to_summarize=plan.entries_to_summarize,
            user_wants_summary=summarize,
        )
        result = await hooks.emit(SessionBeforeTreeEvent(preparation=preparation, signal=signal))
        if result_field(result, "cancel"):
            return SummaryDecision(cancelled=True)
        if summarize:
            # An extension's summary counts only when the user asked for one, even for an empty branch.
            hook_summary = _hook_summary(result)

    if hook_summary is not None:
        text, details = hook_summary
        return SummaryDecision(text=text, details=details, from_extension=True)
    if not (summarize and plan.entries_to_summarize):
        return SummaryDecision()
    assert summarizer is not None
    generated = await generate_branch_summary(
        plan.entries_to_summarize,
        summarizer,
        context_window=context_window,
        reserve_tokens=reserve_tokens,
        custom_instructions=custom_instructions,
        signal=signal,
        count_tokens=count_tokens,
    )
    if generated.aborted:
        return SummaryDecision(cancelled=True, aborted=True)
    if generated.error is not None:
        raise NavigationError(generated.error)
    details = {"readFiles": generated.read_files, "modifiedFiles": generated.modified_files}
    return SummaryDecision(text=generated.summary, details=details)


async def navigate_tree(
    manager: SessionManager,
    target_id: str,
    *,
    summarize: bool = False,
    custom_instructions: str | None = None,
    summarizer: Summarizer | None = None,
    hooks: HookRunner | None = None,
    signal: AbortSignal | None = None,
    context_window: int | None = None,
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS,
    count_tokens: TokenCounter | None = None,
) -> NavigateResult:
    """Move the leaf to ``target_id``, optionally summarizing the abandoned branch (§13.2).

    ``summarizer`` stands for the session's current model; ``signal`` is what the UI aborts (Esc). Raises
    :class:`NoModelForSummary` when a summary is asked for without a summarizer, :class:`EntryNotFound` for
    an unknown target (or an orphan whose parent is missing), and :class:`NavigationError` with the model's
    error text when summarization fails.
    """
    old_leaf_id = manager.get_leaf_id()
    if target_id == old_leaf_id and not _rewinds_at_leaf(manager, target_id):
        return NavigateResult(cancelled=False, new_leaf_id=old_leaf_id, common_ancestor_id=target_id)
    if summarize and summarizer is None:
        raise NoModelForSummary()

    plan = prepare_navigation(manager, target_id)

    def outcome(**kwargs: Any) -> NavigateResult:
        return NavigateResult(
            common_ancestor_id=plan.common_ancestor_id,
            entries_to_summarize=plan.entries_to_summarize,
            **kwargs,
        )

    decision = await decide_summary(
        plan,
        summarize=summarize,
        custom_instructions=custom_instructions,
        summarizer=summarizer,
        hooks=hooks,
        signal=signal,
        context_window=context_window,
        reserve_tokens=reserve_tokens,
        count_tokens=count_tokens,
    )
    if decision.cancelled:
        return outcome(cancelled=True, aborted=decision.aborted, new_leaf_id=old_leaf_id)

    summary_entry: Entry | None = None
    summary_text = decision.text
    if summary_text:
        # The summary hangs at the destination: a sibling of a re-edited user message, or a new root.
        summary_id = manager.branch_with_summary(
            plan.new_leaf_id, summary_text, decision.details, decision.from_extension
        )
        summary_entry = manager.get_entry(summary_id)
    elif plan.new_leaf_id is None:
        manager.reset_leaf()
    else:
        manager.branch(plan.new_leaf_id)

    session_context = manager.build_session_context()
    if hooks is not None and hooks.has_handlers(SESSION_TREE):
        await hooks.emit(
            SessionTreeEvent(
                new_leaf_id=manager.get_leaf_id(),
                old_leaf_id=old_leaf_id,
                summary_entry=summary_entry,
                from_extension=decision.from_extension if summary_text else None,
            )
        )
        # Handlers may have appended entries: report the context as it is now.
        session_context = manager.build_session_context()
    return outcome(
        editor_text=plan.editor_text,
        summary_entry=summary_entry,
        session_context=session_context,
        new_leaf_id=manager.get_leaf_id(),
    )


# ---------------------------------------------------------------------------------------------------------
# /branch
# ---------------------------------------------------------------------------------------------------------


async def branch_from_user_message(
    manager: SessionManager, entry_id: str, hooks: HookRunner | None = None
) -> BranchResult:
    """Start a new session from the path before a user message (§14, ``/branch``).

    A root message gives an empty session whose ``parentSession`` is the previous file; otherwise the path
    up to the message's parent (labels re-created) becomes the new session, written at once when the
    manager persists. The selected text is returned for the editor. Raises :class:`InvalidBranchEntry`.
    """
    previous_session_file = manager.session_file
    selected = manager.get_entry(entry_id)
    message = selected.get("message") if selected is not None else None
    if (
        selected is None
        or selected.get("type") != "message"
        or not isinstance(message, Mapping)
        or message.get("role") != "user"
    ):
        raise InvalidBranchEntry()
    selected_text = extract_user_message_text(message.get("content"))

    skip_conversation_restore = False
    if hooks is not None and hooks.has_handlers(SESSION_BEFORE_BRANCH):
        result = await hooks.emit(SessionBeforeBranchEvent(entry_id=entry_id))
        if result_field(result, "cancel"):
            return BranchResult(selected_text=selected_text, cancelled=True)
        skip_conversation_restore = bool(result_field(result, "skip_conversation_restore", False))

    # Pending appends belong to the old file: write them before switching.
    manager.flush()
    parent_id = selected.get("parentId")
    if not parent_id:
        manager.new_session(parent_session=previous_session_file)
    else:
        manager.create_branched_session(parent_id)
    session_context = manager.build_session_context()

    if hooks is not None:
        await hooks.emit(SessionBranchEvent(previous_session_file=previous_session_file))
    return BranchResult(
        selected_text=selected_text,
        cancelled=False,
        new_session_file=manager.session_file,
        skip_conversation_restore=skip_conversation_restore,
        session_context=session_context,
    )
