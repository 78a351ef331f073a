"""``python -m treeview.session``: the session core on the command line.

Every subcommand reads a session file the way the agent that wrote it does, with that agent's newest rules
(oh-my-pi 18.3.4 or pi 1.6.0, detected from the file; ``--agent`` overrides); ``--json`` gives
machine-readable answers (the shapes are documented in the README), without it a readable summary.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .agents import AGENTS
from .jsonl import SessionFileError, dumps
from .messages import message_text
from .navigation import InvalidBranchEntry, branch_from_user_message, prepare_navigation
from .selector import FILTER_MODES, TreeSelector
from .session_manager import EntryNotFound, SessionManager, TreeNode

__all__ = ["main"]


def _tree_rows(roots: list[TreeNode]) -> list[dict[str, Any]]:
    """getTree() in pre-order, flat (sessions can be tens of thousands of levels deep)."""
    rows: list[dict[str, Any]] = []
    stack: list[tuple[TreeNode, str | None, int]] = [(node, None, 0) for node in reversed(roots)]
    while stack:
        node, parent, depth = stack.pop()
        entry_id = node.entry["id"]
        row: dict[str, Any] = {
            "id": entry_id,
            "parentId": parent,
            "depth": depth,
            "children": [child.entry["id"] for child in node.children],
        }
        if node.label is not None:
            row["label"] = node.label
        rows.append(row)
        stack.extend((child, entry_id, depth + 1) for child in reversed(node.children))
    return rows


def _entry_row(entry: dict[str, Any]) -> dict[str, Any]:
    row = {
        "id": entry.get("id"),
        "parentId": entry.get("parentId"),
        "type": entry.get("type"),
        "timestamp": entry.get("timestamp"),
    }
    message = entry.get("message")
    if entry.get("type") == "message" and isinstance(message, dict) and "role" in message:
        row["role"] = message["role"]
    if entry.get("type") in ("custom", "custom_message") and "customType" in entry:
        row["customType"] = entry["customType"]
    return row


def inspect(manager: SessionManager) -> dict[str, Any]:
    """Everything about a session: entries, tree, active branch, labels, context, warnings."""
    context = manager.build_session_context()
    llm = manager.llm_messages(context.messages)
    return {
        "sessionId": manager.session_id,
        "agent": {"name": manager.agent, "reason": manager.agent_decision.reason},
        "version": manager.version,
        "sourceVersion": manager.source_version,
        "title": manager.session_name,
        "leafId": manager.leaf_id,
        # A stray second header is kept in the file but, as in the original, is not an entry.
        "entries": [_entry_row(entry) for entry in manager.entries if entry.get("type") != "session"],
        "tree": _tree_rows(manager.get_tree()),
        "branch": [entry["id"] for entry in manager.get_branch()],
        "labels": dict(manager.labels),
        "context": {
            "thinkingLevel": context.thinking_level,
            # oh-my-pi keeps a model per role, pi one model.
            **({"model": context.model} if manager.agent == "pi" else {"models": context.models}),
            "mode": context.mode,
            "messages": [{"role": m.get("role"), "text": message_text(m)} for m in context.messages],
        },
        # What the model receives, for exact prompt parity: sha256 of each message's full text.
        "llm": [{"role": m.get("role"), "text_sha256": _text_sha256(message_text(m))} for m in llm],
        "warnings": [warning.as_dict() for warning in manager.warnings],
    }


def _text_sha256(text: str) -> str:
    # As Node hashes a JS string: UTF-8, a lone surrogate becomes U+FFFD.
    well_formed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return hashlib.sha256(well_formed.encode("utf-8")).hexdigest()


def _print_inspect(result: dict[str, Any]) -> None:
    print(f"session  {result['sessionId']}  (version {result['sourceVersion']} → {result['version']})")
    agent = result["agent"]
    print(f"agent    {agent['name']}  ({agent['reason']})")
    if result["title"]:
        print(f"title    {result['title']}")
    print(f"entries  {len(result['entries'])}, roots {sum(1 for r in result['tree'] if r['depth'] == 0)}")
    print(f"leaf     {result['leafId']}  (active branch: {len(result['branch'])} entries)")
    context = result["context"]
    print(
        f"context  {len(context['messages'])} messages, thinking {context['thinkingLevel']}, "
        f"mode {context['mode']}, models {context.get('models', context.get('model'))}"
    )
    for target, label in result["labels"].items():
        print(f"label    {target}: {label}")
    for warning in result["warnings"]:
        print(f"warning  line {warning['line']}: {warning['message']}")


def _with_leaf(manager: SessionManager, leaf: str | None) -> None:
    if leaf is not None:
        manager.branch(leaf)


def select(
    manager: SessionManager, mode: str, query: str, label_times: bool = False
) -> tuple[dict[str, Any], TreeSelector]:
    """The selector's rows; ``label_times``: draw each label's time (pi's Shift+T)."""
    selector = TreeSelector(
        manager.get_tree(),
        manager.leaf_id,
        mode,  # type: ignore[arg-type]
        query,
        home=os.path.expanduser("~"),
        agent=manager.agent,
        label_times=manager.label_times,
    )
    if label_times:
        selector.toggle_label_times()
    rows = []
    for row in selector.rows:
        record = {"id": row.id, "text": row.text, "indent": row.display_indent, "active": row.active}
        if row.label and manager.label_timestamp(row.id):
            record["labelTimestamp"] = manager.label_timestamp(row.id)
        rows.append(record)
    result = {"filter": selector.mode, "search": query, "selectedId": selector.selected_id, "rows": rows}
    return result, selector


def navigate(manager: SessionManager, targets: Sequence[str]) -> list[dict[str, Any]]:
    records = []
    for target in targets:
        plan = prepare_navigation(manager, target)
        records.append(
            {
                "target": target,
                "newLeafId": plan.new_leaf_id,
                "editorText": plan.editor_text,
                "commonAncestorId": plan.common_ancestor_id,
                "entriesToSummarize": [entry["id"] for entry in plan.entries_to_summarize],
            }
        )
    return records


def branch_file(manager: SessionManager, entry_id: str, out: Path) -> dict[str, Any]:
    """Write the file ``/branch`` writes for a user message (§14) to ``out``."""
    result = asyncio.run(branch_from_user_message(manager, entry_id))
    manager.write_to(out)
    return {
        "file": str(out),
        "sessionId": manager.session_id,
        "entries": len(manager.entries),
        "selectedText": result.selected_text,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m treeview.session", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str, needs_file: bool = True) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        if needs_file:
            cmd.add_argument("file", type=Path, help="a pi or oh-my-pi session file (.jsonl)")
            cmd.add_argument(
                "--agent",
                choices=AGENTS,
                help="whose rules apply: omp or pi (default: detected from the file)",
            )
        cmd.add_argument("--json", action="store_true", help="answer in JSON")
        return cmd

    command("inspect", "entries, tree, active branch, labels, context and warnings of a session")
    cmd = command("select", "the tree selector's rows (as /tree shows them)")
    cmd.add_argument("--filter", default="default", choices=FILTER_MODES)
    cmd.add_argument("--search", default="")
    cmd.add_argument("--leaf", help="entry id to use as the current leaf")
    cmd.add_argument("--label-times", action="store_true", help="show when each label was set (pi's Shift+T)")
    cmd.add_argument("--width", type=int, help="draw the rows cut to this many columns, as a terminal would")
    cmd = command("navigate", "what /tree navigation to each target would do (nothing is written)")
    cmd.add_argument("--target", action="append", required=True)
    cmd.add_argument("--leaf", help="entry id to use as the current leaf")
    cmd = command("branch", "write the new session /branch creates from a user message")
    cmd.add_argument("--entry", required=True)
    cmd.add_argument("-o", "--output", type=Path, required=True)
    cmd = command("migrate", "write the file migrated to the current format version")
    cmd.add_argument("-o", "--output", type=Path, required=True)
    cmd = command("generate", "write a realistic synthetic session (for benchmarks)", needs_file=False)
    cmd.add_argument("--entries", type=int, required=True)
    cmd.add_argument("--seed", type=int, default=0)
    cmd.add_argument("-o", "--output", type=Path, required=True)
    cmd = command(
        "showcase", "write the sample sessions (a branchy showcase and its subagent)", needs_file=False
    )
    cmd.add_argument(
        "-o", "--output", type=Path, default=Path("samples"), help="directory (default: samples)"
    )
    return parser


def _emit(as_json: bool, value: Any, text: str | None = None) -> None:
    if as_json:
        sys.stdout.write(dumps(value) + "\n")
    elif text is not None:
        print(text)


def run(args: argparse.Namespace) -> int:
    if args.command == "generate":
        from .generate import write_session

        size = write_session(args.output, args.entries, args.seed)
        _emit(args.json, {"file": str(args.output), "entries": args.entries, "bytes": size}, f"{args.output}")
        return 0

    if args.command == "showcase":
        from .showcase import write_showcase

        paths = write_showcase(args.output)
        _emit(args.json, [str(path) for path in paths], "\n".join(f"wrote {path}" for path in paths))
        return 0

    manager = SessionManager.open(args.file, agent=args.agent)
    if args.command == "inspect":
        result = inspect(manager)
        if args.json:
            _emit(True, result)
        else:
            _print_inspect(result)
    elif args.command == "select":
        _with_leaf(manager, args.leaf)
        result, selector = select(manager, args.filter, args.search, args.label_times)
        _emit(args.json, result, "\n".join(selector.render(args.width)))
    elif args.command == "navigate":
        _with_leaf(manager, args.leaf)
        records = navigate(manager, args.target)
        text = "\n".join(
            f"{r['target']}: leaf → {r['newLeafId']}, common ancestor {r['commonAncestorId']}, "
            f"{len(r['entriesToSummarize'])} entries to summarize"
            + (f", editor text {r['editorText']!r}" if r["editorText"] is not None else "")
            for r in records
        )
        _emit(args.json, records, text)
    elif args.command == "branch":
        result = branch_file(manager, args.entry, args.output)
        _emit(args.json, result, f"wrote {result['file']} ({result['entries']} entries)")
    elif args.command == "migrate":
        manager.write_to(args.output)
        note = "migrated" if manager.migrated else "already current; copied unchanged"
        _emit(
            args.json,
            {"file": str(args.output), "migrated": manager.migrated, "version": manager.version},
            f"wrote {args.output} ({note})",
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return run(args)
    except BrokenPipeError:
        # The reader went away (``inspect FILE | head``): stop quietly, and keep Python from complaining
        # again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (SessionFileError, EntryNotFound, InvalidBranchEntry, FileExistsError, FileNotFoundError) as error:
        message = str(error)
        if isinstance(error, FileExistsError):
            message = f"{error.filename} already exists; refusing to overwrite it"
        elif isinstance(error, FileNotFoundError):
            message = f"{error.filename}: no such file"
        print(f"error: {message}", file=sys.stderr)
        return 2
