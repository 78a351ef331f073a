"""``/branch``: a new session file from a user message, as the original's ``branch``."""

from __future__ import annotations

from collections.abc import Mapping

from treeview.session.hooks import (
    SESSION_BEFORE_BRANCH,
    HookRunner,
    SessionBeforeBranchEvent,
    SessionBranchEvent,
    result_field,
)
from treeview.session.navigation.planning import extract_user_message_text
from treeview.session.navigation.results import BranchResult, InvalidBranchEntry
from treeview.session.session_manager import SessionManager

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
