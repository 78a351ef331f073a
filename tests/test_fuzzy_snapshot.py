"""oh-my-pi's normalized search haystacks of a big session kept on disk next to its forest snapshot: the first
search after a restart reads them instead of normalizing every node, with the same answers; a stale, damaged
or foreign file is detected and not used, appended rows and label changes are searched as they are now."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from treeview import tree_filter, tree_index
from treeview.models import AgentSession
from treeview.services.append import set_label
from treeview.services.sync import sync_file
from treeview.session import fuzzy
from treeview.session.generate import write_session
from treeview.session.selector import flatten_tree
from treeview.tree_index import fuzzy_files, loading

pytestmark = pytest.mark.django_db

QUERIES = ["read", "tool result", "fix tests", "zzz", "bash", "usr"]


@pytest.fixture
def data_dir(settings, tmp_path: Path, monkeypatch) -> Path:
    """Snapshots (and search texts) for every session, written before the call that starts them returns."""
    settings.ARBOR_DATA_DIR = tmp_path / "data"
    monkeypatch.setattr(loading, "SNAPSHOT_MIN_ROWS", 1)
    monkeypatch.setattr(tree_filter, "FUZZY_SAVE_MIN", 1)
    monkeypatch.setattr(fuzzy_files, "FUZZY_SAVE_DELAY", 0)
    start = threading.Thread.start

    def start_and_wait(self: threading.Thread) -> None:
        start(self)
        if self.name in ("forest-snapshot", "forest-fuzzy"):
            self.join()

    monkeypatch.setattr(threading.Thread, "start", start_and_wait)
    return tmp_path / "data" / "cache" / "forests"


@pytest.fixture
def normalized(monkeypatch) -> list[int]:
    """How many haystacks each search normalized (tree_filter's normalize_many calls)."""
    counts: list[int] = []
    real = fuzzy.normalize_many

    def counting(values: Any) -> list[str]:
        counts.append(len(values))
        return real(values)

    monkeypatch.setattr(tree_filter, "normalize_many", counting)
    return counts


def _session(tmp_path: Path) -> AgentSession:
    path = tmp_path / "gen.jsonl"
    write_session(path, 200, 3)
    session = sync_file(path).session
    assert session is not None
    return session


def _search(forest: tree_index.Forest, session: AgentSession, query: str) -> list[Any]:
    flat = flatten_tree(forest.roots, session.leaf_id)
    leaf = next((i for i, node in enumerate(flat.nodes) if node.id == flat.leaf_id), None)
    positions = tree_filter.filter_positions(flat.nodes, leaf, forest, "all", query, None, "omp")
    return [flat.nodes[i].id for i in positions]


def _expected(session: AgentSession, query: str) -> list[Any]:
    """The answer of a forest that keeps nothing on disk (every haystack normalized in this search)."""
    forest = tree_index.Forest.load(session)
    forest.snapshot_key = None
    return _search(forest, session, query)


def _restart(session: AgentSession) -> tree_index.Forest:
    session.refresh_from_db()
    return tree_index.Forest.load(session)


def test_the_first_search_after_a_restart_reads_the_haystacks_from_disk(
    tmp_path: Path, data_dir: Path, normalized: list[int]
) -> None:
    session = _session(tmp_path)
    first = tree_index.Forest.load(session)
    answers = {query: _search(first, session, query) for query in QUERIES}
    assert sum(normalized) == len(first.nodes)  # all of them, once
    (saved,) = data_dir.glob("*.fuzzy")
    normalized.clear()
    restored = _restart(session)
    assert restored.fuzzy_texts == {}
    assert {query: _search(restored, session, query) for query in QUERIES} == answers
    assert sum(normalized) == 0  # none normalized again
    assert restored.fuzzy_bytes() > restored.fuzzy_chars > 0
    assert any(answers.values()) and not all(answers.values())
    assert saved.exists()


def test_appended_rows_and_a_changed_label_are_searched_as_they_are_now(
    tmp_path: Path, data_dir: Path, normalized: list[int]
) -> None:
    session = _session(tmp_path)
    forest = tree_index.Forest.load(session)
    _search(forest, session, "read")
    target = next(node for node in forest.nodes.values() if node.entry.get("message") is not None)
    target_id = target.entry["id"]
    set_label(session, target_id, "quokkaParade")
    normalized.clear()
    restored = _restart(session)
    # The labeled node (label changed) and the label entry (a row appended) are normalized, nothing else.
    found = _search(restored, session, "quokka parade")
    assert target_id in found  # by its label (the label entry's own text holds it too)
    assert sum(normalized) == 2
    assert found == _expected(session, "quokka parade")
    for query in QUERIES:
        assert _search(restored, session, query) == _expected(session, query)
    set_label(session, target_id, "")
    found = _search(_restart(session), session, "quokka")
    assert target_id not in found and found == _expected(session, "quokka")


def _rewrite_rows(path: Path, change: Any, keep_digest: bool) -> None:
    header, _, rows = path.read_bytes().partition(b"\n")
    data = orjson.loads(rows)
    change(data)
    rows = orjson.dumps(data)
    meta = orjson.loads(header)
    if not keep_digest:
        import hashlib

        meta["digest"] = hashlib.blake2b(rows, digest_size=16).hexdigest()
    path.write_bytes(orjson.dumps(meta) + b"\n" + rows)


def _poison(data: list[list[Any]]) -> None:
    """Every normalized haystack made to match "zzz" (a file that would answer wrongly if used)."""
    data[3] = ["zzz " + normal for normal in data[3]]
    data[4] = [-1] * len(data[4])


def _stale(data: list[list[Any]]) -> None:
    """The texts as another version of the rules would have read them (then the normalized ones differ)."""
    data[1] = [text + " zzz" for text in data[1]]
    data[3] = ["zzz " + normal for normal in data[3]]
    data[4] = [-1] * len(data[4])


@pytest.mark.parametrize(
    "damage", ["garbage", "truncated", "tampered", "stale", "other_key", "version", "shape"]
)
def test_a_damaged_stale_or_foreign_file_is_not_used(
    tmp_path: Path, data_dir: Path, normalized: list[int], damage: str
) -> None:
    session = _session(tmp_path)
    forest = tree_index.Forest.load(session)
    _search(forest, session, "read")
    (saved,) = data_dir.glob("*.fuzzy")
    if damage == "garbage":
        saved.write_bytes(b"\x00\xffnot json")
    elif damage == "truncated":
        saved.write_bytes(saved.read_bytes()[: saved.stat().st_size // 2])
    elif damage == "tampered":
        _rewrite_rows(saved, _poison, keep_digest=True)
    elif damage == "stale":
        _rewrite_rows(saved, _stale, keep_digest=False)
    elif damage == "shape":
        _rewrite_rows(saved, lambda data: data[4].__setitem__(0, "1"), keep_digest=False)
    else:
        header, _, rows = saved.read_bytes().partition(b"\n")
        meta = orjson.loads(header)
        if damage == "other_key":
            meta["key"] = meta["key"].replace(session.session_id, "someone-else")
        else:
            meta["version"] = fuzzy_files.FUZZY_VERSION + 1
        saved.write_bytes(orjson.dumps(meta) + b"\n" + rows)
    normalized.clear()
    restored = _restart(session)
    assert _search(restored, session, "zzz") == _expected(session, "zzz") == []
    assert _search(restored, session, "read") == _expected(session, "read")
    assert normalized[0] == len(restored.fuzzy_texts)  # every haystack made again


def test_the_kept_haystacks_count_in_the_forest_cache_budget(tmp_path: Path, data_dir: Path) -> None:
    session = _session(tmp_path)
    forest = tree_index.Forest.load(session)
    assert forest.fuzzy_bytes() == 0
    _search(forest, session, "read")
    chars = sum(len(item[2]) for item in forest.fuzzy_texts.values())
    assert forest.fuzzy_chars == chars
    assert forest.fuzzy_bytes() >= chars * 2 + len(forest.fuzzy_texts) * fuzzy_files.FUZZY_ENTRY_BYTES


def test_a_big_pages_first_search_is_made_ahead_in_a_thread(
    tmp_path: Path, data_dir: Path, normalized: list[int], monkeypatch
) -> None:
    from treeview import explorer
    from treeview.explorer import prepare

    monkeypatch.setattr(prepare, "PREPARE_DELAY", 0)
    session = _session(tmp_path)
    explorer.clear_caches()
    tree = explorer.explorer_tree(session, session.leaf_id)
    assert explorer.prepare_search(tree, "omp") is None  # a small tree: nothing ahead
    monkeypatch.setattr(prepare, "PREPARE_MIN_NODES", 1)
    assert explorer.prepare_search(tree, "omp15") is None  # v15 searches the stored text as it is
    forest = tree.forest
    assert forest is not None
    # What the thread reads from the database, read here (a test's rows are not committed for other threads).
    forest.agent_texts("omp")
    forest.case_texts()
    thread = explorer.prepare_search(tree, "omp")
    assert thread is not None
    thread.join(30)
    assert sum(normalized) == len(tree.flat.nodes)
    assert explorer.prepare_search(tree, "omp") is None  # once per tree
    normalized.clear()
    for query in QUERIES:
        found = [node.id for node in tree.visible("all", query, agent="omp").nodes]
        assert sum(normalized) == 0  # nothing made again: the thread's haystacks were used
        assert found == _expected(session, query)
        normalized.clear()
    explorer.clear_caches()


def test_the_thread_ahead_waits_while_requests_are_answered_unless_a_search_waits_for_it(
    tmp_path: Path, data_dir: Path, normalized: list[int], monkeypatch
) -> None:
    from treeview import explorer
    from treeview.explorer import prepare

    busy = [1]
    monkeypatch.setattr(prepare, "PREPARE_DELAY", 0)
    monkeypatch.setattr(prepare, "PREPARE_MIN_NODES", 1)
    monkeypatch.setattr(prepare, "requests_in_flight", lambda: busy[0])
    session = _session(tmp_path)
    explorer.clear_caches()
    tree = explorer.explorer_tree(session, session.leaf_id)
    forest = tree.forest
    assert forest is not None
    forest.agent_texts("omp")
    forest.case_texts()
    thread = explorer.prepare_search(tree, "omp")
    assert thread is not None
    thread.join(0.5)
    assert thread.is_alive() and forest.fuzzy_flat == [] and normalized == []  # it waits
    # A search now does not wait for it (nor it for the request): the haystacks are made once.
    found = [node.id for node in tree.visible("all", "read", agent="omp").nodes]
    assert sum(normalized) == len(tree.flat.nodes)
    busy[0] = 0
    thread.join(30)
    assert not thread.is_alive()
    assert sum(normalized) == len(tree.flat.nodes)
    assert found == _expected(session, "read")
    explorer.clear_caches()


def _no_disk(forest: tree_index.Forest) -> tree_index.Forest:
    forest.snapshot_key = None
    return forest


def test_a_big_trees_search_by_its_word_index_keeps_the_same_rows(tmp_path: Path, monkeypatch) -> None:
    """From WORD_INDEX_MIN nodes the kept haystacks get a word index (fuzzy.WordIndex), asked for by the first
    search (here made at once); the searches by it keep the rows the texts' scans keep, also after a label
    changes, and its bytes count in the forest's budget."""
    started: list[int] = []

    def index_later(folded: list[str], joined: fuzzy.Joined) -> None:
        started.append(len(folded))
        tree_filter.index_words(folded, joined)

    session = _session(tmp_path)
    queries = [*QUERIES, "rd", "tr", "fxt", "quokka parade", "8v1", "e"]

    def searches(forest: tree_index.Forest) -> dict[str, list[Any]]:
        flat = flatten_tree(forest.roots, session.leaf_id)  # one tree: its haystacks kept between searches
        leaf = next((i for i, node in enumerate(flat.nodes) if node.id == flat.leaf_id), None)
        return {
            query: [
                flat.nodes[i].id
                for i in tree_filter.filter_positions(
                    flat.nodes, leaf, forest, "all", query, None, "omp", index_later=index_later
                )
            ]
            for query in queries
        }

    monkeypatch.setattr(tree_filter, "WORD_INDEX_MIN", 10**9)
    plain = _no_disk(tree_index.Forest.load(session))
    expected = searches(plain)
    assert not started and all(kept[3][2].words is None for kept in plain.fuzzy_flat)
    monkeypatch.setattr(tree_filter, "WORD_INDEX_MIN", 1)
    indexed = _no_disk(tree_index.Forest.load(session))
    assert searches(indexed) == expected
    assert len(started) == 1  # once: the next searches found the index
    ((_, _, _, (folded, _, joined)),) = indexed.fuzzy_flat
    assert joined.words is not None and joined.words.pairs > len(folded)
    assert indexed.fuzzy_bytes() - plain.fuzzy_bytes() == joined.words.bytes() > 0
    target = next(node for node in indexed.nodes.values() if node.entry.get("message") is not None)
    set_label(session, target.entry["id"], "quokkaParade")
    session.refresh_from_db()
    indexed.refresh(session)
    found = searches(indexed)
    assert target.entry["id"] in found["quokka parade"]
    monkeypatch.setattr(tree_filter, "WORD_INDEX_MIN", 10**9)
    assert found == searches(_no_disk(tree_index.Forest.load(session)))


def test_a_big_pages_prepared_search_makes_the_word_index_too(tmp_path: Path, monkeypatch) -> None:
    session = _session(tmp_path)
    monkeypatch.setattr(tree_filter, "WORD_INDEX_MIN", 1)
    forest = _no_disk(tree_index.Forest.load(session))
    flat = flatten_tree(forest.roots, session.leaf_id)
    tree_filter.prepare_search(flat.nodes, forest, "omp")
    ((_, _, _, (folded, _, joined)),) = forest.fuzzy_flat
    assert joined.words is not None
    made = joined.words
    tree_filter.index_words(folded, joined)
    assert joined.words is made  # made once
