"""Context building: the indexed path of SessionManager against a literal transcription of the original."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from treeview.session.context import context_for_path, path_to_root
from treeview.session.context_latest import omp_context_for_path, pi_context_for_path
from treeview.session.jsonl import dumps
from treeview.session.session_manager import SessionManager


def naive_models(path: list[dict[str, Any]]) -> dict[str, str]:
    """The model map exactly as v15's loop computes it (§11 step 3)."""
    models: dict[str, str] = {}
    explicit = False
    for entry in path:
        if entry["type"] == "model_change" and entry.get("model"):
            role = entry.get("role")
            role = "default" if role is None else role
            models[role] = entry["model"]
            explicit = explicit or role == "default"
        elif entry["type"] == "message" and entry["message"]["role"] == "assistant" and not explicit:
            models["default"] = f"{entry['message']['provider']}/{entry['message']['model']}"
    return models


def _state(context: Any) -> str:
    return dumps(
        {
            "messages": context.messages,
            "thinking": context.thinking_level,
            "tier": context.service_tier,
            "models": list(context.models.items()),
            "ttsr": context.injected_ttsr_rules,
            "mode": context.mode,
            "modeData": context.mode_data,
        }
    )


OPS = st.sampled_from(
    [
        *("user", "assistant", "model", "model_role", "thinking", "compaction", "summary"),
        *("custom_message", "mode", "ttsr", "tier", "label", "branch", "reset"),
        *("tool_turn", "aborted_turn", "retry_turn", "clear", "context_edit", "context_drop"),
    ]
)
BUILDERS = {"omp15": context_for_path, "omp": omp_context_for_path, "pi": pi_context_for_path}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(OPS, st.integers(0, 10**6)), max_size=50))
def test_indexed_context_equals_the_original_algorithm_everywhere(ops: list[tuple[str, int]]) -> None:
    manager = SessionManager.create("/p")
    for op, pick in ops:
        ids = list(manager.by_id)
        target = ids[pick % len(ids)] if ids else None
        if op == "user":
            manager.append_message({"role": "user", "content": f"u{pick}", "timestamp": pick})
        elif op == "assistant":
            message = {
                "role": "assistant",
                "content": [],
                "provider": f"p{pick % 3}",
                "model": f"m{pick % 5}",
            }
            manager.append_message(message)
        elif op == "model":
            manager.append_model_change(f"x/{pick % 4}")
        elif op == "model_role":
            manager.append_model_change(f"y/{pick % 4}", ["smol", "default", "slow"][pick % 3])
        elif op == "thinking":
            manager.append_thinking_level_change(["low", None, "high"][pick % 3])
        elif op == "compaction" and target:
            manager.append_compaction(f"c{pick}", None, target, pick)
        elif op == "summary":
            manager.branch_with_summary(target, "" if pick % 4 == 0 else f"s{pick}")
        elif op == "custom_message":
            manager.append_custom_message_entry("note", f"n{pick}", pick % 2 == 0)
        elif op == "mode":
            manager.append_mode_change(["plan", "none"][pick % 2], {"k": pick})
        elif op == "ttsr":
            manager.append_ttsr_injection([f"r{pick % 3}", f"r{pick % 2}"])
        elif op == "tier":
            manager.append_service_tier_change(["flex", None][pick % 2])
        elif op == "label" and target:
            manager.append_label_change(target, f"l{pick}")
        elif op == "branch" and target:
            manager.branch(target)
        elif op == "reset":
            manager.reset_leaf()
        elif op in ("tool_turn", "aborted_turn", "retry_turn"):
            call = {"type": "toolCall", "id": f"t{pick}", "name": "read", "arguments": {}}
            stop = {"tool_turn": "toolUse", "aborted_turn": "aborted", "retry_turn": "error"}[op]
            turn = {"role": "assistant", "content": [call], "stopReason": stop, "provider": "p", "model": "m"}
            if op == "retry_turn":
                turn["retryRecovery"] = True
            manager.append_message(turn)
            if pick % 3:  # sometimes the result never came (a dangling call)
                manager.append_message({"role": "toolResult", "toolCallId": f"t{pick}", "content": []})
        elif op == "clear":
            manager.append_reset_boundary()
        elif op in ("context_edit", "context_drop") and target:
            replacement = {"content": f"e{pick}"} if op == "context_edit" else None
            manager.append_context_edit(target, replacement)
    for agent, builder in BUILDERS.items():
        manager.agent = agent  # type: ignore[assignment]
        for leaf in [*manager.by_id, None, "unknown"]:
            fast = manager.build_session_context(leaf)
            plain = _plain_context(manager, leaf, builder)
            assert _state(fast) == _state(plain)
            if leaf in manager.by_id and agent != "pi":
                assert list(fast.models.items()) == list(naive_models(manager.get_branch(leaf)).items())
            if agent == "omp":
                _assert_omp_context_is_replayable(fast.messages)


def _plain_context(manager: SessionManager, leaf: Any, builder: Any) -> Any:
    """The context without the index: the path walked by ids, every entry looked at."""
    from treeview.session.context import SessionContext

    if leaf is None:
        return SessionContext()
    entry = manager.by_id.get(leaf) if isinstance(leaf, str) else None
    if entry is None:
        entry = next((e for e in reversed(manager.entries) if e.get("type") != "session"), None)
    return builder(path_to_root(entry, manager.by_id)) if entry is not None else SessionContext()


def _assert_omp_context_is_replayable(messages: list[dict[str, Any]]) -> None:
    """oh-my-pi 18 never replays a failed turn, nor a tool call without its result."""
    results = {m.get("toolCallId") for m in messages if m.get("role") == "toolResult"}
    for message in messages:
        if message.get("role") != "assistant":
            continue
        assert message.get("stopReason") not in ("aborted", "error")
        assert not message.get("retryRecovery")
        for block in message.get("content") or []:
            if block.get("type") == "toolCall":
                assert block["id"] in results
