"""Issue 20 on chat completions: through ``SanitizingTransport`` the unmodified openai SDK (httpx2 and httpx, sync and
async) gets exactly what it gets without it where the stream is sound ("keep"), a repaired stream where it is not,
and its own retry loop, timeout and errors (one retry layer)."""

from __future__ import annotations

import time
from typing import Any

import openai
import pytest
from faithful import KINDS, Kind, chunks, final, sdk
from gateway import Gateway, http_json, sse

from operators import RetryPolicy
from pipeline import SanitizingTransport

pytestmark = pytest.mark.server  # tests/tiers.py

BASE = {"id": "chatcmpl-keep", "object": "chat.completion.chunk", "created": 1727346170, "model": "gpt-4o-2024-08-06"}


def _event(*choices: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**BASE, **extra, "choices": list(choices)}


def _choice(delta: dict[str, Any], index: int = 0, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish, **extra}


def _text_stream(*pieces: str, finish: str = "stop", **extra: Any) -> list[Any]:
    return [
        _event(_choice({"role": "assistant", "content": "", "refusal": None}), **extra),
        *(_event(_choice({"content": p}), **extra) for p in pieces),
        _event(_choice({}, finish=finish), **extra),
        "[DONE]",
    ]


_LOGPROB = {"content": [{"token": "Hi", "logprob": -0.01, "bytes": [72, 105], "top_logprobs": []}], "refusal": None}
_USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 30,
    "total_tokens": 150,
    "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 12, "accepted_prediction_tokens": 0},
}

KEEP: dict[str, list[Any]] = {
    "logprobs": [
        _event(_choice({"role": "assistant", "content": ""}, logprobs={"content": [], "refusal": None})),
        _event(_choice({"content": "Hi"}, logprobs=_LOGPROB)),
        _event(_choice({}, finish="stop")),
        "[DONE]",
    ],
    "n=3": [
        *(_event(_choice({"role": "assistant", "content": ""}, i)) for i in range(3)),
        *(_event(_choice({"content": f"answer {i}"}, i)) for i in range(3)),
        *(_event(_choice({}, i, "stop")) for i in range(3)),
        "[DONE]",
    ],
    "refusal": [
        _event(_choice({"role": "assistant", "content": None, "refusal": ""})),
        _event(_choice({"refusal": "I can't help with that."})),
        _event(_choice({}, finish="stop")),
        "[DONE]",
    ],
    "reasoning": [
        _event(_choice({"role": "assistant", "content": None, "reasoning_content": ""})),
        _event(_choice({"reasoning_content": "Think first."})),
        _event(_choice({"content": "42"})),
        _event(_choice({}, finish="stop")),
        _event(usage=_USAGE),
        "[DONE]",
    ],
    "empty": _text_stream(),
    "content-filter": _text_stream("Partial", finish="content_filter"),
    "length": _text_stream("Cut short", finish="length"),
    "identity": _text_stream("Hello", system_fingerprint="fp_b40fb1c6fb", service_tier="default", obfuscation="x1"),
    "usage-trailer": [
        *_text_stream("Hello")[:-1],
        {**BASE, "choices": [], "usage": _USAGE},
        "[DONE]",
    ],
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", sorted(KEEP))
def test_what_the_sdk_reads_right_arrives_as_sent(case: str, kind: Kind) -> None:
    with Gateway(sse(KEEP[case])) as gateway:
        plain = chunks(kind, gateway.base_url, transport=False)
        through = chunks(kind, gateway.base_url, transport=True)
        assert through == plain
        assert final(kind, gateway.base_url, transport=True) == final(kind, gateway.base_url, transport=False)


def test_a_content_filter_is_the_sdks_own_error_and_a_refusal_its_own_field() -> None:
    with Gateway(sse(KEEP["content-filter"])) as gateway:
        assert final("httpx2", gateway.base_url, transport=True)[0] == "ContentFilterFinishReasonError"
    with Gateway(sse(KEEP["refusal"])) as gateway:
        message = final("httpx2", gateway.base_url, transport=True)["choices"][0]["message"]
        assert message["refusal"] == "I can't help with that."


# -- repairs -------------------------------------------------------------------------------------------------------

_CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
_NEVER = [
    _event(_choice({"role": "assistant", "content": None})),
    _event(_choice({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "get_weather",
                                                                                  "arguments": ""}}]})),
    _event(_choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]})),
    _event(_choice({}, finish="tool_calls")),
    "[DONE]",
]
_GOOD_CALL = [
    _event(_choice({"role": "assistant", "content": None})),
    _event(_choice({"tool_calls": [_CALL]})),
    _event(_choice({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Paris"}'}}]})),
    _event(_choice({}, finish="tool_calls")),
    "[DONE]",
]
_SEED = [
    _event(_choice({"role": "assistant", "content": None})),
    _event(_choice({"tool_calls": [_CALL]})),
    _event(_choice({"tool_calls": [{"index": 0, "id": "", "type": None,
                                    "function": {"name": "", "arguments": '{"ci'}}]})),
    _event(_choice({"tool_calls": [{"index": 0, "id": None, "type": None,
                                    "function": {"name": None, "arguments": 'ty": "Paris"}'}}]})),
    _event(_choice({}, finish="tool_calls")),
    "[DONE]",
]


def _calls(result: Any) -> list[tuple[str, str, str]]:
    message = result["choices"][0]["message"]
    return [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"] or ()]


@pytest.mark.parametrize("kind", KINDS)
def test_the_seeds_bug_is_repaired_for_the_sdk(kind: Kind) -> None:
    with Gateway(sse(_SEED)) as gateway:
        assert final(kind, gateway.base_url, transport=False)[0] == "AssertionError"  # the plain SDK fails
        assert _calls(final(kind, gateway.base_url, transport=True)) == [("call_1", "get_weather",
                                                                          '{"city": "Paris"}')]


@pytest.mark.parametrize("kind", KINDS)
def test_a_never_identified_call_then_a_good_stream_succeeds_after_exactly_two_upstream_requests(kind: Kind) -> None:
    with Gateway(sse(_NEVER), sse(_GOOD_CALL)) as gateway:
        result = final(kind, gateway.base_url, transport=True)
        assert _calls(result) == [("call_1", "get_weather", '{"city": "Paris"}')]
        assert gateway.count == 2


@pytest.mark.parametrize("kind", KINDS)
def test_a_never_identified_call_without_retries_raises_an_api_error_naming_the_code_after_one_request(
    kind: Kind,
) -> None:
    with Gateway(sse(_NEVER)) as gateway:
        error = final(kind, gateway.base_url, transport=True, max_retries=0)
        assert error[0] in ("APIStatusError", "InternalServerError")
        assert "MALFORMED_TOOL_CALL" in error[1]
        assert gateway.count == 1


@pytest.mark.parametrize("cut", ["close", "chunked"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_stream_after_text_is_an_api_error_not_a_clean_ending(kind: Kind, cut: Any) -> None:
    events = _text_stream("Hello", " there")[:-2]
    with Gateway(sse(events, cut=cut)) as gateway:
        error = final(kind, gateway.base_url, transport=True, max_retries=0)
        assert error[0] == "APIError"
        assert ("STREAM_CLOSED" if cut == "close" else "TRANSPORT: reading the upstream response failed") in error[1]


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_stream_before_any_text_is_an_error_the_sdk_retries(kind: Kind) -> None:
    events = _text_stream("Hello")[:1]
    with Gateway(sse(events, cut="chunked"), sse(_text_stream("Hello"))) as gateway:
        result = final(kind, gateway.base_url, transport=True)
        assert result["choices"][0]["message"]["content"] == "Hello"
        assert gateway.count == 2


# -- one retry layer -------------------------------------------------------------------------------------------------

_429 = http_json(429, {"error": {"message": "slow down", "type": "rate_limit_error"}}, {"retry-after-ms": "10"})
_500 = http_json(500, {"error": {"message": "boom", "type": "server_error"}}, {"retry-after-ms": "10"})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("response", "options", "requests"),
    [(_429, {}, 3), (_500, {"max_retries": 1}, 2), (_429, {"max_retries": 0}, 1)],
    ids=["429-defaults", "500-max-retries-1", "429-max-retries-0"],
)
def test_the_sdks_own_retries_are_the_only_ones(kind: Kind, response: bytes, options: dict[str, Any],
                                                 requests: int) -> None:
    with Gateway(response) as gateway:
        error = final(kind, gateway.base_url, transport=True, **options)
        assert error[0] in ("RateLimitError", "InternalServerError")
        assert gateway.count == requests


@pytest.mark.parametrize("kind", KINDS)
def test_the_sdks_timeout_bounds_the_call_on_a_429_asking_for_5_s(kind: Kind) -> None:
    slow = http_json(429, {"error": {"message": "slow down"}}, {"retry-after": "5"})
    with Gateway(slow) as gateway:
        started = time.monotonic()
        error = final(kind, gateway.base_url, transport=True, timeout=1.0, max_retries=0)
        assert error[0] == "RateLimitError"
        assert time.monotonic() - started < 4.0  # the 1 s timeout, not the 5 s the 429 asked for
        assert gateway.count == 1


def test_an_http_error_reaches_the_sdk_with_its_headers() -> None:
    response = http_json(429, {"error": {"message": "slow"}}, {"retry-after-ms": "10", "x-should-retry": "false"})
    with Gateway(response) as gateway:
        client = sdk("httpx2", gateway.base_url, transport=True)
        with pytest.raises(openai.RateLimitError) as raised:
            client.chat.completions.create(stream=True, model="m", messages=[{"role": "user", "content": "hi"}])
        assert raised.value.response.headers["retry-after-ms"] == "10"
        assert gateway.count == 1  # x-should-retry: false, as sent, so the SDK did not retry


# -- buffered and strict -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["httpx2", "httpx-async"])
def test_buffered_mode_leaves_retrying_to_the_sdk_too(kind: Kind) -> None:
    with Gateway(sse(_NEVER), sse(_GOOD_CALL)) as gateway:
        result = final(kind, gateway.base_url, transport=SanitizingTransport(mode="buffered"))
        assert _calls(result) == [("call_1", "get_weather", '{"city": "Paris"}')]
        assert gateway.count == 2
    with Gateway(_429) as gateway:
        assert final(kind, gateway.base_url, transport=SanitizingTransport(mode="buffered"))[0] == "RateLimitError"
        assert gateway.count == 3


@pytest.mark.parametrize(("case", "code"), [("empty", "EMPTY_RESPONSE"), ("refusal", "REFUSAL")])
def test_the_strict_outcome_policy_is_an_opt_in(case: str, code: str) -> None:
    with Gateway(sse(KEEP[case])) as gateway:
        assert isinstance(final("httpx2", gateway.base_url, transport=True, max_retries=0), dict)  # by default: kept
        error = final("httpx2", gateway.base_url, transport=SanitizingTransport(strict=True), max_retries=0)
        assert error[0] == "InternalServerError"
        assert code in error[1]
    with Gateway(sse(KEEP[case]), sse(_text_stream("ok"))) as gateway:
        result = final("httpx2", gateway.base_url, transport=SanitizingTransport(strict=True))
        assert result["choices"][0]["message"]["content"] == "ok"
        assert gateway.count == 2  # retryable by the library's classification: x-should-retry true


def test_opt_in_retries_wait_only_within_the_requests_own_timeout() -> None:
    slow = http_json(429, {"error": {"message": "slow down"}}, {"retry-after-ms": "700"})
    transport = SanitizingTransport(retry=RetryPolicy(max_retries=5))
    with Gateway(slow) as gateway:
        started = time.monotonic()
        error = final("httpx2", gateway.base_url, transport=transport, timeout=1.0, max_retries=0)
        assert error[0] == "RateLimitError"
        assert gateway.count == 2  # one wait of 0.7 s fits in the 1 s timeout, a second would not
        assert time.monotonic() - started < 3.0  # within the 1 s timeout (plus a loaded machine), not 5 x 0.7 s
