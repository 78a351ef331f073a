"""The tree selector's filters and search over a session's database nodes, by each agent's rules.

``selector.filter_nodes`` decides per node from the whole entry; the web tree's nodes carry only bit flags
computed once at load (``tree_index``: user, tool result, each rule set's bookkeeping types, pi's usage) and
the stored v15 search text, plus what a rule set reads differently from that (``Forest.agent_texts``: the
bookkeeping rows' search terms, oh-my-pi's skill prompts). Tests compare the result with the core's rows.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, cast

from treeview.session import js
from treeview.session.agents import Agent, check_agent
from treeview.session.fuzzy import FuzzyQuery, Joined, WordIndex, char_mask, normalize_many
from treeview.session.selector import FilterMode, FlatNode, filter_tag
from treeview.tree_index import (
    HIDDEN_ASSISTANT,
    OMP_SETTINGS,
    PI_SETTINGS,
    PI_USAGE,
    SETTINGS,
    TOOL_RESULT,
    USER,
    AgentTexts,
    Forest,
)

__all__ = ["COMMENTED", "filter_positions", "index_words", "prepare_search"]

#: Arbor's own mode: the entries with comments (the session core knows nothing of comments).
COMMENTED: Final[Literal["commented"]] = "commented"

#: Nodes normalized again in one search from which a big session's haystacks are written to disk again.
FUZZY_SAVE_MIN = 2000
#: Haystacks normalized at once: each step in C over them holds the interpreter a few milliseconds at most,
#: so that a request served meanwhile (by another thread: prepare_search's) is not held up for long.
NORMALIZE_CHUNK = 10_000
#: Trees with at least this many nodes have their haystacks' words indexed (fuzzy.WordIndex: a search looks
#: at the distinct words instead of scanning every text with each pattern). About 0.8 s for 100,000 nodes,
#: made after the haystacks, not while a search waits for them: by prepare_search's thread, else in a thread
#: the first search starts (``index_later``; that search and any before the index is there scan the texts).
WORD_INDEX_MIN = 5000
#: Haystacks indexed between two pauses of that thread (a few milliseconds of work: a request that comes
#: meanwhile waits little for the interpreter).
WORD_INDEX_CHUNK = 2000
# The kept haystacks (by id of their Joined) whose word index a thread is making.
_indexing: set[int] = set()
_indexing_lock = threading.Lock()
_WHITESPACE_RUN = re.compile(f"{js.RE_SPACE}+")
# Per rule set and mode: the flags that hide a node (the leaf is exempt from HIDDEN_ASSISTANT) and a flag it
# needs (``selector._passes``): each agent hides its own bookkeeping types, and pi never shows ``usage``.
_MODE_FLAGS: dict[str, dict[str, tuple[int, int]]] = {
    agent: {
        "default": (HIDDEN_ASSISTANT | settings_flag | never, 0),
        "no-tools": (HIDDEN_ASSISTANT | settings_flag | TOOL_RESULT | never, 0),
        "user-only": (HIDDEN_ASSISTANT | never, USER),
        "labeled-only": (HIDDEN_ASSISTANT | never, 0),
        "all": (HIDDEN_ASSISTANT | never, 0),
        COMMENTED: (HIDDEN_ASSISTANT | never, 0),
    }
    for agent, settings_flag, never in (
        ("omp15", SETTINGS, 0),
        ("omp", OMP_SETTINGS, 0),
        ("pi", PI_SETTINGS, PI_USAGE),
    )
}


def _keep(
    nodes: Sequence[FlatNode],
    start: int,
    hide: int,
    need: int,
    labeled: bool,
    commented: frozenset[str] | None = None,
    also: frozenset[str] = frozenset(),
) -> list[int]:
    """Indexes (from ``start``) of the nodes a mode shows; they are DbNodes (flags, facts): the explorer only
    flattens database forests. ``commented``: only these ids (the "commented" mode, as labeled-only);
    ``also``: ids that pass the ``need`` test whatever their flags (oh-my-pi's skill prompts in user-only)."""
    flat: Sequence[Any] = nodes
    if commented is not None:
        return [i for i, n in enumerate(flat, start) if not n.node.flags & hide and n.id in commented]
    if labeled:
        return [i for i, n in enumerate(flat, start) if not n.node.flags & hide and n.node.label is not None]
    if need and also:
        return [
            i
            for i, n in enumerate(flat, start)
            if not (f := n.node.flags) & hide and (f & need or n.id in also)
        ]
    if need:
        return [i for i, n in enumerate(flat, start) if not (f := n.node.flags) & hide and f & need]
    return [i for i, n in enumerate(flat, start) if not n.node.flags & hide]


def filter_positions(
    nodes: Sequence[FlatNode],
    leaf: int | None,
    forest: Forest | None,
    mode: str,
    query: str,
    commented: frozenset[str] | None = None,
    agent: Agent = "omp15",
    *,
    shown: Sequence[int] | None = None,
    index_later: Callable[[list[str], Joined], None] | None = None,
) -> list[int]:
    """The indexes of the flat ``nodes`` (database nodes; ``leaf``: the leaf's index) that
    ``selector.filter_nodes`` shows by ``agent``'s rules, from the flags computed at load and what the rules
    read differently (``forest.agent_texts``; tests compare them); the "commented" mode keeps the entries of
    ``commented`` as labeled-only keeps the labeled ones. ``shown``: what this returns for the same mode
    without a search, when the caller keeps it (the search then only narrows it). ``index_later``: called
    with a big tree's kept haystacks that have no word index yet (this search scans the texts), to make it
    (:func:`index_words`) for the next ones."""
    flags = _MODE_FLAGS[check_agent(agent)]
    if mode not in flags:
        filter_tag(cast(FilterMode, mode))  # raises the core's ValueError
    hide, need = flags[mode]
    labeled = mode == "labeled-only"
    only = (commented or frozenset()) if mode == COMMENTED else None
    tokens = [t for t in _WHITESPACE_RUN.split(query.lower()) if t]
    texts = (
        forest.agent_texts(agent)
        if forest is not None and agent != "omp15" and (tokens or mode == "user-only")
        else AgentTexts()
    )
    also = texts.skill_prompts if agent == "omp" and mode == "user-only" else frozenset()
    if shown is not None:
        positions = list(shown)
    elif leaf is None:
        positions = _keep(nodes, 0, hide, need, labeled, only, also)
    else:
        positions = _keep(nodes[:leaf], 0, hide, need, labeled, only, also)
        leaf_hide = hide & ~HIDDEN_ASSISTANT
        positions += _keep(nodes[leaf : leaf + 1], leaf, leaf_hide, need, labeled, only, also)
        positions += _keep(nodes[leaf + 1 :], leaf + 1, hide, need, labeled, only, also)
    if agent == "omp15" or not tokens:
        for token in tokens:
            # selector._haystack is "<label> <search text>"; a token holds no whitespace: it is in one.
            positions = [
                i
                for i in positions
                if token in (node := nodes[i].node).facts.search_text
                or ((label := node.label) and token in label.lower())
            ]
        return positions
    query_matcher = FuzzyQuery(query.lower())  # read once, not once per node (its tokens: as `tokens`)
    if agent == "omp" and forest is not None:
        folded, masks, joined = _omp_texts(forest, texts, nodes)
        if joined.words is None and len(folded) >= WORD_INDEX_MIN and index_later is not None:
            index_later(folded, joined)
        return query_matcher.select(folded, positions, masks, joined)
    search = texts.search
    kept = []
    for i in positions:
        flat_node = nodes[i]
        node = flat_node.node
        text = search.get(flat_node.id)
        if text is None:
            text = node.facts.search_text
        label = node.label
        if agent == "omp":
            if query_matcher.matches(_omp_haystack(node, text, label)):
                kept.append(i)
        else:
            haystack = f"{label.lower()} {text}" if label else text
            if all(token in haystack for token in tokens):
                kept.append(i)
    return kept


def _omp_haystack(node: Any, text: str, label: str | None) -> str:
    """oh-my-pi: every token matches "<label> <search text>" fuzzily (selector._omp_haystack). Its matcher
    splits camelCase words, so a message's role gets its case back ("toolResult": "tool result"); a message
    with such words in its text comes as written (``Forest.case_texts``, see :func:`_omp_texts`)."""
    message = node.entry.get("message")
    if message is not None:
        role = message.get("role")
        if isinstance(role, str) and role != (lowered := role.lower()) and text.startswith(lowered):
            text = role + text[len(role) :]
    return f"{label} {text}" if label else text


def _omp_texts(
    forest: Forest, texts: AgentTexts, nodes: Sequence[FlatNode], pause: Callable[[], None] | None = None
) -> tuple[list[str], list[int], Joined]:
    """Each flat node's haystack as oh-my-pi's matcher reads it (normalized) and its characters
    (``fuzzy.char_mask``) by index, and all of them joined, kept with the forest for the next search on the
    same tree while nothing was stored (``next_seq``: labels are stored entries too); made again from the
    per-node texts kept in ``forest.fuzzy_texts``, where only a node whose text or label changed is
    normalized again. ``pause``: called between steps by a thread that makes them ahead of a search
    (:func:`prepare_search`), to let requests go first."""
    key = (forest.generation, forest.next_seq, len(nodes))
    for kept_nodes, kept_texts, kept_key, kept in forest.fuzzy_flat:
        if kept_nodes is nodes and kept_texts is texts and kept_key == key:
            return kept
    if pause is None:
        with forest.waiters_lock:
            forest.fuzzy_waiters += 1  # a search waits: a thread making them ahead stops pausing
    try:
        # Another thread making them (prepare_search): its result, not the work again.
        with forest.fuzzy_lock:
            for kept_nodes, kept_texts, kept_key, kept in forest.fuzzy_flat:
                if kept_nodes is nodes and kept_texts is texts and kept_key == key:
                    return kept
            return _make_omp_texts(forest, texts, nodes, key, pause or _no_pause)
    finally:
        if pause is None:
            with forest.waiters_lock:
                forest.fuzzy_waiters -= 1


def _no_pause() -> None:
    pass


def _make_omp_texts(
    forest: Forest,
    texts: AgentTexts,
    nodes: Sequence[FlatNode],
    key: tuple[int, int, int],
    pause: Callable[[], None],
) -> tuple[list[str], list[int], Joined]:
    search = texts.search
    # The messages whose stored (lowercased) text loses the case oh-my-pi splits words by, as written.
    cased = forest.case_texts()
    pause()
    if not forest.fuzzy_texts:
        forest.restore_fuzzy()  # a big session's, as the last search left them (once per forest)
        pause()
    known_texts = forest.fuzzy_texts
    folded: list[str] = []
    masks: list[int] = []
    # (index, id, text, label, haystack) of the nodes whose text or label is new: normalized all at once.
    fresh: list[tuple[int, Any, str, str | None, str]] = []
    for index, flat_node in enumerate(nodes):
        if not index % NORMALIZE_CHUNK:
            pause()
        node = flat_node.node
        text = cased.get(flat_node.id) if node.entry.get("message") is not None else None
        if text is None:
            text = search.get(flat_node.id)
        if text is None:
            text = node.facts.search_text
        label = node.label
        known = known_texts.get(flat_node.id)
        if known is None or known[0] != text or known[1] != label:
            fresh.append((index, flat_node.id, text, label, _omp_haystack(node, text, label)))
            folded.append("")
            masks.append(0)
        else:
            if known[0] is not text or known[1] is not label:
                # Read from disk (forest.restore_fuzzy): the node's own strings, not a copy of them.
                known_texts[flat_node.id] = (text, label, known[2], known[3])
            folded.append(known[2])
            masks.append(known[3])
    added = 0
    haystacks = [item[4] for item in fresh]
    normals: list[str] = []
    for start in range(0, len(haystacks), NORMALIZE_CHUNK):
        pause()
        normals += normalize_many(haystacks[start : start + NORMALIZE_CHUNK])
    for number, ((index, node_id, text, label, _), normal) in enumerate(zip(fresh, normals, strict=True)):
        if not number % NORMALIZE_CHUNK:
            pause()
        mask = char_mask(normal)
        old = known_texts.get(node_id)
        added += len(normal) - (len(old[2]) if old is not None else 0)
        known_texts[node_id] = (text, label, normal, mask)
        folded[index] = normal
        masks[index] = mask
    forest.fuzzy_chars += added
    if len(fresh) >= FUZZY_SAVE_MIN:
        forest.save_fuzzy()
    pause()
    made = (folded, masks, Joined(folded))
    forest.fuzzy_flat = [(nodes, texts, key, made), *forest.fuzzy_flat[:1]]
    return made


def prepare_search(
    nodes: Sequence[FlatNode], forest: Forest, agent: Agent, pause: Callable[[], None] = _no_pause
) -> None:
    """Make ahead what ``agent``'s first search over the flat ``nodes`` reads: the texts the rule set reads
    differently and, for oh-my-pi, every node's normalized haystack (restored from disk, or made), so that a
    search typed meanwhile waits for this work instead of doing it again, and one typed later finds it; then
    a big tree's word index (a search typed meanwhile does not wait for that: it scans the texts).
    ``pause`` is called between its steps (it may wait while requests are answered; it should not while a
    search waits for this work: ``forest.fuzzy_waiters``)."""
    if agent == "omp15":
        return
    pause()
    texts = forest.agent_texts(agent)
    if agent == "omp":
        pause()
        folded, _, joined = _omp_texts(forest, texts, nodes, pause)
        if len(folded) >= WORD_INDEX_MIN:
            index_words(folded, joined, pause)


def index_words(folded: list[str], joined: Joined, pause: Callable[[], None] = _no_pause) -> None:
    """Give the kept haystacks ``folded`` (all of them in ``joined``) their word index, unless they have one
    or another thread is making it (``pause``: between its steps)."""
    key = id(joined)
    with _indexing_lock:
        if joined.words is not None or key in _indexing:
            return
        _indexing.add(key)
    try:
        joined.words = WordIndex.build(folded, WORD_INDEX_CHUNK, pause)
    finally:
        with _indexing_lock:
            _indexing.discard(key)
