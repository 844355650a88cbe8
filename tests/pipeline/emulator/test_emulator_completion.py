"""``"stream": false`` requests: the emulator answers with the completion the pipeline itself assembles from the
profile's stream (pipeline.compose.collect + assemble), in OpenAI's non-streaming shape."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from emulator_helpers import CLEAN, QWEN_EMPTY_ID, REAL, Json, post

from operators import Code, FinishReason, ToolCallBlock, Usage
from pipeline.compose import AssistantMessage, assemble, collect
from pipeline.emulator import Emulator, EmulatorConfig, ScriptOptions, build_script
from pipeline.emulator._completion import completion_json

STREAM_PROFILES = [
    "clean",
    "clean-tool",
    "seed-bug",
    "late-id",
    "never-identified",
    "never-identified-name",
    "parallel",
    "ollama-parallel",
    "usage-trailer",
    "crlf",
    "keepalive",
    "bom",
    "slow-drip",
    "drop-mid-stream",
    "stall",
    "error-midstream",
    "event-error",
    "malformed-json",
    "no-done",
    "no-done-no-finish",
    "id-after-sse-id",
    "empty-response",
]
WIRE_FINISH = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


@pytest.fixture(scope="module")
def emulator_config() -> EmulatorConfig:
    return EmulatorConfig(replay_dirs=[REAL] if REAL.is_dir() else [])


def non_streaming(http: httpx.Client, profile: str, headers: dict[str, str] | None = None) -> Json:
    response = post(http, profile, headers, stream=False)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body: Json = response.json()
    assert body["object"] == "chat.completion"
    return body


def message(**fields: Any) -> AssistantMessage:
    values: dict[str, Any] = {
        "text": "",
        "reasoning": "",
        "tool_calls": (),
        "usage": None,
        "usage_total": None,
        "finish": FinishReason("stop"),
    }
    values.update(fields)
    return AssistantMessage(**values)


# --------------------------------------------------------------------------------------------------- over HTTP


@pytest.mark.parametrize("profile", STREAM_PROFILES)
def test_non_streaming_answer_is_what_the_pipeline_assembles_from_the_stream(http: httpx.Client, profile: str) -> None:
    streamed = assemble(collect(build_script(profile, ScriptOptions(include_usage=True)).body))
    answer = non_streaming(http, profile)
    choice = answer["choices"][0]
    calls = choice["message"].get("tool_calls", [])
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        (c.name, c.arguments) for c in streamed.tool_calls
    ]
    assert all(c["id"] and c["type"] == "function" for c in calls)
    assert (choice["message"]["content"] or "") == streamed.text
    assert choice["finish_reason"] == WIRE_FINISH.get(streamed.finish.kind)
    if streamed.finish.kind == "error":
        assert answer["error"]["code"] == streamed.finish.code
    else:
        assert "error" not in answer


def test_clean_gives_the_text_a_stop_and_the_usage(http: httpx.Client) -> None:
    answer = non_streaming(http, "clean")
    assert answer["id"].startswith("chatcmpl-emu")
    assert answer["model"] == "gpt-4o"
    assert answer["choices"] == [
        {
            "index": 0,
            "message": {"role": "assistant", "content": CLEAN, "refusal": None},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ]
    usage = answer["usage"]
    assert usage["completion_tokens"] == 5
    assert usage["total_tokens"] == usage["prompt_tokens"] + 5
    assert usage["prompt_tokens_details"] == {"cached_tokens": 0, "audio_tokens": 0}


def test_ollama_parallel_keeps_its_two_calls_at_one_index_apart(http: httpx.Client) -> None:
    body = non_streaming(http, "ollama-parallel")["choices"][0]["message"]
    assert body["content"] is None
    calls = body["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["get_weather", "get_time"]
    assert calls[0]["id"] != calls[1]["id"]


@pytest.mark.parametrize("profile", ["never-identified", "never-identified-name"])
def test_a_call_that_is_never_identified_is_not_in_the_answer_and_the_error_says_why(
    http: httpx.Client, profile: str
) -> None:
    answer = non_streaming(http, profile)
    choice = answer["choices"][0]
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] is None
    assert answer["error"]["code"] == Code.MALFORMED_TOOL_CALL
    assert answer["error"]["type"] == "server_error"
    assert "usage" in answer  # the usage came before the error finish


def test_a_malformed_event_ends_the_answer_with_what_was_decoded_before_it(http: httpx.Client) -> None:
    answer = non_streaming(http, "malformed-json")
    assert answer["choices"][0]["message"]["content"] == "Hello"
    assert answer["error"]["code"] == Code.MALFORMED_RESPONSE


@pytest.mark.parametrize(("profile", "status"), [("rate-limit", 429), ("auth", 401), ("context", 400)])
def test_error_profiles_send_the_same_http_error(http: httpx.Client, profile: str, status: int) -> None:
    response = post(http, profile, stream=False)
    assert response.status_code == status
    assert set(response.json()["error"]) >= {"message", "type"}


@pytest.mark.skipif(not QWEN_EMPTY_ID.is_file(), reason="shared fixtures not available")
def test_replay_is_served_as_recorded_even_without_stream(http: httpx.Client) -> None:
    response = post(http, "replay", {"x-emulator-file": str(QWEN_EMPTY_ID)}, stream=False)
    assert response.content == QWEN_EMPTY_ID.read_bytes()


def test_openai_sdk_non_streaming_request_gets_the_assembled_completion(emu: Emulator) -> None:
    with openai.OpenAI(base_url=emu.base_url, api_key="test", timeout=5.0, max_retries=0) as sdk:
        completion = sdk.chat.completions.create(
            model="emulator/seed-bug", messages=[{"role": "user", "content": "Weather in Paris and Berlin?"}]
        )
    calls = completion.choices[0].message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Berlin"}'),
    ]
    assert all(c.id for c in calls)
    assert completion.usage is not None


# --------------------------------------------------------------------------------------------------- the shape


def test_reasoning_and_cached_tokens_are_written_in_openais_shape() -> None:
    usage = Usage(input_tokens=7, output_tokens=4, total_tokens=13, cache_read_tokens=2, reasoning_tokens=3)
    answer = completion_json(message(text="Hi", reasoning="think", usage=usage), ScriptOptions(model="m"))
    assert answer["model"] == "m"
    assert answer["choices"][0]["message"]["reasoning_content"] == "think"
    assert answer["usage"] == {
        "prompt_tokens": 9,
        "completion_tokens": 4,
        "total_tokens": 13,
        "prompt_tokens_details": {"cached_tokens": 2, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 3, "audio_tokens": 0},
    }


def test_tool_calls_leave_the_content_null() -> None:
    call = ToolCallBlock("call_1", "get_weather", '{"city": "Paris"}')
    answer = completion_json(message(tool_calls=(call,), finish=FinishReason("tool-calls")), ScriptOptions())
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
    ]


@pytest.mark.parametrize(
    ("finish", "wire"),
    [
        (FinishReason("max-tokens"), "length"),
        (FinishReason.error(Code.CONTENT_FILTER, "filtered"), "content_filter"),
        (FinishReason.error(Code.REFUSAL, "I can't help with that."), "stop"),
    ],
)
def test_finishes_map_back_to_their_wire_finish_reason(finish: FinishReason, wire: str) -> None:
    answer = completion_json(message(finish=finish), ScriptOptions())
    assert answer["choices"][0]["finish_reason"] == wire
    assert "error" not in answer


def test_a_refusal_is_the_messages_refusal() -> None:
    answer = completion_json(message(finish=FinishReason.error(Code.REFUSAL, "No.")), ScriptOptions())
    assert answer["choices"][0]["message"] == {"role": "assistant", "content": None, "refusal": "No."}
