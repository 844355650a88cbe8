"""The Gemini fast path gives exactly the rule chain's chunks (docs/decisions/0050-fast-path.md, "Gemini").

As ``test_fast_path.py`` for the other formats: the oracle is the rule chain (``rules=protocol_rules(limits)``), the
chunks are compared with anomalies on, so made ids, signatures, usage, anomalies and the finish all count. Streams:
the Gemini peer corpus at several read sizes in both line ends (Google's CRLF and LF), generated streams of every
shape the parser reads (plain, and everything that must go general) in any split, and a run of deltas crossing
``max_text_bytes`` inside one read.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from corpus import GEMINI_PEER_STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fast_path import SMALL, both, cut
from test_properties import splits

import pipeline
from benchmarks._format_streams import gemini
from operators import Format, Limits, TextDelta
from operators.gemini import GEMINI_PARSER
from operators.gemini._fast import gemini_read
from scripts import fuzz

CORPUS = sorted(GEMINI_PEER_STREAMS.glob("*.sse"))


def _line_ends(data: bytes, crlf: bool) -> bytes:
    lf = data.replace(b"\r\n", b"\n")
    return lf.replace(b"\n", b"\r\n") if crlf else lf


def test_the_gemini_record_names_its_fast_path() -> None:
    assert GEMINI_PARSER.hot_read is gemini_read


@pytest.mark.slow
@pytest.mark.parametrize("crlf", [True, False], ids=["crlf", "lf"])
@pytest.mark.parametrize("path", CORPUS, ids=lambda path: path.stem)
def test_every_gemini_peer_stream_gives_the_rule_chains_chunks_at_every_read_size(path: Path, crlf: bool) -> None:
    data = _line_ends(path.read_bytes(), crlf)
    for size in (1, 2, 5, 7, 64, 4096, len(data)):
        for limits in (None, SMALL) if size in (7, 64) else (None,):
            for format in ("gemini", None):
                fast, general = both(cut(data, size), limits, format)
                assert fast == general, (size, limits, format)


def test_the_corpus_holds_gemini_streams_in_both_line_ends() -> None:
    assert len(CORPUS) >= 70
    assert any(b"\r\n" in path.read_bytes() for path in CORPUS)
    assert any(b"\r\n" not in path.read_bytes() for path in CORPUS)


TEXTS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)
COUNTS = st.one_of(*[st.integers(0, 500)] * 6, st.none(), st.sampled_from([-1, 2.0, 2.5, True, "7", 2**64]))
USAGE_KEYS = ["promptTokenCount", "cachedContentTokenCount", "candidatesTokenCount", "thoughtsTokenCount",
              "totalTokenCount"]


@st.composite
def parts(draw: st.DrawFn) -> dict[str, Any]:
    """A part: text or thought (mostly), sometimes with a signature, a call (whole, id-less, continued, streamed),
    a file, nothing, or text of another type."""
    kind = draw(st.sampled_from(["text"] * 12 + ["thought"] * 6 + ["call", "file", "empty", "odd"]))
    part: dict[str, Any]
    if kind in ("text", "thought"):
        part = {"text": draw(TEXTS)}
        if kind == "thought":
            part["thought"] = draw(st.sampled_from([True, True, True, False, "yes"]))
    elif kind == "call":
        call: dict[str, Any] = {"name": draw(st.sampled_from(["Glob", "Read", "", None]))}
        if draw(st.booleans()):
            call["id"] = draw(st.sampled_from(["call_a", "call_b", ""]))
        if draw(st.booleans()):
            call["args"] = {"path": draw(TEXTS)}
        if draw(st.integers(0, 4)) == 0:
            call["willContinue"] = True
            call["partialArgs"] = [{"jsonPath": "$.path", "stringValue": draw(TEXTS), "willContinue": True}]
        part = {"functionCall": call}
    elif kind == "file":
        part = {"inlineData": {"mimeType": "image/png", "data": "AA=="}}
    elif kind == "empty":
        part = {}
    else:
        part = {"text": draw(st.sampled_from([None, 5, ["a"]]))}
    if draw(st.integers(0, 15)) == 0:
        part["thoughtSignature"] = draw(st.sampled_from(["sig-1", "", 3]))
    return part


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """One ``GenerateContentResponse``: candidate 0 with parts (sometimes another candidate, or none), usage with
    valid and invalid counts (and keys the parser does not read), sometimes a finish, a block, an error, a chat
    payload."""
    shape = draw(st.sampled_from(["candidate"] * 24 + ["usage", "two", "feedback", "error", "chat", "bare"]))
    event: dict[str, Any] = {}
    if shape == "error":
        return {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
    if shape == "chat":
        return {"choices": [{"index": 0, "delta": {"content": "x"}}]}
    if shape in ("candidate", "two"):
        candidate: dict[str, Any] = {"content": {"parts": draw(st.lists(parts(), max_size=3)), "role": "model"}}
        if draw(st.booleans()):
            candidate["index"] = draw(st.sampled_from([0, 0, 0, 1, None]))
        if draw(st.integers(0, 9)) == 0:
            candidate["finishReason"] = draw(st.sampled_from(["STOP", "MAX_TOKENS", "SAFETY", "OTHER"]))
        other = {"index": draw(st.sampled_from([1, 0, None])), "content": {"parts": [{"text": "b"}]}}
        event["candidates"] = [candidate, other] if shape == "two" else [candidate]
    if shape == "feedback":
        event["promptFeedback"] = {"blockReason": draw(st.sampled_from(["", "SAFETY", "BLOCK_REASON_UNSPECIFIED"]))}
    if shape == "bare":
        event["candidates"] = draw(st.sampled_from([[], None]))
    if shape == "usage" or draw(st.booleans()):
        usage = {key: draw(COUNTS) for key in draw(st.lists(st.sampled_from(USAGE_KEYS), max_size=5))}
        if draw(st.integers(0, 5)) == 0:
            usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": 3}]
        event["usageMetadata"] = usage if draw(st.integers(0, 15)) else None
    event["modelVersion"] = "gemini-test"
    return event


@st.composite
def gemini_streams(draw: st.DrawFn) -> bytes:
    """Mostly plain text or thought events after the blocks opened, with every other shape among them; the end a
    finish, ``[DONE]``, or the bytes cut; Google's CRLF or LF (sometimes another line end, or a line end inside a
    payload); sometimes an event spread over data lines, or a comment."""
    opening = [{"candidates": [{"content": {"parts": [{"text": "a", "thought": True}, {"text": "b"}]}}]}]
    body = opening * min(draw(st.integers(0, 3)), 1) + draw(st.lists(events(), max_size=20))
    if draw(st.booleans()):
        body.append({"candidates": [{"content": {"parts": [{"text": "end"}]}, "finishReason": "STOP"}],
                     "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8}})
    eol = draw(st.sampled_from(["\r\n"] * 4 + ["\n"] * 3 + ["\r"]))
    out = []
    for event in body:
        text = json.dumps(event, ensure_ascii=draw(st.booleans()))
        odd = draw(st.integers(0, 30))
        if odd == 0:  # two data lines, or a comment first
            text = draw(st.sampled_from([f"{text[:1]}{eol}data: {text[1:]}", f"{text}{eol}: ping"]))
        elif odd == 1:  # a line end where JSON allows whitespace: two lines to SSE
            text = text[:1] + draw(st.sampled_from(["\r", "\n", "\r\n"])) + text[1:]
        ends = draw(st.sampled_from([eol + eol] * 12 + ["\r\n\n", "\n\r\n", "\r\r", "\r\n\r\n\r\n"]))
        out.append(f"data: {text}{ends}")
    ending = draw(st.sampled_from(["", "", f"data: [DONE]{eol}{eol}"]))
    return ("".join(out) + ending).encode()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_generated_gemini_streams_in_any_split_give_the_rule_chains_chunks(data: st.DataObject) -> None:
    body = data.draw(gemini_streams())
    pieces = data.draw(splits(body))
    limits = data.draw(st.sampled_from([None, SMALL, Limits(max_text_bytes=20)]))
    format: Format | None = data.draw(st.sampled_from(["gemini", None]))
    fast, general = both(pieces, limits, format)
    assert fast == general


@pytest.mark.parametrize("read", [64, 333, 4096, 1 << 20])
def test_the_benchmark_stream_gives_the_rule_chains_chunks_in_crlf_and_lf(read: int) -> None:
    for crlf in (True, False):
        data = _line_ends(gemini(300), crlf)
        fast, general = both(cut(data, read), None, "gemini")
        assert fast == general, crlf
    assert sum(1 for chunk in fast if type(chunk) is TextDelta) == 300


def _opening_run_end(kind: str) -> tuple[bytes, bytes, bytes]:
    """A response whose first ``kind`` part opens its block, then 30 more of 10 bytes each, then a finish."""
    word = "abcdéfgh"  # 10 UTF-8 bytes, a 2-byte character among them
    part = {"text": word, **({"thought": True} if kind == "reasoning" else {})}

    def event(finish: str | None = None, sent: int = 1) -> bytes:
        candidate = {"content": {"parts": [part]}, **({"finishReason": finish} if finish else {})}
        payload = {"candidates": [candidate], "usageMetadata": {"promptTokenCount": 4, "candidatesTokenCount": sent}}
        return f"data: {json.dumps(payload, ensure_ascii=False)}\r\n\r\n".encode()

    return event(), b"".join(event(sent=n) for n in range(2, 32)), event(finish="STOP", sent=32)


@pytest.mark.parametrize("kind", ["text", "reasoning"])
def test_a_run_of_gemini_parts_crossing_max_text_bytes_in_one_read_ends_as_the_rule_chain_ends_it(kind: str) -> None:
    opening, run, end = _opening_run_end(kind)
    for limit in (95, 100, 175, 1000):  # crossed inside the run, at a part's end, later, never
        for pieces in ([opening, run, end], [opening, run + end], [opening, *cut(run, 333), end]):
            fast, general = both(pieces, Limits(max_text_bytes=limit), "gemini")
            assert fast == general, (limit, len(pieces))
            crossed = getattr(getattr(fast[-1], "reason", None), "failure", None)
            assert (crossed is not None and crossed.code == "LIMIT_EXCEEDED") == (limit < 320), (limit, fast[-1])


def test_the_counts_an_event_lacks_keep_their_last_value_from_the_events_before_it() -> None:
    def event(text: str, usage: dict[str, Any]) -> bytes:
        payload = {"candidates": [{"content": {"parts": [{"text": text}]}}], "usageMetadata": usage}
        return f"data: {json.dumps(payload)}\r\n\r\n".encode()

    read = (event("a", {"promptTokenCount": 5}) + event("b", {"cachedContentTokenCount": 2, "thoughtsTokenCount": 7})
            + event("c", {"candidatesTokenCount": 3}) + event("d", {}) + event("e", {"totalTokenCount": 17}))
    end = b'data: {"candidates":[{"finishReason":"STOP"}]}\r\n\r\n'
    for pieces in ([event("x", {}), read, end], [event("x", {}), read + end]):
        fast, general = both(pieces, None, "gemini")
        assert fast == general
        usage = pipeline.assemble(fast).usage
        assert usage is not None
        assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.reasoning_tokens) == (
            3, 2, 10, 7)
    last = event("f", dict(zip(USAGE_KEYS, (9, 1, 4, 2, 15), strict=True)))
    fast, general = both([event("x", {}), read + last, end], None, "gemini")
    assert fast == general
    usage = pipeline.assemble(fast).usage
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens, usage.reasoning_tokens) == (8, 1, 6, 2)


ODD = [
    {"candidates": [{"content": {"parts": [{"text": "1"}]}}, {"content": {"parts": [{"text": "2"}]}}]},
    {"candidates": [{"index": 1, "content": {"parts": [{"text": "2"}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "1"}, {"functionCall": {"name": "Glob", "args": {}}}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "1", "thoughtSignature": "sig"}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "1"}, {"text": "2", "thought": True}]}}]},
    {"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "image/png", "data": "AA=="}}]}}]},
    {"candidates": [{"content": {"parts": [{"text": "1"}]}, "finishReason": "SAFETY"}]},
    {"usageMetadata": {"promptTokenCount": -1}},
    {"usageMetadata": None},
    {"promptFeedback": {"blockReason": "SAFETY"}},
    {"error": {"code": 429, "message": "quota"}},
    "[DONE]",
]


@pytest.mark.parametrize("odd", ODD, ids=range(len(ODD)))
def test_an_event_the_rules_must_read_amid_plain_events_gives_the_rule_chains_chunks(odd: Any) -> None:
    def event(payload: Any) -> bytes:
        return f"data: {payload if isinstance(payload, str) else json.dumps(payload)}\r\n\r\n".encode()

    plain = event({"candidates": [{"content": {"parts": [{"text": "p"}]}}], "usageMetadata": {"totalTokenCount": 1}})
    end = event({"candidates": [{"content": {"parts": [{"text": "e"}]}, "finishReason": "STOP"}]})
    for reads in ([plain, plain * 2 + event(odd) + plain * 2 + end], [plain, plain + event(odd), plain + end]):
        fast, general = both(reads, None, "gemini")
        assert fast == general


@pytest.mark.parametrize("inner", ["\r", "\n", "\r\n"], ids=["cr", "lf", "crlf"])
@pytest.mark.parametrize("eol", ["\r\n", "\n"], ids=["crlf", "lf"])
def test_a_line_end_inside_a_payload_ends_its_line_in_a_read_of_several_events(eol: str, inner: str) -> None:
    def event(text: str, spread: bool = False) -> bytes:
        payload = json.dumps({"candidates": [{"content": {"parts": [{"text": text}]}}]})
        return f"data: {payload[:1]}{inner if spread else ''}{payload[1:]}{eol}{eol}".encode()

    for reads in ([event("a"), event("b") + event("c", spread=True) + event("d")],
                  [event("a"), event("b") + event("c") + event("d", spread=True)]):
        fast, general = both(reads, None, "gemini")
        assert fast == general
        assert getattr(getattr(fast[-1], "reason", None), "failure", None) is not None  # malformed, or cut


@pytest.mark.parametrize("last", [b"data: [DONE]\r\n", b"data: [DONE]\r\n\r", b"data: [DONE]\r\n\rdata: x"])
def test_a_crlf_line_kept_open_after_a_reads_events_is_read_as_the_framing_reads_it(last: bytes) -> None:
    plain = b'data: {"candidates":[{"content":{"parts":[{"text":"p"}]},"finishReason":"STOP"}]}\r\n\r\n'
    first = b'data: {"candidates":[{"content":{"parts":[{"text":"a"}]}}]}\r\n\r\n'
    for reads in ([first, first + plain + last, b"\r\n"], [first, first + last, b"\n"]):
        fast, general = both(reads, None, "gemini")
        assert fast == general


SKIPPED = [  # where the parser decodes a value (``Any``) that a struct would skip unchecked
    b'"usageMetadata":{"totalTokenCount":1,"b\x91d":1}',
    b'"usageMetadata":{"totalTokenCount":1,"serviceTier":"\x91"}',
    b'"usageMetadata":{"totalTokenCount":1,"promptTokensDetails":[{"tokenCount":1e999}]}',
    b'"usageMetadata":{"totalTokenCount":1,"nestedSentinel":{}}',
    b'"candidates":[{"content":{"parts":[{"text":"q"}],"role":"\x91"}}]',
    b'"candidates":[{"content":{"parts":[{"text":"q","inlineData":{"data":"\x91"}}]}}]',
    b'"candidates":[{"content":{"parts":[{"text":"q","thought":1e999}]}}]',
    b'"candidates":[{"content":{"parts":[{"text":"q"}]},"finishReason":"STOP","finishMessage":"\x91"}]',
    b'"candidates":[{"content":{"parts":[{"text":"q"}]},"safetyRatings":"\x91"}],"modelVersion":"\x91"',
]


@pytest.mark.parametrize("field", SKIPPED, ids=range(len(SKIPPED)))
def test_a_value_the_parser_decodes_is_checked_as_the_parser_checks_it(field: bytes) -> None:
    plain = b'data: {"candidates":[{"content":{"parts":[{"text":"p"}]}}]}\r\n\r\n'
    odd = b"data: {" + field + b"}\r\n\r\n"
    end = b'data: {"candidates":[{"finishReason":"STOP"}]}\r\n\r\n'
    for reads in ([plain, plain + odd + plain + end], [plain, odd, end]):
        fast, general = both(reads, None, "gemini")
        assert fast == general


def test_mutated_gemini_peer_streams_give_the_rule_chains_chunks() -> None:
    rng = random.Random(32)
    seeds = [path.read_bytes()[: fuzz.MAX_LEN] for path in CORPUS]
    for _ in range(400):
        fuzz.TARGETS["fast_path"](fuzz.mutate(rng, rng.choice(seeds), seeds))
