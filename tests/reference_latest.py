"""The newest agents' real answers (tests/data/reference-latest) and Arbor's agreement with them, per kind.

Every fixture has two answers: ``<fixture>.omp18.json`` (oh-my-pi 18.3.4) and ``<fixture>.pi16.json``
(pi 1.6.0). Arbor is checked against each answer whose agent opens the file (pi refuses title-slot files:
``open_error``), with that agent's rules. ``python -m tests.reference_latest`` prints the agreement
percentage per kind of answer.

What is compared, one item each: ``leaf``; ``branch``; ``labels``; ``tree`` (each entry's id, parent, type,
timestamp and role, each ``tree_flat`` row, each ``getChildren_multi`` list); ``context`` (the state, and each
message's role and JSON sha256); ``llm`` (each message's role and full-text sha256); ``selector`` (each filter
mode's ids, selection and rows, each search); ``navigation`` (each ``collect`` and ``navigate`` answer).

The decided differences of ``tests/reference.py`` hold here too: Arbor recovers every object of a glued line
(left out when comparing) and v1 ids are compared by position.
"""

from __future__ import annotations

import asyncio
import difflib
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tests.reference import DATA
from treeview.session import selector as sel
from treeview.session.jsonl import dumps
from treeview.session.messages import message_text
from treeview.session.session_manager import SessionManager

REFERENCE_LATEST = DATA / "reference-latest"
AGENTS = {"omp18": "omp", "pi16": "pi"}
KINDS = ("leaf", "branch", "labels", "tree", "context", "llm", "selector", "navigation", "/branch file")


@dataclass(frozen=True)
class LatestCase:
    """One answer: the fixture it is about and the agent (``omp18`` / ``pi16``) that gave it."""

    stem: str
    answer: str

    @property
    def name(self) -> str:
        return f"{self.stem}.{self.answer}"

    @property
    def agent(self) -> str:
        return AGENTS[self.answer]

    @property
    def reference(self) -> dict[str, Any]:
        return load_answer(self.name)

    @property
    def opens(self) -> bool:
        return "open_error" not in self.reference

    def __str__(self) -> str:
        return self.name


@cache
def load_answer(name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((REFERENCE_LATEST / f"{name}.json").read_text(encoding="utf-8"))
    return result


def fixture_bytes(stem: str) -> bytes:
    """The exact input the reference run read (the variants are derived from the committed fixtures)."""
    if stem.endswith(".slot-stripped"):
        return fixture_bytes(stem.removesuffix(".slot-stripped")).split(b"\n", 1)[1]
    if ".truncated-after-line-" in stem:
        source, _, keep = stem.partition(".truncated-after-line-")
        lines = fixture_bytes(source).split(b"\n")
        return b"".join(line + b"\n" for line in lines[: int(keep)])
    for folder in ("handmade", "real", "latest"):
        path = DATA / folder / f"{stem}.jsonl"
        if path.exists():
            return path.read_bytes()
    raise FileNotFoundError(stem)


def all_latest_cases() -> list[LatestCase]:
    cases = []
    for path in sorted(REFERENCE_LATEST.glob("*.json")):
        stem, _, answer = path.name.removesuffix(".json").rpartition(".")
        cases.append(LatestCase(stem, answer))
    return cases


def open_latest(case: LatestCase) -> SessionManager:
    """Arbor's session for the answer's input, read with the answering agent's rules."""
    return SessionManager.from_bytes(fixture_bytes(case.stem), agent=case.agent)


# ---------------------------------------------------------------------------------------------------------
# Comparison: each function yields (item, agrees, detail)

Item = tuple[str, bool, str]


def agent_view(manager: SessionManager) -> list[int]:
    """Indexes of our entries the agent also reads: of a line holding several glued objects, omp keeps the
    first and pi none (Arbor recovers them all, a decided difference)."""
    lines: dict[int | None, int] = {}
    for index in range(len(manager.entries)):
        line = manager.entry_line(index)
        lines[line] = lines.get(line, 0) + 1
    seen: set[int] = set()
    keep: list[int] = []
    for index in range(len(manager.entries)):
        line = manager.entry_line(index)
        if line is not None:
            if line in seen or (manager.agent == "pi" and lines[line] > 1):
                continue
            seen.add(line)
        keep.append(index)
    return keep


class Ids:
    """The reference's ids in ours: by position for v1 files (random ids), else unchanged."""

    def __init__(self, manager: SessionManager, reference: dict[str, Any]) -> None:
        ours = [manager.entries[i].get("id") for i in agent_view(manager)]
        theirs = [entry["id"] for entry in reference["entries"]]
        self.positional = manager.migrated and reference.get("source_header_version") in (None, 1)
        self._map = dict(zip(theirs, ours, strict=False)) if self.positional else {}

    def __call__(self, ref_id: Any) -> Any:
        if isinstance(ref_id, list):
            return [self(item) for item in ref_id]
        if not self.positional or ref_id is None:
            return ref_id
        return self._map.get(ref_id, ref_id)


def _recovered(manager: SessionManager) -> set[str]:
    keep = set(agent_view(manager))
    return {e["id"] for i, e in enumerate(manager.entries) if i not in keep}


def _js_sha256(text: str) -> str:
    well_formed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return hashlib.sha256(well_formed.encode("utf-8")).hexdigest()


def _same(item: str, ours: Any, theirs: Any) -> Item:
    return (item, ours == theirs, "" if ours == theirs else f"ours={_short(ours)} theirs={_short(theirs)}")


def _short(value: Any) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) < 240 else text[:237] + "..."


def check_leaf(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    yield _same("leaf", manager.get_leaf_id(), ids(ref["leafId"]))


def check_branch(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    recovered = _recovered(manager)
    yield _same(
        "branch", [e["id"] for e in manager.get_branch() if e["id"] not in recovered], ids(ref["branch"])
    )


def check_labels(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    recovered = _recovered(manager)
    targets = {manager.by_id[i].get("targetId") for i in recovered if manager.by_id[i]["type"] == "label"}
    ours = {k: v for k, v in manager.labels.items() if k not in targets}
    yield _same("labels", ours, {ids(k): v for k, v in ref["labels"].items()})


def _flat_rows(manager: SessionManager, skip: set[str]) -> list[dict[str, Any]]:
    def visible(node: Any) -> list[Any]:
        found: list[Any] = []
        for child in node.children:
            found.extend(visible(child) if child.entry["id"] in skip else [child])
        return found

    rows: list[dict[str, Any]] = []
    top = [n for n in manager.get_tree() if n.entry["id"] not in skip]
    stack: list[tuple[Any, Any, int]] = [(node, None, 0) for node in reversed(top)]
    while stack:
        node, parent, depth = stack.pop()
        children = visible(node)
        row = {
            "id": node.entry["id"],
            "treeParent": parent,
            "depth": depth,
            "children": [c.entry["id"] for c in children],
        }
        if node.label is not None:
            row["label"] = node.label
        rows.append(row)
        stack.extend((child, node.entry["id"], depth + 1) for child in reversed(children))
    return rows


def check_tree(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    recovered = _recovered(manager)
    entries = [manager.entries[i] for i in agent_view(manager)]
    yield _same("entry count", len(entries), len(ref["entries"]))
    for ours, theirs in zip(entries, ref["entries"], strict=False):
        parent = ours.get("parentId")
        while parent in recovered:
            parent = manager.by_id[parent].get("parentId")
        got = {"id": ours["id"], "parentId": parent, "type": ours["type"], "timestamp": ours["timestamp"]}
        want = {
            "id": ids(theirs["id"]),
            "parentId": ids(theirs["parentId"]),
            "type": theirs["type"],
            "timestamp": theirs["timestamp"],
        }
        if "role" in theirs:
            got["role"] = (ours.get("message") or {}).get("role")
            want["role"] = theirs["role"]
        yield _same(f"entry {theirs['id']}", got, want)
    rows = _flat_rows(manager, recovered)
    label_targets = {
        manager.by_id[i].get("targetId") for i in recovered if manager.by_id[i]["type"] == "label"
    }
    by_id = {row["id"]: row for row in rows}
    for row in rows:
        if row["id"] in label_targets:
            row.pop("label", None)
    yield _same("tree_flat order", [r["id"] for r in rows], ids([r["id"] for r in ref["tree_flat"]]))
    for theirs in ref["tree_flat"]:
        want = {
            key: ids(value) if key in ("id", "treeParent", "children") else value
            for key, value in theirs.items()
            if key != "labelTimestamp"
        }
        got = dict(by_id.get(want["id"], {}))
        if "labelTimestamp" in theirs:
            want["labelTimestamp"] = theirs["labelTimestamp"]
            got["labelTimestamp"] = manager.label_timestamp(want["id"])
        yield _same(f"tree_flat {theirs['id']}", got, want)
    for parent, children in ref["getChildren_multi"].items():
        ours_children = [e["id"] for e in manager.get_children(ids(parent)) if e["id"] not in recovered]
        yield _same(f"children {parent}", ours_children, ids(children))


def _context_state(manager: SessionManager, agent: str, context: Any) -> dict[str, Any]:
    if agent == "pi":
        return {"thinkingLevel": context.thinking_level, "model": context.model}
    return {
        "thinkingLevel": context.thinking_level,
        "models": context.models,
        "serviceTier": context.service_tier or None,
        "injectedTtsrRules": context.injected_ttsr_rules,
        "mode": context.mode,
    }


def _context_messages(manager: SessionManager) -> list[dict[str, Any]]:
    recovered = _recovered(manager)
    skip = {id(manager.by_id[i].get("message")) for i in recovered}
    return [m for m in manager.build_session_context().messages if id(m) not in skip]


def check_context(manager: SessionManager, ref: dict[str, Any], ids: Ids, agent: str) -> Iterator[Item]:
    context = manager.build_session_context()
    expected = ref["context"]
    want_state = {key: expected.get(key) for key in _context_state(manager, agent, context)}
    yield _same("context state", _context_state(manager, agent, context), want_state)
    messages = _context_messages(manager)
    yield _same("context count", len(messages), expected["message_count"])
    ours = [f"{m.get('role')} {_js_sha256(dumps(m))}" for m in messages]
    theirs = [f"{m['role']} {m['json_sha256']}" for m in expected["messages"]]
    yield from _aligned("context", ours, theirs)


def llm_messages(manager: SessionManager) -> list[dict[str, Any]]:
    """What the model receives at the leaf, for the manager's agent."""
    return manager.llm_messages(_context_messages(manager))


def check_llm(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    llm = llm_messages(manager)
    expected = ref["llm"]["messages"]
    yield _same("llm count", len(llm), len(expected))
    ours = [f"{m.get('role')} {_js_sha256(message_text(m))}" for m in llm]
    theirs = [f"{m['role']} {m['text_sha256']}" for m in expected]
    yield from _aligned("llm", ours, theirs, [m.get("text", "")[:80] for m in expected])


def _aligned(kind: str, ours: list[str], theirs: list[str], hints: list[str] | None = None) -> Iterator[Item]:
    """One item per reference message: found in ours at its place in the order (a longest alignment)."""
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    matched = set()
    for block in matcher.get_matching_blocks():
        matched.update(range(block.b, block.b + block.size))
    for index, key in enumerate(theirs):
        hint = f" {hints[index]!r}" if hints else ""
        yield (f"{kind} {index}", index in matched, "" if index in matched else f"missing {key[:60]}{hint}")
    extra = len(ours) - len(matched)
    if extra:
        yield (f"{kind} extra", False, f"{extra} messages of ours not in theirs")


def check_selector(
    manager: SessionManager, ref: dict[str, Any], ids: Ids, agent: str, data: bytes = b""
) -> Iterator[Item]:
    selector = ref.get("tree_selector")
    if not selector:
        return
    if _recovered(manager):
        # The selector over the file as the agent reads it (a glued line: omp keeps its first object).
        manager = SessionManager.from_bytes(_as_agent_reads(data, agent), agent=manager.agent)
        ids = Ids(manager, ref)
    flat = sel.flatten_tree(manager.get_tree(), manager.leaf_id)
    for mode, expected in selector["modes"].items():
        rows = sel.visible_rows(flat, mode, "", agent=agent)
        index = sel.initial_selection(flat, rows)
        yield _same(f"{mode} ids", [row.id for row in rows], ids(expected["ids"]))
        yield _same(
            f"{mode} selected", None if index is None else rows[index].id, ids(expected["initial_selected"])
        )
        if "rows" in expected:
            lines = sel.render_lines(rows, index, mode, width=selector["width"], agent=agent, tree=flat)
            # The answers hold every line the list draws (the footer too), with trailing blanks dropped.
            yield _same(f"{mode} rows", [line.rstrip(" ") for line in lines], expected["rows"])
    for search in selector.get("search", []):
        rows = sel.visible_rows(flat, search["mode"], search["query"], agent=agent)
        yield _same(
            f"search {search['mode']} {search['query']!r}", [row.id for row in rows], ids(search["ids"])
        )


def _as_agent_reads(data: bytes, agent: str) -> bytes:
    """The file as the agent reads it: of a line of several glued objects, omp keeps the first, pi none."""
    decoder = json.JSONDecoder()
    kept = []
    for line in data.split(b"\n"):
        text = line.decode("utf-8", "surrogateescape")
        try:
            _, end = decoder.raw_decode(text)
        except ValueError:
            kept.append(line)
            continue
        if text[end:].strip():
            if agent == "pi":
                continue
            line = text[:end].encode("utf-8", "surrogateescape")
        kept.append(line)
    return b"\n".join(kept)


def check_navigation(manager: SessionManager, ref: dict[str, Any], ids: Ids) -> Iterator[Item]:
    from treeview.session.navigation import collect_entries_for_branch_summary, navigate_tree

    recovered = _recovered(manager)
    leaf = manager.get_leaf_id()
    for expected in ref.get("collect", []):
        if "not_called" in expected:
            continue
        result = collect_entries_for_branch_summary(manager, leaf, ids(expected["target"]))
        got = {
            "commonAncestorId": result.common_ancestor_id,
            "entries": [e["id"] for e in result.entries if e["id"] not in recovered],
        }
        want = {"commonAncestorId": ids(expected["commonAncestorId"]), "entries": ids(expected["entries"])}
        yield _same(f"collect {expected['why']}", got, want)
    skip_messages = {id(manager.by_id[i].get("message")) for i in recovered}
    for expected in ref.get("navigate", []):
        if "not_called" in expected:
            continue
        manager.branch(leaf) if leaf is not None else manager.reset_leaf()
        target = ids(expected["target"])
        name = f"navigate {expected['why']}"
        try:
            result = asyncio.run(navigate_tree(manager, target))
        except Exception as error:  # noqa: BLE001 - an error is an answer too
            yield _same(name, str(error), (expected.get("error") or "").removeprefix("Error: "))
            continue
        if "error" in expected:
            yield _same(name, "no error", expected["error"])
            continue
        context = result.session_context or manager.build_session_context()
        messages = [m for m in context.messages if id(m) not in skip_messages]
        got = {
            "newLeafId": manager.get_leaf_id(),
            "editorText": result.editor_text,
            "count": len(messages),
            "roles": ",".join(m["role"] for m in messages),
        }
        want = {
            "newLeafId": ids(expected["newLeafId"]),
            "editorText": expected["editorText"],
            "count": expected["context_message_count"],
            "roles": expected.get("context_roles", got["roles"]),
        }
        yield _same(name, got, want)
    if leaf is not None:
        manager.branch(leaf)


def _normalized_branch(text: str, positions: dict[str, int]) -> str:
    """The reference's normalization of a /branch file: placeholders for the new header's id, timestamp and
    parent, fresh label entries numbered, source ids by position."""
    lines = text.split("\n")
    start = 1 if lines and json.loads(lines[0]).get("type") == "title" else 0
    header = json.loads(lines[start])
    replacements = [
        ("id", "<new-session-id>"),
        ("timestamp", "<new-session-timestamp>"),
        ("parentSession", "<parent-session-file>"),
    ]
    fresh_ids: list[tuple[str, Any]] = []
    for number in range(start + 1, len(lines)):
        if lines[number]:
            entry = json.loads(lines[number])
            if entry["id"] not in positions:
                fresh_ids.append((entry["id"], entry.get("timestamp")))
    text = "\n".join(lines)
    # As the reference's normalizer does: every occurrence of a masked value is replaced.
    for key, placeholder in replacements:
        if isinstance(header.get(key), str):
            text = text.replace(json.dumps(header[key]), json.dumps(placeholder))
    for fresh, (entry_id, timestamp) in enumerate(fresh_ids):
        text = text.replace(f'"id":"{entry_id}"', f'"id":"<fresh:{fresh}>"')
        if isinstance(timestamp, str):
            text = text.replace(f'"timestamp":"{timestamp}"', f'"timestamp":"<fresh-ts:{fresh}>"')
    lines = text.split("\n")
    result = "\n".join(lines)
    for entry_id, position in positions.items():
        result = result.replace(f'"{entry_id}"', f'"<id:{position}>"')
    return result


def check_branch_file(
    manager: SessionManager, ref: dict[str, Any], ids: Ids, agent: str, data: bytes
) -> Iterator[Item]:
    """The file /branch writes (at the first user message) and createBranchedSession(leaf) writes."""
    import tempfile

    from treeview.session.navigation import branch_from_user_message

    cases = [ref["branched"]] if "entryId" in ref.get("branched", {}) else []
    cases += [extra for extra in ref.get("branched_extra", []) if "normalized_text" in extra]
    for expected in cases:
        if "normalized_text" not in expected or _recovered(manager):
            continue
        with tempfile.TemporaryDirectory() as folder:
            source = Path(folder) / "source.jsonl"
            source.write_bytes(data)
            ours = SessionManager.open(source, persist=True, agent=manager.agent)  # type: ignore[arg-type]
            positions = {ours.entries[i]["id"]: n for n, i in enumerate(agent_view(ours))}
            entry_id = Ids(ours, ref)(expected["entryId"])
            if expected.get("case", "").startswith("createBranchedSession"):
                ours.create_branched_session(entry_id)
            else:
                asyncio.run(branch_from_user_message(ours, entry_id))
            text = ours.serialize()
        name = f"branch {expected.get('case', 'at first user message')}"
        ours_text = _normalized_branch(text, positions)
        theirs_text = expected["normalized_text"]
        if agent == "omp":
            # oh-my-pi writes the cwd it runs in (the reference ran in its own directory); Arbor, which runs
            # nowhere near the session, keeps the session's cwd: a decided difference, left out here.
            their_cwd = json.dumps(json.loads(expected["normalized_text"].split("\n")[1])["cwd"])
            ours_text = ours_text.replace(f'"cwd":{json.dumps(ours.cwd)}', f'"cwd":{their_cwd}', 1)
            # Its fresh labels are stamped "now": the header's millisecond or the next one. Arbor uses the
            # header's time; either is the same moment.
            theirs_text = re.sub(
                r'"timestamp":"<fresh-ts:\d+>"', '"timestamp":"<new-session-timestamp>"', theirs_text
            )
        yield _same(name, ours_text, theirs_text)


CHECKS: dict[str, Callable[..., Iterator[Item]]] = {
    "leaf": check_leaf,
    "branch": check_branch,
    "labels": check_labels,
    "tree": check_tree,
    "context": check_context,
    "llm": check_llm,
    "selector": check_selector,
    "navigation": check_navigation,
    "/branch file": check_branch_file,
}
NEEDS_AGENT = {"context", "selector", "/branch file"}


def compare(case: LatestCase, kind: str) -> list[Item]:
    """Every item of one kind of answer for one case; an exception counts as one disagreeing item."""
    try:
        manager = open_latest(case)
        ids = Ids(manager, case.reference)
        check = CHECKS[kind]
        args = (
            (manager, case.reference, ids, case.agent)
            if kind in NEEDS_AGENT
            else (manager, case.reference, ids)
        )
        if kind in ("selector", "/branch file"):
            args = (*args, fixture_bytes(case.stem))
        return list(check(*args))
    except Exception as error:  # noqa: BLE001 - the report counts a crash as a disagreement
        return [(f"{kind} raised", False, f"{type(error).__name__}: {error}")]


def agreement() -> dict[str, tuple[int, int]]:
    """kind -> (items agreeing, items) over every answer whose agent opens its file."""
    totals = {kind: [0, 0] for kind in KINDS}
    for case in all_latest_cases():
        if not case.opens:
            continue
        for kind in KINDS:
            for _, ok, _ in compare(case, kind):
                totals[kind][0] += ok
                totals[kind][1] += 1
    return {kind: (ok, total) for kind, (ok, total) in totals.items()}


def known_gaps() -> list[tuple[str, str]]:
    """The (answer, kind) pairs that do not fully agree (``--gaps`` prints them for test_reference_latest)."""
    return [
        (str(case), kind)
        for case in all_latest_cases()
        if case.opens
        for kind in KINDS
        if any(not ok for _, ok, _ in compare(case, kind))
    ]


def main() -> None:
    import sys

    if "--gaps" in sys.argv:
        for name, kind in known_gaps():
            print(f'    ("{name}", "{kind}"),')
        return
    verbose = "-v" in sys.argv
    if verbose:
        for case in all_latest_cases():
            if not case.opens:
                continue
            for kind in KINDS:
                for item, ok, detail in compare(case, kind):
                    if not ok:
                        print(f"{case} {kind}: {item}: {detail}")
    for kind, (ok, total) in agreement().items():
        percent = 100.0 * ok / total if total else 100.0
        print(f"{kind:<11} {ok:>6}/{total:<6} {percent:6.1f} %")


if __name__ == "__main__":
    main()
