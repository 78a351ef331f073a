"""Pure helpers: the entries a move abandons, what a branch summary covers, and the navigation plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from treeview.session.navigation.results import CollectResult, Entry, NavigationPlan, UserMessageChoice
from treeview.session.session_manager import EntryNotFound, SessionManager

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
