"""Filtering and search: which nodes a filter mode and a search query keep, as rows."""

from __future__ import annotations

import re
from typing import Final

from treeview.session import js
from treeview.session.agents import Agent
from treeview.session.fuzzy import fuzzy_matches
from treeview.session.selector.modes import _HIDDEN_TYPES, FilterMode, _check_mode
from treeview.session.selector.rows import Row, make_row
from treeview.session.selector_text import has_text_content, searchable_text
from treeview.session.selector_text_latest import (
    omp_has_text,
)
from treeview.session.selector_tree import (
    FlatNode,
    FlatTree,
    facts_of,
)

# JavaScript's /\s+/, which splits a search query into tokens.
_WHITESPACE_RUN: Final = re.compile(f"{js.RE_SPACE}+")


def _search_tokens(query: str) -> list[str]:
    return [token for token in _WHITESPACE_RUN.split(query.lower()) if token]


def _passes(flat: FlatNode, leaf_id: str | None, mode: FilterMode, agent: Agent = "omp15") -> bool:
    entry = flat.entry
    kind = entry.get("type")
    if agent == "pi" and kind == "usage":
        return False  # pi never shows its usage records, not even in "all"
    message = entry.get("message") if kind == "message" else None
    role = message.get("role") if isinstance(message, dict) else None
    if role == "assistant" and entry.get("id") != leaf_id:
        # Tool-call-only assistant turns are noise, but errors and aborts stay (in every mode).
        assert isinstance(message, dict)
        stop = message.get("stopReason")
        error_or_aborted = js.truthy(stop) and stop not in ("stop", "toolUse")
        facts = facts_of(flat.node)
        if facts is not None:
            has_text = facts.has_text
        elif agent == "omp":
            has_text = omp_has_text(message.get("content"))
        else:
            has_text = has_text_content(message.get("content"))
        if not error_or_aborted and not has_text:
            return False
    if mode == "user-only":
        if agent == "omp" and kind == "custom_message":
            # A user-invoked skill prompt starts a turn like a user message does.
            return entry.get("customType") == "skill-prompt"
        return role == "user"
    if mode == "labeled-only":
        return flat.node.label is not None
    if mode == "all":
        return True
    if kind in _HIDDEN_TYPES[agent]:
        return False
    return not (mode == "no-tools" and role == "toolResult")


def filter_nodes(
    flat: FlatTree, mode: FilterMode = "default", query: str = "", *, agent: Agent = "omp15"
) -> list[FlatNode]:
    """The flat nodes visible under a filter mode and search query, in tree order (spec §17.5-6).

    The filters hide each agent's bookkeeping rows (oh-my-pi 18 hides more than v15; pi never shows
    ``usage``). Search: oh-my-pi 18 matches every whitespace-separated token fuzzily (:mod:`.fuzzy`) against
    its searchable text, which names bookkeeping rows too; pi and v15 need each lowercased token as a
    substring of the lowercased :func:`searchable_text`.
    """
    mode = _check_mode(mode)
    tokens = _search_tokens(query)
    visible: list[FlatNode] = []
    for node in flat.nodes:
        if not _passes(node, flat.leaf_id, mode, agent):
            continue
        if tokens:
            if agent == "omp":
                text = _omp_haystack(node)
                if not all(fuzzy_matches(token, text) for token in tokens):
                    continue
            else:
                haystack = _haystack(node, agent)
                if not all(token in haystack for token in tokens):
                    continue
        visible.append(node)
    return visible


def _haystack(flat: FlatNode, agent: Agent = "omp15") -> str:
    facts = facts_of(flat.node)
    if facts is None:
        return searchable_text(flat.node, agent).lower()
    label = flat.node.label
    return f"{label.lower()} {facts.search_text}" if label else facts.search_text


def _omp_haystack(flat: FlatNode) -> str:
    facts = facts_of(flat.node)
    if facts is None:
        return searchable_text(flat.node, "omp")
    label = flat.node.label
    return f"{label} {facts.search_text}" if label else facts.search_text


def visible_rows(
    flat: FlatTree,
    mode: FilterMode = "default",
    query: str = "",
    home: str | None = None,
    *,
    agent: Agent = "omp15",
) -> list[Row]:
    """The rows the selector shows for a filter mode and search query, in display order."""
    return [make_row(node, flat, home, agent) for node in filter_nodes(flat, mode, query, agent=agent)]
