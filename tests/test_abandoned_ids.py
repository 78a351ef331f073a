"""``navigation.abandoned_ids`` (bisection of the shared path prefix) against the literal §13.1 rule, on
random forests with orphans, self-parented entries and parent cycles, and on a deep path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from treeview.session.navigation import abandoned_ids


class Links:
    """A ``NavigationSource`` over a parent map; paths stop at a missing parent or a repeated id."""

    def __init__(self, parents: dict[str, str | None]) -> None:
        self.parents = parents

    def get_leaf_id(self) -> str | None:
        return None

    def get_entry(self, entry_id: str) -> dict[str, Any] | None:
        return None

    def get_entries(self, entry_ids: Sequence[str]) -> list[dict[str, Any]]:
        return []

    def path_ids(self, entry_id: str) -> list[str]:
        ids: list[str] = []
        seen: set[str] = set()
        current: str | None = entry_id
        while current is not None and current in self.parents and current not in seen:
            seen.add(current)
            ids.append(current)
            current = self.parents[current]
        ids.reverse()
        return ids


def reference(source: Links, old_leaf_id: str | None, target_id: str) -> tuple[list[str], str | None]:
    """The rule as first written: the deepest entry of the target's path that is on the old path."""
    if not old_leaf_id:
        return [], None
    old_path = source.path_ids(old_leaf_id)
    positions = {entry_id: i for i, entry_id in enumerate(old_path)}
    for on_target_path in reversed(source.path_ids(target_id)):
        if on_target_path in positions:
            return old_path[positions[on_target_path] + 1 :], on_target_path
    return old_path, None


@st.composite
def forests(draw: st.DrawFn) -> tuple[Links, list[str]]:
    size = draw(st.integers(min_value=1, max_value=40))
    ids = [f"e{i}" for i in range(size)]
    parents: dict[str, str | None] = {}
    for i, entry_id in enumerate(ids):
        kind = draw(st.sampled_from(["earlier", "earlier", "earlier", "root", "missing", "any"]))
        if kind == "earlier" and i > 0:
            parents[entry_id] = ids[draw(st.integers(min_value=0, max_value=i - 1))]
        elif kind == "missing":
            parents[entry_id] = "gone"
        elif kind == "any":
            # Any entry, later ones and itself included: parent cycles.
            parents[entry_id] = draw(st.sampled_from(ids))
        else:
            parents[entry_id] = None
    return Links(parents), ids


@settings(max_examples=400, deadline=None)
@given(data=st.data(), forest=forests())
def test_abandoned_ids_follows_the_rule_on_any_links(
    data: st.DataObject, forest: tuple[Links, list[str]]
) -> None:
    source, ids = forest
    old_leaf = data.draw(st.sampled_from([*ids, None, "unknown"]))
    target = data.draw(st.sampled_from([*ids, "unknown"]))
    assert abandoned_ids(source, old_leaf, target) == reference(source, old_leaf, target)


def test_deep_paths_sharing_half_their_length() -> None:
    # One 20,000-entry trunk; the leaf 10,000 entries below its middle, a side branch of 20 from there.
    parents: dict[str, str | None] = {"t0": None}
    for i in range(1, 20_000):
        parents[f"t{i}"] = f"t{i - 1}"
    parents["s0"] = "t9999"
    for i in range(1, 20):
        parents[f"s{i}"] = f"s{i - 1}"
    source = Links(parents)
    there = abandoned_ids(source, "t19999", "s19")
    assert there == ([f"t{i}" for i in range(10_000, 20_000)], "t9999")
    assert abandoned_ids(source, "s19", "t19999") == ([f"s{i}" for i in range(20)], "t9999")
    # A target on the old path is its own common ancestor; the old leaf's own path is abandoned by nothing.
    assert abandoned_ids(source, "t19999", "t5") == ([f"t{i}" for i in range(6, 20_000)], "t5")
    assert abandoned_ids(source, "t5", "t19999") == ([], "t5")
    assert there == reference(source, "t19999", "s19")
