"""``GeminiRepair`` reads calls and shapes as the library's Gemini parser does (decisions 0070, 0071): which part
continues Vertex's open call, which is a call without a name, which is a repeat; a field of another shape; the end of
the body. Each case at every read size; once the format is registered, each against ``pipeline.collect``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from repair_helpers import SPLITS, ending, repaired

import pipeline
from operators import Code, Finish
from pipeline.sanitize import GeminiRepair
from pipeline.sanitize.gemini._repair import _MARKS, _plain

CRLF = b"\r\n\r\n"


def chunk(*parts: dict[str, Any], finish: str | None = None) -> bytes:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish is not None:
        candidate["finishReason"] = finish
    return b"data: " + json.dumps({"candidates": [candidate]}, separators=(",", ":")).encode() + CRLF


def call(**fields: Any) -> dict[str, Any]:
    return {"functionCall": fields}


STOP = chunk({"text": ""}, finish="STOP")
OPEN = chunk(call(id="c1", name="search", willContinue=True))
CASES: dict[str, tuple[bytes, tuple[str, str | None]]] = {
    "a nameless part with the open call's id continues it": (
        OPEN + chunk(call(id="c1", partialArgs=[{"jsonPath": "$.q", "stringValue": "x"}])) + STOP,
        ("tool-calls", None)),
    "a nameless part with another id while a call is open is a call without a name": (
        OPEN + chunk(call(id="c2", args={})) + STOP, ("error", Code.MALFORMED_TOOL_CALL)),
    "a nameless part repeating an ended call's id is ignored": (
        chunk(call(id="c1", name="search", args={"q": "x"})) + chunk(call(id="c1", args={"q": "x"})) + STOP,
        ("tool-calls", None)),
    "a continuing string keeps the call open without the call's own willContinue": (
        chunk(call(name="search", partialArgs=[{"jsonPath": "$.q", "stringValue": "hel", "willContinue": True}]))
        + chunk(call(partialArgs=[{"jsonPath": "$.q", "stringValue": "lo"}])) + STOP, ("tool-calls", None)),
    "a piece at a path the parser does not read keeps nothing open": (
        chunk(call(name="search", partialArgs=[{"jsonPath": "q", "stringValue": "hel", "willContinue": True}]))
        + chunk(call(partialArgs=[{"jsonPath": "$.q", "stringValue": "lo"}])) + STOP,
        ("error", Code.MALFORMED_TOOL_CALL)),
    "a text part ends the open call": (
        OPEN + chunk({"text": "so"}) + chunk(call(args={})) + STOP, ("error", Code.MALFORMED_TOOL_CALL)),
    "an empty finishReason is a finish the library does not know": (
        chunk({"text": "Hi"}, finish=""), ("error", Code.UNKNOWN)),
    "a text that is not a string is malformed": (  # read: the first event (an event that looks like a text delta
        chunk({"text": 5}) + STOP, ("error", Code.MALFORMED_RESPONSE)),  # later passes unread, as in chat: 0032)
    "arguments that are not an object are malformed": (
        chunk({"text": "Hi"}) + chunk(call(name="f", args=[1])) + STOP, ("error", Code.MALFORMED_RESPONSE)),
    "a payload with a type is not Gemini's": (
        chunk({"text": "Hi"}) + b'data: {"type":"ping"}' + CRLF + STOP, ("error", Code.MALFORMED_RESPONSE)),
    "a CR last in the body ends the last event": (
        chunk({"text": "Hi"}, finish="STOP")[:-1], ("stop", None)),
}


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_repairer_reads_calls_and_shapes_as_the_parser_does(case: str, size: int) -> None:
    body, expected = CASES[case]
    out, repair = repaired(GeminiRepair, body, size)
    assert repair.finish is not None
    assert (repair.finish.reason.kind, repair.finish.reason.code) == expected
    if ending(repair)[1] is None:
        assert out == body  # a finish the SDK reports itself: passed as sent
    else:
        assert json.loads(out.rstrip().rsplit(b"\n", 1)[-1][6:])["error"]["message"].startswith(f"{expected[1]}: ")


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_library_reads_each_case_the_same(case: str) -> None:
    body, expected = CASES[case]
    finish = [c for c in pipeline.collect([body], format="gemini") if isinstance(c, Finish)][-1]
    assert (finish.reason.kind, finish.reason.code) == expected


@pytest.mark.parametrize("mark", _MARKS)
def test_an_event_holding_any_mark_is_read_not_passed_unread(mark: bytes) -> None:
    assert not _plain(b'data: {"candidates":[],"x":' + mark + b"}")
    event = b'data: {"candidates":[{"content":{"parts":[{"text":"a ' + mark.replace(b'"', b"") + b'"}]}}]}' + CRLF
    assert _plain(event) == (mark != b"\\u")  # inside a text, a key's quotes are escaped: no mark
