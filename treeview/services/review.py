"""Review statuses of branches: set one (mirrored into the file as a label), and read them back.

A branch is named by its leaf entry id, so a status survives a re-import of a grown or rewritten file (the
ids stay; the rows do not). A branch ends at a conversational entry (``session.branches``): the label a
status appends below the current leaf, a user's label or a bookkeeping entry (``custom`` state, a model
change) at the end of a branch does not make a new branch, and a leaf that is one stands for its nearest
conversational ancestor (:func:`branch_leaf`). A linear session is one branch. No row: unreviewed.

The mirror label (``review: approved``, ``review: needs changes``, ``review: abandoned``) is an ordinary
label entry, so pi and oh-my-pi show it in their ``/tree``; it is written only where the leaf has no label or
a previous review label (a user's own label is never replaced), and "unreviewed" clears it. When write-back
is refused (the agent's file changed since Arbor read it), the status is kept and the result says the label
was not written: the status is Arbor's own data, the label only a courtesy to the agents.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from django.db import connections, router, transaction
from django.db.models import Count, Exists, OuterRef, QuerySet

from treeview import explorer
from treeview.lru import LruCache
from treeview.models import AgentSession, Entry, ReviewStatus
from treeview.services import append
from treeview.session.agents import Agent
from treeview.session.branches import CONVERSATIONAL_TYPES, branch_anchor, is_conversational, shorten
from treeview.tree_index import row_texts_of

__all__ = [
    "LABELS",
    "REVIEWED",
    "BranchReview",
    "ReviewResult",
    "ReviewSummary",
    "branch_leaf",
    "branch_names",
    "filter_sessions",
    "is_review_label",
    "page_review",
    "review_label",
    "session_leaves",
    "set_review_status",
    "statuses_for_session",
    "summaries",
    "worded",
]

Status = ReviewStatus.Status

#: The statuses a row holds (unreviewed is the absence of a row).
REVIEWED = (Status.APPROVED, Status.NEEDS_CHANGES, Status.ABANDONED)
#: The label text each status writes into the file.
LABELS = {status.value: f"review: {status.label}" for status in REVIEWED}
_REVIEW_LABEL = re.compile(r"review: (?:approved|needs changes|abandoned)")
#: Label chains are short (a few labels in a row); a walk up one stops here whatever the data.
_MAX_LABEL_CHAIN = 10_000


# -- pure helpers --------------------------------------------------------------------------------------------


def review_label(status: str) -> str | None:
    """The label a status writes (``None``: unreviewed, which clears a review label)."""
    return LABELS.get(status)


def is_review_label(label: str | None) -> bool:
    """Is this label one a review status wrote (and so one a new status may replace)?"""
    return bool(label) and _REVIEW_LABEL.fullmatch(label or "") is not None


def _label_anchor(entry_id: str, types: Mapping[str, str], parents: Mapping[str, str | None]) -> str:
    """``entry_id``, or when it is a label or bookkeeping entry its nearest conversational ancestor
    (``entry_id`` itself when none is above: a root, a missing parent or a cycle)."""

    def lookup(current: str) -> tuple[object, str | None] | None:
        return (types[current], parents.get(current)) if current in types else None

    return branch_anchor(entry_id, lookup)


# -- writing -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReviewResult:
    """What :func:`set_review_status` did: the branch's leaf, its status, and what happened to the label."""

    leaf_id: str
    status: str
    # "written", "cleared", "unchanged", "kept" (a user's own label), "refused", "left" (may not label)
    label: str = "unchanged"
    refusal: str = ""

    @property
    def message(self) -> str:
        """One line for the page."""
        if self.label == "refused":
            return f"Status saved; the label was not written to the session: {self.refusal}"
        if self.label == "kept":
            return "Status saved; the entry keeps its own label."
        if self.label == "left":
            return "Status saved (the review label in the session is left to those who may label it)."
        return "Status saved."


def _current_label(session: AgentSession, target_id: str) -> str | None:
    """The label on ``target_id`` now: the last label entry aimed at it (an empty one cleared it)."""
    text = (
        session.entries.filter(type="label", label_target=target_id)
        .order_by("-seq")
        .values_list("label_text", flat=True)
        .first()
    )
    return text or None


def branch_leaf(session: AgentSession, entry_id: str) -> str:
    """The leaf that names the branch ending at ``entry_id``: the entry itself, or for a label or bookkeeping
    entry its nearest conversational ancestor. Raises :class:`append.UnknownEntry` for an id the session
    lacks."""
    types: dict[str, str] = {}
    parents: dict[str, str | None] = {}
    current: str | None = entry_id
    for _ in range(_MAX_LABEL_CHAIN):
        if current is None or current in types:
            break
        row = (
            session.entries.filter(entry_id=current)
            .exclude(type="session")
            .order_by("-seq")
            .values_list("type", "parent_id")
            .first()
        )
        if row is None:
            break
        types[current], parents[current] = row
        if is_conversational(row[0]):
            break
        current = row[1]
    if entry_id not in types:
        raise append.UnknownEntry(entry_id)
    return _label_anchor(entry_id, types, parents)


def set_review_status(
    session: AgentSession, leaf_id: str, status: str, user: Any, *, write_label: bool = True
) -> ReviewResult:
    """Set the review status of the branch ending at ``leaf_id`` (one transaction): the row, and the mirror
    label in the session when the leaf has none of the user's own and ``write_label`` (the user may label the
    session). Raises :class:`append.UnknownEntry`."""
    if status not in Status.values:
        raise ValueError(f"unknown review status {status!r}")
    actor = user if getattr(user, "is_authenticated", False) else None
    with transaction.atomic():
        leaf = branch_leaf(session, leaf_id)
        if status == Status.UNREVIEWED:
            ReviewStatus.objects.filter(session=session, leaf_id=leaf).delete()
        else:
            ReviewStatus.objects.update_or_create(
                session=session, leaf_id=leaf, defaults={"status": status, "updated_by": actor}
            )
        current = _current_label(session, leaf)
        wanted = review_label(status)
        if current is not None and not is_review_label(current):
            return ReviewResult(leaf, status, "kept")
        if current == wanted:
            return ReviewResult(leaf, status, "unchanged")
        if not write_label:
            return ReviewResult(leaf, status, "left")
        try:
            # Its own savepoint: a refused write-back leaves the status saved.
            with transaction.atomic():
                append.set_label(session, leaf, wanted)
        except append.WriteBackRefused as error:
            return ReviewResult(leaf, status, "refused", str(error))
        return ReviewResult(leaf, status, "written" if wanted else "cleared")


# -- reading -------------------------------------------------------------------------------------------------


def statuses_for_session(session: AgentSession) -> dict[str, str]:
    """leaf id → status of every reviewed branch of the session (one query)."""
    rows = ReviewStatus.objects.filter(session=session).exclude(status=Status.UNREVIEWED)
    return dict(rows.values_list("leaf_id", "status"))


@dataclass(frozen=True)
class BranchReview:
    """The session page's review state: every status (for the tree's badges) and the viewed branch's."""

    statuses: dict[str, str]
    leaf_id: str | None
    status: str = Status.UNREVIEWED.value

    @property
    def status_label(self) -> str:
        return str(Status(self.status).label)

    @property
    def choices(self) -> list[tuple[str, str]]:
        return [(str(value), str(label)) for value, label in Status.choices]


def page_review(session: AgentSession, flat: Any, leaf_id: str | None) -> BranchReview:
    """The statuses of the session (one query) and the branch the page shows: ``leaf_id``, trailing label and
    bookkeeping entries skipped, from the page's cached flat tree (``flat.by_id``: id → node with
    ``node.entry``)."""
    statuses = statuses_for_session(session)
    if leaf_id is None:
        return BranchReview(statuses, None)
    by_id = flat.by_id
    types: dict[str, str] = {}
    parents: dict[str, str | None] = {}
    current: Any = leaf_id
    while current is not None and current not in types and len(types) < _MAX_LABEL_CHAIN:
        node = by_id.get(current)
        if node is None:
            break
        entry = node.node.entry
        types[current] = str(entry.get("type"))
        parent = entry.get("parentId")
        parents[current] = parent if isinstance(parent, str) else None
        if is_conversational(types[current]):
            break
        current = parents[current]
    if leaf_id not in types:
        return BranchReview(statuses, None)
    leaf = _label_anchor(leaf_id, types, parents)
    return BranchReview(statuses, leaf, statuses.get(leaf, Status.UNREVIEWED.value))


@dataclass(frozen=True)
class ReviewSummary:
    """Counts of a session's branches per status set (rows only: branches without one are not counted)."""

    counts: dict[str, int] = field(default_factory=dict)

    @property
    def parts(self) -> list[tuple[str, str, int]]:
        """(status, its label, count) of the statuses present, in the statuses' order."""
        return [(s.value, str(s.label), self.counts[s.value]) for s in REVIEWED if self.counts.get(s.value)]

    def __str__(self) -> str:
        return " · ".join(f"{count} {label}" for _, label, count in self.parts)

    def __bool__(self) -> bool:
        return any(self.counts.values())


def summaries(sessions: Iterable[AgentSession | int]) -> dict[int, ReviewSummary]:
    """Session pk → its :class:`ReviewSummary`, for a page of sessions in one aggregate query."""
    pks = [s if isinstance(s, int) else s.pk for s in sessions]
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    rows = (
        ReviewStatus.objects.filter(session__in=pks, status__in=REVIEWED)
        .values_list("session_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for pk, status, n in rows:
        counts[pk][status] = n
    return {pk: ReviewSummary(dict(counts.get(pk, {}))) for pk in pks}


@dataclass(frozen=True)
class Leaf:
    """A branch of a stored session: its leaf entry, its name (the stored row text of the entry that names
    it, v15's wording: :func:`worded` words it by the session's rules) and when it was written."""

    session_pk: int
    entry_id: str
    text: str
    seq: int
    #: The entry whose row text names the branch (its last user prompt, else the leaf); "": the leaf's text.
    named_by: str = ""
    prompt: bool = False


#: Branch lists kept per process, per session state (a session that changes gets a new key).
LEAF_CACHE_SIZE = 256
#: Row text kept per branch (the Review page shows a line of it).
LEAF_TEXT_CHARS = 200
#: A branch's estimated bytes (its ids, text and the objects around them), for the byte bound.
LEAF_BYTES = 600
_leaf_cache: LruCache[tuple[Any, ...], list[Leaf]] = LruCache(
    LEAF_CACHE_SIZE, max_bytes=32 * 1024 * 1024, weigh=lambda leaves: len(leaves) * LEAF_BYTES
)


def session_leaves(sessions: Iterable[AgentSession]) -> dict[int, list[Leaf]]:
    """Session pk → its branches (ending at conversational entries: labels and bookkeeping do not count),
    newest first, from SQL: no tree is built.
    Kept per session state (``next_seq`` grows with every stored entry; a rewrite changes ``entry_count``).
    Reading a session's branches costs a pass over its entries (about 50 ms per 30,000 on SQLite)."""
    result: dict[int, list[Leaf]] = {}
    missing: dict[int, tuple[Any, ...]] = {}
    for session in sessions:
        key = (session.pk, session.imported_at, session.next_seq, session.entry_count)
        cached = _leaf_cache.get(key)
        if cached is None:
            missing[session.pk] = key
        else:
            result[session.pk] = cached
    if missing:
        for pk, leaves in _query_leaves(list(missing)).items():
            _leaf_cache.put(missing[pk], leaves)
            result[pk] = leaves
    return result


def _query_leaves(pks: list[int]) -> dict[int, list[Leaf]]:
    """Conversational entries without a conversational child are candidates; a candidate whose bookkeeping
    children lead on to a conversational entry (the agent went on after a label or a model change) is
    dropped. Bookkeeping entries are few, so that second step reads only them and their children."""
    real_child = Entry.objects.filter(
        session=OuterRef("session"), parent_id=OuterRef("entry_id"), type__in=CONVERSATIONAL_TYPES
    )
    rows = (
        Entry.objects.filter(session__in=pks, type__in=CONVERSATIONAL_TYPES)
        .exclude(entry_id="")
        .filter(~Exists(real_child))
        .values_list("session_id", "entry_id", "text", "seq")
    )
    candidates: dict[tuple[int, str], Leaf] = {}
    for pk, entry_id, text, seq in rows:
        # A later row with the same id replaces the earlier one, as in the tree.
        known = candidates.get((pk, entry_id))
        if known is None or seq > known.seq:
            candidates[(pk, entry_id)] = Leaf(pk, entry_id, text[:LEAF_TEXT_CHARS], seq)
    for pk, anchor in _continued_below_labels(pks):
        candidates.pop((pk, anchor), None)
    by_session: dict[int, list[str]] = defaultdict(list)
    for pk, entry_id in candidates:
        by_session[pk].append(entry_id)
    for pk, entry_ids in by_session.items():
        # Named by words: the branch's last user prompt (worded by the session's rules when shown: worded).
        for entry_id, named in _named_by(pk, entry_ids).items():
            leaf = candidates[(pk, entry_id)]
            name = _name(named.text, named.prompt) or leaf.text
            candidates[(pk, entry_id)] = Leaf(pk, entry_id, name, leaf.seq, named.entry_id, named.prompt)
    leaves: dict[int, list[Leaf]] = {pk: [] for pk in pks}
    for leaf in candidates.values():
        leaves[leaf.session_pk].append(leaf)
    for found in leaves.values():
        found.sort(key=lambda leaf: leaf.seq, reverse=True)
    return leaves


def _continued_below_labels(pks: list[int]) -> list[tuple[int, str]]:
    """(session pk, entry id) of the entries that have bookkeeping entries below them with a conversational
    entry after."""
    labels = (
        Entry.objects.filter(session__in=pks)
        .exclude(type__in=(*CONVERSATIONAL_TYPES, "session"))
        .exclude(entry_id="")
        .values_list("session_id", "entry_id", "parent_id")
    )
    parents: dict[int, dict[str, str | None]] = defaultdict(dict)
    for pk, entry_id, parent in labels:
        parents[pk][entry_id] = parent
    found: list[tuple[int, str]] = []
    for pk, label_parents in parents.items():
        ids = list(label_parents)
        for start in range(0, len(ids), 500):
            below = Entry.objects.filter(
                session=pk, parent_id__in=ids[start : start + 500], type__in=CONVERSATIONAL_TYPES
            ).values_list("parent_id", flat=True)
            for label_id in set(below):
                anchor = _walk_labels(label_id, label_parents)
                if anchor is not None:
                    found.append((pk, anchor))
    return found


def _walk_labels(label_id: str, label_parents: Mapping[str, str | None]) -> str | None:
    """The first entry above ``label_id`` that is not bookkeeping (``None``: the chain ends at a root)."""
    current: str | None = label_id
    seen: set[str] = set()
    while current is not None and current in label_parents and current not in seen:
        seen.add(current)
        current = label_parents[current]
    return current


#: Characters of a branch's name (its last user prompt).
NAME_CHARS = 80
#: How far up a branch the walk looks for its last user prompt (then the leaf's own text names it).
NAME_DEPTH = 2_000
#: Leaves looked up per query.
NAME_BATCH = 200


@dataclass(frozen=True, slots=True)
class _Naming:
    """The entry that names a branch, and its stored row text (v15's wording)."""

    entry_id: str
    text: str
    prompt: bool  # a user prompt (else the leaf's own text)


def _name(text: str, prompt: bool) -> str:
    return shorten(text.removeprefix("user: ") if prompt else text, NAME_CHARS)


def _named_by(session_pk: int, leaf_ids: Iterable[str]) -> dict[str, _Naming]:
    """Leaf id → the entry that names its branch: its last user prompt (the leaf itself when no user message
    is above it within ``NAME_DEPTH`` entries). One recursive query per ``NAME_BATCH`` leaves, up the parent
    links through the (session, entry id) index; no tree is built."""
    ids = list(dict.fromkeys(leaf_ids))
    table = Entry._meta.db_table
    names: dict[str, _Naming] = {}
    connection = connections[router.db_for_read(Entry)]
    for start in range(0, len(ids), NAME_BATCH):
        batch = ids[start : start + NAME_BATCH]
        marks = ", ".join(["%s"] * len(batch))
        sql = f"""
            WITH RECURSIVE up(leaf, entry_id, parent_id, role, text, depth) AS (
                SELECT entry_id, entry_id, parent_id, role, text, 0 FROM {table}
                WHERE session_id = %s AND entry_id IN ({marks}) AND type != 'session'
                UNION ALL
                SELECT up.leaf, e.entry_id, e.parent_id, e.role, e.text, up.depth + 1
                FROM {table} e JOIN up ON e.session_id = %s AND e.entry_id = up.parent_id
                WHERE up.role != 'user' AND up.depth < %s AND e.type != 'session'
            )
            SELECT leaf, entry_id, role, text, depth FROM up WHERE role = 'user' OR depth = 0
        """
        found: dict[str, tuple[int, _Naming]] = {}
        with connection.cursor() as cursor:
            cursor.execute(sql, [session_pk, *batch, session_pk, NAME_DEPTH])
            for leaf, entry_id, role, text, depth in cursor.fetchall():
                # The nearest user message wins; the leaf's own row (depth 0) is the fallback.
                rank = depth if role == "user" else NAME_DEPTH + 1
                if leaf not in found or rank < found[leaf][0]:
                    found[leaf] = (rank, _Naming(entry_id, text or "", role == "user"))
        names.update((leaf, naming) for leaf, (_, naming) in found.items())
    return names


def _texts(session: AgentSession, agent: Agent, entry_ids: list[str]) -> dict[str, str]:
    """The row texts of these entries by ``agent``'s wording (nothing read for v15's, the stored one): from
    the session's forest when a page has read it (each read once per forest), else from their lines."""
    if agent == "omp15" or not entry_ids:
        return {}
    return row_texts_of(session, agent, entry_ids, explorer.cached_forest(session))


def branch_names(
    session: AgentSession, leaf_ids: Iterable[str], agent: Agent | None = None
) -> dict[str, str]:
    """Leaf id → the branch's name in words: its last user prompt, shortened (the leaf's own text when no user
    message is above it within ``NAME_DEPTH`` entries), worded as the tree's rows are by ``agent``'s rules
    (default: the session's)."""
    named = _named_by(session.pk, leaf_ids)
    texts = _texts(
        session, session.rules.agent if agent is None else agent, [n.entry_id for n in named.values()]
    )
    return {leaf: _name(texts.get(n.entry_id, n.text), n.prompt) for leaf, n in named.items()}


def worded(session: AgentSession, leaves: list[Leaf], agent: Agent | None = None) -> list[Leaf]:
    """``leaves`` (:func:`session_leaves`, v15's wording) named as the tree's rows are by ``agent``'s rules
    (default: the session's); only these are read, so a page words only the branches it shows."""
    texts = _texts(
        session,
        session.rules.agent if agent is None else agent,
        [leaf.named_by for leaf in leaves if leaf.named_by],
    )
    return [
        replace(leaf, text=_name(texts[leaf.named_by], leaf.prompt)) if leaf.named_by in texts else leaf
        for leaf in leaves
    ]


def filter_sessions(sessions: QuerySet[AgentSession], status: str) -> QuerySet[AgentSession]:
    """``sessions`` narrowed to those with a branch in ``status`` ("" or unknown: all of them).

    "unreviewed" is the simpler rule the session list can afford without reading every session's tree:
    sessions where no branch has a status yet (nobody has reviewed anything in them). The Review page, which
    reads the branches of a few sessions at a time, lists every branch without a status instead.
    """
    if status == Status.UNREVIEWED:
        reviewed = ReviewStatus.objects.filter(session=OuterRef("pk"), status__in=REVIEWED)
        return sessions.filter(~Exists(reviewed))
    if status in REVIEWED:
        return sessions.filter(Exists(ReviewStatus.objects.filter(session=OuterRef("pk"), status=status)))
    return sessions
