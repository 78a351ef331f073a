"""The session page's websocket (``treeview.consumers``): navigation jobs streamed, cancelled, refused, and
live "changed" events, on the in-memory channel layer and on Redis."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers, get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import override_settings

from sessions_site import env
from tests.llm_server import LlmServer
from tests.reference import import_fixture
from tests.sockets import signed_in_socket
from treeview.extensions import reset_hook_runner
from treeview.models import AgentSession, Entry
from treeview.services import append

pytestmark = pytest.mark.django_db(transaction=True)

FIXTURE = "v3_branching_labels.jsonl"
SID = "0196b4f0-6c2e-7a31-9f0e-3c5d2a1b4e77"
# The fixture's leaf is the custom entry e5000001 at the end of the second branch; b2000006 ends the first.
FIRST_BRANCH_END = "b2000006"
TIMEOUT = 5


@pytest.fixture(autouse=True)
def _multi_user(settings: Any) -> None:
    # Signed in through the real stack (cookie session, AuthMiddlewareStack), not single-user mode.
    settings.ARBOR_SINGLE_USER = False


@pytest.fixture
def session(tmp_path: Path) -> AgentSession:
    return import_fixture(tmp_path, FIXTURE)


def _admin() -> User:
    return User.objects.get_or_create(username="admin", defaults={"is_superuser": True})[0]


async def open_socket(path: str = f"/ws/s/{SID}/") -> WebsocketCommunicator:
    """A socket on the real ASGI stack, signed in as a superuser."""
    return await signed_in_socket(path, await sync_to_async(_admin)())


@pytest.fixture(autouse=True)
def _fresh_hooks() -> Iterator[None]:
    reset_hook_runner()
    yield
    reset_hook_runner()


@contextlib.asynccontextmanager
async def connected(path: str = f"/ws/s/{SID}/") -> AsyncIterator[WebsocketCommunicator]:
    communicator = await open_socket(path)
    ok, code = await communicator.connect(timeout=TIMEOUT)
    assert ok, code
    try:
        yield communicator
    finally:
        await communicator.disconnect()


async def receive(communicator: WebsocketCommunicator) -> dict[str, Any]:
    return orjson.loads(await communicator.receive_from(timeout=TIMEOUT))


async def until(
    communicator: WebsocketCommunicator, *types: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Messages up to the first of ``types``: (that message, everything before it)."""
    before = []
    while True:
        message = await receive(communicator)
        if message["type"] in types:
            return message, before
        before.append(message)


def state(session: AgentSession) -> tuple[str | None, int]:
    session.refresh_from_db()
    return session.leaf_id, Entry.objects.filter(session=session).count()


async def astate(session: AgentSession) -> tuple[str | None, int]:
    return await sync_to_async(state)(session)


# -- connecting ----------------------------------------------------------------------------------------------


async def test_unknown_session_is_refused_with_4404() -> None:
    communicator = await open_socket("/ws/s/no-such-session/")
    ok, code = await communicator.connect(timeout=TIMEOUT)
    assert not ok
    assert code == 4404


async def test_copy_parameter_must_name_a_copy_of_that_session(session: AgentSession) -> None:
    communicator = await open_socket(f"/ws/s/{SID}/?copy={session.pk + 1000}")
    ok, code = await communicator.connect(timeout=TIMEOUT)
    assert (ok, code) == (False, 4404)
    async with connected(f"/ws/s/{SID}/?copy={session.pk}") as communicator:
        await communicator.send_to(text_data='{"type": "ping"}')
        assert await receive(communicator) == {"type": "pong"}


# -- navigation without a summary ---------------------------------------------------------------------------


async def test_navigating_without_summary_moves_the_leaf_and_appends_nothing(session: AgentSession) -> None:
    _, count = await astate(session)
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
        done, before = await until(communicator, "done")
    assert done["leafId"] == FIRST_BRANCH_END
    assert done["summaryId"] is None
    assert done["editorText"] is None
    assert done["url"] == f"/s/{SID}/?targetId={FIRST_BRANCH_END}"
    progress = [message for message in before if message["type"] == "progress"]
    # Abandoned below b2000002: the branch summary, b2000007, b2000008, two labels, the custom entry.
    assert progress == [{"type": "progress", "phase": "collecting", "entries": 6}]
    assert await astate(session) == (FIRST_BRANCH_END, count)


async def test_selecting_a_user_message_moves_the_leaf_to_its_parent_and_returns_its_text(
    session: AgentSession,
) -> None:
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": "b2000003", "summarize": False})
        done, _ = await until(communicator, "done")
    assert done["leafId"] == "b2000002"
    assert done["editorText"] == "Add subcommands."
    leaf, _ = await astate(session)
    assert leaf == "b2000002"


async def test_a_summary_of_nothing_says_so_instead_of_closing_in_silence(session: AgentSession) -> None:
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": "b2000003", "summarize": False})
        await until(communicator, "done")
        # From b2000002 down to b2000006 on the same branch: nothing is abandoned, nothing to summarize.
        _, count = await astate(session)
        await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
        done, _ = await until(communicator, "done")
    assert done["nothingToSummarize"] is True and done["summaryId"] is None
    assert done["message"].startswith("Nothing to summarize")
    assert await astate(session) == (FIRST_BRANCH_END, count)


async def test_custom_instructions_for_the_digest_are_refused_and_change_nothing(
    session: AgentSession,
) -> None:
    before = await astate(session)
    async with connected() as communicator:
        start = {"type": "start", "target": FIRST_BRANCH_END, "summarize": True, "instructions": "Be brief"}
        await communicator.send_json_to(start)
        error, _ = await until(communicator, "error")
    assert error["code"] == "no-instructions" and "cannot follow custom instructions" in error["message"]
    assert await astate(session) == before


async def test_selecting_the_current_leaf_says_already_there(session: AgentSession) -> None:
    leaf, count = await astate(session)
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": leaf, "summarize": True})
        done, before = await until(communicator, "done")
    assert done["noop"] is True
    assert done["message"] == "Already at this point"
    assert before == []
    assert await astate(session) == (leaf, count)


async def test_unknown_target_is_an_error_and_changes_nothing(session: AgentSession) -> None:
    before = await astate(session)
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": "nope", "summarize": False})
        error, _ = await until(communicator, "error")
    assert error["code"] == "unknown-entry"
    assert await astate(session) == before


# -- summaries -----------------------------------------------------------------------------------------------


async def test_digest_summary_streams_and_is_appended_at_the_destination(session: AgentSession) -> None:
    _, count = await astate(session)
    async with connected() as communicator:
        await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
        done, before = await until(communicator, "done")
    phases = [message.get("phase") for message in before if message["type"] == "progress"]
    assert phases[:2] == ["collecting", "summarizing"]
    streamed = "".join(message.get("delta", "") for message in before if message["type"] == "progress")
    assert "digest" in streamed.lower()
    summary = await sync_to_async(Entry.objects.get)(session=session, entry_id=done["summaryId"])
    entry = orjson.loads(summary.raw)
    assert entry["type"] == "branch_summary"
    assert entry["parentId"] == FIRST_BRANCH_END
    assert entry["fromId"] == FIRST_BRANCH_END
    # The stored summary is the streamed text under the core's preamble, with the file lists appended.
    assert streamed.strip() in entry["summary"]
    assert entry["summary"].startswith("The user explored a different conversation branch")
    assert await astate(session) == (done["summaryId"], count + 1)


@contextlib.contextmanager
def model(provider: str, **server: Any) -> Iterator[LlmServer]:
    with (
        LlmServer(provider=provider, **server) as llm,
        override_settings(
            ARBOR_LLM_PROVIDER=provider,
            ARBOR_LLM_BASE_URL=llm.base_url,
            ARBOR_LLM_MODEL="test-model",
            ARBOR_LLM_API_KEY="test-key",
        ),
    ):
        yield llm


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_model_summary_arrives_token_by_token(session: AgentSession, provider: str) -> None:
    tokens = ["## Goal\n", "Try ", "argparse ", "subcommands."]
    with model(provider, tokens=tokens) as llm:
        async with connected() as communicator:
            await communicator.send_json_to(
                {"type": "start", "target": FIRST_BRANCH_END, "summarize": True, "instructions": "Be brief"}
            )
            done, before = await until(communicator, "done")
        assert "Be brief" in orjson.dumps(llm.requests[0]).decode()
    deltas = [message["delta"] for message in before if "delta" in message]
    assert deltas == tokens
    summary = await sync_to_async(Entry.objects.get)(session=session, entry_id=done["summaryId"])
    assert "\n## Goal\nTry argparse subcommands.\n" in orjson.loads(summary.raw)["summary"]


async def test_cancel_mid_stream_writes_nothing_and_leaves_the_leaf(session: AgentSession) -> None:
    before = await astate(session)
    with model("openai", tokens=["slow "] * 200, delay=0.05) as llm:
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
            # Wait for the first streamed token, then cancel.
            while "delta" not in await receive(communicator):
                pass
            await communicator.send_json_to({"type": "cancel"})
            cancelled, _ = await until(communicator, "cancelled")
            assert cancelled["message"] == "Branch summarization cancelled"
            # The socket still works, and there is nothing left to cancel.
            await communicator.send_json_to({"type": "cancel"})
            error, _ = await until(communicator, "error")
            assert error["code"] == "not-running"
        # The HTTP stream was closed by the client (the model stops generating), long before its end.
        (stream,) = await sync_to_async(llm.wait_for_streams)(1)
        assert stream.outcome == "client_gone"
        assert stream.tokens_sent < 200
    assert await astate(session) == before


async def test_closing_the_socket_mid_stream_cancels_the_job(session: AgentSession) -> None:
    before = await astate(session)
    with model("openai", tokens=["slow "] * 200, delay=0.05) as llm:
        communicator = await open_socket(f"/ws/s/{SID}/")
        await communicator.connect(timeout=TIMEOUT)
        await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
        while "delta" not in await receive(communicator):
            pass
        await communicator.disconnect()
        (stream,) = await sync_to_async(llm.wait_for_streams)(1)
        assert stream.outcome == "client_gone"
        # Give a stray job time to finish, if one were left running.
        await asyncio.sleep(0.3)
    assert await astate(session) == before


async def test_summary_without_a_model_fails_at_once_with_the_reason(session: AgentSession) -> None:
    before = await astate(session)
    with override_settings(ARBOR_LLM_PROVIDER="none"):
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
            error, _ = await until(communicator, "error")
            assert error["code"] == "no-model"
            assert "ARBOR_LLM_PROVIDER" in error["message"]
            # Without a summary the move still works.
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
            done, _ = await until(communicator, "done")
    assert done["leafId"] == FIRST_BRANCH_END
    assert (await astate(session))[1] == before[1]


@pytest.mark.parametrize("mode", ["error", "drop"])
async def test_provider_failure_is_reported_and_writes_nothing(session: AgentSession, mode: str) -> None:
    before = await astate(session)
    with model("openai", tokens=["partial ", "text"], mode=mode):
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
            error, _ = await until(communicator, "error")
    assert error["code"] == "summary-failed"
    assert error["message"].startswith("Summarization failed")
    assert await astate(session) == before


async def test_two_pages_navigating_at_once_are_serialized_and_lose_nothing(session: AgentSession) -> None:
    _, count = await astate(session)
    async with connected() as first, connected() as second:
        await first.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
        await second.send_json_to({"type": "start", "target": "b2000008", "summarize": True})
        done_first, _ = await until(first, "done")
        done_second, _ = await until(second, "done")
    ids = {done_first["summaryId"], done_second["summaryId"]}
    assert None not in ids and len(ids) == 2
    leaf, total = await astate(session)
    assert total == count + 2
    assert leaf in ids


async def test_a_busy_page_refuses_a_second_start(session: AgentSession) -> None:
    with model("openai", tokens=["slow "] * 100, delay=0.05):
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
            await communicator.send_json_to({"type": "start", "target": "b2000002", "summarize": False})
            error, _ = await until(communicator, "error")
            assert error["code"] == "busy"
            await communicator.send_json_to({"type": "cancel"})
            await until(communicator, "cancelled")


# -- extensions ---------------------------------------------------------------------------------------------


def refuse_every_move(runner: Any) -> None:
    runner.on("session_before_tree", lambda event: {"cancel": True})


def supply_a_summary(runner: Any) -> None:
    runner.on(
        "session_before_tree",
        lambda event: {"summary": {"summary": "From the extension", "details": {"n": 1}}},
    )


async def test_an_extension_can_cancel_the_move(session: AgentSession) -> None:
    before = await astate(session)
    with override_settings(ARBOR_EXTENSIONS=[f"{__name__}.refuse_every_move"]):
        reset_hook_runner()
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
            cancelled, _ = await until(communicator, "cancelled")
    assert cancelled["message"] == "Navigation cancelled by an extension"
    assert await astate(session) == before


async def test_an_extension_can_supply_the_summary(session: AgentSession) -> None:
    with override_settings(ARBOR_EXTENSIONS=[f"{__name__}.supply_a_summary"], ARBOR_LLM_PROVIDER="digest"):
        reset_hook_runner()
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": True})
            done, before = await until(communicator, "done")
    assert not [message for message in before if "delta" in message]
    summary = await sync_to_async(Entry.objects.get)(session=session, entry_id=done["summaryId"])
    entry = orjson.loads(summary.raw)
    assert (entry["summary"], entry["details"], entry["fromExtension"]) == (
        "From the extension",
        {"n": 1},
        True,
    )


# -- bad messages -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        ("not json", "Malformed JSON"),
        ("[1, 2]", "JSON object"),
        ('{"type": "explode"}', "Unknown message type"),
        ('{"type": "start"}', "target"),
        ('{"type": "start", "target": "b2000002", "summarize": "yes"}', "summarize"),
        ('{"type": "start", "target": "b2000002", "instructions": 5}', "instructions"),
    ],
)
async def test_bad_messages_get_an_error_and_the_socket_stays(
    session: AgentSession, frame: str, fragment: str
) -> None:
    before = await astate(session)
    async with connected() as communicator:
        await communicator.send_to(text_data=frame)
        error = await receive(communicator)
        assert error["type"] == "error" and error["code"] == "bad-message"
        assert fragment in error["message"]
        await communicator.send_to(bytes_data=b"\x00binary")
        assert (await receive(communicator))["code"] == "bad-message"
        await communicator.send_to(text_data='{"type": "ping"}')
        assert await receive(communicator) == {"type": "pong"}
    assert await astate(session) == before


# -- live updates -------------------------------------------------------------------------------------------


async def _label_reaches_open_pages(session: AgentSession) -> None:
    async with connected() as first, connected() as second:
        row = await sync_to_async(append.set_label)(session, "b2000003", "reviewed")
        for communicator in (first, second):
            changed, _ = await until(communicator, "changed")
            assert changed == {
                "type": "changed",
                "reason": "label",
                "entry": row.entry_id,
                "leaf": row.entry_id,
            }


async def test_a_label_saved_elsewhere_reaches_every_open_page(session: AgentSession) -> None:
    await _label_reaches_open_pages(session)


def _redis_available() -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", 6379)) == 0


@pytest.fixture
def redis_layer() -> Iterator[None]:
    if not _redis_available():
        pytest.fail("Redis is not running on 127.0.0.1:6379 (the machines and CI have it)")
    # The layer as the settings make it for ARBOR_REDIS_URL, with a prefix of its own.
    layers = env.channel_layers_config({"ARBOR_REDIS_URL": "redis://127.0.0.1:6379/0"})
    layers["default"]["CONFIG"]["prefix"] = f"arbor-test-{id(object())}"
    with override_settings(CHANNEL_LAYERS=layers):
        channel_layers.backends.clear()
        yield
    channel_layers.backends.clear()


async def test_an_idle_page_keeps_waiting_on_the_redis_channel_layer(redis_layer: None) -> None:
    """A page with nothing to hear for longer than channels_redis's 5 s blocking pop keeps its socket (with
    redis-py 8's default read timeout of 5 s the wait failed with "Timeout reading from 127.0.0.1:6379")."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(layer.receive(channel), timeout=6.5)
    await layer.flush()


async def test_live_updates_over_the_redis_channel_layer(session: AgentSession, redis_layer: None) -> None:
    await _label_reaches_open_pages(session)
    # And a navigation's own change reaches another page through Redis too.
    async with connected() as watcher, connected() as mover:
        await mover.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
        await until(mover, "done")
        changed, _ = await until(watcher, "changed")
    assert changed["reason"] == "leaf"
    assert changed["leaf"] == FIRST_BRANCH_END


async def test_the_example_extension_keeps_a_labeled_leaf(session: AgentSession) -> None:
    with override_settings(ARBOR_EXTENSIONS=["treeview.contrib.keep_labeled_leaf"]):
        reset_hook_runner()
        leaf, _ = await astate(session)
        await sync_to_async(append.set_label)(session, leaf, "keep me")
        before = await astate(session)
        async with connected() as communicator:
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
            cancelled, _ = await until(communicator, "cancelled")
            assert cancelled["message"] == "Navigation cancelled by an extension"
            assert await astate(session) == before
            # Once the label is cleared, the move goes through.
            await sync_to_async(append.set_label)(session, leaf, "")
            await communicator.send_json_to({"type": "start", "target": FIRST_BRANCH_END, "summarize": False})
            done, _ = await until(communicator, "done")
    assert done["leafId"] == FIRST_BRANCH_END


# -- the session list ---------------------------------------------------------------------------------------


async def test_the_session_list_hears_that_a_session_changed_but_not_which(session: AgentSession) -> None:
    communicator = await open_socket("/ws/sessions/")
    ok, _ = await communicator.connect(timeout=TIMEOUT)
    assert ok
    await sync_to_async(append.set_label)(session, "b2000003", "seen from the list")
    assert await receive(communicator) == {"type": "changed"}
    await communicator.disconnect()


async def test_the_session_list_socket_needs_a_signed_in_user_outside_single_user_mode() -> None:
    communicator = await signed_in_socket("/ws/sessions/")  # no session cookie
    ok, code = await communicator.connect(timeout=TIMEOUT)
    assert (ok, code) == (False, 4403)
    with override_settings(ARBOR_SINGLE_USER=True):
        communicator = await signed_in_socket("/ws/sessions/")
        ok, code = await communicator.connect(timeout=TIMEOUT)
        assert ok, code
        await communicator.disconnect()
