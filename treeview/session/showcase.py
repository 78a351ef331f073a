"""The sample sessions ``./arbor run --sample`` imports: a branchy showcase session and its subagent.

:func:`showcase_files` builds, deterministically, an oh-my-pi (v3 format) session that shows every feature of
the explorer: several branch points and labels, a branch summary, a compaction, an image, every built-in tool
kind (read, write, edit, bash, grep, find, ls) and a custom one (``task``), a long tool output, a failing
tool, thinking blocks, a model change, a ``!`` shell command, a custom message and bookkeeping entries. A
``task`` call spawns a subagent, ``Reviewer``, which spawns its own, ``Reviewer.Checker``: their
transcripts sit in the showcase's artifacts folder as oh-my-pi 18 lays them out
(``showcase-export-by-day/Reviewer.jsonl``, ``showcase-export-by-day/Reviewer/Reviewer.Checker.jsonl``), and
each task result names them by agent id (``details.results[].id``). oh-my-pi writes the parent's absolute
file path as a subagent's ``parentSession``; a sample cannot know where it will be, so these name the parent
by its session id.

Written with :func:`treeview.session.jsonl.dumps` (JavaScript's ``JSON.stringify``), keys in the v15 writer's
order, so the files look like something the agent wrote. ``python -m treeview.session showcase -o DIR``.
"""

from __future__ import annotations

import base64
import struct
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from treeview.session.jsonl import dumps

__all__ = ["CHECKER_ID", "SHOWCASE_ID", "SUBAGENT_ID", "showcase_files", "write_showcase"]

SHOWCASE_ID = "0197a5c2-4e1b-7d20-8c3a-5f6e7d8c9b01"
SUBAGENT_ID = "0197a5c9-02f4-7a61-9d2b-1c3e4f5a6b72"
CHECKER_ID = "0197a5ca-11d0-7b3e-8e4f-2a6b7c8d9e13"
SHOWCASE_FILE = "showcase-export-by-day.jsonl"
SUBAGENT_FILE = "showcase-export-by-day/Reviewer.jsonl"
CHECKER_FILE = "showcase-export-by-day/Reviewer/Reviewer.Checker.jsonl"
CWD = "/home/dev/arbor"
START = datetime(2026, 5, 12, 9, 30, tzinfo=UTC)
MODEL = ("anthropic", "claude-sonnet-4-5", "anthropic-messages")
OTHER_MODEL = ("openai", "gpt-5", "openai-responses")


def _png(width: int, height: int) -> str:
    """A small deterministic PNG (a terminal-like window with coloured stripes), base64."""
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            if y < 6 or x < 3 or x >= width - 3 or y >= height - 3:
                pixel = (60, 64, 72)
            elif (y // 6) % 3 == 1 and 8 <= x < 8 + (y * 7) % (width - 16):
                pixel = (120, 200, 120)
            elif (y // 6) % 3 == 2 and 8 <= x < 8 + (y * 5) % (width - 16):
                pixel = (150, 180, 240)
            else:
                pixel = (22, 27, 34)
            row.extend(pixel)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = zlib.compress(b"".join(rows), 9)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    return base64.b64encode(png).decode("ascii")


class _Writer:
    """Appends entries with sequential ids and timestamps; ``parent`` is where the next entry hangs."""

    def __init__(self, prefix: str, start: datetime) -> None:
        self.prefix = prefix
        self.clock = start
        self.count = 0
        self.lines: list[str] = []
        self.parent: str | None = None

    def _stamp(self, seconds: int) -> tuple[str, int]:
        self.clock += timedelta(seconds=seconds)
        iso = self.clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.clock.microsecond // 1000:03d}Z"
        return iso, int(self.clock.timestamp() * 1000)

    def header(self, **fields: Any) -> None:
        iso, _ = self._stamp(0)
        self.lines.append(dumps({"type": "session", "version": 3, **fields, "timestamp": iso, "cwd": CWD}))

    def entry(self, kind: str, seconds: int = 3, *, head: dict[str, Any] | None = None, **body: Any) -> str:
        self.count += 1
        entry_id = f"{self.prefix}{self.count:06x}"
        iso, _ = self._stamp(seconds)
        base = {"id": entry_id, "parentId": self.parent, "timestamp": iso}
        self.lines.append(dumps({"type": kind, **(head or {}), **base, **body}))
        self.parent = entry_id
        return entry_id

    def now_ms(self) -> int:
        return int(self.clock.timestamp() * 1000)

    def user(self, *content: dict[str, Any] | str, seconds: int = 20) -> str:
        blocks = [{"type": "text", "text": part} if isinstance(part, str) else part for part in content]
        message = {"role": "user", "content": blocks, "attribution": "user", "timestamp": self.now_ms()}
        return self.entry("message", seconds, message=message)

    def assistant(
        self,
        *content: dict[str, Any] | str,
        model: tuple[str, str, str] = MODEL,
        tokens: tuple[int, int] = (2400, 180),
        seconds: int = 6,
    ) -> str:
        blocks = [{"type": "text", "text": part} if isinstance(part, str) else part for part in content]
        provider, model_id, api = model
        inp, out = tokens
        cache = inp * 3
        cost = {
            "input": round(inp * 3e-6, 6),
            "output": round(out * 15e-6, 6),
            "cacheRead": round(cache * 3e-7, 6),
            "cacheWrite": 0,
        }
        cost["total"] = round(sum(cost.values()), 6)
        usage = {
            "input": inp,
            "output": out,
            "cacheRead": cache,
            "cacheWrite": 0,
            "totalTokens": inp + out + cache,
            "cost": cost,
        }
        calls = any(block.get("type") == "toolCall" for block in blocks)
        message = {
            "role": "assistant",
            "content": blocks,
            "api": api,
            "provider": provider,
            "model": model_id,
            "usage": usage,
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": self.now_ms(),
        }
        return self.entry("message", seconds, message=message)

    def tool(
        self, name: str, arguments: dict[str, Any], output: str, *, error: bool = False, **extra: Any
    ) -> str:
        """An assistant turn calling one tool, then the tool's result."""
        call_id = f"toolu_{self.prefix}{self.count + 1:04x}"
        self.assistant({"type": "toolCall", "id": call_id, "name": name, "arguments": arguments})
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": output}],
            **extra,
            "isError": error,
            "timestamp": self.now_ms(),
        }
        return self.entry("message", 2, message=message)

    def label(self, target: str, text: str) -> str:
        return self.entry("label", 1, targetId=target, label=text)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


_EXPORT_PY = '''"""Export a stored session as the agent's JSONL."""

from django.core.management.base import BaseCommand, CommandError

from treeview.models import AgentSession


class Command(BaseCommand):
    help = "Write a session's file, byte for byte, to stdout or a path."

    def add_arguments(self, parser):
        parser.add_argument("session_id")
        parser.add_argument("-o", "--output")

    def handle(self, *args, **options):
        session = AgentSession.objects.by_session_id(options["session_id"])
        if session is None:
            raise CommandError("no such session")
        ...
'''

_LS = """treeview/
  __init__.py
  models.py
  explorer.py
  management/
    commands/
      export_session.py
      import_sessions.py
  services/
  session/
  views/
tests/
  test_commands.py
  test_downloads.py"""


def _pytest_log(failing: bool) -> str:
    """A long test run (the explorer folds it): 240 passing tests and, when ``failing``, one failure."""
    lines = ["============================= test session starts =============================="]
    lines.append("platform linux -- Python 3.12.3, pytest-8.3.5, pluggy-1.5.0")
    lines.append("django: version: 5.2.1, settings: sessions_site.settings")
    lines.append("collected 241 items")
    lines.append("")
    for n in range(240):
        lines.append(
            f"tests/test_commands.py::test_export_case_{n:03d} PASSED{'':>30}[{(n + 1) * 100 // 241:3d}%]"
        )
    if failing:
        lines += [
            "tests/test_commands.py::test_export_since_filters_by_day FAILED          [100%]",
            "",
            "=================================== FAILURES ===================================",
            "_______________________ test_export_since_filters_by_day _______________________",
            "",
            "    def test_export_since_filters_by_day(tmp_path):",
            '>       assert exported(since="2026-05-01") == ["b2", "b3"]',
            "E       AssertionError: assert ['b3'] == ['b2', 'b3']",
            "E         At index 0 diff: 'b3' != 'b2'",
            "E         (the entry at 23:30 local time is 2026-05-01 in UTC)",
            "",
            "tests/test_commands.py:412: AssertionError",
            "=========================== short test summary info ============================",
            "FAILED tests/test_commands.py::test_export_since_filters_by_day - AssertionError",
            "========================= 1 failed, 240 passed in 4.21s =========================",
        ]
    else:
        lines.append("tests/test_commands.py::test_export_since_filters_by_day PASSED          [100%]")
        lines.append("============================== 241 passed in 4.08s ==============================")
    return "\n".join(lines)


def _showcase() -> str:
    w = _Writer("5c", START)
    w.header(id=SHOWCASE_ID, title="Add a --since filter to session export", titleSource="user")
    w.entry("model_change", 0, model="anthropic/claude-sonnet-4-5")
    w.entry("thinking_level_change", 1, thinkingLevel="medium")
    first = w.user(
        "Add a `--since DATE` option to `manage.py export_session` that keeps only the entries written on or "
        "after that day. Look around first."
    )
    w.assistant(
        {
            "type": "thinking",
            "thinking": "Start with the layout: where the command lives and which tests cover it.",
            "thinkingSignature": "sig-showcase-1",
        },
        "I'll look at the project layout first.",
        tokens=(1800, 60),
    )
    w.tool("ls", {"path": "treeview"}, _LS)
    w.tool(
        "read",
        {"path": "treeview/management/commands/export_session.py", "offset": 1, "limit": 40},
        _EXPORT_PY,
    )
    w.tool(
        "grep",
        {"pattern": "export_session", "path": "tests"},
        "tests/test_commands.py:12:from treeview.management.commands import export_session\n"
        'tests/test_commands.py:88:    call_command("export_session", sid, stdout=out)\n'
        "tests/test_downloads.py:40:    # the same bytes as export_session",
    )
    w.tool(
        "find",
        {"pattern": "**/test_*.py", "path": "tests"},
        "tests/test_commands.py\ntests/test_downloads.py",
    )
    plan = w.assistant(
        "Here is the plan:\n\n"
        "1. parse `--since` as an ISO date (`YYYY-MM-DD`);\n"
        "2. keep the header and every entry whose `timestamp` falls on or after that day;\n"
        "3. keep each kept entry's ancestors too, so the file stays a valid tree.\n\n"
        "| option | meaning |\n|---|---|\n| `--since 2026-05-01` | entries from May 1st on |\n"
        "| (none) | the whole file, as today |\n\nShall I go ahead with `argparse`'s date type?",
        tokens=(5200, 240),
    )
    w.label(first, "task")

    # Branch 1 (abandoned later): argparse, a failing test, then two ways out of it.
    w.user("Yes, go ahead with argparse.")
    w.tool(
        "edit",
        {
            "path": "treeview/management/commands/export_session.py",
            "oldText": '        parser.add_argument("-o", "--output")\n',
            "newText": '        parser.add_argument("-o", "--output")\n'
            '        parser.add_argument("--since", type=date.fromisoformat,'
            ' help="keep entries from this day on")\n',
        },
        "Successfully replaced 1 occurrence in treeview/management/commands/export_session.py.",
    )
    w.tool(
        "bash",
        {"command": "python -m pytest -q tests/test_commands.py", "timeout": 120},
        _pytest_log(failing=True) + "\n\nexited with code 1",
        error=True,
        details={"exitCode": 1},
    )
    failed = w.assistant(
        "One test fails: an entry written at 23:30 local time is on the next day in UTC. The timestamps in "
        "the file are UTC, so the comparison must be too.",
        tokens=(9800, 120),
    )
    w.user("Compare in UTC everywhere.")
    w.tool(
        "edit",
        {
            "path": "treeview/management/commands/export_session.py",
            "oldText": "entry.timestamp.date() >= since",
            "newText": "entry.timestamp.astimezone(UTC).date() >= since",
        },
        "Successfully replaced 1 occurrence in treeview/management/commands/export_session.py.",
    )
    w.tool(
        "bash",
        {"command": "python -m pytest -q tests/test_commands.py"},
        _pytest_log(failing=False),
        details={"exitCode": 0},
    )
    utc = w.assistant("All 241 tests pass now: `--since` compares UTC days.", tokens=(11200, 40))
    w.label(utc, "utc-fix")
    w.parent = failed
    w.user("Skip that test for now, we'll come back to it.")
    w.assistant("Marked it `xfail` with a note pointing at the timezone question.", tokens=(9900, 60))

    # Back at the plan, with a summary of the abandoned branch: the branch the session continues on.
    w.parent = plan
    w.entry(
        "branch_summary",
        4,
        fromId=plan,
        summary=(
            "The user explored a different conversation branch before returning here.\nSummary of that "
            "exploration:\n\n## Goal\nAdd `--since` to export_session with argparse.\n\n"
            "## Progress\n### Done\n"
            "- [x] Added the option with `date.fromisoformat`\n- [x] Fixed a UTC/local-day mismatch in the "
            "comparison\n\n## Next Steps\n1. Decide whether click would make the command simpler\n\n"
            "<modified-files>\ntreeview/management/commands/export_session.py\n</modified-files>"
        ),
        details={"readFiles": [], "modifiedFiles": ["treeview/management/commands/export_session.py"]},
        fromExtension=False,
    )
    w.user("Let's rewrite the command with click instead, with `--since` and `--until`.")
    w.tool(
        "write",
        {
            "path": "treeview/management/commands/export_cli.py",
            "content": 'import click\n\n\n@click.command()\n@click.argument("session_id")\n'
            '@click.option("--since", type=click.DateTime(["%Y-%m-%d"]))\n'
            '@click.option("--until", type=click.DateTime(["%Y-%m-%d"]))\n'
            'def export(session_id, since, until):\n    """Write a session\'s entries between two days."""\n',
        },
        "Wrote 9 lines to treeview/management/commands/export_cli.py.",
    )
    w.tool(
        "task",
        {
            "name": "Reviewer",
            "agent": "reviewer",
            "task": "Read export_cli.py and say what is missing compared with export_session.py.",
            "solutionSpace": "a short list of concrete gaps",
        },
        "The reviewer found two gaps:\n- `--output` is missing (the old command wrote to a path);\n"
        "- the header line must be written even when no entry matches.",
        details=_task_details(
            "Reviewer",
            "reviewer",
            "Review the click port",
            {"input": 8200, "output": 410, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 8610},
        ),
    )
    w.assistant("I added `--output` and always write the header. Anything else?", tokens=(14100, 80))
    shot = w.user(
        "Here is what `--help` prints in my terminal; the options are not aligned.",
        {"type": "image", "data": _png(96, 54), "mimeType": "image/png"},
    )
    w.assistant(
        {"type": "thinking", "thinking": "click wraps the help at 79 columns; set max_content_width."},
        "click wraps at 79 columns by default; I set `max_content_width=100` so the options line up.",
        tokens=(15800, 90),
    )
    w.entry(
        "compaction",
        5,
        summary=(
            "## Goal\nAn export command with `--since`/`--until` day filters, written with click.\n\n"
            "## Progress\n"
            "- Ported export_session to click (export_cli.py), `--output` kept, header always written.\n"
            "- Help output aligned (max_content_width=100).\n\n## Next Steps\n1. Document the command."
        ),
        shortSummary="Ported the export command to click with --since/--until day filters.",
        firstKeptEntryId=shot,
        tokensBefore=16240,
        details={"readFiles": ["treeview/management/commands/export_session.py"], "modifiedFiles": []},
        fromExtension=False,
        preserveData={},
    )
    w.entry(
        "message",
        8,
        message={
            "role": "bashExecution",
            "command": "git status --short",
            "output": " M treeview/management/commands/export_session.py\n"
            "?? treeview/management/commands/export_cli.py",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": w.now_ms(),
        },
    )
    docs = w.user("Now document both options in the README.")
    w.tool(
        "edit",
        {
            "path": "README.md",
            "oldText": "## Export\n",
            "newText": "## Export\n\n`export --since 2026-05-01 --until 2026-05-31 SESSION_ID` writes the "
            "entries of those days (UTC), with their ancestors.\n",
        },
        "Successfully replaced 1 occurrence in README.md.",
    )
    documented = w.assistant(
        "Documented under **Export**, with an example:\n\n```console\n$ ./arbor manage export "
        "--since 2026-05-01 0197a5c2 > may.jsonl\n```",
        tokens=(6100, 110),
    )
    w.label(docs, "docs")
    # A second opinion from another model, as its own branch.
    w.parent = documented
    w.entry("model_change", 2, model="openai/gpt-5")
    w.user("Write a changelog entry instead of touching the README.")
    w.assistant(
        "Changelog:\n\n- `export`: new `--since`/`--until` options select entries by day (UTC).",
        model=OTHER_MODEL,
        tokens=(5400, 70),
    )
    # The main line: the review request and its answer are the session's leaf.
    w.parent = documented
    w.entry(
        "custom_message",
        1,
        head={
            "customType": "review-request",
            "content": "Please review the export changes before merging.",
            "display": True,
            "attribution": "user",
        },
    )
    w.user("Summarize what changed for the pull request.")
    final = w.assistant(
        "**Export by day**\n\n- `--since` and `--until` select entries by UTC day; ancestors are kept so the "
        "file stays a valid tree.\n- The command moved to click; `--output` and the header are kept.\n"
        "- README documents both options.",
        tokens=(6900, 150),
    )
    w.entry("custom", 1, head={"customType": "todo-state", "data": {"done": ["since", "until", "docs"]}})
    w.label(final, "ready for review")
    return w.text()


def _task_details(agent_id: str, agent: str, description: str, usage: dict[str, int]) -> dict[str, Any]:
    """A task tool result's ``details`` as oh-my-pi 18 records them: one result per spawned agent, by id."""
    result = {
        "index": 0,
        "id": agent_id,
        "agent": agent,
        "agentSource": "bundled",
        "description": description,
        "exitCode": 0,
        "truncated": False,
        "durationMs": 41000,
        "tokens": usage["totalTokens"],
        "aborted": False,
    }
    return {"projectAgentsDir": None, "results": [result], "totalDurationMs": 41000, "usage": usage}


def _subagent() -> str:
    w = _Writer("5a", START + timedelta(minutes=4))
    w.header(id=SUBAGENT_ID, title="Review the click port", titleSource="auto", parentSession=SHOWCASE_ID)
    w.entry(
        "session_init",
        0,
        systemPrompt="You are a careful code reviewer. Answer with a short list of concrete gaps.",
        task="Read export_cli.py and say what is missing compared with export_session.py.",
        tools=["read", "grep"],
    )
    w.user("Read export_cli.py and say what is missing compared with export_session.py.")
    w.tool("read", {"path": "treeview/management/commands/export_cli.py"}, "import click\n...")
    w.tool("read", {"path": "treeview/management/commands/export_session.py"}, _EXPORT_PY)
    w.tool(
        "task",
        {
            "name": "Checker",
            "agent": "explore",
            "task": "Does any caller of export_session pass --output?",
            "solutionSpace": "yes or no, with the callers",
        },
        "Yes: bench/run.py passes --output.",
        details=_task_details(
            "Reviewer.Checker",
            "explore",
            "Find the callers of --output",
            {"input": 2100, "output": 60, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2160},
        ),
    )
    w.assistant(
        "Two gaps:\n- `--output` is missing (the old command wrote to a path);\n"
        "- the header line must be written even when no entry matches.",
        tokens=(8200, 410),
    )
    return w.text()


def _checker() -> str:
    w = _Writer("5b", START + timedelta(minutes=5))
    w.header(
        id=CHECKER_ID, title="Find the callers of --output", titleSource="auto", parentSession=SUBAGENT_ID
    )
    w.user("Does any caller of export_session pass --output?")
    w.tool(
        "grep", {"pattern": "--output", "path": "."}, "bench/run.py:41:    export_session --output out.jsonl"
    )
    w.assistant("Yes: bench/run.py passes --output.", tokens=(2100, 60))
    return w.text()


def showcase_files() -> dict[str, str]:
    """Path (relative to the samples folder) → contents of the sample sessions (deterministic: the same bytes
    on every run)."""
    return {SHOWCASE_FILE: _showcase(), SUBAGENT_FILE: _subagent(), CHECKER_FILE: _checker()}


def write_showcase(directory: str | Path) -> list[Path]:
    """Write :func:`showcase_files` into ``directory`` (created if missing); returns the paths written."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in showcase_files().items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
