"""The bottom layer of :class:`~treeview.tree_index.forest.Forest`: its state, and making it in memory from
rows or from a snapshot's columns, appending rows, and what a snapshot keeps of it."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from treeview.session.selector import RowFacts
from treeview.session.tree import build_forest, sort_children
from treeview.tree_index.agent_texts import AgentTexts
from treeview.tree_index.gc_pause import gc_paused
from treeview.tree_index.rows import (
    _AGENT_TEXT_EXCLUDED,
    _LOG_LIMIT,
    _NODE_COLUMNS,
    DbNode,
    _linked,
    _message,
    _node,
    _resolve_label,
    _seq,
)


class _Building:
    """A forest's state, and making it from rows or columns in memory (no query, no file)."""

    def __init__(self, session_pk: int) -> None:
        self.session_pk = session_pk
        # The version the file was written in: lines of older ones are read as the import migrated them.
        self.format_version = 3
        self.nodes: dict[str, DbNode] = {}
        self.roots: list[DbNode] = []
        self.labels: dict[str, str] = {}
        self.label_times: dict[str, str] = {}
        self.next_seq = 0
        self.row_count = 0  # every row with seq < next_seq, the header and id-less lines included
        self.cycles = False  # build_forest broke a parent cycle: incremental updates are not attempted
        self.dangling: set[str] = set()  # parent ids of orphan roots: an entry with such an id re-links them
        self.generation = 0  # counts full loads
        self.log: list[DbNode] = []  # nodes appended since the last full load, in seq order
        self.log_start = 0  # the log holds every node with seq >= log_start
        # Per rule set, what it reads differently from the stored columns (made on first use, see
        # agent_texts); replaced, never changed in place, and dropped when rows it depends on arrive.
        self._agent_texts: dict[str, AgentTexts] = {}
        # Per rule set, the row text of each entry read so far by that set's wording (row_texts); a row's
        # text never changes while the forest holds it (a replaced row makes the forest load again).
        self._row_texts: dict[str, dict[str, str]] = {}
        # Entry id -> a message's search text as written (``Entry.fuzzy_text``, only where oh-my-pi's search
        # splits its words by case), as of the rows with seq < _case_seq (case_texts; grown on use).
        self._case_texts: dict[str, str] = {}
        self._case_seq = 0
        # Node id -> (text, label, normalized haystack, its fuzzy.char_mask) for oh-my-pi's fuzzy search
        # (treeview/tree_filter.py); an entry whose text or label changed is made again there.
        self.fuzzy_texts: dict[Any, tuple[str, str | None, str, int]] = {}
        # The haystacks and masks of a flattened tree's nodes by index, for its next search (tree_filter).
        self.fuzzy_flat: list[tuple[Any, Any, tuple[int, int, int], Any]] = []
        # A big session's snapshot key (its fuzzy_texts are kept on disk too, see save_fuzzy), and whether
        # that file was read already.
        self.snapshot_key: str | None = None
        # The flattened tree the snapshot kept (its leaf's, as of its rows), until the first tree is made
        # (take_flat): with the generation it was read with, as plain lists.
        self._kept_flat: tuple[int, dict[str, Any]] | None = None
        # The snapshot on disk holds the forest itself (columns), not only rows: nothing to keep again.
        self.snapshot_full = False
        self._fuzzy_restored = False
        self.fuzzy_chars = 0  # the characters of the normalized haystacks in fuzzy_texts (fuzzy_bytes)
        # Held while oh-my-pi's haystacks are made (tree_filter._omp_texts), and while the texts a rule set
        # reads are loaded: a search waits for the same work done ahead of it (tree_filter.prepare_search).
        self.fuzzy_lock = threading.Lock()
        self.fuzzy_waiters = 0  # searches waiting for fuzzy_lock (counted under waiters_lock)
        self.waiters_lock = threading.Lock()
        self._texts_lock = threading.Lock()

    def _build(self, rows: Sequence[Sequence[Any]], stop: int, links: dict[str, Any] | None = None) -> None:
        """Make the forest of these rows (``_COLUMNS``, seq order), every row with ``seq < stop``; ``links``:
        the roots and children :meth:`links` gave for the forest of these rows (no sorting, no cycle check),
        not used unless they fit the nodes."""
        nodes: dict[str, DbNode] = {}
        labels: dict[str, str] = {}
        times: dict[str, str] = {}
        with gc_paused():
            for row in rows:
                kind = row[3]
                if kind == "label":
                    _resolve_label(labels, row[10], row[11])
                    _resolve_label(times, row[10], row[5] if row[11] else "")
                entry_id = row[1]
                if kind == "session" or not entry_id:
                    continue
                node = _node(row)
                previous = nodes.get(entry_id)
                if previous is not None:
                    # A later row with the same id replaces the earlier one and keeps its place, like the
                    # agent's map: its seq stays the place (siblings are ordered by it).
                    node.seq = previous.seq
                nodes[entry_id] = node
            self._finish(nodes, labels, times, stop, len(rows), links)

    def _finish(
        self,
        nodes: dict[str, DbNode],
        labels: dict[str, str],
        times: dict[str, str],
        stop: int,
        row_count: int,
        links: dict[str, Any] | None,
    ) -> None:
        """The forest of these nodes (unlinked, file order) and resolved labels: labels set, nodes linked."""
        with gc_paused():
            for target, text in labels.items():
                if (labeled := nodes.get(target)) is not None:
                    labeled.label = text
                    labeled.label_time = times.get(target)
            linked = _linked(nodes, links) if links is not None else None
            roots, cycle_ids = linked if linked is not None else build_forest(nodes)
        self.nodes = nodes
        self.roots = roots
        self.labels = labels
        self.label_times = times
        self.next_seq = stop
        self.row_count = row_count
        self.cycles = bool(cycle_ids)
        self.dangling = {
            parent
            for root in roots
            if isinstance(parent := root.entry.get("parentId"), str) and parent != root.entry.get("id")
        }
        self.generation += 1
        self.log = []
        self.log_start = self.next_seq
        self._agent_texts = {}
        self._row_texts = {}
        self._case_texts = {}
        self._case_seq = 0
        self._kept_flat = None

    def columns(self) -> dict[str, Any]:
        """The forest's nodes (file order) and resolved labels as plain lists, for the snapshot: what
        :meth:`_build_columns` makes the same forest from without a step per row of the table (ids made
        unique, labels resolved, bookkeeping rows left out, row kinds and flags computed)."""
        order = list(self.nodes.values())
        messages: dict[tuple[Any, Any], int] = {}
        codes = []
        for node in order:
            message = node.entry.get("message")
            if message is None:
                codes.append(-1)
            else:
                codes.append(messages.setdefault((message["role"], message["stopReason"]), len(messages)))
        kinds: dict[Any, int] = {}
        kind = [kinds.setdefault(node.entry["type"], len(kinds)) for node in order]
        return {
            "row_count": self.row_count,
            "kinds": list(kinds),
            "messages": [list(pair) for pair in messages],
            "kind": kind,
            "id": [node.entry["id"] for node in order],
            "parent": [node.entry["parentId"] for node in order],
            "timestamp": [node.entry["timestamp"] for node in order],
            "message": codes,
            "text": [node.facts.text for node in order],
            "search": [node.facts.search_text for node in order],
            "has_text": [node.facts.has_text for node in order],
            "seq": [node.seq for node in order],
            "flags": [node.flags for node in order],
            "input": [node.input_tokens for node in order],
            "output": [node.output_tokens for node in order],
            "cost": [node.cost for node in order],
            "labels": self.labels,
            "label_times": self.label_times,
        }

    def _build_columns(self, columns: dict[str, Any], stop: int, links: dict[str, Any] | None) -> None:
        """The forest :meth:`columns` kept (then linked as ``links`` says, else by ``build_forest``). Raises
        ``KeyError``, ``TypeError``, ``ValueError`` or ``IndexError`` for columns of another shape."""
        count = len(columns["id"])
        for name in _NODE_COLUMNS:
            if not isinstance(columns[name], list) or len(columns[name]) != count:
                raise ValueError(f"the column {name} does not fit")
        kinds = columns["kinds"]
        if columns["kind"] and (min(columns["kind"]) < 0 or max(columns["kind"]) >= len(kinds)):
            raise ValueError("an unknown kind")
        # -1 (no message) is the last item: None.
        messages: list[dict[str, Any] | None] = [
            _message(role, reason) for role, reason in columns["messages"]
        ]
        messages.append(None)
        codes = columns["message"]
        if codes and (min(codes) < -1 or max(codes) >= len(messages) - 1):
            raise ValueError("an unknown message kind")
        labels, times = columns["labels"], columns["label_times"]
        if not isinstance(labels, dict) or not isinstance(times, dict):
            raise TypeError("labels")
        with gc_paused():
            entries = [
                {"type": kinds[kind], "id": entry_id, "parentId": parent, "timestamp": timestamp}
                if message is None
                else {
                    "type": kinds[kind],
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": timestamp,
                    "message": message,
                }
                for kind, entry_id, parent, timestamp, message in zip(
                    columns["kind"],
                    columns["id"],
                    columns["parent"],
                    columns["timestamp"],
                    [messages[code] for code in codes],
                    strict=True,
                )
            ]
            facts = list(map(RowFacts, columns["text"], columns["search"], columns["has_text"]))
            nodes = {
                entry["id"]: DbNode(entry, fact, None, [], seq, flags, i, o, c)
                for entry, fact, seq, flags, i, o, c in zip(
                    entries,
                    facts,
                    columns["seq"],
                    columns["flags"],
                    columns["input"],
                    columns["output"],
                    columns["cost"],
                    strict=True,
                )
            }
            if len(nodes) != len(entries):
                raise ValueError("an id twice")
            self._finish(nodes, labels, times, stop, columns["row_count"], links)

    def links(self) -> dict[str, Any] | None:
        """The roots and children of this forest as places in ``nodes`` (plain lists, for the snapshot), so
        that :meth:`_build` of the same rows can skip linking and sorting; ``None`` when it broke a cycle."""
        if self.cycles:
            return None
        order = list(self.nodes.values())
        place = {id(node): i for i, node in enumerate(order)}
        return {
            "count": len(order),
            "roots": [place[id(root)] for root in self.roots],
            "children": [[place[id(child)] for child in node.children] for node in order],
        }

    def leaf_path(self, leaf_id: str | None) -> list[DbNode] | None:
        """The nodes root → ``leaf_id`` from the parent links (``None`` with a cycle or an unknown leaf): with
        no cycle every parent that exists is the forest parent."""
        nodes = self.nodes
        if self.cycles or leaf_id is None or leaf_id not in nodes:
            return None
        node = nodes[leaf_id]
        path = [node]
        while (parent := nodes.get(node.entry["parentId"])) is not None and parent is not node:
            path.append(parent)
            node = parent
        path.reverse()
        return path

    def _append(self, rows: list[tuple[Any, ...]], stop: int) -> bool:
        """Add these rows (seq order) if each only adds a node below a known parent, or a new root; checks
        all of them before changing anything."""
        nodes = self.nodes
        new: dict[str, DbNode] = {}
        dangling: set[str] = set()
        for row in rows:
            entry_id, parent_id, kind = row[1], row[2], row[3]
            if kind == "session" or not entry_id:
                continue
            if entry_id in nodes or entry_id in new or entry_id in self.dangling or entry_id in dangling:
                return False  # a duplicate id replaces a node; a missing parent arriving re-links orphans
            new[entry_id] = _node(row)
            orphan = parent_id not in nodes and parent_id not in new
            if isinstance(parent_id, str) and parent_id != entry_id and orphan:
                dangling.add(parent_id)
        labels = self.labels
        times = self.label_times
        touched: set[str] = set()
        for row in rows:
            if row[3] == "label":
                _resolve_label(labels, row[10], row[11])
                _resolve_label(times, row[10], row[5] if row[11] else "")
                touched.add(row[10])
        roots = self.roots
        for entry_id, node in new.items():
            node.label = labels.get(entry_id)
            node.label_time = times.get(entry_id)
            nodes[entry_id] = node
            parent_id = node.entry["parentId"]
            parent = nodes.get(parent_id) if isinstance(parent_id, str) and parent_id != entry_id else None
            if parent is None:
                roots = [*roots, node]
            elif not parent.children:
                parent.children = [node]
            else:
                # Siblings sorted by timestamp, stable in file order: as build_forest would, from file order.
                children = sorted(parent.children, key=_seq)
                children.append(node)
                sort_children(children)
                parent.children = children
            self.log.append(node)
        for target in touched:
            if (labeled := nodes.get(target)) is not None:
                labeled.label = labels.get(target)
                labeled.label_time = times.get(target)
        self.roots = roots
        self.dangling |= dangling
        if any(row[3] not in _AGENT_TEXT_EXCLUDED for row in rows):
            self._agent_texts = {}  # a row the rule sets read differently: read them again on next use
        self.row_count += len(rows)
        self.next_seq = stop
        if len(self.log) > _LOG_LIMIT:
            del self.log[: len(self.log) - _LOG_LIMIT // 2]
            self.log_start = self.log[0].seq
        return True

    def appended_since(self, seq: int) -> list[DbNode] | None:
        """The nodes appended with ``seq`` or later (seq order); ``None`` when the log does not reach back."""
        if seq < self.log_start:
            return None
        return self.log[bisect_left(self.log, seq, key=_seq) :]
