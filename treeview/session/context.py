"""What the LLM receives at a leaf: ``buildSessionContext`` of oh-my-pi v15 (§11).

Linear in the path length (the original is quadratic: it builds the path with ``unshift``), and it stops at
the first repeated id, so a cycle in parent links never hangs it (§20.3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from . import js
from .ids import parse_timestamp_ms
from .jsonl import UNDEFINED

__all__ = [
    "context_for_path",
    "SessionContext",
    "branch_summary_message",
    "build_session_context",
    "compaction_summary_message",
    "entry_to_message",
    "path_to_root",
]

Entry = dict[str, Any]


@dataclass(slots=True)
class SessionContext:
    """The state and messages at a leaf. ``service_tier`` and ``mode_data`` are ``UNDEFINED`` when unset."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    thinking_level: str = "off"
    service_tier: Any = UNDEFINED
    models: dict[str, str] = field(default_factory=dict)
    injected_ttsr_rules: list[str] = field(default_factory=list)
    selected_mcp_tool_names: list[str] = field(default_factory=list)
    has_persisted_mcp_tool_selection: bool = False
    mode: str = "none"
    mode_data: Any = UNDEFINED
    #: pi's model: ``{"provider", "modelId"}`` of the last model change or assistant on the path.
    model: dict[str, Any] | None = None
    #: oh-my-pi 18's configured thinking level (``auto`` resolves to ``thinking_level``); None when unset.
    configured_thinking_level: Any = None
    #: The path index each message came from (the newest agents' builders fill it; v15's does not).
    origins: list[int] | None = None


#: Path entries that set a context field whatever the agent's rules (TTSR rules, MCP tools, mode).
SETTING_KINDS = frozenset({"ttsr_injection", "mcp_tool_selection", "mode_change"})


def apply_setting(
    context: SessionContext, kind: str, entry: Mapping[str, Any], ttsr: dict[str, None]
) -> None:
    """Apply one path entry of :data:`SETTING_KINDS` to ``context`` (``ttsr`` collects rules in order)."""
    if kind == "ttsr_injection":
        rules = entry.get("injectedRules")
        for rule in rules if isinstance(rules, list) else []:
            ttsr.setdefault(rule, None)
    elif kind == "mcp_tool_selection":
        names = entry.get("selectedToolNames")
        context.selected_mcp_tool_names = list(names) if isinstance(names, list) else []
        context.has_persisted_mcp_tool_selection = True
    elif kind == "mode_change":
        context.mode = entry.get("mode", UNDEFINED)
        context.mode_data = entry.get("data", UNDEFINED)


def path_to_root(leaf: Entry | None, by_id: Mapping[str, Entry]) -> list[Entry]:
    """The entries from the root to ``leaf`` (inclusive), root first. Stops at a repeated id (cycle)."""
    path: list[Entry] = []
    seen: set[str] = set()
    current = leaf
    while current is not None:
        entry_id = current.get("id")
        if entry_id in seen:
            break
        if isinstance(entry_id, str):
            seen.add(entry_id)
        path.append(current)
        parent_id = current.get("parentId")
        # A falsy parentId ends the walk, as in the original (`parentId ? byId.get(...) : undefined`).
        current = by_id.get(parent_id) if parent_id and isinstance(parent_id, str) else None
    path.reverse()
    return path


def _ms(timestamp: Any) -> float | None:
    value = parse_timestamp_ms(timestamp)
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def entry_to_message(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The AgentMessage an entry contributes to the context, if any (§11 step 4).

    ``message`` entries give their message, ``custom_message`` a ``custom`` message, ``branch_summary``
    (with a non-empty summary) a ``branchSummary`` message; every other type, compaction included (the
    context puts its summary first, see :func:`compaction_summary_message`), gives None.
    """
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if kind == "custom_message":
        return {
            "role": "custom",
            "customType": entry.get("customType", UNDEFINED),
            "content": entry.get("content", UNDEFINED),
            "display": entry.get("display", UNDEFINED),
            "details": entry.get("details", UNDEFINED),
            "attribution": entry.get("attribution", UNDEFINED),
            "timestamp": _ms(entry.get("timestamp")),
        }
    if kind == "branch_summary" and entry.get("summary"):
        return branch_summary_message(entry)
    return None


def branch_summary_message(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The ``branchSummary`` message of a ``branch_summary`` entry (v15 ``createBranchSummaryMessage``)."""
    return {
        "role": "branchSummary",
        "summary": entry.get("summary", UNDEFINED),
        "fromId": entry.get("fromId", UNDEFINED),
        "timestamp": _ms(entry.get("timestamp")),
    }


def compaction_summary_message(entry: Mapping[str, Any], provider_payload: Any = UNDEFINED) -> dict[str, Any]:
    """The ``compactionSummary`` message of a ``compaction`` entry (v15 ``createCompactionSummaryMessage``).

    ``providerPayload`` is always a key, UNDEFINED (so not serialized) unless ``provider_payload`` is given.
    """
    return {
        "role": "compactionSummary",
        "summary": entry.get("summary", UNDEFINED),
        "shortSummary": entry.get("shortSummary", UNDEFINED),
        "tokensBefore": entry.get("tokensBefore", UNDEFINED),
        "providerPayload": provider_payload,
        "timestamp": _ms(entry.get("timestamp")),
    }


def _provider_payload(compaction: Entry) -> dict[str, Any] | None:
    preserve = compaction.get("preserveData")
    remote = preserve.get("openaiRemoteCompaction") if isinstance(preserve, dict) else None
    if not isinstance(remote, dict):
        return None
    provider = remote.get("provider")
    history = remote.get("replacementHistory")
    if not isinstance(provider, str) or not provider or not isinstance(history, list):
        return None
    return {"type": "openaiResponsesHistory", "provider": provider, "items": history}


def _emit(entries: Iterable[Entry], messages: list[dict[str, Any]]) -> None:
    for entry in entries:
        message = entry_to_message(entry)
        if message is not None:
            messages.append(message)


def build_session_context(
    entries: list[Entry], leaf_id: str | None | Any = UNDEFINED, by_id: Mapping[str, Entry] | None = None
) -> SessionContext:
    """Rebuild the context at ``leaf_id`` (§11).

    ``leaf_id=None`` gives the empty context; an unknown (or omitted) leaf falls back to the last entry.
    """
    if by_id is None:
        by_id = {entry["id"]: entry for entry in entries if isinstance(entry.get("id"), str)}
    if leaf_id is None:
        return SessionContext()
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) and leaf_id else None
    if leaf is None:
        leaf = entries[-1] if entries else None
    if leaf is None:
        return SessionContext()
    return context_for_path(path_to_root(leaf, by_id))


def _scan_for_id(path: Sequence[Entry], entry_id: Any, stop: int) -> int:
    return next((i for i in range(stop) if path[i].get("id") == entry_id), stop)


def context_for_path(
    path: Sequence[Entry],
    kinds: Sequence[Any] | None = None,
    find: Callable[[Any, int], int] | None = None,
) -> SessionContext:
    """The context for a root-first path (§11 steps 3-6).

    A caller with an index passes ``kinds`` (each path entry's type) and ``find(id, stop)`` (the path index of
    that id before ``stop``, else ``stop``): then only the bookkeeping entries and the emitted messages are
    touched, not every entry of a path tens of thousands deep.
    """
    if kinds is None:
        kinds = [entry.get("type") for entry in path]
    context = SessionContext()
    compaction_index = -1
    ttsr: dict[str, None] = {}
    # role -> [path index of its first assignment, its last value]: the insertion order of `models` is the
    # order in which the original first assigned each role.
    models: dict[Any, list[Any]] = {}
    first_explicit_default = len(path)
    for index, kind in enumerate(kinds):
        if kind == "message":
            continue
        entry = path[index]
        if kind == "thinking_level_change":
            level = entry.get("thinkingLevel")
            context.thinking_level = "off" if level is None else level
        elif kind == "model_change":
            model = entry.get("model")
            if model:
                role = entry.get("role")
                role = "default" if role is None else role
                models.setdefault(role, [index, None])[1] = model
                if role == "default":
                    first_explicit_default = min(first_explicit_default, index)
        elif kind == "service_tier_change":
            tier = entry.get("serviceTier")
            context.service_tier = UNDEFINED if tier is None else tier
        elif kind == "compaction":
            compaction_index = index
        elif kind in SETTING_KINDS:
            apply_setting(context, kind, entry, ttsr)
    context.injected_ttsr_rules = list(ttsr)
    _infer_default_model(path, kinds, first_explicit_default, models)
    context.models = {role: value for role, (_, value) in sorted(models.items(), key=lambda item: item[1][0])}

    messages = context.messages
    if compaction_index < 0:
        _emit(path, messages)
        return context
    compaction = path[compaction_index]
    payload = _provider_payload(compaction)
    messages.append(compaction_summary_message(compaction, UNDEFINED if payload is None else payload))
    if payload is None:
        start = (find or partial(_scan_for_id, path))(compaction.get("firstKeptEntryId"), compaction_index)
        _emit(path[start:compaction_index], messages)
    _emit(path[compaction_index + 1 :], messages)
    return context


def _is_assistant(entry: Entry) -> bool:
    message = entry.get("message")
    return isinstance(message, dict) and message.get("role") == "assistant"


def _infer_default_model(
    path: Sequence[Entry], kinds: Sequence[Any], stop: int, models: dict[Any, list[Any]]
) -> None:
    """Assistant messages set the default model until an explicit default ``model_change`` (§11 step 3).

    Only the first of them (where ``default`` is first assigned) and the last (its value) matter, so the
    path is searched from both ends instead of reading every message.
    """
    first = next((i for i in range(stop) if kinds[i] == "message" and _is_assistant(path[i])), None)
    if first is None:
        return
    if "default" in models:
        models["default"][0] = min(models["default"][0], first)
        return
    last = next(i for i in range(stop - 1, first - 1, -1) if kinds[i] == "message" and _is_assistant(path[i]))
    message = path[last]["message"]
    provider = js.to_string(message.get("provider", UNDEFINED))
    models["default"] = [first, f"{provider}/{js.to_string(message.get('model', UNDEFINED))}"]
