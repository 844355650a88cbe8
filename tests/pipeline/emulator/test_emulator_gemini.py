"""The emulator's Gemini profiles as bytes (no HTTP; the format is served once its registry records land): every
event is ``data: <GenerateContentResponse>`` ended by CRLF CRLF, with no ``[DONE]``, each payload valid JSON that the
google-genai SDK's own types accept; usage is cumulative; each profile shows its quirk of decision 0071."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.genai import errors, types
from hypothesis import given
from hypothesis import strategies as st

from pipeline.emulator._errors import RequestError
from pipeline.emulator._script import Cut, ScriptOptions
from pipeline.emulator.gemini import GEMINI_PROFILES
from pipeline.emulator.gemini._events import CACHED_TOKENS, RETRY_INFO, GeminiEvents, gemini_error_shape
from pipeline.emulator.gemini._profiles import ARGS, OTHER_TEXT, TEXT_SIGNATURE, THOUGHT_SIGNATURE
from pipeline.emulator.gemini._sent_back import SIGNATURE, THOUGHT_PIECES

Json = dict[str, Any]
STREAMED = [name for name in GEMINI_PROFILES if name != "rate-limit"]
CLEAN = "Hello from the emulator."

options = st.builds(
    ScriptOptions,
    model=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
    prompt_tokens=st.integers(1, 100_000),
    completion_id=st.text("abcdef0123456789", min_size=24, max_size=32).map(lambda s: "gemini-emu" + s),
    retry_after=st.integers(0, 600).map(str),
)


def payloads(body: bytes) -> list[Json]:
    """Every event's payload, checking Google's framing: one ``data:`` line per event, each ended by CRLF CRLF."""
    assert body.endswith(b"\r\n\r\n")
    events = body.split(b"\r\n\r\n")[:-1]
    out = []
    for event in events:
        assert event.startswith(b"data: ")
        assert b"\n" not in event
        assert b"\r" not in event
        out.append(json.loads(event.removeprefix(b"data: ")))
    return out


def build(profile: str, chosen: ScriptOptions | None = None) -> list[Json]:
    return payloads(GEMINI_PROFILES[profile].build(chosen or ScriptOptions(model="gemini-2.5-flash")).body)


def parts(sent: list[Json], index: int = 0) -> list[Json]:
    candidates = [c for e in sent for c in e.get("candidates", []) if c["index"] == index]
    return [p for c in candidates for p in c["content"].get("parts", [])]


def finishes(sent: list[Json]) -> list[str]:
    return [c["finishReason"] for e in sent for c in e.get("candidates", []) if "finishReason" in c]


def text(sent: list[Json], *, thought: bool = False, index: int = 0) -> str:
    return "".join(p.get("text", "") for p in parts(sent, index) if p.get("thought", False) is thought)


def calls(sent: list[Json]) -> list[Json]:
    return [p["functionCall"] for p in parts(sent) if "functionCall" in p]


@pytest.mark.parametrize("profile", STREAMED)
@given(chosen=options)
def test_every_gemini_event_is_a_crlf_data_line_the_sdk_reads(profile: str, chosen: ScriptOptions) -> None:
    script = GEMINI_PROFILES[profile].build(chosen)
    assert (script.status, script.is_event_stream) == (200, True)
    assert b"[DONE]" not in script.body
    sent = payloads(script.body)
    assert sent
    for payload in sent:
        if "error" in payload:  # an in-band error: google.rpc Status, read as the SDK reads it
            assert errors.APIError(payload["error"]["code"], payload).status == payload["error"]["status"]
            continue
        parsed = types.GenerateContentResponse.model_validate_json(json.dumps(payload))  # extra keys: forbidden
        assert parsed.model_version == chosen.model
        assert parsed.response_id == "emu" + chosen.completion_id[-24:]
        assert parsed.usage_metadata is not None
        assert parsed.usage_metadata.cached_content_token_count == CACHED_TOKENS
        assert parsed.usage_metadata.prompt_token_count == chosen.prompt_tokens + CACHED_TOKENS
    assert isinstance(script.steps[-1], Cut) is (profile == "drop-mid-stream")


@pytest.mark.parametrize("profile", STREAMED)
def test_gemini_usage_is_cumulative_on_every_event(profile: str) -> None:
    usages = [e["usageMetadata"] for e in build(profile) if "usageMetadata" in e]
    for field in ("totalTokenCount", "candidatesTokenCount", "thoughtsTokenCount"):
        counts = [u.get(field, 0) for u in usages]
        assert counts == sorted(counts)
    for usage in usages:
        output = usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
        assert usage["totalTokenCount"] == usage["promptTokenCount"] + output


# (profile, the finishReasons of candidate 0 in order; the stream's other ending)
ENDINGS = {
    "clean": ["STOP"],
    "thinking-signatures": ["STOP"],
    "clean-tool": ["STOP"],
    "call-with-id": ["STOP"],
    "parallel": ["STOP"],
    "call-then-stop": ["STOP"],
    "max-tokens": ["MAX_TOKENS"],
    "safety": ["SAFETY"],
    "prompt-blocked": [],
    "malformed-function-call": ["MALFORMED_FUNCTION_CALL"],
    "unexpected-tool-call": ["UNEXPECTED_TOOL_CALL"],
    "never-identified-name": ["STOP"],
    "no-finish": [],
    "drop-mid-stream": [],
    "error-midstream": [],
    "empty-parts": ["STOP"],
    "streamed-args": ["STOP"],
    "two-candidates": ["STOP", "STOP"],
    "thinking-tool": ["STOP"],
    "agent": ["STOP"],
}


@pytest.mark.parametrize(("profile", "expected"), ENDINGS.items())
def test_each_gemini_profile_finishes_as_it_says_on_its_last_event(profile: str, expected: list[str]) -> None:
    sent = build(profile)
    assert finishes(sent) == expected
    if expected:
        assert finishes(sent[-1:]) == expected  # the finish is on the last event, nothing after it


def test_clean_is_the_text_over_several_events() -> None:
    sent = build("clean")
    assert len(sent) == 5
    assert text(sent) == CLEAN
    assert all(c["content"]["role"] == "model" for e in sent for c in e["candidates"])


def test_thinking_signatures_sign_the_thought_and_an_empty_final_text_part() -> None:
    sent = build("thinking-signatures")
    assert text(sent, thought=True) == "".join(THOUGHT_PIECES)
    assert text(sent) == CLEAN
    assert parts(sent)[0]["thoughtSignature"] == THOUGHT_SIGNATURE
    assert parts(sent)[-1] == {"text": "", "thoughtSignature": TEXT_SIGNATURE}
    parsed = types.GenerateContentResponse.model_validate_json(json.dumps(sent[-1]))
    assert parsed.candidates
    assert parsed.candidates[0].content
    assert parsed.candidates[0].content.parts
    assert parsed.candidates[0].content.parts[0].thought_signature == base64.b64decode(TEXT_SIGNATURE)
    assert sent[-1]["usageMetadata"]["thoughtsTokenCount"] == 2


@pytest.mark.parametrize(("profile", "with_id"), [("clean-tool", False), ("call-with-id", True)])
def test_a_call_has_a_wire_id_only_where_the_profile_says(profile: str, with_id: bool) -> None:
    (call,) = calls(build(profile))
    assert (call["name"], call["args"]) == ("get_weather", ARGS)
    assert ("id" in call) is with_id


def test_parallel_calls_come_in_one_event() -> None:
    sent = build("parallel")
    names = [c["functionCall"]["name"] for c in sent[0]["candidates"][0]["content"]["parts"]]
    assert names == ["get_weather", "get_time"]
    assert "finishReason" not in sent[0]["candidates"][0]


def test_call_then_stop_finishes_on_a_bare_event_of_its_own() -> None:
    sent = build("call-then-stop")
    assert len(sent) == 2
    assert sent[-1]["candidates"][0]["content"]["parts"] == [{"text": ""}]


def test_the_safety_finish_and_the_malformed_call_carry_a_finish_message() -> None:
    safety = build("safety")[-1]["candidates"][0]
    assert safety["finishMessage"]
    assert any(r.get("blocked") for r in safety["safetyRatings"])
    assert "parts" not in safety["content"]
    malformed = build("malformed-function-call")[-1]["candidates"][0]
    assert malformed["content"] == {}
    assert malformed["finishMessage"].startswith("Malformed function call:")
    assert "finishMessage" not in build("unexpected-tool-call")[-1]["candidates"][0]


def test_a_blocked_prompt_has_a_block_reason_and_no_candidates() -> None:
    (sent,) = build("prompt-blocked")
    assert "candidates" not in sent
    assert sent["promptFeedback"]["blockReason"] == "SAFETY"
    assert "candidatesTokenCount" not in sent["usageMetadata"]


def test_a_nameless_call_has_arguments_and_no_name() -> None:
    assert calls(build("never-identified-name")) == [{"args": ARGS}]


@pytest.mark.parametrize("profile", ["no-finish", "drop-mid-stream"])
def test_a_cut_body_has_text_and_no_finish(profile: str) -> None:
    sent = build(profile)
    assert text(sent)
    assert CLEAN.startswith(text(sent))
    assert text(sent) != CLEAN
    assert all("finishReason" not in c for e in sent for c in e["candidates"])


def test_error_midstream_ends_with_an_in_band_unavailable_error() -> None:
    sent = build("error-midstream")
    assert text(sent[:-1]) == "Hello from"
    assert sent[-1] == {"error": {"code": 503, "message": sent[-1]["error"]["message"], "status": "UNAVAILABLE"}}


@given(chosen=options)
def test_the_rate_limit_is_resource_exhausted_with_a_retry_delay(chosen: ScriptOptions) -> None:
    script = GEMINI_PROFILES["rate-limit"].build(chosen)
    assert (script.status, script.is_event_stream) == (429, False)
    assert script.content_type.startswith("application/json")
    body = json.loads(script.body)
    error = errors.ClientError(429, body)  # the SDK's reading of it
    assert (error.code, error.status) == (429, "RESOURCE_EXHAUSTED")
    retry = [d for d in body["error"]["details"] if d["@type"] == RETRY_INFO]
    assert retry == [{"@type": RETRY_INFO, "retryDelay": f"{chosen.retry_after}s"}]


def test_empty_parts_keep_the_text_and_end_with_a_content_without_parts() -> None:
    sent = build("empty-parts")
    assert text(sent) == CLEAN
    assert {"text": ""} in parts(sent)
    assert sent[-1]["candidates"][0]["content"] == {"role": "model"}


def test_streamed_args_continue_a_string_value_then_end_the_call() -> None:
    sent = calls(build("streamed-args"))
    assert sent[0] == {"name": "get_weather", "willContinue": True}
    pieces = [a for c in sent for a in c.get("partialArgs", [])]
    assert [a["jsonPath"] for a in pieces] == ["$.city", "$.city"]
    assert "".join(a["stringValue"] for a in pieces) == ARGS["city"]
    assert [a.get("willContinue", False) for a in pieces] == [True, False]
    assert sent[-1] == {}  # willContinue absent: the call ends


def test_two_candidates_are_on_every_event() -> None:
    sent = build("two-candidates")
    assert all([c["index"] for c in e["candidates"]] == [0, 1] for e in sent)
    assert (text(sent), text(sent, index=1)) == ("Hello from the emulator", "".join(OTHER_TEXT))


def test_thinking_tool_signs_the_function_call_part() -> None:
    sent = build("thinking-tool")
    assert text(sent, thought=True) == "".join(THOUGHT_PIECES)
    call_part = parts(sent)[-1]
    assert call_part == {"functionCall": {"name": "get_weather", "args": ARGS}, "thoughtSignature": SIGNATURE}
    assert len(base64.b64decode(SIGNATURE)) == 300


@pytest.mark.parametrize(("status", "name"), [(400, "INVALID_ARGUMENT"), (404, "NOT_FOUND"), (500, "INTERNAL")])
def test_a_refused_request_is_answered_in_googles_shape(status: int, name: str) -> None:
    body = gemini_error_shape(RequestError(status, "no"))
    assert body == {"error": {"code": status, "message": "no", "status": name}}
    assert errors.APIError(status, body).status == name


def test_every_gemini_profile_is_tested_here() -> None:
    assert set(ENDINGS) | {"rate-limit"} == set(GEMINI_PROFILES)
    assert GeminiEvents(ScriptOptions()).usage()["promptTokenCount"] == 12 + CACHED_TOKENS
