"""``convert_to_llm`` (the converters of an agent over a context) and ``message_text``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from treeview.session.messages.latest_converters import _OMP_CONVERTERS, _PI_CONVERTERS, Converted
from treeview.session.messages.texts import Message
from treeview.session.messages.v15_converters import _V15_CONVERTERS

_CONVERTERS_BY_AGENT: Final[dict[str, Mapping[str, Callable[[Message], Converted]]]] = {
    "omp": _OMP_CONVERTERS,
    "pi": _PI_CONVERTERS,
    "omp15": _V15_CONVERTERS,
}


def convert_to_llm(messages: list[Message], agent: str = "omp") -> list[Message]:
    """Transform context AgentMessages into the messages the model receives, by ``agent``'s newest rules.

    ``agent="omp"`` (oh-my-pi 18.3.4) is v15's ``convertToLlm`` (below) with these changes: custom and hook
    messages go out as role ``developer`` (image blocks split into a user message), summaries use the new
    wrappers ("Prior model work/tool state available." and "Branch-return summary:"; a handoff compaction has
    its own, a snapcompact one sends its summary and blocks as they are), text file mentions go out as a
    ``developer`` message, and an empty user-interrupted assistant turn is dropped. ``agent="pi"`` (pi 1.6.0)
    wraps summaries in its own prefixes, sends custom messages as user messages and everything it does not
    know (file mentions, python executions, developer messages) not at all. ``agent="omp15"`` is v15 exactly:

    * ``user`` / ``developer``: shallow copy with ``attribution ?? "user"`` / ``?? "agent"``;
    * ``assistant``: unchanged (same object);
    * ``toolResult``: copy; when ``prunedAt`` is present (even null) the content becomes one text block
      with the text blocks concatenated (``"[Output truncated]"`` when empty); ``attribution ?? "agent"``;
    * ``bashExecution`` / ``pythonExecution``: dropped when ``excludeFromContext`` is truthy, else a user
      message with the execution text, attribution ``user``;
    * ``custom`` / ``hookMessage``: a user message, string content wrapped in one text block, the
      message's own attribution (omitted when absent);
    * ``branchSummary`` / ``compactionSummary``: a user message with the rendered context template,
      attribution ``agent`` (compaction also carries ``providerPayload`` when present);
    * ``fileMention``: a ``<system-reminder>`` user message plus the files' image blocks;
    * anything else (unknown role, non-dict item) is dropped.
    """
    table = _CONVERTERS_BY_AGENT.get(agent)
    if table is None:
        raise ValueError(f"unknown agent {agent!r}")
    out: list[Message] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        converter = table.get(role) if isinstance(role, str) else None
        if converter is None:
            continue
        converted = converter(message)
        if isinstance(converted, list):
            out.extend(converted)
        elif converted is not None:
            out.append(converted)
    return out


# ---------------------------------------------------------------------------------------------------------
# Whole text of a message
# ---------------------------------------------------------------------------------------------------------


def message_text(message: Mapping[str, Any]) -> str:
    """The "whole text" of a context or LLM message.

    * string ``content``: the string itself;
    * array ``content``: the ``text`` of every text block concatenated with no separator (images,
      thinking and tool calls are ignored), the way v15 joins text blocks (pruned tool results, the
      tree selector);
    * ``branchSummary`` / ``compactionSummary``: the summary;
    * anything else (bash/python executions, file mentions, missing content): ``""``.
    """
    if not isinstance(message, Mapping):
        return ""
    role = message.get("role")
    if role in ("branchSummary", "compactionSummary"):
        summary = message.get("summary")
        return summary if isinstance(summary, str) else ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                text = block.get("text")
                if isinstance(text, str):
                    parts.append(text)
        return "".join(parts)
    return ""
