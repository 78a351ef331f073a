"""Where oh-my-pi keeps the transcripts a session spawns, and how to tell one from a session of its own.

oh-my-pi 18 gives every session file ``<dir>/<stem>.jsonl`` an artifacts folder ``<dir>/<stem>/``. The task
tool writes each subagent's transcript there as ``<AgentId>.jsonl`` (its header's ``parentSession`` is the
parent's file path); a subagent's own subagents nest one level down, ``<AgentId>/<AgentId>.<ChildId>.jsonl``,
so the file stem is the id the parent's task result names. The same folder holds advisor transcripts
(``__advisor.jsonl``, ``__advisor.<slug>.jsonl``, no ``parentSession``) and the ``/tan`` clones
(``Tan-<snowflake>.jsonl``, a fork of the parent whose ``parentSession`` is the parent's id).

Pure Python: the importer asks :func:`subagent_place` about every file it reads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["TASK", "ADVISOR", "CLONE", "SubagentPlace", "subagent_place", "task_result_agent_ids"]

TASK = "task"
ADVISOR = "advisor"
CLONE = "clone"

ADVISOR_STEM = "__advisor"
CLONE_PREFIX = "Tan-"
SUFFIX = ".jsonl"
ARCHIVE_SUFFIX = ".jsonl.gz"


@dataclass(frozen=True)
class SubagentPlace:
    """A transcript inside a session's artifacts folder."""

    parent_path: str  # the session file whose folder holds it (it may be missing)
    agent_id: str  # the file stem: the id the task result names ("Anna", "Anna.Bob", "__advisor")
    kind: str  # TASK, ADVISOR or CLONE


def kind_of(stem: str) -> str:
    if stem == ADVISOR_STEM or stem.startswith(ADVISOR_STEM + "."):
        return ADVISOR
    if stem.startswith(CLONE_PREFIX):
        return CLONE
    return TASK


def subagent_place(
    path: str, header: Mapping[str, Any], exists: Callable[[str], bool] = os.path.exists
) -> SubagentPlace | None:
    """The place of ``path`` in its parent's artifacts folder, or None for a session of its own.

    A file is a subagent transcript when the session file its folder belongs to (``<folder>.jsonl``, or the
    archived ``<folder>.jsonl.gz``) is there, or, when that file is gone, when the transcript says so itself:
    a header ``parentSession`` naming a file of that name (a task subagent), or a name only oh-my-pi gives its
    artifacts (an advisor, a ``/tan`` clone)."""
    name = os.path.basename(path)
    if not name.endswith(SUFFIX) or name == SUFFIX:
        return None
    folder = os.path.dirname(path)
    if not os.path.basename(folder):
        return None
    stem = name[: -len(SUFFIX)]
    kind = kind_of(stem)
    # oh-my-pi's archive gzips the session file and moves its folder beside it as it is
    for parent_path in (folder + SUFFIX, folder + ARCHIVE_SUFFIX):
        if exists(parent_path):
            return SubagentPlace(parent_path, stem, kind)
    parent_path = folder + SUFFIX
    place = SubagentPlace(parent_path, stem, kind)
    parent = header.get("parentSession")
    if isinstance(parent, str) and parent.endswith(os.sep + os.path.basename(parent_path)):
        return place
    if kind != TASK:
        return place
    return None


def task_result_agent_ids(message: Mapping[str, Any]) -> Iterator[str]:
    """The agent ids a task tool result names (``details.results[].id``), in order."""
    details = message.get("details")
    results = details.get("results") if isinstance(details, Mapping) else None
    if not isinstance(results, list):
        return
    for result in results:
        agent_id = result.get("id") if isinstance(result, Mapping) else None
        if isinstance(agent_id, str) and agent_id:
            yield agent_id


def task_call_names(arguments: Any) -> Iterator[str]:
    """The names a task tool call asks for (``name``, or ``tasks[].name``): the agent ids unless taken."""
    if not isinstance(arguments, Mapping):
        return
    tasks = arguments.get("tasks")
    items = tasks if isinstance(tasks, list) else [arguments]
    for item in items:
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name:
            yield name
