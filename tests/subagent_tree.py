"""A session tree laid out as oh-my-pi 18.3.4 writes one (src/task/executor.ts, src/task/output-manager.ts,
src/advisor/transcript-recorder.ts, src/modes/controllers/tan-command-controller.ts):

    <dir>/<stem>.jsonl                      the session; its task call spawns Anna and Bob
    <dir>/<stem>/Anna.jsonl                 parentSession: the session's file path
    <dir>/<stem>/Anna/Anna.Cy.jsonl         Anna's own subagent (ids nest as <parent>.<child>)
    <dir>/<stem>/Bob.jsonl
    <dir>/<stem>/__advisor.jsonl            the advisor's transcript (no parentSession)
    <dir>/<stem>/Tan-1234.jsonl             a /tan clone (parentSession: the session's id)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from treeview.session.jsonl import dumps

SESSION_ID = "019a0000-0000-7000-8000-00000000a001"
STEM = f"2026-05-01T10-00-00-000Z_{SESSION_ID}"
CWD = "/home/dev/shop"


def _header(session_id: str, parent: str | None = None, ts: str = "2026-05-01T10:00:00.000Z") -> str:
    header: dict[str, Any] = {"type": "session", "version": 3, "id": session_id, "timestamp": ts, "cwd": CWD}
    if parent is not None:
        header["parentSession"] = parent
    return dumps(header)


def _message(entry_id: str, parent: str | None, minute: int, message: dict[str, Any]) -> str:
    ts = f"2026-05-01T10:{minute:02d}:00.000Z"
    return dumps({"type": "message", "id": entry_id, "parentId": parent, "timestamp": ts, "message": message})


def _user(entry_id: str, parent: str | None, minute: int, text: str) -> str:
    return _message(entry_id, parent, minute, {"role": "user", "content": [{"type": "text", "text": text}]})


def _assistant(entry_id: str, parent: str | None, minute: int, text: str, calls: list[Any] = ()) -> str:  # type: ignore[assignment]
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += list(calls)
    message = {
        "role": "assistant",
        "content": content,
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.01}},
        "stopReason": "toolUse" if calls else "stop",
    }
    return _message(entry_id, parent, minute, message)


def _task_call(call_id: str, names: list[str]) -> dict[str, Any]:
    tasks = [{"name": n, "agent": "task", "task": f"Do part {n}", "solutionSpace": "small"} for n in names]
    return {
        "type": "toolCall",
        "id": call_id,
        "name": "task",
        "arguments": {"context": "shop", "tasks": tasks},
    }


def _task_result(entry_id: str, parent: str, minute: int, call_id: str, ids: list[str]) -> str:
    results = [
        {
            "index": i,
            "id": agent_id,
            "agent": "task",
            "task": f"Do part {agent_id}",
            "exitCode": 0,
            "output": "done",
        }
        for i, agent_id in enumerate(ids)
    ]
    message = {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": "task",
        "content": [{"type": "text", "text": "\n".join(f"{i}: done" for i in ids)}],
        "details": {"projectAgentsDir": None, "results": results, "totalDurationMs": 1200},
        "isError": False,
    }
    return _message(entry_id, parent, minute, message)


def _write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
    return path


def parent_lines(session_id: str = SESSION_ID, names: tuple[str, ...] = ("Anna", "Bob")) -> list[str]:
    return [
        _header(session_id),
        _user("a0000001", None, 0, "Split the shop refactor between two helpers"),
        _assistant("a0000002", "a0000001", 1, "Spawning helpers.", [_task_call("toolu_task1", list(names))]),
        _task_result("a0000003", "a0000002", 5, "toolu_task1", list(names)),
        _assistant("a0000004", "a0000003", 6, "Both helpers are done."),
    ]


def subagent_lines(session_id: str, parent: str, task: str, spawn: list[str] = ()) -> list[str]:  # type: ignore[assignment]
    lines = [_header(session_id, parent), _user("b0000001", None, 2, task)]
    if spawn:
        lines.append(
            _assistant("b0000002", "b0000001", 3, "One more helper.", [_task_call("toolu_sub1", spawn)])
        )
        lines.append(_task_result("b0000003", "b0000002", 4, "toolu_sub1", spawn))
        lines.append(_assistant("b0000004", "b0000003", 4, "Done."))
    else:
        lines.append(_assistant("b0000002", "b0000001", 3, "Done."))
    return lines


def build_tree(directory: Path, stem: str = STEM, session_id: str = SESSION_ID) -> dict[str, Path]:
    """Write the tree under ``directory``; the paths by name ("session", "Anna", "Anna.Cy" ...)."""
    session = _write(directory / f"{stem}.jsonl", parent_lines(session_id))
    folder = directory / stem
    anna = _write(
        folder / "Anna.jsonl",
        subagent_lines("019a0000-0000-7000-8000-00000000b001", str(session), "Do part Anna", ["Anna.Cy"]),
    )
    cy = _write(
        folder / "Anna" / "Anna.Cy.jsonl",
        subagent_lines("019a0000-0000-7000-8000-00000000b002", str(anna), "Do part Anna.Cy"),
    )
    bob = _write(
        folder / "Bob.jsonl",
        subagent_lines("019a0000-0000-7000-8000-00000000b003", str(session), "Do part Bob"),
    )
    advisor = _write(
        folder / "__advisor.jsonl",
        [_header("019a0000-0000-7000-8000-00000000b004"), _user("c0000001", None, 2, "Review the plan")],
    )
    clone = _write(
        folder / "Tan-1234.jsonl",
        [_header("019a0000-0000-7000-8000-00000000b005", session_id), *parent_lines(session_id)[1:3]],
    )
    # omp's other artifacts in the folder are not transcripts
    (folder / "Anna.md").write_text("Anna's output\n")
    return {
        "session": session,
        "Anna": anna,
        "Anna.Cy": cy,
        "Bob": bob,
        "__advisor": advisor,
        "Tan-1234": clone,
    }
