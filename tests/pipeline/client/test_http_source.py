"""The HTTP byte source over real loopback HTTP against the gateway emulator: every failure maps to its code
(docs/protocol.md, "Error codes"), framing deviations change nothing, the request asks for a stream with usage, and
the API key never leaks into a message, a repr or the request the server sees.
"""

from __future__ import annotations

import json
import time

import pytest
from transport_helpers import CLEAN, MESSAGES, SECRET, closed_port, collect, last_finish, make_client, types, unique

import pipeline
from operators import Code, ToolCallDelta
from pipeline.emulator import Emulator

# --------------------------------------------------------------------------------------------------- failure codes


@pytest.mark.parametrize(
    ("profile", "code", "status"),
    [
        ("rate-limit", Code.RATE_LIMIT, 429),
        ("server-error", Code.SERVER, 500),
        ("unavailable", Code.SERVER, 503),
        ("auth", Code.AUTH, 401),
        ("quota", Code.QUOTA, 429),
        ("context", Code.CONTEXT_WINDOW_EXCEEDED, 400),
        ("html-200", Code.MALFORMED_RESPONSE, 200),
        ("empty-200", Code.EMPTY_RESPONSE, 200),
    ],
)
async def test_http_failures_map_to_their_codes(emu: Emulator, profile: str, code: str, status: int) -> None:
    chunks = await collect(emu.base_url, profile)

    assert types(chunks) == ["finish"]
    reason = last_finish(chunks).reason
    assert reason.kind == "error"
    assert reason.failure is not None
    assert reason.failure.code == code
    assert reason.failure.status == status
    assert reason.failure.message
    assert "\n" not in reason.failure.message


async def test_rate_limit_carries_retry_after_and_no_request_id(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "rate-limit")

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.retry_after_ms == 2000
    assert failure.request_id is None  # the emulator sends no x-request-id / request-id header
    assert failure.message.startswith("Rate limit reached")


async def test_html_200_message_shows_what_came_instead_of_a_stream(emu: Emulator) -> None:
    failure = last_finish(await collect(emu.base_url, "html-200")).reason.failure

    assert failure is not None
    assert "text/html" in failure.message
    assert "502 Bad Gateway" in failure.message


@pytest.mark.parametrize(
    ("profile", "code", "text"),
    [
        ("drop-mid-stream", Code.TRANSPORT, "Hello from the"),
        ("error-midstream", Code.SERVER, "Hello from"),
        ("event-error", Code.INVALID_REQUEST, "maybe"),
        ("malformed-json", Code.MALFORMED_RESPONSE, "Hello"),
        ("no-done-no-finish", Code.STREAM_CLOSED, CLEAN),
    ],
)
async def test_mid_stream_failures_keep_the_partial_text(emu: Emulator, profile: str, code: str, text: str) -> None:
    chunks = await collect(emu.base_url, profile)

    finish = last_finish(chunks)
    assert finish.reason.kind == "error"
    assert finish.reason.code == code
    assert "block-end" not in types(chunks)
    message = pipeline.assemble(chunks)
    assert message.text == text
    assert not message.ok


async def test_a_closed_port_is_transport(emu: Emulator) -> None:
    port = closed_port()
    chunks = await collect(f"http://127.0.0.1:{port}/v1", "clean")

    failure = last_finish(chunks).reason.failure
    assert types(chunks) == ["finish"]
    assert failure is not None
    assert failure.code == Code.TRANSPORT
    assert f"127.0.0.1:{port}" in failure.message


async def test_a_stall_is_timeout(emu: Emulator) -> None:
    started = time.monotonic()
    chunks = await collect(emu.base_url, "stall", idle_timeout=0.3)

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.code == Code.TIMEOUT
    assert "0.3 s" in failure.message
    assert pipeline.assemble(chunks).text == "Hello from"
    assert time.monotonic() - started < 5


async def test_no_done_is_a_clean_stop(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "no-done")

    assert last_finish(chunks).reason.kind == "stop"
    message = pipeline.assemble(chunks)
    assert message.text == CLEAN
    assert message.usage is not None


async def test_never_identified_is_malformed_tool_call_after_the_usage(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "never-identified")

    assert last_finish(chunks).reason.code == Code.MALFORMED_TOOL_CALL
    assert types(chunks)[-2:] == ["usage", "finish"]
    assert "block-end" not in types(chunks)
    assert all(c.id == "" for c in chunks if isinstance(c, ToolCallDelta))
    assert pipeline.assemble(chunks).tool_calls == ()


async def test_seed_bug_over_http_gives_clean_tool_calls(emu: Emulator) -> None:
    chunks = await collect(emu.base_url, "seed-bug")

    assert last_finish(chunks).reason.kind == "tool-calls"
    calls = pipeline.assemble(chunks).tool_calls
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Berlin"}),
    ]
    assert all(c.id for c in calls)
    assert calls[0].id.startswith("call_emu0_")
    assert calls[1].id.startswith("call_emu1_")
    assert all(c.id and c.name for c in chunks if isinstance(c, ToolCallDelta))


@pytest.mark.parametrize("profile", ["bom", "id-after-sse-id", "crlf", "keepalive", "usage-trailer"])
async def test_framing_deviations_give_the_same_message_as_clean(emu: Emulator, profile: str) -> None:
    clean = pipeline.assemble(await collect(emu.base_url, "clean"))
    other = pipeline.assemble(await collect(emu.base_url, profile))

    assert clean.text == CLEAN
    assert other.to_dict() == clean.to_dict()


async def test_the_request_asks_for_a_stream_with_usage(emu: Emulator) -> None:
    marker = unique("body")
    await collect(emu.base_url, "clean", {"x-test-id": marker})

    (recorded,) = [r for r in emu.state.requests if r.headers.get("x-test-id") == marker]
    assert recorded.body["stream"] is True
    assert recorded.body["stream_options"] == {"include_usage": True}
    assert recorded.body["model"] == "clean"
    assert recorded.body["messages"] == MESSAGES
    assert recorded.headers["accept"] == "text/event-stream"


# --------------------------------------------------------------------------------------------------- the API key


@pytest.mark.parametrize("profile", ["auth", "server-error", "rate-limit", "html-200", "drop-mid-stream", "clean"])
async def test_the_api_key_never_leaks(emu: Emulator, profile: str) -> None:
    marker = unique("key")
    chunks = await collect(emu.base_url, profile, {"x-test-id": marker}, api_key=SECRET)

    assert SECRET not in json.dumps([c.to_dict() for c in chunks])
    failure = last_finish(chunks).reason.failure
    if failure is not None:
        assert SECRET not in failure.message
    (recorded,) = [r for r in emu.state.requests if r.headers.get("x-test-id") == marker]
    assert "authorization" not in recorded.headers
    assert SECRET not in json.dumps(dict(recorded.headers))
    assert SECRET not in json.dumps(recorded.body)


async def test_the_auth_profiles_message_does_not_echo_the_key(emu: Emulator) -> None:
    failure = last_finish(await collect(emu.base_url, "auth", api_key=SECRET)).reason.failure

    assert failure is not None
    assert failure.code == Code.AUTH
    assert "Incorrect API key" in failure.message
    assert SECRET not in failure.message


async def test_the_api_key_is_not_in_any_repr(emu: Emulator) -> None:
    async with make_client(emu.base_url, "clean", api_key=SECRET) as client:
        assert client.config.api_key == SECRET
        assert SECRET not in repr(client)
        assert SECRET not in str(client)
        assert SECRET not in repr(client.config)
        assert SECRET not in str(client.config)
        assert SECRET not in repr(client.request_body(MESSAGES))


async def test_a_transport_message_redacts_the_key() -> None:
    """Even a base URL that happens to contain the key does not carry it into a failure message."""
    base_url = f"http://127.0.0.1:{closed_port()}/{SECRET}/v1"
    chunks = await collect(base_url, "clean", api_key=SECRET)

    failure = last_finish(chunks).reason.failure
    assert failure is not None
    assert failure.code == Code.TRANSPORT
    assert SECRET not in failure.message
    assert "[redacted]" in failure.message
