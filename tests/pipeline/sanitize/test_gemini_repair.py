"""``GeminiRepair`` fed bytes at several split sizes (decision 0071): a sound stream passes byte for byte (the made id
of a call without one never reaches these bytes), a cut and a nameless call become Google's in-band error (or, found
before any byte, nothing the transport forwarded), Vertex's streamed arguments are one call, the upstream's own error
passes as sent, framing the google-genai SDK misreads is written as data lines; and ``gemini_error_body``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from repair_helpers import SPLITS, cut_at, ending, fed_around, repaired

from operators import Code, Limits
from operators.extend import classify_inband_error
from pipeline.sanitize import GeminiRepair
from pipeline.sanitize.gemini import gemini_error_body

CRLF = b"\r\n\r\n"
USAGE = {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10}


def event(payload: Any, end: bytes = CRLF) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + end


def chunk(*parts: dict[str, Any], finish: str | None = None, index: int | None = None, **extra: Any) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    if index is not None:
        candidate["index"] = index
    return event({"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": "gemini-2.5-flash", **extra})


def text(value: str, **more: Any) -> dict[str, Any]:
    return {"text": value, **more}


def call(**fields: Any) -> dict[str, Any]:
    return {"functionCall": fields}


WEATHER = call(name="get_weather", args={"city": "Paris"})
SOUND = {
    "text": chunk(text("Hel")) + chunk(text("lo <b> \u00e9")) + chunk(text(""), finish="STOP"),
    "thoughts": chunk(text("thinking", thought=True, thoughtSignature="c2ln")) + chunk(text("Hi"), finish="STOP"),
    "call-without-id": chunk(text("Let me check.")) + chunk({**WEATHER, "thoughtSignature": "c2ln"}, finish="STOP"),
    "call-with-id": chunk(call(id="call-7", name="get_weather", args={"city": "Paris"}), finish="STOP"),
    "parallel-calls": chunk(WEATHER, call(name="get_time", args={}), finish="STOP"),
    "max-tokens": chunk(text("Once upon")) + chunk(text(" a time"), finish="MAX_TOKENS"),
    "safety": chunk(text("Sure")) + chunk(finish="SAFETY"),
    "malformed-function-call": event({"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL",
                                                      "finishMessage": "Malformed function call: print(x"}]}),
    "blocked-prompt": event({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": USAGE}),
    "usage-after-finish": chunk(text("Hi"), finish="STOP") + event({"usageMetadata": USAGE}),
    "lf-framing": (event({"candidates": [{"content": {"parts": [text("Hi")]}}]}, b"\n\n")
                   + event({"candidates": [{"content": {"parts": [text("!")]}, "finishReason": "STOP"}]}, b"\n\n")),
    "vertex-streamed-arguments": (
        chunk(call(name="get_weather", willContinue=True))
        + chunk(call(partialArgs=[{"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}],
                     willContinue=True))
        + chunk(call(name="", partialArgs=[{"jsonPath": "$.city", "stringValue": "is"}], willContinue=True))
        + chunk(call(name=None, willContinue=True)) + chunk(call()) + chunk(text(""), finish="STOP")
    ),
    "nameless-call-in-candidate-1": chunk(text("Hi"), finish="STOP")[:-4].replace(
        b'"candidates":[', b'"candidates":[{"index":1,"content":{"parts":[{"functionCall":{"args":{}}}]}},', 1) + CRLF,
}
FINISHES = {
    "text": ("stop", None), "thoughts": ("stop", None), "call-without-id": ("tool-calls", None),
    "call-with-id": ("tool-calls", None), "parallel-calls": ("tool-calls", None), "max-tokens": ("max-tokens", None),
    "safety": ("error", Code.CONTENT_FILTER), "malformed-function-call": ("error", Code.MALFORMED_TOOL_CALL),
    "blocked-prompt": ("error", Code.CONTENT_FILTER), "usage-after-finish": ("stop", None),
    "lf-framing": ("stop", None), "vertex-streamed-arguments": ("tool-calls", None),
    "nameless-call-in-candidate-1": ("stop", None),
}


def in_band(out: bytes) -> dict[str, Any]:
    """The last event's JSON."""
    last = out.rstrip(b"\r\n").rsplit(b"\n", 1)[-1]
    assert last.startswith(b"data: ")
    decoded: dict[str, Any] = json.loads(last[6:])
    return decoded


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("name", sorted(SOUND))
def test_a_sound_stream_passes_byte_for_byte_and_its_finish_is_the_librarys(name: str, size: int) -> None:
    out, repair = repaired(GeminiRepair, SOUND[name], size)
    assert out == SOUND[name]
    assert (repair.finish.reason.kind if repair.finish else None, repair.finish.reason.code if repair.finish
            else None) == FINISHES[name]
    assert repair.failure is None  # a finish the SDK reports itself (SAFETY, MALFORMED_FUNCTION_CALL) is no failure
    assert b"gemini-made-" not in out


@pytest.mark.parametrize("size", SPLITS)
def test_a_body_cut_before_any_finish_ends_with_googles_in_band_error_the_sdk_raises(size: int) -> None:
    raw = chunk(text("The answer is")) + chunk(text(" forty"))
    out, repair = repaired(GeminiRepair, raw, size)
    assert out.startswith(raw)
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    error = in_band(out)
    assert list(error) == ["error"]  # the SDK raises on an event that begins {"error":
    assert (error["error"]["code"], error["error"]["status"]) == (503, "UNAVAILABLE")
    assert error["error"]["message"].startswith("STREAM_CLOSED: ")
    assert out.endswith(CRLF)  # the stream's own line ends


@pytest.mark.parametrize("size", SPLITS)
def test_a_cut_before_anything_was_said_is_found_before_any_byte(size: int) -> None:
    raw = event({"usageMetadata": USAGE}) + chunk(text(""))
    before, out, repair = fed_around(GeminiRepair, raw, len(raw), size)
    assert before == b""  # held: the transport answers the failure as an HTTP error instead
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    assert in_band(out)["error"]["message"].startswith("STREAM_CLOSED: ")


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("name", [{}, {"name": None}, {"name": ""}, {"name": 5}, {"id": "call-1"}])
def test_a_call_without_a_name_is_malformed_tool_call_and_never_forwarded(name: dict[str, Any], size: int) -> None:
    nameless = chunk(call(**name, args={"city": "Paris"}), finish="STOP")
    raw = chunk(text("Checking.")) + nameless
    out, repair = repaired(GeminiRepair, raw, size)
    assert ending(repair) == ("error", Code.MALFORMED_TOOL_CALL)
    assert out.startswith(chunk(text("Checking.")))
    assert b'"functionCall"' not in out
    assert in_band(out)["error"]["message"].startswith("MALFORMED_TOOL_CALL: ")
    out, repair = repaired(GeminiRepair, nameless, size)
    assert list(in_band(out)) == ["error"]  # the first event: nothing of the upstream's went out before the error
    assert out.count(b"data: ") == 1
    assert ending(repair) == ("error", Code.MALFORMED_TOOL_CALL)


@pytest.mark.parametrize("size", SPLITS)
def test_a_nameless_part_after_a_streamed_call_closed_is_a_nameless_call(size: int) -> None:
    raw = chunk(call(name="get_weather", willContinue=True)) + chunk(call()) + chunk(call(args={"x": 1}))
    out, repair = repaired(GeminiRepair, raw, size)
    assert ending(repair) == ("error", Code.MALFORMED_TOOL_CALL)
    assert out.startswith(chunk(call(name="get_weather", willContinue=True)) + chunk(call()))
    closed_by_text = chunk(call(name="f", willContinue=True)) + chunk(text("x")) + chunk(call(willContinue=True))
    assert ending(repaired(GeminiRepair, closed_by_text, size)[1]) == ("error", Code.MALFORMED_TOOL_CALL)


@pytest.mark.parametrize("size", SPLITS)
def test_parts_after_candidate_0s_finish_are_not_judged(size: int) -> None:
    raw = chunk(text("Hi"), finish="STOP") + chunk(call(args={}))
    out, repair = repaired(GeminiRepair, raw, size)
    assert out == raw
    assert ending(repair) == ("stop", None)


@pytest.mark.parametrize("size", SPLITS)
def test_an_upstream_error_passes_as_sent_and_is_classified_as_the_library_classifies_it(size: int) -> None:
    error = {"code": 429, "message": "Resource exhausted.", "status": "RESOURCE_EXHAUSTED", "details": [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}
    raw = chunk(text("Hi")) + event({"error": error}) + chunk(text("after"))
    out, repair = repaired(GeminiRepair, raw, size)
    assert out == chunk(text("Hi")) + event({"error": error})  # nothing after it
    assert repair.failure == classify_inband_error(error)
    assert (repair.failure.code, repair.failure.status) == (Code.RATE_LIMIT, 429)


def test_an_error_object_not_first_in_its_event_is_moved_first_for_the_sdk() -> None:
    raw = chunk(text("Hi")) + event({"usageMetadata": USAGE, "error": {"code": 503, "status": "UNAVAILABLE"}})
    out, repair = repaired(GeminiRepair, raw, 64)
    assert list(in_band(out)) == ["error", "usageMetadata"]
    assert ending(repair) == ("error", Code.SERVER)


@pytest.mark.parametrize("size", SPLITS)
def test_a_gateways_done_ends_the_stream_and_is_not_forwarded(size: int) -> None:
    done = b"data: [DONE]" + CRLF
    whole = chunk(text("Hi"), finish="STOP")
    out, repair = repaired(GeminiRepair, whole + done + chunk(text("late")), size)
    assert out == whole  # the SDK cannot read [DONE]; nothing after it is read
    assert ending(repair) == ("stop", None)
    out, repair = repaired(GeminiRepair, chunk(text("Hi")) + done, size)
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    assert b"[DONE]" not in out


@pytest.mark.parametrize("size", SPLITS)
def test_framing_the_sdk_misreads_is_written_as_data_lines(size: int) -> None:
    raw = (b": keep-alive\r\n\r\n" + b"event: message\r\nid: 1\r\n" + chunk(text("Hi"))
           + chunk(text("!"), finish="STOP").replace(b"data: ", b"data:", 1))
    out, repair = repaired(GeminiRepair, b"\xef\xbb\xbf" + raw, size)
    assert out == chunk(text("Hi")) + chunk(text("!"), finish="STOP")
    assert repair.repairs["framing"] == 3
    assert ending(repair) == ("stop", None)


@pytest.mark.parametrize(
    "payload",
    [b"data: not json" + CRLF, b"data: [1, 2]" + CRLF,
     event({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}}]})],
)
def test_a_payload_that_is_not_a_gemini_object_is_malformed_response(payload: bytes) -> None:
    out, repair = repaired(GeminiRepair, chunk(text("Hi")) + payload + chunk(text("!"), finish="STOP"), 64)
    assert ending(repair) == ("error", Code.MALFORMED_RESPONSE)
    assert repair.failure is not None
    assert out.startswith(chunk(text("Hi")))
    assert out.count(b"data: ") == 2
    assert in_band(out) == json.loads(gemini_error_body(repair.failure))


def test_the_request_key_echoed_by_the_upstream_is_redacted() -> None:
    key = "AIzaSyA-secret-key-1234"
    out, repair = repaired(lambda: GeminiRepair(api_key=key), chunk(text(f"key {key}"), finish="STOP"), 17)
    assert key.encode() not in out
    assert b"[redacted]" in out
    assert repair.repairs["key-redacted"] == 1


def test_strict_makes_an_answer_with_nothing_in_it_empty_response_before_any_byte() -> None:
    empty = chunk(text("")) + chunk(finish="STOP")
    before, out, repair = fed_around(lambda: GeminiRepair(strict=True), empty, len(empty), 64)
    assert before == b""  # all held: the transport answers an HTTP error the SDK's retries see
    assert ending(repair) == ("error", Code.EMPTY_RESPONSE)
    assert in_band(out)["error"]["message"].startswith("EMPTY_RESPONSE: ")
    out, repair = repaired(lambda: GeminiRepair(strict=True), SOUND["text"], 64)
    assert (out, repair.failure) == (SOUND["text"], None)


def test_what_is_held_before_the_answer_is_bounded_and_a_long_answer_is_not_cut() -> None:
    limits = Limits(max_text_bytes=10_000)
    repair = GeminiRepair(limits=limits)
    flood = event({"usageMetadata": USAGE}) * 1000
    assert b"".join(repair.feed(flood[i : i + 64]) for i in range(0, 9_984, 64)) == b""  # held, under the bound
    out = b"".join(repair.feed(flood[i : i + 64]) for i in range(9_984, len(flood), 64)) + repair.close()
    assert ending(repair) == ("error", Code.LIMIT_EXCEEDED)
    assert in_band(out)["error"]["status"] == "OUT_OF_RANGE"
    assert repair._queue == []  # what was held is dropped
    long = chunk(text("x" * 1000)) * 100 + chunk(text(""), finish="STOP")
    out, passed = repaired(lambda: GeminiRepair(limits=limits), long, 4096)
    assert (out, ending(passed)) == (long, ("stop", None))


def test_deep_json_is_malformed_response_and_many_parts_pass_in_one_read() -> None:
    deep = b"data: " + b'{"candidates":' * 100_000 + b"1" + b"}" * 100_000 + CRLF
    _, repair = repaired(GeminiRepair, deep, 1 << 20)  # the first event is read (held until it says something)
    assert ending(repair) == ("error", Code.MALFORMED_RESPONSE)
    many = chunk(*[text("a")] * 20_000, finish="STOP")
    out, repair = repaired(GeminiRepair, many, 1 << 20)
    assert (out, ending(repair)) == (many, ("stop", None))


@given(cuts=st.lists(st.integers(min_value=0), max_size=8),
       name=st.sampled_from([*sorted(SOUND), "cut", "nameless", "error"]), lf=st.booleans())
def test_any_split_gives_the_bytes_of_one_read(cuts: list[int], name: str, lf: bool) -> None:
    body = {"cut": chunk(text("Hi")), "nameless": chunk(text("Hi")) + chunk(call(args={})),
            "error": chunk(text("Hi")) + event({"error": {"code": 500, "status": "INTERNAL"}})}.get(name) or SOUND[name]
    if lf:
        body = body.replace(b"\r\n", b"\n")
    whole, split = cut_at(GeminiRepair, body, cuts)
    assert split == whole
