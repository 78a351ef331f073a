"""Which agent's rules apply to a session file: oh-my-pi (``omp``, 18.3.4) or pi (``pi``, 1.6.0).

The newest rules of the agent that wrote a file apply to it, old files included (that is what the agent does
when it resumes one). Which agent wrote a file is read from what it holds: the title slot, entry types and
keys only one of them writes, the shape of ``model_change`` and the header's keys. A file that says nothing
either way (a bare conversation) is read as omp's, Arbor's historical default.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, get_args

__all__ = ["AGENTS", "RULES", "Agent", "AgentDecision", "check_agent", "detect_agent"]

#: Whose rules apply: oh-my-pi 18.3.4, pi 1.6.0, or oh-my-pi v15.0.0 (kept for the v15 reference answers).
Agent = Literal["omp", "pi", "omp15"]
RULES: Final[tuple[Agent, ...]] = get_args(Agent)
#: The agents a file can be written by (and a user can pick).
AGENTS: Final[tuple[Agent, ...]] = ("omp", "pi")

# Entry types only oh-my-pi writes (v15 and later), and only pi writes (1.x).
_OMP_TYPES: Final = frozenset(
    {
        "title_change",
        "reset_boundary",
        "credential_pin",
        "mcp_tool_selection",
        "service_tier_change",
        "mode_change",
        "ttsr_injection",
        "model_usage",
        "archive",
        "session_init",
    }
)
_PI_TYPES: Final = frozenset({"usage", "context_edit"})
# Header keys only oh-my-pi writes.
_OMP_HEADER_KEYS: Final = ("title", "titleSource")


class AgentDecision:
    """The detected agent and the reason, in a few words (shown on the session page)."""

    __slots__ = ("agent", "reason")

    def __init__(self, agent: Agent, reason: str) -> None:
        self.agent = agent
        self.reason = reason

    def __repr__(self) -> str:
        return f"AgentDecision({self.agent!r}, {self.reason!r})"


def check_agent(value: str) -> Agent:
    """``value`` as an :data:`Agent`; a clear ``ValueError`` for anything else."""
    if value not in RULES:
        raise ValueError(f"unknown agent {value!r} (expected one of {', '.join(RULES)})")
    return value


def detect_agent(
    header: Mapping[str, Any], entries: Iterable[Mapping[str, Any]], *, title_slot: bool = False
) -> AgentDecision:
    """The agent that wrote a file, from its header, entries (in file order) and title slot."""
    if title_slot:
        return AgentDecision("omp", "title slot")
    for key in _OMP_HEADER_KEYS:
        if key in header:
            return AgentDecision("omp", f"header key {key}")
    if "modelId" in header:
        # pi's v1 header carried the model (provider, modelId, thinkingLevel); omp only reads such headers.
        return AgentDecision("pi", "header key modelId")
    for entry in entries:
        kind = entry.get("type")
        if kind in _OMP_TYPES:
            return AgentDecision("omp", f"{kind} entry")
        if kind in _PI_TYPES:
            return AgentDecision("pi", f"{kind} entry")
        if kind == "model_change":
            # omp: "model": "provider/id" (+ role); pi: "provider" and "modelId".
            if "modelId" in entry or "provider" in entry:
                return AgentDecision("pi", "model_change shape")
            if "model" in entry:
                return AgentDecision("omp", "model_change shape")
        elif kind == "session_info":
            return AgentDecision("pi", "session_info entry")
        elif kind == "message":
            message = entry.get("message")
            if isinstance(message, Mapping) and message.get("role") in ("hookMessage",):
                return AgentDecision("pi", "hookMessage")
    return AgentDecision("omp", "nothing agent-specific")
