"""``python -m treeview.session``: every subcommand, checked against the original's answers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.reference import DATA, Case, all_cases, omp_view
from treeview.session.cli import main
from treeview.session.session_manager import SessionManager

CASES = all_cases()


def omp_view_ids(case: Case) -> list[int]:
    manager = SessionManager.open(case.path)
    keep = set(omp_view(manager))
    return [i for i in range(len(manager.entries)) if i not in keep]


PLAIN = [c for c in CASES if not SessionManager.open(c.path).migrated and len(omp_view_ids(c)) == 0]


def latest(case: Case) -> dict[str, Any]:
    """The newest answer for the fixture: of the agent that wrote it (the CLI's default rules)."""
    answer = {"omp": "omp18", "pi": "pi16"}[SessionManager.open(case.path).agent]
    path = DATA / "reference-latest" / f"{case.path.stem}.{answer}.json"
    result: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return result


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_inspect_reports_the_newest_agents_answers(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "inspect", str(case.path))
    ref = latest(case)
    assert result["sessionId"] == ref["sessionId"]
    assert result["version"] == ref["version_after_migration"]
    assert len(result["entries"]) >= len(ref["entries"])
    assert set(result) >= {"leafId", "entries", "tree", "branch", "labels", "context", "warnings"}
    assert result["context"]["thinkingLevel"] == ref["context"]["thinkingLevel"]
    if result["agent"]["name"] == "omp":
        assert result["context"]["models"] == ref["context"]["models"]
    else:
        assert result["context"]["model"] == ref["context"]["model"]
    if case in PLAIN:
        assert result["leafId"] == ref["leafId"]
        assert result["entries"] == ref["entries"]
        assert result["branch"] == ref["branch"]
        assert result["labels"] == ref["labels"]
        tree = [
            {
                "id": r["id"],
                "treeParent": r["parentId"],
                **{k: v for k, v in r.items() if k not in ("id", "parentId")},
            }
            for r in result["tree"]
        ]
        assert tree == ref["tree_flat"]
        # The newest answers give an execution's output as its text; Arbor's message_text gives none.
        texts = [
            (m["role"], _utf16(m["text"])[:200], len(_utf16(m["text"])))
            for m in result["context"]["messages"]
            if not m["role"].endswith("Execution")
        ]
        expected = [
            (m["role"], _utf16(m["text"]), m["text_len"])
            for m in ref["context"]["messages"]
            if not m["role"].endswith("Execution")
        ]
        assert texts == expected


def _utf16(text: str) -> list[int]:
    """JavaScript's view of a string (UTF-16 code units), in which the reference counts and cuts."""
    data = text.encode("utf-16-le", errors="surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


@pytest.mark.parametrize("case", PLAIN, ids=str)
@pytest.mark.parametrize("mode", ["default", "no-tools", "user-only", "labeled-only", "all"])
def test_select_gives_the_newest_agents_rows(
    case: Case, mode: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = latest(case)["tree_selector"]["modes"][mode]
    result = run_json(capsys, "select", str(case.path), "--filter", mode)
    assert [row["id"] for row in result["rows"]] == expected["ids"]
    assert result["selectedId"] == expected["initial_selected"]
    width = latest(case)["tree_selector"]["width"]
    assert main(["select", str(case.path), "--filter", mode, "--width", str(width)]) == 0
    drawn = capsys.readouterr().out.splitlines()
    if "rows" in expected:
        # Drawn as the agent draws them (the answers drop trailing blanks).
        assert [line.rstrip(" ") for line in drawn] == expected["rows"]
    else:  # the big answers keep the drawn rows of the default mode only
        assert len(drawn) >= len(expected["ids"])


@pytest.mark.parametrize("case", PLAIN, ids=str)
def test_select_search_matches_the_newest_agent(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    for search in latest(case)["tree_selector"]["search"]:
        result = run_json(
            capsys, "select", str(case.path), "--filter", search["mode"], "--search", search["query"]
        )
        assert [row["id"] for row in result["rows"]] == search["ids"], search["query"]


@pytest.mark.parametrize("case", PLAIN, ids=str)
def test_navigate_matches_the_original(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    ref = case.reference
    targets = [t["target"] for t in ref["navigate"]]
    records = run_json(capsys, "navigate", str(case.path), *[a for t in targets for a in ("--target", t)])
    collect = {c["target"]: c for c in ref["collect"]}
    for record, expected in zip(records, ref["navigate"], strict=True):
        assert record["newLeafId"] == expected["newLeafId"]
        assert record["editorText"] == expected["editorText"]
        assert record["commonAncestorId"] == collect[record["target"]]["commonAncestorId"]
        assert record["entriesToSummarize"] == collect[record["target"]]["entries"]


def test_select_shows_label_times_on_request(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-05-01T10:00:00.000Z", "cwd": "/p"},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "timestamp": "2026-05-01T10:00:01.000Z",
            "message": {"role": "user", "content": "hi"},
        },
        {"type": "usage", "id": "u", "parentId": "a", "timestamp": "2026-05-01T10:00:02.000Z", "usage": {}},
        {
            "type": "label",
            "id": "l",
            "parentId": "u",
            "timestamp": "2026-05-01T10:00:03.000Z",
            "targetId": "a",
            "label": "go",
        },
    ]
    source = tmp_path / "pi.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = run_json(capsys, "select", str(source))
    assert result["rows"] == [
        {
            "id": "a",
            "text": "[go] user: hi",
            "indent": 0,
            "active": True,
            "labelTimestamp": lines[3]["timestamp"],
        }
    ]
    assert main(["select", str(source)]) == 0
    assert capsys.readouterr().out.splitlines() == ["› • [go] user: hi", "  (1/1)"]
    assert main(["select", str(source), "--label-times"]) == 0
    drawn = capsys.readouterr().out.splitlines()
    assert (
        drawn[0].startswith("› • [go] ")
        and drawn[0].endswith(" user: hi")
        and drawn[0] != "› • [go] user: hi"
    )
    assert drawn[1] == "  (1/1) [+label time]"


def test_branch_writes_the_path_to_the_parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = DATA / "handmade" / "v3_branching_labels.jsonl"
    out = tmp_path / "branched.jsonl"
    result = run_json(capsys, "branch", str(source), "--entry", "b2000007", "-o", str(out))
    slot, *lines = out.read_text().splitlines()
    assert json.loads(slot)["type"] == "title"  # oh-my-pi 18's /branch file starts with a title slot
    assert result["entries"] == len(lines) - 1
    header = json.loads(lines[0])
    assert header["parentSession"] == str(source.resolve())
    assert [json.loads(line)["id"] for line in lines[1:]] == [
        "a1000001",
        "a1000002",
        "b2000001",
        "b2000002",
        "d4000001",
    ]
    assert main(["branch", str(source), "--entry", "b2000002", "-o", str(tmp_path / "x.jsonl")]) == 2
    assert "Invalid entry ID for branching" in capsys.readouterr().err


def test_migrate_writes_a_v3_file_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "m.jsonl"
    result = run_json(capsys, "migrate", str(DATA / "handmade" / "v1_index_compaction.jsonl"), "-o", str(out))
    assert result["migrated"] and json.loads(out.read_text().splitlines()[0])["version"] == 3
    assert main(["migrate", str(DATA / "handmade" / "v1_index_compaction.jsonl"), "-o", str(out)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err


def test_errors_are_clear_and_exit_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("hello\n")
    assert main(["inspect", str(bad)]) == 2
    assert "not a session file" in capsys.readouterr().err
    assert main(["navigate", str(DATA / "handmade" / "v3_compaction.jsonl"), "--target", "nope"]) == 2
    assert "Entry nope not found" in capsys.readouterr().err


def test_module_entry_point_runs(tmp_path: Path) -> None:
    out = tmp_path / "g.jsonl"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "treeview.session",
            "generate",
            "--entries",
            "300",
            "--seed",
            "7",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    manager = SessionManager.open(out)
    assert len(manager.entries) == 300 and not manager.warnings


# --------------------------------------------------------------------------------------------------
# The newest agents: detection, --agent, the LLM hashes, stable v1 ids, a closed pipe

WRITERS = {
    "latest/omp18w_small_50.jsonl": "omp",
    "latest/omp18w_features_200.jsonl": "omp",
    "latest/pi16w_small_50.jsonl": "pi",
    "latest/pi16w_features_200.jsonl": "pi",
    "real/oh-my-pi_large-session_v3-migrated_title-slot.jsonl": "omp",
    "real/pi-mono_large-session_v1.jsonl": "pi",
    "real/pi-mono_root-session_v1_malformed-line.jsonl": "pi",
    "handmade/omp18_title_slot_new_entry_types.jsonl": "omp",
    "handmade/v3_custom_mode_ttsr.jsonl": "omp",
    "handmade/v2_hookmessage_fromhook.jsonl": "pi",
}


@pytest.mark.parametrize(("fixture", "agent"), WRITERS.items())
def test_inspect_detects_the_agent_that_wrote_the_file(
    fixture: str, agent: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_json(capsys, "inspect", str(DATA / fixture))
    assert result["agent"]["name"] == agent
    assert result["agent"]["reason"]


@pytest.mark.parametrize("answer", ["omp18", "pi16"])
def test_inspect_llm_hashes_are_the_agents_prompt(answer: str, capsys: pytest.CaptureFixture[str]) -> None:
    reference = json.loads((DATA / "reference-latest" / f"v3_compaction.{answer}.json").read_text())
    agent = "omp" if answer == "omp18" else "pi"
    result = run_json(capsys, "inspect", str(DATA / "handmade" / "v3_compaction.jsonl"), "--agent", agent)
    assert result["agent"] == {"name": agent, "reason": "given"}
    want = [{"role": m["role"], "text_sha256": m["text_sha256"]} for m in reference["llm"]["messages"]]
    assert result["llm"] == want


def test_pi_refuses_a_title_slot_file_with_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    path = DATA / "handmade" / "omp18_title_slot_new_entry_types.jsonl"
    before = path.read_bytes()
    assert main(["inspect", str(path), "--agent", "pi"]) == 2
    assert "title slot" in capsys.readouterr().err
    assert path.read_bytes() == before


def test_v1_ids_are_the_same_in_two_runs(tmp_path: Path) -> None:
    source = DATA / "handmade" / "v1_index_compaction.jsonl"

    def cli(*argv: str) -> Any:
        done = subprocess.run(
            [sys.executable, "-m", "treeview.session", *argv, "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first = cli("inspect", str(source))
    target = first["branch"][2]
    (record,) = cli("navigate", str(source), "--target", target)
    assert record["target"] == target
    assert cli("inspect", str(source))["branch"] == first["branch"]


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    source = DATA / "real" / "pi-mono_large-session_v1.jsonl"
    done = subprocess.run(
        f"{sys.executable} -m treeview.session inspect --json {source} | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert len(done.stdout) == 10
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
