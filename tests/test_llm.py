"""Branch-summary models (treeview.llm): the streaming OpenAI / Anthropic clients against a local server
speaking their wire formats (tests/llm_server.py), the offline digest, and the settings glue."""

from __future__ import annotations

import asyncio
import re
import socket
import time
from typing import Any

import pytest
from django.test import override_settings

from tests.llm_server import LlmServer
from treeview.llm import SummarizerStatus, make_summarizer, summarizer_status
from treeview.llm.anthropic import AnthropicSummarizer
from treeview.llm.base import LlmConfig, ProviderError, StreamingSummarizer, StreamState, error_text_from_body
from treeview.llm.digest import DIGEST_NOTE, DigestSummarizer, build_digest, parse_conversation
from treeview.llm.openai import OpenAISummarizer
from treeview.llm.sse import SseEvent
from treeview.session.branch_summary import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    SUMMARY_MAX_TOKENS,
    AbortSignal,
    Summarizer,
    SummaryResult,
    build_branch_summary_prompt,
    generate_branch_summary,
    prepare_branch_entries,
)

CLIENTS: dict[str, type[StreamingSummarizer]] = {"openai": OpenAISummarizer, "anthropic": AnthropicSummarizer}
TOKENS = ["## Goal\n", "Fix the ", "parser", " in `src/parse.py`."]


@pytest.fixture(params=["openai", "anthropic"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _config(server: LlmServer, **overrides: Any) -> LlmConfig:
    fields: dict[str, Any] = {
        "provider": server.provider,
        "model": "test-model",
        "base_url": server.base_url,
        "api_key": "sk-test",
        "timeout": 5.0,
    }
    return LlmConfig(**(fields | overrides))


def _run(server: LlmServer, **overrides: Any) -> tuple[SummaryResult, list[str]]:
    """Summarize once against ``server``; return the result and the deltas ``on_delta`` received."""
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    async def main() -> SummaryResult:
        client = CLIENTS[server.provider](_config(server, **overrides), on_delta)
        return await client.summarize(
            system_prompt="SYSTEM", user_prompt="USER", max_tokens=SUMMARY_MAX_TOKENS, signal=AbortSignal()
        )

    return asyncio.run(main()), deltas


# ---------------------------------------------------------------------------------------------------------
# The HTTP clients against the local server
# ---------------------------------------------------------------------------------------------------------


def test_stream_returns_the_text_and_passes_each_delta_on(provider: str) -> None:
    with LlmServer(provider=provider, tokens=TOKENS, thinking=["Secret reasoning."]) as server:
        result, deltas = _run(server)
    assert result == SummaryResult(text="".join(TOKENS), stop_reason="stop", error_message=None)
    # Thinking / reasoning deltas are not part of the summary.
    assert deltas == TOKENS


REQUESTS = {
    "openai": (
        "/v1/chat/completions",
        {
            "model": "test-model",
            "messages": [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "USER"}],
            "max_tokens": 2048,
            "stream": True,
        },
        {"authorization": "Bearer sk-test"},
    ),
    "anthropic": (
        "/v1/messages",
        {
            "model": "test-model",
            "max_tokens": 2048,
            "system": "SYSTEM",
            "messages": [{"role": "user", "content": "USER"}],
            "stream": True,
        },
        {"x-api-key": "sk-test", "anthropic-version": "2023-06-01"},
    ),
}


def test_request_path_body_and_headers(provider: str) -> None:
    path, body, auth_headers = REQUESTS[provider]
    with LlmServer(provider=provider) as server:
        result, _ = _run(server)
        (call,) = server.calls
    assert result.stop_reason == "stop"
    assert call.path == path
    assert call.body == body
    assert call.headers | auth_headers == call.headers
    assert call.headers["content-type"] == "application/json"
    assert call.headers["accept"] == "text/event-stream"
    # Each provider gets only its own kind of credentials.
    other = "x-api-key" if provider == "openai" else "authorization"
    assert other not in call.headers


def test_openai_without_api_key_sends_no_authorization_header() -> None:
    with LlmServer(provider="openai") as server:
        result, _ = _run(server, api_key="")
        (call,) = server.calls
    assert result.stop_reason == "stop"
    assert "authorization" not in call.headers


def test_a_wrong_api_key_gives_the_providers_401_message(provider: str) -> None:
    with LlmServer(provider=provider, api_key="sk-right") as server:
        good, _ = _run(server, api_key="sk-right")
        bad, deltas = _run(server, api_key="sk-wrong")
    assert good.stop_reason == "stop"
    assert bad.stop_reason == "error"
    assert bad.error_message is not None
    assert "HTTP 401 Unauthorized" in bad.error_message
    assert "invalid api key (authentication_error)" in bad.error_message
    assert deltas == []


def test_max_tokens_stop_gives_stop_reason_length(provider: str) -> None:
    with LlmServer(provider=provider, tokens=TOKENS, finish="length") as server:
        result, _ = _run(server)
    assert result.stop_reason == "length"
    assert result.text == "".join(TOKENS)


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
def test_http_errors_carry_status_and_the_providers_message(provider: str, status: int) -> None:
    with LlmServer(
        provider=provider, mode="error", status=status, error_message="model is overloaded"
    ) as server:
        result, deltas = _run(server)
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert f"answered HTTP {status} " in result.error_message
    assert "model is overloaded" in result.error_message
    assert result.error_message.startswith("The ")
    assert deltas == []


def test_an_error_event_inside_the_stream_is_an_error(provider: str) -> None:
    tokens = ["one ", "two ", "three ", "four"]
    with LlmServer(
        provider=provider, tokens=tokens, mode="stream_error", error_message="Overloaded"
    ) as server:
        result, deltas = _run(server)
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert "reported an error: Overloaded" in result.error_message
    assert result.text == "one two "
    assert deltas == ["one ", "two "]


def test_a_dropped_connection_is_an_error(provider: str) -> None:
    with LlmServer(provider=provider, tokens=["a", "b", "c", "d"], mode="drop") as server:
        result, _ = _run(server)
        (record,) = server.wait_for_streams(1)
    assert record.outcome == "dropped"
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert "broke off mid-reply" in result.error_message
    assert result.text == "ab"


def test_a_stream_that_ends_without_its_final_event_is_an_error(provider: str) -> None:
    with LlmServer(provider=provider, tokens=["a", "b"], mode="incomplete") as server:
        result, _ = _run(server)
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert "ended before the reply was complete" in result.error_message


def test_a_reply_that_is_not_a_stream_is_an_error(provider: str) -> None:
    with LlmServer(provider=provider, mode="json") as server:
        result, _ = _run(server)
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert "did not stream its reply (content-type application/json)" in result.error_message


def test_abort_mid_stream_returns_at_once_and_closes_the_connection(provider: str) -> None:
    tokens = [f"t{index} " for index in range(50)]

    async def main(server: LlmServer) -> tuple[SummaryResult, list[str], float, float]:
        signal = AbortSignal()
        deltas: list[str] = []
        first = asyncio.Event()

        async def on_delta(text: str) -> None:
            deltas.append(text)
            first.set()

        client = CLIENTS[provider](_config(server), on_delta)
        task = asyncio.create_task(
            client.summarize(system_prompt="S", user_prompt="U", max_tokens=2048, signal=signal)
        )
        await asyncio.wait_for(first.wait(), 5)
        aborted_at = time.monotonic()
        signal.abort()
        result = await task
        return result, deltas, aborted_at, time.monotonic() - aborted_at

    with LlmServer(provider=provider, tokens=tokens, delay=0.1) as server:
        result, deltas, aborted_at, took = asyncio.run(main(server))
        (record,) = server.wait_for_streams(1, timeout=2)
    assert result.stop_reason == "aborted"
    assert result.text == "".join(deltas)
    assert 1 <= len(deltas) < len(tokens)
    assert took < 0.1
    # The server saw the client leave (not the stream running to its end).
    assert record.outcome == "client_gone"
    assert record.tokens_sent < len(tokens)
    assert record.ended_at - aborted_at < 0.5


def test_cancelling_the_awaiting_task_closes_the_connection(provider: str) -> None:
    async def main(server: LlmServer) -> float:
        first = asyncio.Event()

        async def on_delta(text: str) -> None:
            first.set()

        client = CLIENTS[provider](_config(server), on_delta)
        task = asyncio.create_task(
            client.summarize(system_prompt="S", user_prompt="U", max_tokens=2048, signal=AbortSignal())
        )
        await asyncio.wait_for(first.wait(), 5)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled_at

    with LlmServer(provider=provider, tokens=["x"] * 50, delay=0.1) as server:
        cancelled_at = asyncio.run(main(server))
        (record,) = server.wait_for_streams(1, timeout=2)
    assert record.outcome == "client_gone"
    assert record.ended_at - cancelled_at < 0.5


def test_an_already_aborted_signal_sends_no_request(provider: str) -> None:
    async def main(server: LlmServer) -> SummaryResult:
        signal = AbortSignal()
        signal.abort()
        client = CLIENTS[provider](_config(server))
        return await client.summarize(system_prompt="S", user_prompt="U", max_tokens=2048, signal=signal)

    with LlmServer(provider=provider) as server:
        result = asyncio.run(main(server))
        assert server.requests == []
    assert result.stop_reason == "aborted"


def test_a_silent_server_times_out_with_a_clear_message(provider: str) -> None:
    with LlmServer(provider=provider, tokens=["slow"], delay=3.0) as server:
        started = time.monotonic()
        result, _ = _run(server, timeout=0.3)
        took = time.monotonic() - started
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert "did not answer within 0.3 s (ARBOR_LLM_TIMEOUT)" in result.error_message
    assert took < 2.0


def test_nothing_listening_gives_a_connect_error(provider: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    client = CLIENTS[provider](LlmConfig(provider=provider, model="m", base_url=base_url, api_key="k"))
    result = asyncio.run(
        client.summarize(system_prompt="S", user_prompt="U", max_tokens=2048, signal=AbortSignal())
    )
    assert result.stop_reason == "error"
    assert result.error_message is not None
    assert result.error_message.startswith(f"Could not connect to the {client.label.removeprefix('the ')}")
    assert f"127.0.0.1:{port}" in result.error_message


def test_server_settings_can_change_while_it_runs(provider: str) -> None:
    with LlmServer(provider=provider, tokens=["first"]) as server:
        first, _ = _run(server)
        server.tokens = ["second"]
        second, _ = _run(server)
        server.mode = "error"
        third, _ = _run(server)
        assert len(server.requests) == 3
    assert (first.text, second.text, third.stop_reason) == ("first", "second", "error")


# ---------------------------------------------------------------------------------------------------------
# URLs, event handling and error bodies (no server)
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider", "base_url", "expected"),
    [
        ("openai", "", "https://api.openai.com/v1/chat/completions"),
        ("openai", "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions"),
        ("openai", "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("openai", "http://localhost:11434", "http://localhost:11434/v1/chat/completions"),
        ("openai", "https://gateway.example/openai/v1", "https://gateway.example/openai/v1/chat/completions"),
        ("anthropic", "", "https://api.anthropic.com/v1/messages"),
        ("anthropic", "https://api.anthropic.com/", "https://api.anthropic.com/v1/messages"),
        ("anthropic", "https://api.anthropic.com/v1", "https://api.anthropic.com/v1/messages"),
        ("anthropic", "https://gateway.example/anthropic", "https://gateway.example/anthropic/v1/messages"),
    ],
)
def test_endpoint_url_from_the_base_url(provider: str, base_url: str, expected: str) -> None:
    assert CLIENTS[provider](LlmConfig(provider=provider, model="m", base_url=base_url)).url == expected


def _events(client: StreamingSummarizer, *payloads: tuple[str, str]) -> StreamState:
    state = StreamState()
    for event, data in payloads:
        client.handle_event(SseEvent(event=event, data=data), state)
    return state


def test_anthropic_text_blocks_are_joined_with_newlines_and_other_deltas_ignored() -> None:
    client = AnthropicSummarizer(LlmConfig(provider="anthropic", model="m"))
    state = _events(
        client,
        (
            "content_block_start",
            '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"A"}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}',
        ),
        (
            "content_block_start",
            '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use"}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":"{"}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","delta":{"type":"thinking_delta","thinking":"no"}}',
        ),
        (
            "content_block_start",
            '{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}',
        ),
        (
            "content_block_delta",
            '{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"C"}}',
        ),
        ("message_delta", '{"type":"message_delta","delta":{"stop_reason":"end_turn"}}'),
        ("message_stop", '{"type":"message_stop"}'),
    )
    assert state.text == "Ab\nC"
    # What on_delta is given adds up to the same text.
    assert "".join(state.pending) == "Ab\nC"
    assert (state.stop_reason, state.finished) == ("stop", True)


def test_anthropic_events_without_event_names_use_the_payload_type() -> None:
    client = AnthropicSummarizer(LlmConfig(provider="anthropic", model="m"))
    state = _events(
        client,
        ("message", '{"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}}'),
        ("message", '{"type":"message_delta","delta":{"stop_reason":"max_tokens"}}'),
        ("message", '{"type":"message_stop"}'),
    )
    assert (state.text, state.stop_reason, state.finished) == ("x", "length", True)


def test_openai_reasoning_is_ignored_and_content_filter_is_an_error() -> None:
    client = OpenAISummarizer(LlmConfig(provider="openai", model="m"))
    state = _events(
        client,
        ("message", '{"choices":[{"delta":{"reasoning_content":"hmm","reasoning":"hmm"}}]}'),
        ("message", '{"choices":[{"delta":{"content":"ok"}}]}'),
        ("message", '{"choices":[],"usage":{"total_tokens":3}}'),
    )
    assert (state.text, state.finished) == ("ok", False)
    with pytest.raises(ProviderError, match="content filter"):
        _events(client, ("message", '{"choices":[{"delta":{},"finish_reason":"content_filter"}]}'))
    with pytest.raises(ProviderError, match="unreadable"):
        _events(client, ("message", "not json"))


def test_a_finish_reason_without_done_ends_an_openai_reply() -> None:
    client = OpenAISummarizer(LlmConfig(provider="openai", model="m"))
    state = _events(client, ("message", '{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}'))
    assert (state.text, state.stop_reason, state.finished) == ("x", "stop", True)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}', "Incorrect API key"),
        (
            b'{"type":"error","error":{"type":"not_found_error","message":"model: x"}}',
            "model: x (not_found_error)",
        ),
        (b'{"error":"model \'llama\' not found"}', "model 'llama' not found"),
        (
            b'{"object":"error","message":"max_tokens is too large","type":"BadRequestError"}',
            "max_tokens is too",
        ),
        (b"<html><body>\n\n502 Bad Gateway</body></html>", "<html><body> 502 Bad Gateway</body></html>"),
        (b"", "(empty response)"),
        (b"x" * 1000, "x" * 300 + "…"),
    ],
)
def test_error_text_from_body(body: bytes, expected: str) -> None:
    assert expected in error_text_from_body(body)


# ---------------------------------------------------------------------------------------------------------
# Settings: summarizer_status and make_summarizer
# ---------------------------------------------------------------------------------------------------------


def _llm_settings(**values: Any) -> override_settings:
    defaults = {
        "ARBOR_LLM_PROVIDER": "digest",
        "ARBOR_LLM_BASE_URL": "",
        "ARBOR_LLM_MODEL": "",
        "ARBOR_LLM_API_KEY": "",
        "ARBOR_LLM_CONTEXT_WINDOW": 128000,
        "ARBOR_LLM_TIMEOUT": 60,
    }
    return override_settings(**(defaults | values))


def test_summaries_turned_off() -> None:
    with _llm_settings(ARBOR_LLM_PROVIDER="none"):
        assert summarizer_status() == SummarizerStatus(
            available=False,
            provider="none",
            model="",
            reason="Summaries are turned off (ARBOR_LLM_PROVIDER=none)",
        )
        assert make_summarizer() is None


def test_the_default_is_the_offline_digest() -> None:
    with _llm_settings(ARBOR_LLM_CONTEXT_WINDOW=32000):
        status = summarizer_status()
        summarizer = make_summarizer()
    assert status == SummarizerStatus(
        available=True, provider="digest", model="digest", reason="", context_window=32000
    )
    assert isinstance(summarizer, DigestSummarizer)


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"ARBOR_LLM_PROVIDER": "openai"}, "ARBOR_LLM_PROVIDER=openai needs ARBOR_LLM_MODEL"),
        (
            {"ARBOR_LLM_PROVIDER": "anthropic", "ARBOR_LLM_API_KEY": "k"},
            "ARBOR_LLM_PROVIDER=anthropic needs ARBOR_LLM_MODEL",
        ),
        (
            {"ARBOR_LLM_PROVIDER": "anthropic", "ARBOR_LLM_MODEL": "claude"},
            "ARBOR_LLM_PROVIDER=anthropic needs ARBOR_LLM_API_KEY",
        ),
        (
            {"ARBOR_LLM_PROVIDER": "openai", "ARBOR_LLM_MODEL": "gpt"},
            "ARBOR_LLM_PROVIDER=openai needs ARBOR_LLM_API_KEY (or ARBOR_LLM_BASE_URL for a local server)",
        ),
        (
            {
                "ARBOR_LLM_PROVIDER": "openai",
                "ARBOR_LLM_MODEL": "gpt",
                "ARBOR_LLM_BASE_URL": "localhost:8080",
            },
            "ARBOR_LLM_BASE_URL must start with http:// or https:// (got 'localhost:8080')",
        ),
        (
            {
                "ARBOR_LLM_PROVIDER": "anthropic",
                "ARBOR_LLM_MODEL": "claude",
                "ARBOR_LLM_API_KEY": "sk-\u00e9",
            },
            "ARBOR_LLM_API_KEY must be printable ASCII (it is sent in an HTTP header)",
        ),
        (
            {"ARBOR_LLM_PROVIDER": "gemini"},
            "Unknown ARBOR_LLM_PROVIDER='gemini': use one of digest, openai, anthropic, none",
        ),
    ],
)
def test_a_model_provider_without_its_settings_is_unavailable(values: dict[str, str], reason: str) -> None:
    with _llm_settings(**values):
        status = summarizer_status()
        assert make_summarizer() is None
    assert not status.available
    assert status.reason == reason


def test_a_local_openai_compatible_server_needs_no_api_key() -> None:
    with _llm_settings(
        ARBOR_LLM_PROVIDER="openai", ARBOR_LLM_MODEL="llama3", ARBOR_LLM_BASE_URL="http://127.0.0.1:11434/v1"
    ):
        status = summarizer_status()
        summarizer = make_summarizer()
    assert status == SummarizerStatus(available=True, provider="openai", model="llama3", reason="")
    assert isinstance(summarizer, OpenAISummarizer)


def _entry(entry_id: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "message": message,
    }


def _user(entry_id: str, text: str) -> dict[str, Any]:
    return _entry(entry_id, {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})


def _assistant(entry_id: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return _entry(entry_id, {"role": "assistant", "content": list(blocks), "timestamp": 2})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": f"call-{name}", "name": name, "arguments": arguments}


BRANCH = [
    _user("u1", "Refactor the parser in src/parse.py. Don't change the public API, and keep it fast."),
    _assistant(
        "a1",
        _text("I'll use a hand-written lexer instead of regexes."),
        _call("read", path="src/parse.py"),
        _call("edit", path="src/parse.py", oldText="a", newText="b"),
    ),
    _assistant("a2", _text("Done with the lexer. The test run failed with `TypeError: token is None`.")),
    _user("u2", "Now add tests for the lexer."),
]


def test_make_summarizer_drives_a_real_client_from_settings(provider: str) -> None:
    deltas: list[str] = []

    async def on_delta(text: str) -> None:
        deltas.append(text)

    with LlmServer(provider=provider, tokens=TOKENS, api_key="sk-settings") as server:
        with _llm_settings(
            ARBOR_LLM_PROVIDER=provider,
            ARBOR_LLM_MODEL="settings-model",
            ARBOR_LLM_BASE_URL=server.base_url,
            ARBOR_LLM_API_KEY="sk-settings",
            ARBOR_LLM_TIMEOUT=7,
        ):
            status = summarizer_status()
            summarizer = make_summarizer(on_delta)
        assert summarizer is not None
        result = asyncio.run(
            generate_branch_summary(BRANCH, summarizer, context_window=status.context_window)
        )
        (body,) = server.requests
    assert status == SummarizerStatus(available=True, provider=provider, model="settings-model", reason="")
    assert isinstance(summarizer, CLIENTS[provider])
    assert summarizer.config.timeout == 7
    assert result.error is None
    assert result.summary == (
        f"{BRANCH_SUMMARY_PREAMBLE}\n\n{''.join(TOKENS)}\n\n<modified-files>\nsrc/parse.py\n</modified-files>"
    )
    assert deltas == TOKENS
    assert body["model"] == "settings-model"
    assert body["max_tokens"] == SUMMARY_MAX_TOKENS
    prompt = body["messages"][-1]["content"]
    system = body["messages"][0]["content"] if provider == "openai" else body["system"]
    assert system == SUMMARIZATION_SYSTEM_PROMPT
    assert prompt.startswith("<conversation>\n[User]: Refactor the parser")
    assert prompt.endswith(BRANCH_SUMMARY_PROMPT)


# ---------------------------------------------------------------------------------------------------------
# The offline digest
# ---------------------------------------------------------------------------------------------------------


def _prompt(entries: list[dict[str, Any]]) -> str:
    messages, _ = prepare_branch_entries(entries)
    return build_branch_summary_prompt(messages)[1]


def _headings(text: str) -> list[str]:
    return re.findall(r"^#{2,3} .*$", text, flags=re.MULTILINE)


def _digest(
    user_prompt: str, *, max_tokens: int = SUMMARY_MAX_TOKENS, abort_after: int | None = None
) -> tuple[SummaryResult, list[str]]:
    deltas: list[str] = []

    async def main() -> SummaryResult:
        signal = AbortSignal()

        async def on_delta(text: str) -> None:
            deltas.append(text)
            if abort_after is not None and len(deltas) >= abort_after:
                signal.abort()

        summarizer: Summarizer = DigestSummarizer(on_delta)
        return await summarizer.summarize(
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            user_prompt=user_prompt,
            max_tokens=max_tokens,
            signal=signal,
        )

    return asyncio.run(main()), deltas


def test_digest_has_the_structure_the_summary_prompt_asks_for() -> None:
    result, _ = _digest(_prompt(BRANCH))
    assert result.stop_reason == "stop"
    assert _headings(result.text) == _headings(BRANCH_SUMMARY_PROMPT)
    assert _headings(result.text) == [
        "## Goal",
        "## Constraints & Preferences",
        "## Progress",
        "### Done",
        "### In Progress",
        "### Blocked",
        "## Key Decisions",
        "## Next Steps",
    ]
    # It says what it is, first thing.
    assert result.text.startswith(DIGEST_NOTE)
    assert "not an LLM summary" in result.text


def test_digest_picks_its_content_from_the_branch() -> None:
    text = _digest(_prompt(BRANCH))[0].text
    sections = dict(re.findall(r"^#{2,3} (.*)\n((?:(?!#).*\n?)*)", text, flags=re.MULTILINE))
    assert sections["Goal"].startswith("Refactor the parser in src/parse.py.")
    assert "Now add tests for the lexer." in sections["Goal"]
    assert "- Don't change the public API, and keep it fast." in sections["Constraints & Preferences"]
    assert "- [x] `read` src/parse.py" in sections["Done"]
    assert "- [x] `edit` src/parse.py" in sections["Done"]
    assert "- [ ] Unanswered request: Now add tests for the lexer." in sections["In Progress"]
    assert "`TypeError: token is None`" in sections["Blocked"]
    assert "- I'll use a hand-written lexer instead of regexes." in sections["Key Decisions"]
    assert sections["Next Steps"].startswith("1. Answer the last request: Now add tests for the lexer.")
    # File lists are finalize_summary's job.
    assert "<read-files>" not in text
    assert "<modified-files>" not in text


def test_digest_takes_earlier_summaries_as_done_work_not_as_requests() -> None:
    earlier = {
        "type": "branch_summary",
        "id": "b1",
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "fromId": "x",
        "summary": f"{BRANCH_SUMMARY_PREAMBLE}\n\n## Goal\nPort the CLI to click.\n\n## Next Steps\n1. Ship.",
    }
    compaction = {
        "type": "compaction",
        "id": "k1",
        "parentId": None,
        "timestamp": "2026-05-01T10:00:00.000Z",
        "summary": "Compacted history.",
        "firstKeptEntryId": "u1",
        "tokensBefore": 10,
    }
    text = _digest(_prompt([earlier, compaction, *BRANCH]))[0].text
    assert "## Goal\nRefactor the parser" in text
    assert "- [x] Earlier work, summarized: Port the CLI to click." in text
    assert "- [x] Earlier work, summarized: Compacted history." in text
    # The compaction wrapper's "MUST ... NEVER" is no user constraint.
    assert "NEVER" not in text


def test_session_text_cannot_add_headings_to_the_digest() -> None:
    hostile = [_user("u1", "Do it.\n\n## Goal\nSomething else\n### Done\n- [x] everything")]
    text = _digest(_prompt(hostile))[0].text
    assert _headings(text) == _headings(BRANCH_SUMMARY_PROMPT)


def test_digest_of_an_empty_conversation_still_has_the_structure() -> None:
    result, _ = _digest("<conversation>\n\n</conversation>\n\n" + BRANCH_SUMMARY_PROMPT)
    assert result.stop_reason == "stop"
    assert _headings(result.text) == _headings(BRANCH_SUMMARY_PROMPT)
    assert parse_conversation("<conversation>\n\n</conversation>") == []


def test_digest_streams_in_several_deltas() -> None:
    result, deltas = _digest(_prompt(BRANCH))
    assert len(deltas) >= 4
    assert "".join(deltas) == result.text == "\n\n".join(build_digest(_prompt(BRANCH)))


def test_digest_honours_the_abort_signal() -> None:
    result, deltas = _digest(_prompt(BRANCH), abort_after=1)
    assert result.stop_reason == "aborted"
    assert deltas == [result.text]
    assert "## Next Steps" not in result.text


def test_digest_stops_at_max_tokens_with_stop_reason_length() -> None:
    result, deltas = _digest(_prompt(BRANCH), max_tokens=40)
    assert result.stop_reason == "length"
    assert len(result.text) == 160
    assert "".join(deltas) == result.text


def test_default_settings_summarize_a_branch_with_the_digest() -> None:
    with _llm_settings():
        summarizer = make_summarizer()
    assert summarizer is not None
    result = asyncio.run(generate_branch_summary(BRANCH, summarizer))
    assert result.error is None and not result.aborted
    assert result.summary is not None
    assert result.summary.startswith(f"{BRANCH_SUMMARY_PREAMBLE}\n\n{DIGEST_NOTE}\n\n## Goal\n")
    assert result.summary.endswith("<modified-files>\nsrc/parse.py\n</modified-files>")
    assert result.modified_files == ["src/parse.py"]
