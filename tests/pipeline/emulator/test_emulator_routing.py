"""The gateway emulator's routing over real loopback HTTP: which profile answers, the HTTP error profiles, the
fail-first counters that make retries testable, and the replay of recorded files."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from emulator_helpers import CLEAN, QWEN_EMPTY_ID, REAL, client, finish_reasons, post, request_body, text_of

from pipeline.emulator import PROFILES, Emulator, EmulatorConfig

pytestmark = pytest.mark.server  # tests/tiers.py


@pytest.fixture(scope="module")
def emulator_config() -> EmulatorConfig:
    return EmulatorConfig(replay_dirs=[REAL] if REAL.is_dir() else [])


# --------------------------------------------------------------------------------------------------- routing


def test_models_lists_one_model_per_profile(http: httpx.Client) -> None:
    response = http.get("/models")
    assert response.status_code == 200
    chat = [m["id"] for m in response.json()["data"] if m["id"].count("/") == 1]
    assert chat == [f"emulator/{p}" for p in PROFILES]


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
    [("emulator/clean-tool", "tool_calls"), ("clean-tool", "tool_calls"), ("clean", "stop")],
)
def test_profile_comes_from_the_model_name(http: httpx.Client, model: str, expected_finish: str) -> None:
    response = http.post("/chat/completions", json=request_body(model=model))
    assert finish_reasons(response.content) == [expected_finish]


@pytest.mark.parametrize("model", ["never-identifed", "gpt-4o"])
def test_an_unknown_bare_model_is_a_404_listing_the_profiles(http: httpx.Client, model: str) -> None:
    response = http.post("/chat/completions", json=request_body(model=model))
    assert response.status_code == 404
    message = response.json()["error"]["message"]
    assert repr(model) in message
    assert all(name in message for name in ("never-identified", "clean", "seed-bug"))


def test_a_request_without_a_model_gets_clean(http: httpx.Client) -> None:
    body = request_body()
    del body["model"]
    assert text_of(http.post("/chat/completions", json=body).content) == CLEAN


def test_a_configured_default_profile_answers_any_other_model() -> None:
    with Emulator(config=EmulatorConfig(default_profile="clean-tool")) as emulator, client(emulator.base_url) as http:
        unknown = http.post("/chat/completions", json=request_body(model="gpt-4o"))
        named = http.post("/chat/completions", json=request_body(model="clean"))
    assert finish_reasons(unknown.content) == ["tool_calls"]
    assert finish_reasons(named.content) == ["stop"]


def test_chat_completions_is_also_served_without_the_v1_prefix(emu: Emulator) -> None:
    with client() as plain:
        response = plain.post(f"{emu.url}/chat/completions", json=request_body(model="clean"))
    assert text_of(response.content) == CLEAN


def test_requests_are_recorded_without_credentials(emu: Emulator, http: httpx.Client) -> None:
    marker = uuid.uuid4().hex
    body = request_body(model="clean")
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
