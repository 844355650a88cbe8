"""The unmodified anthropic and openai SDKs on a loopback server that serves a stream as the upstream sent it, then as
``MessagesRepair`` / ``ResponsesRepair`` passed it on: the plain SDK gets the faults wrong, the repaired bytes right;
and on every recorded stream the plain SDK already reads right, the repaired bytes give the same final result."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.server  # tests/tiers.py

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

from bytes_server import BytesServer  # noqa: E402
from corpus import MESSAGES_STREAMS, PEER_FORMAT_STREAMS, RESPONSES_STREAMS  # noqa: E402
from repair_helpers import body_of, repaired  # noqa: E402

from pipeline.emulator.messages import MESSAGES_PROFILES  # noqa: E402
from pipeline.emulator.responses import RESPONSES_PROFILES  # noqa: E402
from pipeline.sanitize import MessagesRepair, ResponsesRepair  # noqa: E402
from pipeline.sanitize._event_repair import EventRepair  # noqa: E402
from pipeline.sanitize.messages import messages_error_body  # noqa: E402
from pipeline.sanitize.responses import responses_error_body  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[BytesServer]:
    with BytesServer() as running:
        yield running


@pytest.fixture(scope="module")
def claude(server: BytesServer) -> Any:
    return anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0)


@pytest.fixture(scope="module")
def gpt(server: BytesServer) -> Any:
    return openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)


def final_message(claude: Any, server: BytesServer, body: bytes) -> Any:
    server.serve(body)
    with claude.messages.stream(model="m", max_tokens=64, messages=[{"role": "user", "content": "hi"}]) as stream:
        return stream.get_final_message()


def final_response(gpt: Any, server: BytesServer, body: bytes) -> Any:
    server.serve(body)
    with gpt.responses.stream(model="m", input="hi") as stream:
        return stream.get_final_response()


def whole(make: Callable[[], EventRepair], body: bytes) -> bytes:
    return repaired(make, body, 29)[0]


def http_error(server: BytesServer, error_body: bytes, error: type[Exception], request: Callable[[], Any]) -> Any:
    """What the SDK raises (an ``error`` naming ``MALFORMED_TOOL_CALL``, status 502) for ``request()`` answered with a
    repairer's HTTP error body."""
    server.serve(error_body, status=502, content_type="application/json")
    with pytest.raises(error, match="MALFORMED_TOOL_CALL") as raised:
        request()
    assert getattr(raised.value, "status_code") == 502  # noqa: B009 (the SDK's APIStatusError)
    return raised.value


# -- Messages: the anthropic SDK


def test_anthropic_sdk_gets_three_tool_blocks_from_the_raw_seed_bug_and_one_from_the_repaired(
    claude: Any, server: BytesServer
) -> None:
    raw = body_of(MESSAGES_PROFILES, "seed-bug")
    plain = final_message(claude, server, raw)
    ids = [block.id for block in plain.content]
    assert ids[0].startswith("toolu_")
    assert ids[1:] == ["", None]
    fixed = final_message(claude, server, whole(MessagesRepair, raw))
    (block,) = fixed.content
    assert (block.id, block.name, block.input) == (ids[0], "get_weather", {"city": "Paris"})
    assert fixed.stop_reason == "tool_use"


def test_anthropic_sdk_reads_a_late_block_id_once_repaired(claude: Any, server: BytesServer) -> None:
    raw = body_of(MESSAGES_PROFILES, "late-block-id")
    plain = final_message(claude, server, raw).content
    assert [block.id for block in plain][:1] == [""]
    (block,) = final_message(claude, server, whole(MessagesRepair, raw)).content
    assert block.id.startswith("toolu_")
    assert block.input == {"city": "Paris"}


def test_anthropic_sdk_raises_a_never_identified_tool_use_in_band_and_as_http_error(
    claude: Any, server: BytesServer
) -> None:
    raw = body_of(MESSAGES_PROFILES, "never-identified")
    assert final_message(claude, server, raw).content[0].id is None  # the plain SDK returns a call it cannot answer
    out, repair = repaired(MessagesRepair, raw, 29)
    with pytest.raises(anthropic.APIStatusError, match="MALFORMED_TOOL_CALL"):
        final_message(claude, server, out)
    assert repair.failure is not None
    error = http_error(server, messages_error_body(repair.failure), anthropic.APIStatusError, lambda: (
        claude.messages.create(model="m", max_tokens=64, messages=[{"role": "user", "content": "hi"}], stream=True)))
    assert error.body["error"]["type"] == "api_error"


def test_anthropic_sdk_raises_on_a_cut_stream_once_repaired(claude: Any, server: BytesServer) -> None:
    raw = body_of(MESSAGES_PROFILES, "drop-mid-stream")
    plain = final_message(claude, server, raw)
    assert plain.stop_reason is None  # partial text, no error
    with pytest.raises(anthropic.APIStatusError, match="STREAM_CLOSED"):
        final_message(claude, server, whole(MessagesRepair, raw))


def test_anthropic_sdk_reads_a_trailing_done_stream_the_same_once_dropped(claude: Any, server: BytesServer) -> None:
    raw = body_of(MESSAGES_PROFILES, "trailing-done")
    out = whole(MessagesRepair, raw)
    assert b"[DONE]" not in out
    assert final_message(claude, server, out).model_dump() == final_message(claude, server, raw).model_dump()


# -- Responses: the openai SDK's responses.stream()


@pytest.mark.parametrize("profile", ["rotated-ids", "late-id", "seed-bug"])
def test_openai_sdk_raises_identity_changed_on_the_raw_stream_and_reads_the_repaired(
    gpt: Any, server: BytesServer, profile: str
) -> None:
    raw = body_of(RESPONSES_PROFILES, profile)
    with pytest.raises(RuntimeError, match="identity changed"):
        final_response(gpt, server, raw)
    response = final_response(gpt, server, whole(ResponsesRepair, raw))
    call = response.output[-1]
    assert call.type == "function_call"
    assert call.call_id.startswith("call_emu0_")
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}')
    if profile == "rotated-ids":
        assert response.output_text == "Hello from the emulator."


def test_openai_sdk_raises_a_never_identified_call_in_band_and_as_http_error(gpt: Any, server: BytesServer) -> None:
    raw = body_of(RESPONSES_PROFILES, "never-identified")
    out, repair = repaired(ResponsesRepair, raw, 29)
    with pytest.raises(openai.APIError, match="MALFORMED_TOOL_CALL"):
        final_response(gpt, server, out)
    assert repair.failure is not None
    error = http_error(server, responses_error_body(repair.failure), openai.APIStatusError,
                       lambda: gpt.responses.create(model="m", input="hi", stream=True))
    assert error.code == "MALFORMED_TOOL_CALL"


def test_openai_sdk_raises_api_error_on_a_cut_stream_once_repaired(gpt: Any, server: BytesServer) -> None:
    raw = body_of(RESPONSES_PROFILES, "drop-mid-stream")
    with pytest.raises(openai.APIError, match="STREAM_CLOSED"):
        final_response(gpt, server, whole(ResponsesRepair, raw))


# -- the recorded streams the plain SDK already reads right


def _streams(kind: str) -> list[Path]:
    folder = MESSAGES_STREAMS if kind == "messages" else RESPONSES_STREAMS
    return sorted([*folder.glob("*.sse"), *(PEER_FORMAT_STREAMS / kind).glob("*.sse")])


def _read(read: Callable[[bytes], Any], body: bytes) -> Any:
    try:
        return read(body).model_dump()
    except Exception:  # the plain SDK's own verdict on a stream it cannot read
        return None


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "make"), [("messages", MessagesRepair), ("responses", ResponsesRepair)])
def test_every_recorded_stream_the_plain_sdk_reads_right_comes_through_byte_for_byte_and_the_transport(
    claude: Any, gpt: Any, server: BytesServer, kind: str, make: Callable[[], EventRepair]
) -> None:
    from pipeline import SanitizingTransport

    transport = {"api_key": "sk-test-key-12345", "max_retries": 0,
                 "http_client": pytest.importorskip("httpx2").Client(transport=SanitizingTransport())}
    claude_through = anthropic.Anthropic(base_url=server.base_url, **transport)
    gpt_through = openai.OpenAI(base_url=server.base_url + "/v1", **transport)

    def read(body: bytes) -> Any:
        return final_message(claude, server, body) if kind == "messages" else final_response(gpt, server, body)

    def read_through(body: bytes) -> Any:
        if kind == "messages":
            return final_message(claude_through, server, body)
        return final_response(gpt_through, server, body)

    read_right = identical = 0
    for path in _streams(kind):
        raw = path.read_bytes()
        plain = _read(read, raw)
        if plain is None:
            continue
        read_right += 1
        out = whole(make, raw)
        assert _read(read, out) == plain, path.name
        assert _read(read_through, raw) == plain, path.name  # the same through SanitizingTransport
        identical += out == raw
    assert read_right >= 30
    assert identical == read_right


@pytest.mark.slow
def test_data_only_messages_streams_the_plain_sdk_skips_read_as_their_peers_expect(
    claude: Any, server: BytesServer
) -> None:
    """The anthropic SDK reads only named events: on a data-only stream it has no message at all. Named from their
    payload's type, they read as the peer suites that recorded them assert (text and tool calls)."""
    matched = []
    for path in sorted((PEER_FORMAT_STREAMS / "messages").glob("*.sse")):
        raw = path.read_bytes()
        if raw.lstrip().startswith(b"event:"):
            continue
        assert _read(lambda body: final_message(claude, server, body), raw) is None, path.name
        expected = json.loads(path.with_suffix(".expected.json").read_text())
        message = _read(lambda body: final_message(claude, server, body), whole(MessagesRepair, raw))
        if message is None:
            continue
        text = "".join(block["text"] for block in message["content"] if block["type"] == "text")
        calls = [(b["id"], b["name"], b["input"]) for b in message["content"] if b["type"] == "tool_use"]
        want = [(c["id"], c["name"], json.loads(c["arguments"] or "{}")) for c in expected["tool_calls"] or []]
        if (text, calls) == (expected["text"], want):
            matched.append(path.name)
    assert len(matched) >= 21, matched


def test_strict_transport_turns_an_empty_messages_answer_into_an_error_the_sdk_raises(server: BytesServer) -> None:
    httpx2 = pytest.importorskip("httpx2")
    from pipeline import SanitizingTransport

    raw = body_of(MESSAGES_PROFILES, "clean")
    empty = raw[: raw.index(b"event: content_block_start")] + raw[raw.index(b"event: message_delta") :]
    plain = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0,
                                http_client=httpx2.Client(transport=SanitizingTransport()))
    assert final_message(plain, server, empty).content == []  # by default the SDK gets the empty answer as sent
    strict = anthropic.Anthropic(base_url=server.base_url, api_key="k", max_retries=0,
                                 http_client=httpx2.Client(transport=SanitizingTransport(strict=True)))
    with pytest.raises(anthropic.APIStatusError, match="EMPTY_RESPONSE") as raised:
        final_message(strict, server, empty)
    assert raised.value.response.headers["x-should-retry"] == "true"
