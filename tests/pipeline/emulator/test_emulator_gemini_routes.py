"""The emulator's gateway serving Gemini at Google's paths, in process (Starlette's TestClient: no socket): the model
comes from the path (``{model}``, one segment, so a profile is named ``emulator-gemini-<profile>``), only ``alt=sse``
streams are served, refusals are in Google's error shape, and ``thinking-tool``'s follow-up must send the signature
and a named ``functionResponse`` back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import errors, types
from starlette.testclient import TestClient

from pipeline.emulator import Emulator, EmulatorConfig, EmulatorState, create_app
from pipeline.emulator.gemini import GEMINI_PROFILES
from pipeline.emulator.gemini._profiles import ARGS
from pipeline.emulator.gemini._sent_back import SIGNATURE

Json = dict[str, Any]
PREFIXES = [
    "/v1beta",
    "/v1",
    "",
    "/v1/projects/my-project/locations/us-central1/publishers/google",
    "/v1beta1/projects/my-project/locations/global/publishers/google",
]
ASK = {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}


@pytest.fixture
def served() -> Iterator[tuple[TestClient, EmulatorState]]:
    state = EmulatorState()
    with TestClient(create_app(EmulatorConfig(), state)) as client:
        yield client, state


def url(model: str, prefix: str = "/v1beta", query: str = "?alt=sse") -> str:
    return f"{prefix}/models/{model}:streamGenerateContent{query}"


def payloads(body: bytes) -> list[Json]:
    return [json.loads(event.removeprefix(b"data: ")) for event in body.split(b"\r\n\r\n")[:-1]]


def text(body: bytes) -> str:
    return "".join(p.get("text", "") for e in payloads(body) for c in e["candidates"] for p in c["content"]["parts"])


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "gemini-3-pro-preview", "models.v2@001"])
def test_a_real_model_name_routes_and_is_the_model_version(
    served: tuple[TestClient, EmulatorState], model: str
) -> None:
    client, state = served
    response = client.post(url(model), json=ASK, headers={"x-emulator-profile": "clean"})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert text(response.content) == "Hello from the emulator."
    assert {e["modelVersion"] for e in payloads(response.content)} == {model}
    recorded = state.requests[-1]
    assert (recorded.profile, recorded.path, recorded.body) == ("clean", url(model, query=""), ASK)  # body as sent


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_gemini_api_and_vertex_paths_choose_the_profile_by_the_model(
    served: tuple[TestClient, EmulatorState], prefix: str
) -> None:
    client, state = served
    response = client.post(url("emulator-gemini-clean-tool", prefix), json=ASK)
    assert response.status_code == 200
    (event,) = payloads(response.content)
    assert event["candidates"][0]["content"]["parts"] == [{"functionCall": {"name": "get_weather", "args": ARGS}}]
    assert state.requests[-1].profile == "clean-tool"


def test_a_bare_profile_name_is_a_model_too(served: tuple[TestClient, EmulatorState]) -> None:
    client, state = served
    assert client.post(url("max-tokens"), json=ASK).status_code == 200
    assert state.requests[-1].profile == "max-tokens"


@pytest.mark.parametrize("query", ["", "?alt=json", "?alt=SSE"])
def test_a_request_without_alt_sse_is_a_400_in_googles_shape_naming_alt_sse(
    served: tuple[TestClient, EmulatorState], query: str
) -> None:
    client, _ = served
    response = client.post(url("emulator-gemini-clean", query=query), json={**ASK, "stream": True})
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert "alt=sse" in error["message"]
    assert ":streamGenerateContent" in error["message"]
    assert '"stream"' not in error["message"]


@pytest.mark.parametrize("model", ["gemini-2.5-flash", "emulator-gemini-no-such-profile", "emulator-gemini-parallel-x"])
def test_a_model_naming_no_gemini_profile_is_a_404_in_googles_shape(
    served: tuple[TestClient, EmulatorState], model: str
) -> None:
    client, _ = served
    response = client.post(url(model), json=ASK)
    assert response.status_code == 404
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (404, "NOT_FOUND")
    assert "'emulator-gemini-<profile>'" in error["message"]
    assert all(name in error["message"] for name in GEMINI_PROFILES)


@pytest.mark.parametrize("model", ["emulator/gemini/clean", "emulator%2Fgemini%2Fclean", "emulator/clean"])
def test_a_model_with_a_slash_is_not_a_gemini_path(served: tuple[TestClient, EmulatorState], model: str) -> None:
    client, state = served
    response = client.post(url(model), json=ASK, headers={"x-emulator-profile": "clean"})
    assert response.status_code == 404  # the path's {model} is one segment: no route
    assert state.requests == []


def test_the_model_list_names_each_gemini_profile_as_a_model_that_selects_it(
    served: tuple[TestClient, EmulatorState],
) -> None:
    client, state = served
    ids = [m["id"] for m in client.get("/v1/models").json()["data"]]
    listed = [i for i in ids if i.startswith("emulator-gemini-")]
    assert listed == [f"emulator-gemini-{name}" for name in GEMINI_PROFILES]
    for model in listed:
        if model.endswith("drop-mid-stream"):  # the cut raises through the in-process client
            continue
        assert client.post(url(model), json=ASK).status_code in (200, 429)
        expected = model.removeprefix("emulator-gemini-")
        assert state.requests[-1].profile == ("clean-tool" if expected == "agent" else expected)


def test_the_rate_limit_is_served_as_a_google_429(served: tuple[TestClient, EmulatorState]) -> None:
    client, _ = served
    response = client.post(url("emulator-gemini-rate-limit"), json=ASK, headers={"x-emulator-retry-after": "37"})
    assert response.status_code == 429
    details = response.json()["error"]["details"]
    assert {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"} in details


def follow_up(call_part: Json, answer: Json | None) -> Json:
    contents = [*ASK["contents"], {"role": "model", "parts": [call_part]}]
    if answer is not None:
        contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
    return {"contents": contents}


SIGNED = {"functionCall": {"name": "get_weather", "args": ARGS}, "thoughtSignature": SIGNATURE}
ANSWER = {"name": "get_weather", "response": {"weather": "sunny"}}


def test_thinking_tool_answers_the_follow_up_that_sends_the_signature_back(
    served: tuple[TestClient, EmulatorState],
) -> None:
    client, state = served
    first = client.post(url("emulator-gemini-thinking-tool"), json=ASK)
    assert state.requests[-1].profile == "thinking-tool"
    assert payloads(first.content)[-1]["candidates"][0]["content"]["parts"] == [SIGNED]
    second = client.post(url("emulator-gemini-thinking-tool"), json=follow_up(SIGNED, ANSWER))
    assert second.status_code == 200
    assert state.requests[-1].profile == "clean"
    assert text(second.content) == "Hello from the emulator."


@pytest.mark.parametrize(
    ("call_part", "answer", "said"),
    [
        ({"functionCall": {"name": "get_weather", "args": ARGS}}, ANSWER, "thought_signature is missing"),
        ({**SIGNED, "thoughtSignature": SIGNATURE[:-4] + "AAAA"}, ANSWER, "thought_signature differs"),
        (SIGNED, None, "function response turn comes immediately after"),
        (SIGNED, {**ANSWER, "name": "get_time"}, "named 'get_weather'"),
        ({"text": "no call"}, ANSWER, "must send back the functionCall part"),
    ],
)
def test_thinking_tool_refuses_a_follow_up_without_the_signature_or_the_named_response(
    served: tuple[TestClient, EmulatorState], call_part: Json, answer: Json | None, said: str
) -> None:
    client, _ = served
    response = client.post(url("emulator-gemini-thinking-tool"), json=follow_up(call_part, answer))
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert said in error["message"]


def test_agent_calls_the_tool_then_answers_once_a_model_turn_is_sent(served: tuple[TestClient, EmulatorState]) -> None:
    client, state = served
    client.post(url("emulator-gemini-agent"), json=ASK)
    assert state.requests[-1].profile == "clean-tool"
    client.post(url("emulator-gemini-agent"), json=follow_up({"functionCall": {"name": "get_weather"}}, ANSWER))
    assert state.requests[-1].profile == "clean"


@pytest.mark.server
def test_the_unmodified_google_genai_sdk_reads_the_profiles_over_loopback() -> None:
    with Emulator() as emu:
        options = types.HttpOptions(
            base_url=emu.base_url.removesuffix("/v1"), retry_options=types.HttpRetryOptions(attempts=1)
        )
        sdk = genai.Client(api_key="test", http_options=options)

        def read(profile: str) -> list[types.GenerateContentResponse]:
            return list(sdk.models.generate_content_stream(model=f"emulator-gemini-{profile}", contents="Weather?"))

        clean = read("clean")
        assert "".join(chunk.text or "" for chunk in clean) == "Hello from the emulator."
        assert emu.state.requests[-1].path.endswith("/models/emulator-gemini-clean:streamGenerateContent")
        (call,) = [c for chunk in read("clean-tool") for c in chunk.function_calls or []]
        assert (call.name, call.args, call.id) == ("get_weather", ARGS, None)
        cut = read("no-finish")  # the SDK returns a cut body silently: what the repairer is for
        assert cut[-1].candidates
        assert cut[-1].candidates[0].finish_reason is None
        with pytest.raises(errors.ServerError) as in_band:
            read("error-midstream")
        assert (in_band.value.code, in_band.value.status) == (503, "UNAVAILABLE")
        with pytest.raises(errors.ClientError) as limited:
            read("rate-limit")
        assert (limited.value.code, limited.value.status) == (429, "RESOURCE_EXHAUSTED")
