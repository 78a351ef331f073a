"""What the LLM receives at a leaf by the newest agents' rules: oh-my-pi 18.3.4 and pi 1.6.0.

:mod:`treeview.session.context` holds v15's ``buildSessionContext``; the newest agents changed it:

oh-my-pi 18.3.4
  * the latest ``reset_boundary`` (``/clear``) after the latest compaction starts the context after it;
  * assistant turns marked ``retryRecovery`` and empty error turns are left out;
  * tool calls with no result on the path are stripped (a turn left empty goes), and aborted or error turns
    go with their tool results;
  * a remote compaction (OpenAI replacement history) sends no kept entries, only its payload;
  * the default model follows assistant messages only until an explicit default ``model_change``;
  * ``configured`` thinking level, the service tier per model family (a plain string is OpenAI's).

pi 1.6.0
  * the model is ``{provider, modelId}`` of the last ``model_change`` or assistant message;
  * the latest compaction is followed by its kept entries (system messages left out) and what follows;
  * a ``context_edit`` replaces (or, with ``replacement: null``, removes) its target's content.

Both walk the same root-first path as v15 (a parent cycle stops at the first repeat).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from . import js
from .context import (
    SETTING_KINDS,
    SessionContext,
    _infer_default_model,
    _ms,
    apply_setting,
    branch_summary_message,
)
from .jsonl import UNDEFINED

__all__ = ["omp_context_for_path", "pi_context_for_path"]

Entry = dict[str, Any]

# custom_message types oh-my-pi keeps out of the model's context, and the marker that keeps an interrupted
# assistant turn in it.
_OMP_HIDDEN_CUSTOM_TYPES: Final = frozenset({"prewalk-plan", "vibe-mode-context"})
_INTERRUPTED_THINKING: Final = "interrupted-thinking"


def _coerce_service_tier(value: Any) -> Any:
    """oh-my-pi 18's tier per model family: a bare string (older files) is OpenAI's; null unsets it."""
    if value is None or js.is_undefined(value):
        return UNDEFINED
    if isinstance(value, str):
        return {"openai": value}
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if isinstance(v, str)} or UNDEFINED
    return UNDEFINED


def _is_empty_error_turn(message: Mapping[str, Any]) -> bool:
    if message.get("stopReason") != "error":
        return False
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        kind = js.get(block, "type")
        if kind == "text":
            if _has_text(js.get(block, "text")):
                return False
        elif kind == "thinking":
            if _has_text(js.get(block, "thinking")) or _has_text(js.get(block, "thinkingSignature")):
                return False
        elif kind == "redactedThinking":
            if _has_text(js.get(block, "data")):
                return False
        elif kind != "fallback":
            return False  # a tool call, or a block kind this code does not know, is content
    return True


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _omp_custom_message(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    content = entry.get("content", UNDEFINED)
    if not isinstance(content, str | list):
        return None
    return {
        "role": "custom",
        "customType": entry.get("customType", UNDEFINED),
        "content": content,
        "display": entry.get("display", UNDEFINED),
        "details": entry.get("details", UNDEFINED),
        "attribution": entry.get("attribution", UNDEFINED),
        "timestamp": _ms(entry.get("timestamp")),
    }


def _omp_message(entry: Entry) -> dict[str, Any] | None:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return None
        if message.get("role") == "assistant" and (
            js.truthy(message.get("retryRecovery")) or _is_empty_error_turn(message)
        ):
            return None
        return message
    if kind == "custom_message":
        if entry.get("customType") in _OMP_HIDDEN_CUSTOM_TYPES:
            return None
        return _omp_custom_message(entry)
    if kind == "branch_summary" and js.truthy(entry.get("summary")):
        return branch_summary_message(entry)
    return None


def _remote_payload(compaction: Entry) -> dict[str, Any] | None:
    preserve = compaction.get("preserveData")
    remote = preserve.get("openaiRemoteCompaction") if isinstance(preserve, dict) else None
    if not isinstance(remote, dict):
        return None
    provider = remote.get("provider")
    history = remote.get("replacementHistory")
    if not isinstance(provider, str) or not provider or not isinstance(history, list):
        return None
    if not all(isinstance(item, dict) for item in history):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _omp_compaction_message(compaction: Entry, payload: dict[str, Any] | None) -> dict[str, Any]:
    message = {
        "role": "compactionSummary",
        "summary": compaction.get("summary", UNDEFINED),
        "shortSummary": compaction.get("shortSummary", UNDEFINED),
        "tokensBefore": compaction.get("tokensBefore", UNDEFINED),
        "tokensAfter": compaction.get("tokensAfter", UNDEFINED),
        "method": compaction.get("method", UNDEFINED),
        "providerPayload": UNDEFINED if payload is None else payload,
        "blocks": UNDEFINED,
        "images": UNDEFINED,
        "warning": compaction.get("warning", UNDEFINED),
        "timestamp": _ms(compaction.get("timestamp")),
    }
    return message


def omp_context_for_path(
    path: Sequence[Entry], kinds: Sequence[Any] | None = None, find: Callable[[Any, int], int] | None = None
) -> SessionContext:
    """oh-my-pi 18.3.4's context for a root-first path (see the module docstring)."""
    if kinds is None:
        kinds = [entry.get("type") for entry in path]
    context = SessionContext()
    # role -> [path index of its first assignment, its last value] (see context._infer_default_model).
    models: dict[Any, list[Any]] = {}
    first_explicit_default = len(path)
    compaction_index = -1
    reset_index = -1
    ttsr: dict[str, None] = {}
    for index, kind in enumerate(kinds):
        if kind == "message":
            continue  # messages only matter for the default model, inferred below without reading them all
        entry = path[index]
        if kind == "thinking_level_change":
            level = entry.get("thinkingLevel")
            context.thinking_level = "off" if level is None else level
            configured = entry.get("configured")
            context.configured_thinking_level = level if configured is None else configured
        elif kind == "model_change":
            model = entry.get("model")
            if js.truthy(model):
                role = entry.get("role")
                role = "default" if role is None else role
                models.setdefault(role, [index, None])[1] = model
                if role == "default":
                    first_explicit_default = min(first_explicit_default, index)
        elif kind == "service_tier_change":
            context.service_tier = _coerce_service_tier(entry.get("serviceTier"))
        elif kind == "compaction":
            compaction_index = index
        elif kind == "reset_boundary":
            reset_index = index
        elif kind in SETTING_KINDS:
            apply_setting(context, kind, entry, ttsr)
    context.injected_ttsr_rules = list(ttsr)
    # Assistant messages set the default model until the first explicit default, as in v15.
    _infer_default_model(path, kinds, first_explicit_default, models)
    context.models = {role: value for role, (_, value) in sorted(models.items(), key=lambda item: item[1][0])}

    messages = context.messages
    origins: list[int] = []
    context.origins = origins

    def emit(start: int, stop: int) -> None:
        for i in range(start, stop):
            if kinds[i] in ("message", "custom_message", "branch_summary"):
                message = _omp_message(path[i])
                if message is not None:
                    messages.append(message)
                    origins.append(i)

    if reset_index >= 0 and reset_index > compaction_index:
        emit(reset_index + 1, len(path))
    elif compaction_index >= 0:
        compaction = path[compaction_index]
        payload = _remote_payload(compaction)
        messages.append(_omp_compaction_message(compaction, payload))
        origins.append(compaction_index)
        if payload is None:
            first_kept = compaction.get("firstKeptEntryId")
            start = (find or (lambda i, stop: _scan(path, i, stop)))(first_kept, compaction_index)
            emit(start, compaction_index)
        else:
            through = compaction.get("providerReplayThroughEntryId")
            if js.truthy(through):
                start = (find or (lambda i, stop: _scan(path, i, stop)))(through, compaction_index)
                emit(start + 1 if start < compaction_index else compaction_index, compaction_index)
        emit(compaction_index + 1, len(path))
    else:
        emit(0, len(path))
    _strip_dangling_tool_calls(messages, origins)
    _drop_failed_turns(messages, origins)
    return context


def _scan(path: Sequence[Entry], entry_id: Any, stop: int) -> int:
    return next((i for i in range(stop) if path[i].get("id") == entry_id), stop)


def _tool_calls(message: Mapping[str, Any]) -> list[Any]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [block for block in content if js.get(block, "type") == "toolCall"]


def _strip_dangling_tool_calls(messages: list[dict[str, Any]], origins: list[int]) -> None:
    """Take tool calls with no result among ``messages`` out of their assistant turns (a turn left with
    nothing goes), as oh-my-pi does so the model never sees a call without its answer."""
    paired = {m.get("toolCallId") for m in messages if m.get("role") == "toolResult"}
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.get("role") != "assistant":
            continue
        calls = _tool_calls(message)
        if not any(js.get(call, "id") not in paired for call in calls):
            continue
        kept: list[Any] = []
        for block in message["content"]:
            kind = js.get(block, "type")
            if (kind == "toolCall" and js.get(block, "id") not in paired) or kind == "redactedThinking":
                continue
            if kind == "thinking" and js.truthy(js.get(block, "thinkingSignature")):
                block = {k: v for k, v in block.items() if k != "thinkingSignature"}
            kept.append(block)
        if not kept:
            del messages[i]
            del origins[i]
        else:
            messages[i] = {**message, "content": kept}


def _drop_failed_turns(messages: list[dict[str, Any]], origins: list[int]) -> None:
    """Aborted and error assistant turns are not replayed, nor the results of their tool calls (unless an
    interrupted-thinking marker follows the turn)."""
    i = len(messages) - 1
    while i >= 0:
        message = messages[i]
        if message.get("role") != "assistant" or message.get("stopReason") not in ("aborted", "error"):
            i -= 1
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        if (
            following
            and following.get("role") == "custom"
            and following.get("customType") == _INTERRUPTED_THINKING
        ):
            i -= 1
            continue
        dropped = {js.get(call, "id") for call in _tool_calls(message)}
        del messages[i]
        del origins[i]
        if dropped:
            for j in range(len(messages) - 1, i - 1, -1):
                candidate = messages[j]
                if candidate.get("role") == "toolResult" and candidate.get("toolCallId") in dropped:
                    del messages[j]
                    del origins[j]
        i -= 1


# ---------------------------------------------------------------------------------------------------------
# pi 1.6.0


def _pi_messages(entry: Entry) -> list[dict[str, Any]]:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return []
        role = message.get("role")
        if role == "system" and message.get("content") is None:
            return [{**message, "content": ""}]
        if role in ("user", "assistant", "toolResult") and message.get("content") is None:
            return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = entry.get("content")
        return [
            {
                "role": "custom",
                "customType": entry.get("customType", UNDEFINED),
                "content": [] if content is None else content,
                "display": entry.get("display", UNDEFINED),
                "details": entry.get("details", UNDEFINED),
                "timestamp": _ms(entry.get("timestamp")),
            }
        ]
    if kind == "branch_summary" and js.truthy(entry.get("summary")):
        return [branch_summary_message(entry)]
    if kind == "compaction":
        summary = {
            "role": "compactionSummary",
            "summary": entry.get("summary", UNDEFINED),
            "tokensBefore": entry.get("tokensBefore", UNDEFINED),
            "timestamp": _ms(entry.get("timestamp")),
        }
        system = entry.get("systemMessage")
        return [system, summary] if isinstance(system, dict) and system else [summary]
    return []


def _pi_edited(messages: list[dict[str, Any]], edit: Entry) -> list[dict[str, Any]]:
    replacement = edit.get("replacement")
    if replacement is None:
        return []
    content = js.get(replacement, "content")
    edited = []
    for message in messages:
        role = message.get("role")
        if role not in ("user", "assistant", "toolResult", "custom"):
            edited.append(message)
            continue
        if role in ("assistant", "toolResult") and isinstance(content, str):
            edited.append({**message, "content": [{"type": "text", "text": content}]})
        else:
            edited.append({**message, "content": content})
    return edited


def pi_context_for_path(
    path: Sequence[Entry], kinds: Sequence[Any] | None = None, find: Callable[[Any, int], int] | None = None
) -> SessionContext:
    """pi 1.6.0's context for a root-first path (see the module docstring)."""
    if kinds is None:
        kinds = [entry.get("type") for entry in path]
    context = SessionContext()
    model: dict[str, Any] | None = None
    compaction_index = -1
    for index, kind in enumerate(kinds):
        entry = path[index]
        if kind == "thinking_level_change":
            context.thinking_level = entry.get("thinkingLevel", UNDEFINED)
        elif kind == "model_change":
            model = {"provider": entry.get("provider", UNDEFINED), "modelId": entry.get("modelId", UNDEFINED)}
        elif kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "assistant":
                model = {
                    "provider": message.get("provider", UNDEFINED),
                    "modelId": message.get("model", UNDEFINED),
                }
        elif kind == "compaction":
            compaction_index = index
    context.model = model

    # The path indexes of the entries in the context: the latest compaction, its kept entries (but system
    # messages), then what follows it.
    if compaction_index < 0:
        chosen = list(range(len(path)))
    else:
        compaction = path[compaction_index]
        finder = find or (lambda entry_id, stop: _scan(path, entry_id, stop))
        start = finder(compaction.get("firstKeptEntryId"), compaction_index)
        chosen = [compaction_index]
        for i in range(start, compaction_index):
            message = path[i].get("message") if kinds[i] == "message" else None
            if not (isinstance(message, dict) and message.get("role") == "system"):
                chosen.append(i)
        chosen.extend(range(compaction_index + 1, len(path)))
    edits = {path[i].get("targetId"): path[i] for i in chosen if kinds[i] == "context_edit"}
    messages = context.messages
    origins: list[int] = []
    context.origins = origins
    for position, i in enumerate(chosen):
        kind = kinds[i]
        if kind not in ("message", "custom_message", "branch_summary", "compaction"):
            continue
        if kind == "compaction" and position > 0:
            continue  # an older compaction inside the kept range contributes nothing
        entry = path[i]
        produced = _pi_messages(entry)
        edit = edits.get(entry.get("id")) if edits else None
        produced = _pi_edited(produced, edit) if edit is not None else produced
        messages.extend(produced)
        origins.extend([i] * len(produced))
    return context
