"""Context building: the indexed path of SessionManager against a literal transcription of the original."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from treeview.session.context import build_session_context
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
    ]
)


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
    for leaf in [*manager.by_id, None, "unknown"]:
        fast = manager.build_session_context(leaf)
        plain = build_session_context(manager.entries, leaf, manager.by_id)
        assert _state(fast) == _state(plain)
        if leaf in manager.by_id:
            assert list(fast.models.items()) == list(naive_models(manager.get_branch(leaf)).items())
