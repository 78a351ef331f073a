"""Example extension: refuse to navigate away from a leaf you labeled.

Enable it with ``ARBOR_EXTENSIONS=treeview.contrib.keep_labeled_leaf``. A label on the entry the session
stands at marks a place to stay: ``/tree`` moves away from it are cancelled (``session_before_tree``
answers ``cancel``) until the label is cleared. Labelling moves the leaf to the new label entry (§9.1), so
"the entry the session stands at" is the leaf with the label entries at its tip skipped.
"""

from __future__ import annotations

import logging
from typing import Any

from treeview.extensions import ExtensionRegistry, HookContext, current_context
from treeview.session.hooks import SESSION_BEFORE_TREE, SessionBeforeTreeEvent, SessionBeforeTreeResult

__all__ = ["before_tree", "register", "standing_at"]

logger = logging.getLogger(__name__)


def standing_at(context: HookContext, leaf_id: str) -> tuple[str, set[str]]:
    """The entry the leaf stands for (the leaf, or the first non-label entry above it) and the label entries
    passed on the way there (moving to one of them, or to that entry, is not leaving)."""
    passed: set[str] = set()
    current = leaf_id
    while True:
        entry = context.entry(current)
        parent = entry.get("parentId") if entry is not None else None
        if entry is None or entry.get("type") != "label" or not isinstance(parent, str) or parent in passed:
            return current, passed
        passed.add(current)
        current = parent


def _moves_to_parent(entry: Any) -> bool:
    # Selecting a user or custom message puts its text back in the editor and the leaf on its parent (§13).
    if entry is None:
        return False
    message = entry.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    return entry.get("type") == "custom_message" or (entry.get("type") == "message" and role == "user")


def before_tree(event: SessionBeforeTreeEvent) -> SessionBeforeTreeResult | None:
    """Cancel the move when the old leaf is labeled; anything else is left to the other handlers."""
    context = current_context()
    old_leaf = event.preparation.old_leaf_id
    if context is None or old_leaf is None:
        return None
    at, passed = standing_at(context, old_leaf)
    label = context.label(at)
    if not label:
        return None
    target = event.preparation.target_id
    if target in passed or (target == at and not _moves_to_parent(context.entry(at))):
        return None
    logger.info("keep_labeled_leaf: not leaving %s (labeled %r) of session %s", at, label, context.session)
    return SessionBeforeTreeResult(cancel=True)


def register(runner: ExtensionRegistry) -> None:
    runner.on(SESSION_BEFORE_TREE, before_tree)
