"""Branch-summary models: which summarizer the settings ask for, and whether it can run.

``ARBOR_LLM_PROVIDER`` picks it: ``digest`` (the default: an offline digest, no model), ``openai`` (any
OpenAI-compatible Chat Completions server), ``anthropic`` (the Messages API) or ``none`` (summaries off).
``ARBOR_LLM_BASE_URL``, ``ARBOR_LLM_MODEL``, ``ARBOR_LLM_API_KEY`` and ``ARBOR_LLM_TIMEOUT`` configure the
two HTTP clients; ``ARBOR_LLM_CONTEXT_WINDOW`` sets the §13.4 token budget.

Only this module reads Django settings, at call time (so ``override_settings`` works); the client modules
take an :class:`~treeview.llm.base.LlmConfig`.

::

    status = summarizer_status()            # SummarizerStatus(available, provider, model, reason, ...)
    summarizer = make_summarizer(on_delta)  # None when not available
    result = await summarizer.summarize(system_prompt=..., user_prompt=..., max_tokens=2048, signal=...)
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from treeview.session.branch_summary import DEFAULT_CONTEXT_WINDOW, Summarizer

from .anthropic import AnthropicSummarizer
from .base import DeltaCallback, LlmConfig, StreamingSummarizer
from .digest import DigestSummarizer
from .openai import OpenAISummarizer

__all__ = [
    "PROVIDERS",
    "DeltaCallback",
    "LlmConfig",
    "SummarizerStatus",
    "llm_config",
    "make_summarizer",
    "summarizer_status",
]

#: The values ``ARBOR_LLM_PROVIDER`` accepts.
PROVIDERS = ("digest", "openai", "anthropic", "none")

_CLIENTS: dict[str, type[StreamingSummarizer]] = {
    "openai": OpenAISummarizer,
    "anthropic": AnthropicSummarizer,
}


@dataclass(frozen=True, slots=True)
class SummarizerStatus:
    """Whether branch summaries can be generated, with what, and if not, why.

    ``reason`` is empty when ``available``; otherwise a sentence for the user naming the setting to fix.
    ``model`` is ``"digest"`` for the offline digest and empty when there is none. ``context_window`` is
    what :func:`~treeview.session.branch_summary.generate_branch_summary` should be given.
    """

    available: bool
    provider: str
    model: str
    reason: str
    context_window: int = DEFAULT_CONTEXT_WINDOW


def llm_config() -> LlmConfig:
    """The ``ARBOR_LLM_*`` settings as an :class:`LlmConfig` (read now, not at import)."""
    return LlmConfig(
        provider=str(getattr(settings, "ARBOR_LLM_PROVIDER", "digest") or "digest").strip().lower(),
        model=str(getattr(settings, "ARBOR_LLM_MODEL", "") or "").strip(),
        base_url=str(getattr(settings, "ARBOR_LLM_BASE_URL", "") or "").strip(),
        api_key=str(getattr(settings, "ARBOR_LLM_API_KEY", "") or "").strip(),
        timeout=float(getattr(settings, "ARBOR_LLM_TIMEOUT", 60)),
        context_window=int(getattr(settings, "ARBOR_LLM_CONTEXT_WINDOW", DEFAULT_CONTEXT_WINDOW)),
    )


def _problem(config: LlmConfig) -> str:
    """Why ``config`` cannot summarize, or ``""``."""
    provider = config.provider
    if provider == "none":
        return "Summaries are turned off (ARBOR_LLM_PROVIDER=none)"
    if provider not in PROVIDERS:
        return f"Unknown ARBOR_LLM_PROVIDER={provider!r}: use one of {', '.join(PROVIDERS)}"
    if provider == "digest":
        return ""
    if not config.model:
        return f"ARBOR_LLM_PROVIDER={provider} needs ARBOR_LLM_MODEL"
    if config.base_url and not config.base_url.lower().startswith(("http://", "https://")):
        return f"ARBOR_LLM_BASE_URL must start with http:// or https:// (got {config.base_url!r})"
    if not config.api_key.isascii() or not config.api_key.isprintable():
        return "ARBOR_LLM_API_KEY must be printable ASCII (it is sent in an HTTP header)"
    # The public APIs refuse anonymous calls; a self-hosted OpenAI-compatible server usually takes them.
    if not config.api_key and (provider == "anthropic" or not config.base_url):
        return f"ARBOR_LLM_PROVIDER={provider} needs ARBOR_LLM_API_KEY" + (
            " (or ARBOR_LLM_BASE_URL for a local server)" if provider == "openai" else ""
        )
    return ""


def summarizer_status() -> SummarizerStatus:
    """What :func:`make_summarizer` would give, for the UI: available or not, and why not."""
    config = llm_config()
    reason = _problem(config)
    model = "digest" if config.provider == "digest" else config.model
    return SummarizerStatus(
        available=not reason,
        provider=config.provider,
        model=model,
        reason=reason,
        context_window=config.context_window,
    )


def make_summarizer(on_delta: DeltaCallback | None = None) -> Summarizer | None:
    """The summarizer the settings configure, or None when :func:`summarizer_status` says unavailable.

    ``on_delta`` (an async callable) receives each piece of the summary text as it streams in.
    """
    config = llm_config()
    if _problem(config):
        return None
    if config.provider == "digest":
        return DigestSummarizer(on_delta)
    return _CLIENTS[config.provider](config, on_delta)
