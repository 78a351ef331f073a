"""``navigateTree``: moving the leaf, with the optional summary of the branch left (and its hooks)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from treeview.session.branch_summary import (
    DEFAULT_RESERVE_TOKENS,
    AbortSignal,
    Summarizer,
    TokenCounter,
    generate_branch_summary,
)
from treeview.session.hooks import (
    SESSION_BEFORE_TREE,
    SESSION_TREE,
    HookRunner,
    SessionBeforeTreeEvent,
    SessionTreeEvent,
    TreePreparation,
    result_field,
)
from treeview.session.jsonl import UNDEFINED
from treeview.session.navigation.planning import _rewinds_at_leaf, prepare_navigation
from treeview.session.navigation.results import (
    Entry,
    NavigateResult,
    NavigationError,
    NavigationPlan,
    NoModelForSummary,
)
from treeview.session.session_manager import SessionManager

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
