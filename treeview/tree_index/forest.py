""":class:`Forest`, a session's tree kept in memory by the web pages (its layers: building.py, loading.py),
and the helpers that read a session through it."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from treeview.models import AgentSession, Entry
from treeview.session.agents import Agent
from treeview.session.selector import FilterMode, FlatTree, Row, flatten_tree, visible_rows
from treeview.tree_index.agent_texts import AgentTexts, _load_agent_texts, _load_row_texts
from treeview.tree_index.fuzzy_files import FUZZY_ENTRY_BYTES, FUZZY_FLAT_ROW_BYTES, _read_fuzzy, _write_fuzzy
from treeview.tree_index.loading import _Loading
from treeview.tree_index.rows import DbNode


class Forest(_Loading):
    """A session's forest (§10.6) as of the rows with ``seq < next_seq``, with the resolved labels.

    Nodes are only ever added; a label change sets ``DbNode.label`` in place. A node's ``children`` list and
    ``roots`` are replaced, never changed in place, so a thread walking the forest while another appends sees
    the old lists whole. The caller serializes :meth:`refresh` calls (``explorer`` holds a lock per session).
    """

    @classmethod
    def load(cls, session: AgentSession) -> Forest:
        """Read the whole session: from its snapshot (then only the rows added since), else from the table
        (one query over the indexed columns)."""
        forest = cls(session.pk)
        forest.format_version = session.format_version
        if not forest._restore(session):
            forest.reload(session)
        return forest

    def agent_texts(self, agent: Agent) -> AgentTexts:
        """What ``agent``'s rules read differently from the stored columns (made once per state of the
        forest; a thread may make it while another appends: the older answer is then not kept)."""
        found = self._agent_texts.get(agent)
        if found is not None:
            return found
        with self._texts_lock:
            cached = self._agent_texts
            found = cached.get(agent)
            if found is None:
                found = _load_agent_texts(self.session_pk, self.next_seq, agent)
                if self._agent_texts is cached:
                    self._agent_texts = {**cached, agent: found}
        return found

    def case_texts(self) -> dict[str, str]:
        """Entry id → the search text as written of the messages whose words oh-my-pi's search splits by case
        (the stored ``search_text`` is lowercased); read once, then only the rows appended since."""
        stop = self.next_seq
        if self._case_seq >= stop:
            return self._case_texts
        with self._texts_lock:
            if self._case_seq >= stop:
                return self._case_texts
            rows = (
                Entry.objects.filter(session_id=self.session_pk, seq__gte=self._case_seq, seq__lt=stop)
                .exclude(fuzzy_text="")
                .order_by("seq")
                .values_list("entry_id", "fuzzy_text")
            )
            found = dict(rows)
            if found:
                self._case_texts = {**self._case_texts, **found}
            self._case_seq = stop
        return self._case_texts

    def restore_fuzzy(self) -> None:
        """Fill ``fuzzy_texts`` from the file :meth:`save_fuzzy` wrote for this session (once per forest; the
        entries made meanwhile win). A file of another session, version or import, or one whose rows do not
        hash to its digest, is ignored; an entry whose text or label differs from the node's now is made
        again by its user (``tree_filter._omp_texts`` compares both)."""
        if self._fuzzy_restored or self.snapshot_key is None:
            return
        self._fuzzy_restored = True
        found = _read_fuzzy(self.snapshot_key)
        if found:
            self.fuzzy_texts = {**found, **self.fuzzy_texts}
            self.fuzzy_chars = sum(len(item[2]) for item in self.fuzzy_texts.values())

    def save_fuzzy(self) -> None:
        """Write ``fuzzy_texts`` to disk next to the snapshot (in a thread; a big session only), so that the
        first search after a restart need not normalize every node again."""
        if self.snapshot_key is None:
            return
        self._fuzzy_restored = True  # what the file holds is in memory now
        items = list(self.fuzzy_texts.items())
        threading.Thread(target=_write_fuzzy, args=(self.snapshot_key, items), name="forest-fuzzy").start()

    def fuzzy_bytes(self) -> int:
        """Estimated bytes held by ``fuzzy_texts`` and ``fuzzy_flat`` with its word indexes (text counted
        once a character: the normalized haystacks are ASCII mostly; the texts and labels are the nodes' own
        strings)."""
        total = len(self.fuzzy_texts) * FUZZY_ENTRY_BYTES + self.fuzzy_chars
        for _, _, _, (folded, _, joined) in self.fuzzy_flat:
            total += len(folded) * FUZZY_FLAT_ROW_BYTES + len(joined.text)
            if joined.words is not None:
                total += joined.words.bytes()
        return total

    def row_texts(self, agent: Agent, ids: Sequence[str]) -> dict[str, str]:
        """The row text (without label) of each of ``ids`` as ``agent``'s selector words it. The stored
        ``Entry.text`` is v15's wording; for the newest rule sets the lines of the rows asked for (a window
        of the tree pane) are read once and their texts kept with the forest: no later view reads them."""
        if agent == "omp15":
            return {i: node.facts.text for i in ids if (node := self.nodes.get(i)) is not None}
        known = self._row_texts.get(agent)
        if known is None:
            known = self._row_texts.setdefault(agent, {})
        missing = [i for i in ids if i not in known and i in self.nodes]
        if missing:
            known.update(_load_row_texts(self, agent, missing))
        return {i: known[i] for i in ids if i in known}


def load_forest(session: AgentSession) -> list[DbNode]:
    """The session as a forest (§10.6), from its rows in file order."""
    return Forest.load(session).roots


def flatten_session(session: AgentSession, leaf_id: str | None = None) -> FlatTree:
    """The flattened tree with the active branch first (``leaf_id`` defaults to the session's leaf)."""
    return flatten_tree(load_forest(session), session.leaf_id if leaf_id is None else leaf_id)


def select_rows(
    session: AgentSession, mode: FilterMode = "default", query: str = "", agent: Agent | None = None
) -> list[Row]:
    """The core tree selector's rows over the stored nodes for a filter mode and search query, by ``agent``'s
    rules (default: the session's), in display order. The explorer's own filter (``explorer.ExplorerTree``)
    also reads what the rules search differently from the stored text; this one searches the stored text."""
    rules = session.rules.agent if agent is None else agent
    return visible_rows(flatten_session(session), mode, query, agent=rules)
