"""The newest agents' converters (oh-my-pi 18.3.4 and pi 1.6.0) and their summary templates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from treeview.session import js
from treeview.session.jsonl import UNDEFINED
from treeview.session.messages.texts import Message, _nonzero_exit_code
from treeview.session.messages.v15_converters import _V15_CONVERTERS, _literal, _user_message
from treeview.session.prompt import render_prompt

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
