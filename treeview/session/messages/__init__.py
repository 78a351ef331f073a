"""LLM presentation of context messages (spec §12; oh-my-pi v15.0.0 ``session/messages.ts``).

This package turns the AgentMessages produced by ``build_session_context`` into the messages a
provider receives (``convert_to_llm``): it wraps branch/compaction summaries in the v15 context
templates (rendered by :mod:`treeview.session.prompt`) and formats ``!``/``$`` executions (their
output notice comes from :mod:`treeview.session.output_notice`).

The produced dicts are hashed with ``JSON.stringify`` semantics elsewhere, so key order matters:
every builder below inserts keys in the order the original object literal or spread creates them.
JavaScript ``undefined`` is modelled as "key absent" (or the ``UNDEFINED`` sentinel of
``treeview.session.jsonl`` when an input already carries it); both serialize identically.

Pure Python, no Django.


Modules: ``texts`` (v15 templates, execution texts), ``v15_converters``, ``latest_converters`` (oh-my-pi 18
and pi 1.6) and ``convert`` (``convert_to_llm``, ``message_text``).
"""

from treeview.session.messages.convert import convert_to_llm, message_text
from treeview.session.messages.texts import (
    BRANCH_SUMMARY_CONTEXT_TEMPLATE,
    COMPACTION_SUMMARY_CONTEXT_TEMPLATE,
    bash_execution_to_text,
    branch_summary_context_text,
    compaction_summary_context_text,
    python_execution_to_text,
)
from treeview.session.output_notice import format_bytes, format_output_notice
from treeview.session.prompt import format_prompt_output, render_prompt

__all__ = [
    "BRANCH_SUMMARY_CONTEXT_TEMPLATE",
    "COMPACTION_SUMMARY_CONTEXT_TEMPLATE",
    "bash_execution_to_text",
    "branch_summary_context_text",
    "compaction_summary_context_text",
    "convert_to_llm",
    "format_bytes",
    "format_output_notice",
    "format_prompt_output",
    "message_text",
    "python_execution_to_text",
    "render_prompt",
]
