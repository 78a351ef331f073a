"""Views of `message` entries, by role: user, assistant, tool results, command executions, custom messages.

Compaction and branch summaries live here too: their runtime message roles and their entries render alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.html import format_html

from treeview.render.blocks import (
    Block,
    Field,
    NoticeBlock,
    TextBlock,
    code_block,
    fallback_notice,
    image_block,
    json_block,
    markdown_block,
    output_block,
    server_tool_block,
    unknown_block,
)
from treeview.render.entry_view import EntryView, new_view, usage_view
from treeview.render.highlight import highlight_code
from treeview.render.text import as_int, as_number, as_text, one_line, opt_text
from treeview.render.tools import ToolCallMap, call_summary, exit_code_of, tool_call_block, tool_kind

# File lists longer than this are cut (a compaction's readFiles can be long).
FILE_LIST_MAX = 200


def content_blocks(content: Any, *, as_output: bool = False, is_error: bool = False) -> list[Block]:
    """Blocks for a message's `content`: a string or a list of text/thinking/toolCall/image blocks.

    With `as_output` (tool results) text is shown as preformatted output rather than Markdown.
    """
    if content is None:
        return []
    if isinstance(content, str):
        if as_output:
            return [output_block(content, 0, is_error=is_error)]
        return [markdown_block(content, 0)] if content.strip() else []
    if not isinstance(content, list):
        return [json_block("content", content)]
    blocks: list[Block] = []
    for index, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict):
            blocks.append(unknown_block(block))
        elif kind == "text":
            if as_output:
                blocks.append(output_block(block.get("text"), index, is_error=is_error))
            elif as_text(block.get("text")).strip():
                blocks.append(markdown_block(block.get("text"), index))
        elif kind == "thinking":
            if as_text(block.get("thinking")).strip():
                blocks.append(markdown_block(block.get("thinking"), index, "thinking"))
            elif block.get("redacted") is True:
                blocks.append(_redacted(index))
        elif kind == "redactedThinking":
            blocks.append(_redacted(index))
        elif kind == "toolCall":
            blocks.append(tool_call_block(block, index))
        elif kind == "image":
            blocks.append(image_block(block, index))
        elif kind == "fallback":
            blocks.append(fallback_notice(block))
        elif kind == "anthropicServerTool":
            blocks.append(server_tool_block(block))
        else:
            blocks.append(unknown_block(block))
    return blocks


def _redacted(index: int) -> TextBlock:
    return TextBlock(
        "redacted_thinking", format_html("<p>{}</p>", "Reasoning redacted by the provider."), index
    )


def _text_of(content: Any) -> str:
    """The first text of a message content, for one-line summaries."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return as_text(block["text"])
    return ""


def _file_lists(details: Any) -> list[tuple[str, list[str]]]:
    """The read/modified file lists of a compaction's or branch summary's default details."""
    if not isinstance(details, dict):
        return []
    lists = []
    for key, label in (("readFiles", "Read files"), ("modifiedFiles", "Modified files")):
        files = details.get(key)
        if isinstance(files, list) and files:
            shown = [as_text(name) for name in files[:FILE_LIST_MAX]]
            if len(files) > FILE_LIST_MAX:
                shown.append(f"… and {len(files) - FILE_LIST_MAX} more")
            lists.append((label, shown))
    return lists


def _user(entry: Mapping[str, Any], message: Mapping[str, Any]) -> EntryView:
    role = as_text(message.get("role"))
    view = new_view(entry, "user", "Developer" if role == "developer" else "User")
    view.blocks = content_blocks(message.get("content"))
    view.summary = one_line(_text_of(message.get("content")))
    if message.get("synthetic") is True:
        view.fields.append(Field("synthetic", "written by the agent, not typed by the user"))
    return view


def _assistant(entry: Mapping[str, Any], message: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "assistant", "Assistant")
    view.blocks = content_blocks(message.get("content"))
    view.summary = one_line(_text_of(message.get("content")))
    view.model = opt_text(message.get("model"))
    view.provider = opt_text(message.get("provider"))
    view.api = opt_text(message.get("api"))
    view.usage = usage_view(message.get("usage"))
    view.stop_reason = opt_text(message.get("stopReason"))
    error = opt_text(message.get("errorMessage"))
    if view.stop_reason in ("error", "aborted"):
        view.aborted = view.stop_reason == "aborted"
        view.error = error or ("Aborted" if view.aborted else "The request failed")
    elif error:
        view.error = error
    if view.stop_reason == "length":
        view.blocks.append(NoticeBlock("Stopped: the output token limit was reached.", "warning"))
    for key, label in (("duration", "duration"), ("ttft", "time to first token")):
        millis = as_number(message.get(key))
        if millis is not None:
            view.fields.append(Field(label, f"{millis / 1000:.1f} s"))
    return view


def _tool_result(
    entry: Mapping[str, Any], message: Mapping[str, Any], tool_calls: ToolCallMap | None
) -> EntryView:
    call_id = as_text(message.get("toolCallId"))
    call = tool_calls.get(call_id) if tool_calls is not None and call_id else None
    name = as_text(message.get("toolName")) or (call[0] if call else "")
    view = new_view(entry, "tool_result", name or "Tool result")
    view.tool_name = name
    view.tool_call_id = call_id or None
    view.tool = tool_kind(name)
    view.attribution = opt_text(message.get("attribution"))
    view.is_error = message.get("isError") is True
    view.summary = call_summary(view.tool, call[1]) if call else ""
    content = message.get("content")
    view.blocks = content_blocks(content, as_output=True, is_error=view.is_error)
    if not view.blocks:
        view.blocks.append(NoticeBlock("(no output)"))
    details = message.get("details")
    if view.tool == "bash":
        view.exit_code = exit_code_of(details, _last_text(content))
    if isinstance(details, dict):
        diff = details.get("diff")
        if isinstance(diff, str) and diff:
            view.blocks.append(code_block("diff", highlight_code(diff, language="diff")))
        full_path = details.get("fullOutputPath")
        if isinstance(full_path, str):
            view.fields.append(Field("full output", as_text(full_path)))
        truncation = details.get("truncation")
        if isinstance(truncation, dict) and truncation.get("truncated") is True:
            view.fields.append(Field("truncated", "the tool cut this output before the model saw it"))
    if message.get("prunedAt") is not None:
        view.blocks.append(NoticeBlock("This output was later pruned from the model's context."))
    return view


def _last_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for block in reversed(content):
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                return as_text(block["text"])
    return ""


def _execution(entry: Mapping[str, Any], message: Mapping[str, Any], python: bool) -> EntryView:
    """A `bashExecution` (the user's `!cmd`) or `pythonExecution` message."""
    view = new_view(entry, "python" if python else "bash", "Python" if python else "bash")
    source = as_text(message.get("code" if python else "command"))
    view.summary = one_line(source)
    language = "python" if python else "bash"
    view.blocks.append(code_block("code" if python else "command", highlight_code(source, language=language)))
    output = as_text(message.get("output"))
    view.exit_code = as_int(message.get("exitCode"))
    view.is_error = view.exit_code not in (None, 0)
    if output:
        view.blocks.append(output_block(output, 0, is_error=view.is_error))
    else:
        view.blocks.append(NoticeBlock("(no output)"))
    if message.get("cancelled") is True:
        view.blocks.append(NoticeBlock("Execution cancelled." if python else "Command cancelled.", "warning"))
    if message.get("truncated") is True:
        view.blocks.append(NoticeBlock("The agent truncated this output.", "warning"))
    full_path = message.get("fullOutputPath")
    if isinstance(full_path, str):
        view.fields.append(Field("full output", as_text(full_path)))
    if message.get("excludeFromContext") is True:
        view.fields.append(Field("context", "excluded from the model's context (!! prefix)"))
    return view


def custom_message_view(entry: Mapping[str, Any], source: Mapping[str, Any]) -> EntryView:
    """A `custom_message` entry or a message with role custom/hookMessage (same fields)."""
    custom_type = as_text(source.get("customType"))
    view = new_view(entry, "custom_message", custom_type or "Custom message")
    view.custom_type = custom_type
    view.hidden = source.get("display") is False
    view.attribution = opt_text(source.get("attribution"))
    view.blocks = content_blocks(source.get("content"))
    view.summary = one_line(_text_of(source.get("content")))
    if source.get("details") is not None:
        view.blocks.append(json_block("details", source.get("details")))
    return view


def _file_mention(entry: Mapping[str, Any], message: Mapping[str, Any]) -> EntryView:
    view = new_view(entry, "file_mention", "Files")
    files = message.get("files")
    paths: list[str] = []
    for index, item in enumerate(files if isinstance(files, list) else []):
        if not isinstance(item, dict):
            view.blocks.append(unknown_block(item))
            continue
        path = as_text(item.get("path"))
        paths.append(path)
        if item.get("skippedReason") is not None:
            reason = as_text(item.get("skippedReason"))
            view.blocks.append(NoticeBlock(f"{path}: not included ({reason})."))
        elif isinstance(item.get("content"), str):
            view.blocks.append(code_block(path, highlight_code(as_text(item["content"]), filename=path)))
        if isinstance(item.get("image"), dict):
            view.blocks.append(image_block(item["image"], index))
    view.summary = one_line(", ".join(paths))
    return view


def message_view(entry: Mapping[str, Any], tool_calls: ToolCallMap | None) -> EntryView | None:
    """The view of a `message` entry, or None when its message or role is not one this renderer knows."""
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role in ("user", "developer"):
        view = _user(entry, message)
    elif role == "assistant":
        view = _assistant(entry, message)
    elif role == "toolResult":
        view = _tool_result(entry, message, tool_calls)
    elif role in ("bashExecution", "pythonExecution"):
        view = _execution(entry, message, role == "pythonExecution")
    elif role in ("custom", "hookMessage"):
        view = custom_message_view(entry, message)
    elif role == "fileMention":
        view = _file_mention(entry, message)
    elif role in ("compactionSummary", "branchSummary"):
        # Runtime-only roles (never stored); rendered like the entries they come from.
        view = summary_card(entry, message, "compaction" if role == "compactionSummary" else "branch_summary")
    else:
        return None
    view.role = as_text(role)
    if view.attribution is None:
        view.attribution = opt_text(message.get("attribution"))
    return view


def summary_card(entry: Mapping[str, Any], source: Mapping[str, Any], kind: str) -> EntryView:
    """A compaction or branch summary: the summary as Markdown plus what it was built from."""
    view = new_view(entry, kind, "Compaction" if kind == "compaction" else "Branch summary")
    summary = as_text(source.get("summary"))
    details = source.get("details")
    if kind == "compaction" and source.get("method") == "remote":
        # The provider keeps the real summary (replacement history): the text here is a stand-in.
        view.blocks.append(
            NoticeBlock("Remote compaction: the provider holds the summary; this text is a placeholder.")
        )
    if summary.strip():
        view.blocks.append(markdown_block(summary, 0))
    elif isinstance(details, dict) and details.get("kind") == "discarded-entry-branch":
        view.blocks.append(
            NoticeBlock("Marks a discarded branch (not a summary; nothing is sent to the model).")
        )
    else:
        view.blocks.append(NoticeBlock("Empty summary (a marker, not sent to the model)."))
    short = opt_text(source.get("shortSummary"))
    view.summary = one_line(short or summary)
    view.file_lists = _file_lists(details)
    for key, label in (
        ("shortSummary", "recap"),
        ("tokensBefore", "tokens before"),
        ("tokensAfter", "tokens after"),
        ("firstKeptEntryId", "first kept entry"),
        ("fromId", "from"),
        ("method", "method"),
        ("warning", "warning"),
    ):
        if source.get(key) is not None:
            value = source[key]
            number = as_int(value)
            view.fields.append(Field(label, f"{number:,}" if number is not None else as_text(value)))
    if source.get("fromExtension") is True or source.get("fromHook") is True:
        view.fields.append(Field("source", "an extension"))
    if isinstance(details, dict) and details.get("kind") is not None:
        view.fields.append(Field("details", as_text(details.get("kind"))))
    return view
