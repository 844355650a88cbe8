"""The Messages and Responses repairs through ``SanitizingTransport``, with the unmodified anthropic and openai SDKs on
their own httpx2 clients (sync and async) against the emulator: the faults are repaired or raised, a call never
identified is an HTTP error the SDK's own retries answer, and a clean stream arrives byte for byte."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

from pipeline import SanitizingTransport  # noqa: E402
from pipeline.emulator import Emulator  # noqa: E402

MESSAGES = [{"role": "user", "content": "Weather in Paris?"}]
KINDS = ("sync", "async")


def _http(kind: str) -> Any:
    client_class = httpx2.Client if kind == "sync" else httpx2.AsyncClient
    return client_class(transport=SanitizingTransport())


def _final(kind: str, sdks: tuple[Any, Any], open_stream: Callable[[Any], Any], final: str) -> Any:
    """What the stream ``open_stream(client)`` opens on the kind's SDK client (``sdks``: the sync and the async
    class, made with the transport) gives from its method ``final``, or the error the SDK raised."""

    def sync() -> Any:
        with open_stream(sdks[0]) as stream:
            return getattr(stream, final)()

    async def asynchronous() -> Any:
        async with open_stream(sdks[1]) as stream:
            return await getattr(stream, final)()

    try:
        return sync() if kind == "sync" else asyncio.run(asynchronous())
    except Exception as exc:
        return exc


def claude_final(emu: Emulator, kind: str, profile: str, **options: Any) -> Any:
    """The anthropic SDK's final message (or the error it raised) through the transport."""
    headers = {"x-emulator-profile": profile, **options.pop("headers", {})}
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": MESSAGES, "extra_headers": headers}
    setup = {"base_url": emu.base_url.removesuffix("/v1"), "api_key": "k", "http_client": _http(kind), **options}
    return _final(kind, (anthropic.Anthropic, anthropic.AsyncAnthropic),
                  lambda sdk: sdk(**setup).messages.stream(**request), "get_final_message")


def gpt_final(emu: Emulator, kind: str, profile: str, **options: Any) -> Any:
    """The openai SDK's ``responses.stream()`` final response (or the error it raised) through the transport."""
    headers = {"x-emulator-profile": profile, **options.pop("headers", {})}
    request = {"model": "gpt-5", "input": "Weather in Paris?", "extra_headers": headers}
    setup = {"base_url": emu.base_url, "api_key": "k", "http_client": _http(kind), **options}
    return _final(kind, (openai.OpenAI, openai.AsyncOpenAI),
                  lambda sdk: sdk(**setup).responses.stream(**request), "get_final_response")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("profile", ["seed-bug", "late-block-id"])
def test_anthropic_sdk_gets_one_identified_tool_use_through_the_transport(emu: Emulator, kind: str,
                                                                          profile: str) -> None:
    message = claude_final(emu, kind, profile)
    (block,) = message.content
    assert block.id.startswith("toolu_")
    assert (block.name, block.input) == ("get_weather", {"city": "Paris"})


# each API's final value through the transport, the id of its tool call, and how that id begins
CALLS: dict[str, tuple[Callable[..., Any], Callable[[Any], str], str]] = {
    "messages": (claude_final, lambda message: message.content[0].id, "toolu_"),
    "responses": (gpt_final, lambda response: response.output[-1].call_id, "call_emu0_"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("api", sorted(CALLS))
def test_the_sdk_retries_a_never_identified_call_then_succeeds_after_two_requests(
    emu: Emulator, kind: str, api: str
) -> None:
    final, call_id, prefix = CALLS[api]
    key = f"{api}-never-{kind}"
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean-tool", "x-emulator-key": key}
    result = final(emu, kind, "never-identified", headers=headers)
    assert not isinstance(result, BaseException), result
    assert call_id(result).startswith(prefix)
    assert emu.state.attempts[key] == 2


@pytest.mark.parametrize("kind", KINDS)
def test_anthropic_sdk_raises_a_never_identified_tool_use_after_one_request_without_retries(
    emu: Emulator, kind: str
) -> None:
    before = len(emu.state.requests)
    error = claude_final(emu, kind, "never-identified", max_retries=0)
    assert isinstance(error, anthropic.APIStatusError)
    assert "MALFORMED_TOOL_CALL" in str(error)
    assert len(emu.state.requests) == before + 1


@pytest.mark.parametrize("kind", KINDS)
def test_anthropic_sdk_raises_on_a_cut_messages_stream(emu: Emulator, kind: str) -> None:
    error = claude_final(emu, kind, "drop-mid-stream", max_retries=0)
    assert isinstance(error, anthropic.APIError)


def test_anthropic_sdk_reads_clean_and_trailing_done_streams_as_without_the_transport(emu: Emulator) -> None:
    base_url = emu.base_url.removesuffix("/v1")
    plain = anthropic.Anthropic(base_url=base_url, api_key="k")
    for profile in ("clean", "thinking-tool", "trailing-done", "cut-after-stop"):
        headers = {"x-emulator-profile": profile}
        with plain.messages.stream(model="claude-sonnet-4-5", max_tokens=9, messages=MESSAGES,
                                   extra_headers=headers) as stream:
            want = stream.get_final_message().model_dump()
        got = claude_final(emu, "sync", profile).model_dump()
        assert got["id"] != want["id"]  # each request is a new message (tool ids end as its id); the rest is equal
        assert json.dumps(got).replace(got["id"], "*").replace(got["id"][-12:], "*") == json.dumps(want).replace(
            want["id"], "*").replace(want["id"][-12:], "*")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("profile", ["rotated-ids", "late-id", "seed-bug"])
def test_openai_responses_stream_reads_repaired_identity_through_the_transport(emu: Emulator, kind: str,
                                                                              profile: str) -> None:
    response = gpt_final(emu, kind, profile)
    assert not isinstance(response, BaseException), response
    call = response.output[-1]
    assert call.call_id.startswith("call_emu0_")
    assert (call.name, call.arguments) == ("get_weather", '{"city": "Paris"}')


@pytest.mark.parametrize("kind", KINDS)
def test_openai_responses_never_identified_raises_after_one_request_without_retries(emu: Emulator, kind: str) -> None:
    before = len(emu.state.requests)
    error = gpt_final(emu, kind, "never-identified", max_retries=0)
    assert isinstance(error, openai.APIStatusError)
    assert error.code == "MALFORMED_TOOL_CALL"
    assert len(emu.state.requests) == before + 1


@pytest.mark.parametrize("kind", KINDS)
def test_openai_responses_cut_stream_raises_api_error(emu: Emulator, kind: str) -> None:
    error = gpt_final(emu, kind, "drop-mid-stream", max_retries=0)
    assert isinstance(error, openai.APIError)


# -- the same through llm-stream proxy (the transport under it)


@pytest.fixture(scope="module")
def proxy_url(emu: Emulator) -> Iterator[str]:
    from pipeline.proxy import Proxy

    with Proxy(emu.base_url, forward_headers="x-emulator-*") as proxy:  # the profile header is not forwarded by default
        yield proxy.base_url


def test_anthropic_sdk_through_the_proxy_gets_one_tool_use_and_raises_the_faults(proxy_url: str) -> None:
    client = anthropic.Anthropic(base_url=proxy_url.removesuffix("/v1"), api_key="k", max_retries=0)

    def final(profile: str) -> Any:
        headers = {"x-emulator-profile": profile}
        with client.messages.stream(model="m", max_tokens=9, messages=MESSAGES, extra_headers=headers) as stream:
            return stream.get_final_message()

    (block,) = final("seed-bug").content
    assert block.id.startswith("toolu_")
    assert block.input == {"city": "Paris"}
    with pytest.raises(anthropic.APIStatusError, match="MALFORMED_TOOL_CALL"):
        final("never-identified")
    with pytest.raises(anthropic.APIError):
        final("drop-mid-stream")


def test_openai_responses_through_the_proxy_reads_rotated_ids_and_raises_the_faults(proxy_url: str) -> None:
    client = openai.OpenAI(base_url=proxy_url, api_key="k", max_retries=0)

    def final(profile: str) -> Any:
        with client.responses.stream(model="m", input="hi", extra_headers={"x-emulator-profile": profile}) as stream:
            return stream.get_final_response()

    response = final("rotated-ids")
    assert response.output_text == "Hello from the emulator."
    assert response.output[-1].call_id.startswith("call_emu0_")
    with pytest.raises(openai.APIStatusError, match="MALFORMED_TOOL_CALL"):
        final("never-identified")
    with pytest.raises(openai.APIError):
        final("drop-mid-stream")


def test_through_the_proxy_a_never_identified_call_then_a_good_stream_takes_exactly_two_requests(
    emu: Emulator, proxy_url: str
) -> None:
    claude = anthropic.Anthropic(base_url=proxy_url.removesuffix("/v1"), api_key="k")  # the SDK's default retries
    headers = {"x-emulator-profile": "never-identified", "x-emulator-fail-first": "1", "x-emulator-then": "clean-tool",
               "x-emulator-key": "proxy-messages-never"}
    with claude.messages.stream(model="m", max_tokens=9, messages=MESSAGES, extra_headers=headers) as stream:
        assert stream.get_final_message().content[0].id.startswith("toolu_")
    assert emu.state.attempts["proxy-messages-never"] == 2
    gpt = openai.OpenAI(base_url=proxy_url, api_key="k")
    headers = {**headers, "x-emulator-key": "proxy-responses-never"}
    with gpt.responses.stream(model="m", input="hi", extra_headers=headers) as stream:
        assert stream.get_final_response().output[-1].call_id.startswith("call_emu0_")
    assert emu.state.attempts["proxy-responses-never"] == 2
