"""The gateway emulator's stream profiles over real loopback HTTP: each ends as specified, every chunk is a realistic
OpenAI envelope, and each deviation or fault is on the wire exactly as its profile describes."""

from __future__ import annotations

import json
import time

import httpx
import httpx_sse
import pytest
from emulator_helpers import (
    CLEAN,
    REAL,
    assembled_calls,
    chunks,
    client,
    data_fields,
    finish_reasons,
    post,
    request_body,
    text_of,
    tool_deltas,
)

from pipeline.emulator import Emulator, EmulatorConfig
from pipeline.emulator._stream_profiles import CLEAN_TEXT


@pytest.fixture(scope="module")
def emulator_config() -> EmulatorConfig:
    return EmulatorConfig(replay_dirs=[REAL] if REAL.is_dir() else [])


# --------------------------------------------------------------------------------------------------- streams

ENDINGS = [
    ("clean", True, ["stop"]),
    ("clean-tool", True, ["tool_calls"]),
    ("seed-bug", True, ["tool_calls"]),
    ("late-id", True, ["tool_calls"]),
    ("never-identified", True, ["tool_calls"]),
    ("never-identified-name", True, ["tool_calls"]),
    ("parallel", True, ["tool_calls"]),
    ("ollama-parallel", True, ["tool_calls"]),
    ("usage-trailer", True, ["stop"]),
    ("crlf", True, ["stop"]),
    ("keepalive", True, ["stop"]),
    ("bom", True, ["stop"]),
    ("id-after-sse-id", True, ["stop"]),
    ("malformed-json", True, ["stop"]),
    ("error-midstream", True, []),
    ("event-error", False, []),
    ("no-done", False, ["stop"]),
    ("no-done-no-finish", False, []),
    ("empty-response", True, ["stop"]),
]


@pytest.mark.parametrize(("profile", "done", "finishes"), ENDINGS)
def test_stream_profiles_end_as_specified(http: httpx.Client, profile: str, done: bool, finishes: list[str]) -> None:
    response = post(http, profile)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "content-length" not in response.headers
    assert (data_fields(response.content)[-1] == "[DONE]") is done
    assert finish_reasons(response.content) == finishes


@pytest.mark.parametrize("profile", [p for p, _, _ in ENDINGS])
def test_every_chunk_is_a_realistic_openai_envelope(http: httpx.Client, profile: str) -> None:
    for chunk in chunks(post(http, profile, include_usage=True).content):
        assert set(chunk) >= {"id", "object", "created", "model", "choices"}
        assert chunk["model"] == "gpt-4o"
        assert chunk["id"].startswith("chatcmpl-")
        for choice in chunk["choices"]:
            assert choice["index"] == 0
            assert "delta" in choice
            assert choice["logprobs"] is None
            assert "finish_reason" in choice


def test_clean_streams_the_text_in_several_deltas(http: httpx.Client) -> None:
    body = post(http, "clean").content
    assert text_of(body) == "Hello from the emulator."
    assert len([c for c in chunks(body) if c["choices"] and c["choices"][0]["delta"].get("content")]) > 2


def test_usage_trailer_follows_the_finish_when_include_usage_is_true(http: httpx.Client) -> None:
    with_usage = chunks(post(http, "clean", include_usage=True).content)
    assert with_usage[-1]["choices"] == []
    assert with_usage[-1]["usage"]["total_tokens"] == with_usage[-1]["usage"]["prompt_tokens"] + len(CLEAN_TEXT)
    assert all("usage" not in c for c in chunks(post(http, "clean").content))


def test_usage_trailer_profile_sends_usage_even_when_not_asked(http: httpx.Client) -> None:
    trailer = chunks(post(http, "usage-trailer").content)[-1]
    assert trailer["choices"] == []
    assert trailer["usage"]["completion_tokens"] == len(CLEAN_TEXT)


def test_clean_tool_fragments_one_get_weather_call(http: httpx.Client) -> None:
    body = post(http, "clean-tool").content
    calls = assembled_calls(body)
    assert list(calls) == [0]
    call_id, name, arguments = calls[0]
    assert call_id.startswith("call_")
    assert (name, json.loads(arguments)) == ("get_weather", {"city": "Paris"})
    assert len(tool_deltas(body)) > 3


def test_seed_bug_repeats_id_and_name_as_empty_and_null_on_continuations(http: httpx.Client) -> None:
    body = post(http, "seed-bug").content
    assert b'"id":""' in body
    assert b'"name":""' in body
    assert b'"id":null' in body
    assert b'"name":null' in body
    continuations = [tc for tc in tool_deltas(body) if not tc.get("id")]
    assert {tc["index"] for tc in continuations} == {0, 1}
    assert {tc["id"] for tc in continuations if tc["index"] == 0} == {"", None}
    assert {tc["id"] for tc in continuations if tc["index"] == 1} == {None}
    calls = assembled_calls(body)
    assert [json.loads(calls[i][2]) for i in (0, 1)] == [{"city": "Paris"}, {"city": "Berlin"}]
    assert all(call_id and name == "get_weather" for call_id, name, _ in calls.values())


def test_late_id_arrives_in_the_second_tool_delta(http: httpx.Client) -> None:
    first, second, *_ = tool_deltas(post(http, "late-id").content)
    assert "id" not in first
    assert first["function"]["name"] == "get_weather"
    assert second["id"].startswith("call_")


@pytest.mark.parametrize(("profile", "missing"), [("never-identified", "id"), ("never-identified-name", "name")])
def test_never_identified_calls_never_carry_an_id_or_a_name(http: httpx.Client, profile: str, missing: str) -> None:
    call_id, name, arguments = assembled_calls(post(http, profile).content)[0]
    assert {"id": call_id, "name": name}[missing] == ""
    assert json.loads(arguments) == {"city": "Paris"}


def test_parallel_interleaves_two_calls(http: httpx.Client) -> None:
    body = post(http, "parallel").content
    indices = [tc["index"] for tc in tool_deltas(body)]
    assert indices != sorted(indices)
    calls = assembled_calls(body)
    assert calls[0][1:] == ("get_weather", '{"city": "Paris"}')
    assert calls[1][1:] == ("get_time", '{"timezone": "Europe/Paris"}')
    assert calls[0][0] != calls[1][0]


def test_ollama_parallel_sends_two_whole_calls_both_at_index_0(http: httpx.Client) -> None:
    deltas = tool_deltas(post(http, "ollama-parallel").content)
    assert [tc["index"] for tc in deltas] == [0, 0]
    assert len({tc["id"] for tc in deltas}) == 2
    arguments = [json.loads(tc["function"]["arguments"]) for tc in deltas]
    assert arguments == [{"city": "Paris"}, {"timezone": "Europe/Paris"}]


def test_crlf_uses_crlf_line_endings_only(http: httpx.Client) -> None:
    body = post(http, "crlf").content
    assert b"\r\n\r\n" in body
    assert b"\n" not in body.replace(b"\r\n", b"")
    assert text_of(body) == CLEAN


def test_keepalive_sends_comments_before_and_between_events(http: httpx.Client) -> None:
    body = post(http, "keepalive").content
    assert body.startswith(b": OPENROUTER PROCESSING\n\n")
    assert body.count(b": keepalive\n\n") == len(data_fields(body)) - 1
    assert text_of(body) == CLEAN


def test_bom_precedes_the_first_event(http: httpx.Client) -> None:
    body = post(http, "bom").content
    assert body.startswith(b"\xef\xbb\xbfdata: {")
    assert text_of(body) == CLEAN


def test_error_midstream_sends_an_in_band_error_then_done(http: httpx.Client) -> None:
    fields = data_fields(post(http, "error-midstream").content)
    error = json.loads(fields[-2])
    assert error == {"error": {"message": "upstream overloaded", "type": "server_error"}}
    assert fields[-1] == "[DONE]"
    assert text_of(post(http, "error-midstream").content)


def test_event_error_is_groq_style_without_done(http: httpx.Client) -> None:
    body = post(http, "event-error").content
    last_event = body.decode().strip().split("\n\n")[-1]
    event_line, data_line = last_event.split("\n")
    assert event_line == "event: error"
    assert json.loads(data_line.removeprefix("data: "))["error"]["status_code"] == 400
    assert b"[DONE]" not in body


def test_malformed_json_contains_an_unparsable_data_event(http: httpx.Client) -> None:
    fields = data_fields(post(http, "malformed-json").content)
    assert any(f.startswith("{bad json") for f in fields)


def test_no_done_profiles_end_without_done(http: httpx.Client) -> None:
    assert b"[DONE]" not in post(http, "no-done").content
    body = post(http, "no-done-no-finish").content
    assert b"[DONE]" not in body
    assert text_of(body) == CLEAN


def test_empty_response_is_a_role_delta_and_a_stop(http: httpx.Client) -> None:
    deltas = [c["choices"][0]["delta"] for c in chunks(post(http, "empty-response").content)]
    assert deltas == [{"role": "assistant", "content": "", "refusal": None}, {}]


def test_id_after_sse_id_makes_httpx_sse_yield_empty_events(emu: Emulator, http: httpx.Client) -> None:
    body = post(http, "id-after-sse-id").content
    assert body.startswith(b"id: 1\ndata: {")
    assert b"\n\n\nid: 2\n" in body
    headers = {"x-emulator-profile": "id-after-sse-id"}
    with httpx_sse.connect_sse(http, "POST", "/chat/completions", json=request_body(), headers=headers) as source:
        events = list(source.iter_sse())
    assert any(event.data == "" and event.id for event in events)


def test_slow_drip_paces_events(http: httpx.Client) -> None:
    started = time.monotonic()
    body = post(http, "slow-drip", {"x-emulator-drip-ms": "40"}).content
    events = len(data_fields(body))
    assert time.monotonic() - started >= 0.04 * (events - 1) * 0.9
    assert text_of(body) == CLEAN


def test_drop_mid_stream_cuts_the_transport_without_done(http: httpx.Client) -> None:
    pieces: list[bytes] = []
    headers = {"x-emulator-profile": "drop-mid-stream"}
    with (
        http.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        pieces.extend(response.iter_bytes())  # keeps what arrived before the cut
    received = b"".join(pieces)
    assert data_fields(received)
    assert b"[DONE]" not in received


def test_stall_sends_a_few_events_then_nothing(emu: Emulator) -> None:
    pieces: list[bytes] = []
    headers = {"x-emulator-profile": "stall"}
    with (
        client(emu.base_url, httpx.Timeout(5.0, read=0.5)) as stalled,
        stalled.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response,
        pytest.raises(httpx.ReadTimeout),
    ):
        pieces.extend(response.iter_bytes())
    assert len(data_fields(b"".join(pieces))) == 3


def test_stall_resumes_after_stall_s(http: httpx.Client) -> None:
    body = post(http, "stall", {"x-emulator-stall-s": "0.05"}).content
    assert data_fields(body)[-1] == "[DONE]"
    assert text_of(body) == CLEAN
