"""The gateway emulator, over real loopback HTTP: every profile answers as specified, retries and replays work,
disconnects are observed, and the official openai SDK consumes the well-formed profiles."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import httpx_sse
import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from pipeline._emulator import PROFILES, Emulator, EmulatorConfig, create_app
from pipeline._emulator_scripts import CLEAN_TEXT

Json = dict[str, Any]

REAL = Path("/work/shared/fixtures/sse/real")
QWEN_EMPTY_ID = REAL / "14-qwen3max-tool-call-empty-id.sse"
CLEAN = "".join(CLEAN_TEXT)
TIMEOUT = httpx.Timeout(5.0)


def client(base_url: str = "", timeout: httpx.Timeout = TIMEOUT) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=timeout)


@pytest.fixture(scope="module")
def emu() -> Iterator[Emulator]:
    config = EmulatorConfig(replay_dirs=[REAL] if REAL.is_dir() else [])
    with Emulator(config=config) as emulator:
        yield emulator


@pytest.fixture(scope="module")
def http(emu: Emulator) -> Iterator[httpx.Client]:
    with client(emu.base_url) as http_client:
        yield http_client


# --------------------------------------------------------------------------------------------------- helpers


def request_body(*, include_usage: bool = False, stream: bool = True, model: str = "gpt-4o") -> Json:
    body: Json = {"model": model, "stream": stream, "messages": [{"role": "user", "content": "Weather in Paris?"}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def post(
    http: httpx.Client, profile: str | None, headers: Mapping[str, str] | None = None, *, include_usage: bool = False
) -> httpx.Response:
    sent = dict(headers or {})
    if profile is not None:
        sent["x-emulator-profile"] = profile
    return http.post("/chat/completions", json=request_body(include_usage=include_usage), headers=sent)


def data_fields(body: bytes) -> list[str]:
    """The ``data`` of each SSE event (LF or CRLF, BOM and comments ignored)."""
    text = body.decode("utf-8-sig").replace("\r\n", "\n")
    fields = []
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            fields.append("\n".join(data))
    return fields


def chunks(body: bytes) -> list[Json]:
    """Every well-formed ``chat.completion.chunk`` payload."""
    out = []
    for data in data_fields(body):
        try:
            payload = json.loads(data)
        except ValueError:
            continue
        if isinstance(payload, dict) and payload.get("object") == "chat.completion.chunk":
            out.append(payload)
    return out


def tool_deltas(body: bytes) -> list[Json]:
    return [tc for c in chunks(body) for ch in c["choices"] for tc in ch["delta"].get("tool_calls") or []]


def text_of(body: bytes) -> str:
    return "".join(ch["delta"].get("content") or "" for c in chunks(body) for ch in c["choices"])


def finish_reasons(body: bytes) -> list[str]:
    return [ch["finish_reason"] for c in chunks(body) for ch in c["choices"] if ch.get("finish_reason")]


def assembled_calls(body: bytes) -> dict[int, tuple[str, str, str]]:
    """index -> (id, name, arguments): the first non-empty id and name win, arguments are concatenated."""
    calls: dict[int, list[str]] = {}
    for tc in tool_deltas(body):
        call = calls.setdefault(tc["index"], ["", "", ""])
        function = tc.get("function") or {}
        call[0] = call[0] or tc.get("id") or ""
        call[1] = call[1] or function.get("name") or ""
        call[2] += function.get("arguments") or ""
    return {i: (c[0], c[1], c[2]) for i, c in calls.items()}


# --------------------------------------------------------------------------------------------------- routing


def test_models_lists_one_model_per_profile(http: httpx.Client) -> None:
    response = http.get("/models")
    assert response.status_code == 200
    assert [m["id"] for m in response.json()["data"]] == [f"emulator/{p}" for p in PROFILES]


def test_unknown_profile_header_is_a_404_json_error(http: httpx.Client) -> None:
    response = post(http, "no-such-profile")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert "no-such-profile" in response.json()["error"]["message"]


def test_unknown_emulator_model_is_a_404(http: httpx.Client) -> None:
    response = http.post("/chat/completions", json=request_body(model="emulator/no-such-profile"))
    assert response.status_code == 404


@pytest.mark.parametrize(
    ("model", "expected_finish"),
    [("emulator/clean-tool", "tool_calls"), ("clean-tool", "tool_calls"), ("gpt-4o", "stop")],
)
def test_profile_comes_from_the_model_name_and_defaults_to_clean(
    http: httpx.Client, model: str, expected_finish: str
) -> None:
    response = http.post("/chat/completions", json=request_body(model=model))
    assert finish_reasons(response.content) == [expected_finish]


def test_chat_completions_is_also_served_without_the_v1_prefix(emu: Emulator) -> None:
    with client() as plain:
        response = plain.post(f"{emu.url}/chat/completions", json=request_body())
    assert text_of(response.content) == CLEAN


def test_requests_are_recorded_without_credentials(emu: Emulator, http: httpx.Client) -> None:
    marker = uuid.uuid4().hex
    body = request_body()
    body["user"] = marker
    http.post("/chat/completions", json=body, headers={"authorization": "Bearer sk-secret", "x-trace": marker})
    recorded = next(r for r in reversed(emu.state.requests) if r.headers.get("x-trace") == marker)
    assert recorded.profile == "clean"
    assert recorded.body == body
    assert "authorization" not in recorded.headers


# --------------------------------------------------------------------------------------------------- HTTP errors


@pytest.mark.parametrize(
    ("profile", "status", "needle"),
    [
        ("rate-limit", 429, "rate_limit_exceeded"),
        ("server-error", 500, "server_error"),
        ("unavailable", 503, "server_error"),
        ("auth", 401, "invalid_api_key"),
        ("quota", 429, '"code":"insufficient_quota"'),
        ("context", 400, "maximum context length is 8192 tokens"),
    ],
)
def test_error_profiles_answer_with_an_openai_json_error(
    http: httpx.Client, profile: str, status: int, needle: str
) -> None:
    response = post(http, profile)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    assert set(response.json()["error"]) >= {"message", "type"}
    assert needle in response.text


def test_rate_limit_sends_retry_after_default_2_or_configured(http: httpx.Client) -> None:
    assert post(http, "rate-limit").headers["retry-after"] == "2"
    assert post(http, "rate-limit", {"x-emulator-retry-after": "7"}).headers["retry-after"] == "7"
    assert "retry-after" not in post(http, "quota").headers


def test_html_200_is_an_html_error_page(http: httpx.Client) -> None:
    response = post(http, "html-200")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert response.text.startswith("<html>")
    assert "data:" not in response.text


def test_empty_200_is_an_event_stream_with_no_body(http: httpx.Client) -> None:
    response = post(http, "empty-200")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == b""


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


# --------------------------------------------------------------------------------------------------- retries, replay


def test_fail_first_n_then_succeeds(emu: Emulator, http: httpx.Client) -> None:
    key = f"retry-{uuid.uuid4().hex}"
    headers = {"x-emulator-fail-first": "2", "x-emulator-key": key, "x-emulator-then": "clean-tool"}
    responses = [post(http, "rate-limit", headers) for _ in range(4)]
    assert [r.status_code for r in responses] == [429, 429, 200, 200]
    assert finish_reasons(responses[2].content) == ["tool_calls"]
    assert [r.profile for r in emu.state.requests[-4:]] == ["rate-limit", "rate-limit", "clean-tool", "clean-tool"]
    assert emu.state.attempts[key] == 4


def test_fail_first_via_query_string_defaults_to_clean_and_keys_by_profile(http: httpx.Client) -> None:
    url = "/chat/completions?profile=unavailable&fail_first=1"
    statuses = [http.post(url, json=request_body()).status_code for _ in range(2)]
    assert statuses in ([503, 200], [200, 200])  # the default key "unavailable" may have been used before
    assert text_of(http.post(url, json=request_body()).content) == CLEAN


@pytest.mark.skipif(not QWEN_EMPTY_ID.is_file(), reason="shared fixtures not available")
@pytest.mark.parametrize("chunk_bytes", [None, "97"])
def test_replay_serves_a_recorded_file_byte_for_byte(http: httpx.Client, chunk_bytes: str | None) -> None:
    headers = {"x-emulator-file": str(QWEN_EMPTY_ID)}
    if chunk_bytes:
        headers |= {"x-emulator-chunk-bytes": chunk_bytes, "x-emulator-drip-ms": "1"}
    response = post(http, "replay", headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.content == QWEN_EMPTY_ID.read_bytes()


def test_replay_refuses_files_outside_the_replay_dirs(http: httpx.Client, tmp_path: Path) -> None:
    outside = tmp_path / "outside.sse"
    outside.write_bytes(b"data: [DONE]\n\n")
    assert post(http, "replay", {"x-emulator-file": str(outside)}).status_code == 403
    assert post(http, "replay").status_code == 400


@pytest.mark.skipif(not REAL.is_dir(), reason="shared fixtures not available")
def test_replay_of_a_missing_file_is_a_404(http: httpx.Client) -> None:
    assert post(http, "replay", {"x-emulator-file": str(REAL / "missing.sse")}).status_code == 404


# --------------------------------------------------------------------------------------------------- lifecycle


def test_a_client_leaving_slow_drip_is_counted_as_a_disconnect() -> None:
    with Emulator() as emu, client(emu.base_url) as http:
        headers = {"x-emulator-profile": "slow-drip", "x-emulator-drip-ms": "100"}
        with http.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response:
            assert next(response.iter_bytes()).startswith(b"data: ")
        assert emu.state.wait_for_disconnects(1, timeout=2.0)
        assert emu.state.disconnects == 1


def test_a_completed_stream_is_not_a_disconnect() -> None:
    with Emulator() as emu, client(emu.base_url) as http:
        for _ in range(3):
            http.post("/chat/completions", json=request_body())
        time.sleep(0.05)
        assert emu.state.disconnects == 0
        assert len(emu.state.requests) == 3


def test_stop_is_quick_even_with_a_stalled_stream_open() -> None:
    emu = Emulator().start()
    assert emu.base_url == f"http://127.0.0.1:{emu.port}/v1"
    with client(emu.base_url) as http:
        headers = {"x-emulator-profile": "stall"}
        with http.stream("POST", "/chat/completions", json=request_body(), headers=headers) as response:
            pieces = response.iter_bytes()
            next(pieces)
            started = time.monotonic()
            emu.stop()
            assert time.monotonic() - started < 1.0
            with pytest.raises(httpx.RemoteProtocolError):
                list(pieces)
    assert not emu.running


def test_an_emulator_can_be_started_again_after_stop() -> None:
    emu = Emulator()
    for _ in range(2):
        with emu, client(emu.base_url) as http:
            assert post(http, "stall", {"x-emulator-stall-s": "0.01"}).status_code == 200
    assert [r.profile for r in emu.state.requests] == ["stall", "stall"]


async def test_async_context_manager_serves_from_the_background_thread() -> None:
    async with Emulator() as emu, httpx.AsyncClient(base_url=emu.base_url, timeout=TIMEOUT) as ac:
        response = await ac.post("/chat/completions", json=request_body())
        assert text_of(response.content) == CLEAN
    assert not emu.running


def test_create_app_is_a_plain_asgi_app() -> None:
    app = create_app()
    assert app.state.emulator_state.requests == []


# --------------------------------------------------------------------------------------------------- openai SDK

SDK_CASES = [
    ("clean", CLEAN, []),
    ("clean-tool", None, [("get_weather", '{"city": "Paris"}')]),
    ("parallel", None, [("get_weather", '{"city": "Paris"}'), ("get_time", '{"timezone": "Europe/Paris"}')]),
    ("usage-trailer", CLEAN, []),
    ("keepalive", CLEAN, []),
    ("crlf", CLEAN, []),
]


@pytest.fixture(scope="module")
def sdk(emu: Emulator) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=emu.base_url, api_key="test", timeout=5.0, max_retries=0) as sdk_client:
        yield sdk_client


@pytest.mark.parametrize(("profile", "text", "calls"), SDK_CASES)
def test_openai_sdk_consumes_the_stream(
    sdk: openai.OpenAI, profile: str, text: str | None, calls: list[tuple[str, str]]
) -> None:
    state: ChatCompletionStreamState[None] = ChatCompletionStreamState()
    stream = sdk.chat.completions.create(
        model=f"emulator/{profile}",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    with stream:
        for chunk in stream:
            state.handle_chunk(chunk)
    completion = state.get_final_completion()
    message = completion.choices[0].message
    assert message.content == text
    assert [(c.function.name, c.function.arguments) for c in message.tool_calls or []] == calls
    assert all(c.id.startswith("call_") for c in message.tool_calls or [])
    assert completion.choices[0].finish_reason == ("tool_calls" if calls else "stop")
    assert completion.usage is not None
    assert completion.usage.total_tokens > 0


def test_openai_sdk_non_streaming_request_gets_the_assembled_completion(sdk: openai.OpenAI) -> None:
    completion = sdk.chat.completions.create(
        model="emulator/seed-bug", messages=[{"role": "user", "content": "Weather in Paris and Berlin?"}]
    )
    calls = completion.choices[0].message.tool_calls or []
    assert [(c.function.name, c.function.arguments) for c in calls] == [  # type: ignore[union-attr]
        ("get_weather", '{"city": "Paris"}'),
        ("get_weather", '{"city": "Berlin"}'),
    ]
    assert completion.usage is not None
