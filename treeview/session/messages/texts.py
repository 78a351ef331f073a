"""Texts of context messages: the v15 summary templates and the text of ``!``/``$`` executions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
from treeview.session.output_notice import format_output_notice
from treeview.session.prompt import render_prompt

Message = dict[str, Any]

# ---------------------------------------------------------------------------------------------------------
# Templates (exact bytes of packages/coding-agent/src/prompts/compaction/*-context.md at v15.0.0, including
# the final newline the file ends with; the formatter removes it again after rendering).
# ---------------------------------------------------------------------------------------------------------

BRANCH_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "The following is a summary of a branch that this conversation came back from:\n"
    "\n"
    "<summary>\n"
    "{{summary}}\n"
    "</summary>\n"
)

COMPACTION_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "Another language model started to solve this problem and produced a summary of its thinking process. "
    "You also have access to the state of the tools that were used by that language model. "
    "You MUST use this to build on the work that has already been done and NEVER duplicate work. "
    "Here is the summary produced by the other language model; you MUST use the information in this "
    "summary to assist with your own analysis:\n"
    "\n"
    "<summary>\n"
    "{{summary}}\n"
    "</summary>\n"
)


def branch_summary_context_text(summary: Any) -> str:
    """The user-message text wrapping a branch summary (v15 ``branch-summary-context.md``)."""
    return render_prompt(BRANCH_SUMMARY_CONTEXT_TEMPLATE, summary=summary)


def compaction_summary_context_text(summary: Any) -> str:
    """The user-message text wrapping a compaction summary (v15.0.0 ``compaction-summary-context.md``)."""
    return render_prompt(COMPACTION_SUMMARY_CONTEXT_TEMPLATE, summary=summary)


# ---------------------------------------------------------------------------------------------------------
# Execution messages
# ---------------------------------------------------------------------------------------------------------


def _nonzero_exit_code(exit_code: Any) -> bool:
    # exitCode !== null && exitCode !== undefined && exitCode !== 0 (strict: false and "0" are not 0).
    if js.is_nullish(exit_code):
        return False
    return not (js.is_number(exit_code) and exit_code == 0)


def _execution_text(
    msg: Mapping[str, Any], heading: str, output_label: str, cancelled: str, failed: str
) -> str:
    """The layout both execution texts share: the heading, the output in a fence (or ``(no output)``),
    then a cancellation or failure line, then the output notice."""
    output = msg.get("output", UNDEFINED)
    text = heading + (
        f"{output_label}```\n{js.to_string(output)}\n```" if js.truthy(output) else "(no output)"
    )
    exit_code = msg.get("exitCode", UNDEFINED)
    if js.truthy(msg.get("cancelled", UNDEFINED)):
        text += f"\n\n({cancelled})"
    elif _nonzero_exit_code(exit_code):
        text += f"\n\n{failed} {js.to_string(exit_code)}"
    return text + format_output_notice(msg.get("meta", UNDEFINED))


def bash_execution_to_text(msg: Mapping[str, Any]) -> str:
    """User-message text for a ``bashExecution`` (the ``!`` command), as v15 ``bashExecutionToText``."""
    heading = f"Ran `{js.to_string(msg.get('command', UNDEFINED))}`\n"
    return _execution_text(msg, heading, "", "command cancelled", "Command exited with code")


def python_execution_to_text(msg: Mapping[str, Any]) -> str:
    """User-message text for a ``pythonExecution`` (the ``$`` command), as v15 ``pythonExecutionToText``."""
    heading = f"Ran Python:\n```python\n{js.to_string(msg.get('code', UNDEFINED))}\n```\n"
    return _execution_text(msg, heading, "Output:\n", "execution cancelled", "Execution failed with code")
