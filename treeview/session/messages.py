"""LLM presentation of context messages (spec §12; oh-my-pi v15.0.0 ``session/messages.ts``).

This module turns the AgentMessages produced by ``build_session_context`` into the messages a
provider receives (``convert_to_llm``): it wraps branch/compaction summaries in the v15 context
templates (rendered by :mod:`treeview.session.prompt`) and formats ``!``/``$`` executions (their
output notice comes from :mod:`treeview.session.output_notice`).

The produced dicts are hashed with ``JSON.stringify`` semantics elsewhere, so key order matters:
every builder below inserts keys in the order the original object literal or spread creates them.
JavaScript ``undefined`` is modelled as "key absent" (or the ``UNDEFINED`` sentinel of
``treeview.session.jsonl`` when an input already carries it); both serialize identically.

Pure Python, no Django.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
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


# ---------------------------------------------------------------------------------------------------------
# convertToLlm
# ---------------------------------------------------------------------------------------------------------


def _set(target: Message, key: str, value: Any) -> None:
    """Assign like a JS object literal/spread: an undefined value adds no visible key.

    Assigning onto an existing key keeps its position (JS property order); an undefined value on an
    existing key is stored as UNDEFINED so the position semantics stay intact.
    """
    if js.is_undefined(value):
        if key in target:
            target[key] = UNDEFINED
        return
    target[key] = value


def _literal(*pairs: tuple[str, Any]) -> Message:
    """Build a dict like a JS object literal: keys in order, undefined values omitted."""
    out: Message = {}
    for key, value in pairs:
        if not js.is_undefined(value):
            out[key] = value
    return out


def _with_default_attribution(message: Message, default: str) -> Message:
    out = dict(message)
    attribution = message.get("attribution", UNDEFINED)
    out["attribution"] = default if js.is_nullish(attribution) else attribution
    return out


def _pruned_tool_result_content(message: Message) -> Any:
    content = message.get("content", UNDEFINED)
    if js.is_undefined(message.get("prunedAt", UNDEFINED)):
        return content
    blocks = content if isinstance(content, list) else []
    texts = [js.get(block, "text") for block in blocks if js.get(block, "type") == "text"]
    text = js.join(texts, "") or "[Output truncated]"
    return [{"type": "text", "text": text}]


def _file_mention_content(message: Message) -> list[Any]:
    files = message.get("files", UNDEFINED)
    file_list = files if isinstance(files, list) else []
    rendered: list[str] = []
    for file in file_list:
        body = js.get(file, "content")
        inner = f"\n{js.to_string(body)}\n" if js.truthy(body) else "\n"
        rendered.append(f'<file path="{js.to_string(js.get(file, "path"))}">{inner}</file>')
    file_contents = "\n\n".join(rendered)
    content: list[Any] = [{"type": "text", "text": f"<system-reminder>\n{file_contents}\n</system-reminder>"}]
    for file in file_list:
        image = js.get(file, "image")
        if js.truthy(image):
            content.append(image)
    return content


def _user_message(content: Any, attribution: Any, source: Message) -> Message:
    """``{role: "user", content, attribution, timestamp: source.timestamp}``, undefined values omitted."""
    return _literal(
        ("role", "user"),
        ("content", content),
        ("attribution", attribution),
        ("timestamp", source.get("timestamp", UNDEFINED)),
    )


def _execution_converter(to_text: Callable[[Message], str]) -> Callable[[Message], Message | None]:
    """The converter of an execution role: dropped when ``excludeFromContext``, else the user's text."""

    def convert(m: Message) -> Message | None:
        if js.truthy(m.get("excludeFromContext", UNDEFINED)):
            return None
        return _user_message([{"type": "text", "text": to_text(m)}], "user", m)

    return convert


def _convert_custom(m: Message) -> Message:
    content = m.get("content", UNDEFINED)
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return _user_message(content, m.get("attribution", UNDEFINED), m)


def _convert_branch_summary(m: Message) -> Message:
    text = branch_summary_context_text(m.get("summary", UNDEFINED))
    return _user_message([{"type": "text", "text": text}], "agent", m)


def _convert_compaction_summary(m: Message) -> Message:
    text = compaction_summary_context_text(m.get("summary", UNDEFINED))
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": text}]),
        ("attribution", "agent"),
        ("providerPayload", m.get("providerPayload", UNDEFINED)),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _convert_file_mention(m: Message) -> Message:
    return _user_message(_file_mention_content(m), "user", m)


def _convert_tool_result(m: Message) -> Message:
    out = dict(m)
    _set(out, "content", _pruned_tool_result_content(m))
    attribution = m.get("attribution", UNDEFINED)
    out["attribution"] = "agent" if js.is_nullish(attribution) else attribution
    return out


_V15_CONVERTERS: Final[dict[str, Callable[[Message], Message | None]]] = {
    "bashExecution": _execution_converter(bash_execution_to_text),
    "pythonExecution": _execution_converter(python_execution_to_text),
    "custom": _convert_custom,
    "hookMessage": _convert_custom,
    "branchSummary": _convert_branch_summary,
    "compactionSummary": _convert_compaction_summary,
    "fileMention": _convert_file_mention,
    "user": lambda m: _with_default_attribution(m, "user"),
    "developer": lambda m: _with_default_attribution(m, "agent"),
    # The original returns the assistant object itself; so do we (callers must not mutate it).
    "assistant": lambda m: m,
    "toolResult": _convert_tool_result,
}


# ---------------------------------------------------------------------------------------------------------
# The newest agents: oh-my-pi 18.3.4 and pi 1.6.0
# ---------------------------------------------------------------------------------------------------------

OMP_BRANCH_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "Branch-return summary:\n\n<summary>\n{{summary}}\n</summary>\n"
)
OMP_COMPACTION_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "Prior model work/tool state available.\n"
    "MUST build on prior work; NEVER duplicate prior work.\n"
    "\n"
    "<summary>\n"
    "{{summary}}\n"
    "</summary>\n"
)
# The wrapper of a handoff compaction (the prompt text the model receives, needed for exact parity).
OMP_HANDOFF_SUMMARY_CONTEXT_TEMPLATE: Final[str] = (
    "Context replaced. The <handoff> below is a handoff document a prior instance of you wrote from the full "
    "conversation. It is your own working memory, not user input.\n"
    "- First person inside it refers to you (the prior instance).\n"
    '- "Next Steps" is your own resumed plan; re-check it against the latest user message before acting.\n'
    "- The handoff already exists and is complete: NEVER write another handoff document unless the user "
    "explicitly asks.\n"
    "MUST build on prior work; NEVER duplicate prior work.\n"
    "\n"
    "<handoff>\n"
    "{{summary}}\n"
    "</handoff>\n"
)
PI_COMPACTION_SUMMARY_PREFIX: Final[str] = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
PI_COMPACTION_SUMMARY_SUFFIX: Final[str] = "\n</summary>"
PI_BRANCH_SUMMARY_PREFIX: Final[str] = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
PI_BRANCH_SUMMARY_SUFFIX: Final[str] = "</summary>"

Converted = Message | list[Message] | None


def _omp_convert_custom(m: Message) -> Converted:
    content = m.get("content", UNDEFINED)
    if not isinstance(content, str | list):
        return None
    if isinstance(content, list):
        texts = [b for b in content if js.get(b, "type") == "text"]
        images = [b for b in content if js.get(b, "type") == "image"]
        if images:
            # Images ride in a user message (the only slot every provider accepts them in); the text stays
            # a developer message.
            out: list[Message] = []
            attribution = m.get("attribution", UNDEFINED)
            if texts:
                out.append(_developer_message(texts, attribution, m))
            note = f"Images attached to {js.to_string(m.get('customType', UNDEFINED))}."
            out.append(_user_message([{"type": "text", "text": note}, *images], attribution, m))
            return out
    else:
        content = [{"type": "text", "text": content}]
    return _developer_message(content, m.get("attribution", UNDEFINED), m)


def _developer_message(content: Any, attribution: Any, source: Message) -> Message:
    return _literal(
        ("role", "developer"),
        ("content", content),
        ("attribution", attribution),
        ("timestamp", source.get("timestamp", UNDEFINED)),
    )


def _omp_convert_branch_summary(m: Message) -> Message:
    text = render_prompt(OMP_BRANCH_SUMMARY_CONTEXT_TEMPLATE, summary=m.get("summary", UNDEFINED))
    return _literal(
        ("role", "user"),
        ("content", [{"type": "text", "text": text}]),
        ("attribution", "agent"),
        ("historyRewriteAt", m.get("timestamp", UNDEFINED)),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _omp_convert_compaction_summary(m: Message) -> Message:
    summary = m.get("summary", UNDEFINED)
    blocks = m.get("blocks", UNDEFINED)
    content: list[Any]
    if isinstance(blocks, list):
        # snapcompact: the summary is already the lead-in text, followed by the archive blocks.
        content = [{"type": "text", "text": js.to_string(summary)}, *blocks]
    else:
        handoff = m.get("method") == "handoff"
        template = (
            OMP_HANDOFF_SUMMARY_CONTEXT_TEMPLATE if handoff else OMP_COMPACTION_SUMMARY_CONTEXT_TEMPLATE
        )
        images = m.get("images", UNDEFINED)
        content = [{"type": "text", "text": render_prompt(template, summary=summary)}]
        content.extend(images if isinstance(images, list) else [])
    return _literal(
        ("role", "user"),
        ("content", content),
        ("attribution", "agent"),
        ("historyRewriteAt", m.get("timestamp", UNDEFINED)),
        ("providerPayload", m.get("providerPayload", UNDEFINED)),
        ("timestamp", m.get("timestamp", UNDEFINED)),
    )


def _omp_convert_file_mention(m: Message) -> Converted:
    files = m.get("files", UNDEFINED)
    file_list = files if isinstance(files, list) else []

    def wrap(file: Any) -> str:
        body = js.get(file, "content")
        inner = f"\n{js.to_string(body)}\n" if js.truthy(body) else "\n"
        return f'<file path="{js.to_string(js.get(file, "path"))}">{inner}</file>'

    text_files = [f for f in file_list if not js.truthy(js.get(f, "image"))]
    image_files = [f for f in file_list if js.truthy(js.get(f, "image"))]
    out: list[Message] = []
    if text_files:
        text = "\n".join(wrap(f) for f in text_files)
        out.append(_developer_message([{"type": "text", "text": text}], "user", m))
    if image_files:
        content: list[Any] = [{"type": "text", "text": "\n".join(wrap(f) for f in image_files)}]
        content.extend(js.get(f, "image") for f in image_files)
        out.append(_user_message(content, "user", m))
    return out


def _is_user_interrupt(m: Message) -> bool:
    return m.get("errorMessage") in ("Interrupted by user", "Request interrupted by user") or (
        isinstance(m.get("errorId"), str) and "interrupt" in m["errorId"].lower()
    )


def _omp_convert_assistant(m: Message) -> Converted:
    content = m.get("content")
    empty = isinstance(content, list) and not content
    if m.get("stopReason") == "aborted" and _is_user_interrupt(m) and empty and "requestControls" not in m:
        return None
    return m


def _pi_user(content: Any, source: Message) -> Message:
    return _literal(("role", "user"), ("content", content), ("timestamp", source.get("timestamp", UNDEFINED)))


def _pi_bash_text(m: Message) -> str:
    text = f"Ran `{js.to_string(m.get('command', UNDEFINED))}`\n"
    output = m.get("output", UNDEFINED)
    text += f"```\n{js.to_string(output)}\n```" if js.truthy(output) else "(no output)"
    exit_code = m.get("exitCode", UNDEFINED)
    if js.truthy(m.get("cancelled", UNDEFINED)):
        text += "\n\n(command cancelled)"
    elif _nonzero_exit_code(exit_code):
        text += f"\n\nCommand exited with code {js.to_string(exit_code)}"
    if js.truthy(m.get("truncated", UNDEFINED)) and js.truthy(m.get("fullOutputPath", UNDEFINED)):
        text += f"\n\n[Output truncated. Full output: {js.to_string(m['fullOutputPath'])}]"
    return text


def _pi_convert_bash(m: Message) -> Converted:
    if js.truthy(m.get("excludeFromContext", UNDEFINED)):
        return None
    return _pi_user([{"type": "text", "text": _pi_bash_text(m)}], m)


def _pi_convert_custom(m: Message) -> Message:
    content = m.get("content", UNDEFINED)
    return _pi_user([{"type": "text", "text": content}] if isinstance(content, str) else content, m)


def _pi_summary(prefix: str, suffix: str) -> Callable[[Message], Message]:
    def convert(m: Message) -> Message:
        text = prefix + js.to_string(m.get("summary", UNDEFINED)) + suffix
        return _pi_user([{"type": "text", "text": text}], m)

    return convert


_OMP_CONVERTERS: Final[dict[str, Callable[[Message], Converted]]] = {
    **_V15_CONVERTERS,
    "custom": _omp_convert_custom,
    "hookMessage": _omp_convert_custom,
    "branchSummary": _omp_convert_branch_summary,
    "compactionSummary": _omp_convert_compaction_summary,
    "fileMention": _omp_convert_file_mention,
    "assistant": _omp_convert_assistant,
}
_PI_CONVERTERS: Final[dict[str, Callable[[Message], Converted]]] = {
    "bashExecution": _pi_convert_bash,
    "custom": _pi_convert_custom,
    "branchSummary": _pi_summary(PI_BRANCH_SUMMARY_PREFIX, PI_BRANCH_SUMMARY_SUFFIX),
    "compactionSummary": _pi_summary(PI_COMPACTION_SUMMARY_PREFIX, PI_COMPACTION_SUMMARY_SUFFIX),
    "system": lambda m: m,
    "user": lambda m: m,
    "assistant": lambda m: m,
    "toolResult": lambda m: m,
}
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
