"""``MessagesRepair`` fed bytes at several split sizes: what passes as it came, what is rewritten (a repeated or
blanked block start, a late id, ``[DONE]``, a cut, a call never identified), and that any split gives the same bytes."""

from __future__ import annotations

import json
import re

import pytest
from repair_helpers import SPLITS, blocks, body_of, ending, fed_around, named_events, repaired, without

import pipeline
from operators import Code, Failure
from pipeline.emulator.messages import MESSAGES_PROFILES
from pipeline.sanitize import MessagesRepair
from pipeline.sanitize.messages import messages_error_body

ARGUMENTS = '{"city": "Paris"}'


def body(name: str) -> bytes:
    return body_of(MESSAGES_PROFILES, name)


def starts(out: bytes) -> list[dict[str, object]]:
    return [data["content_block"] for name, data in named_events(out) if name == "content_block_start"]


def arguments(out: bytes) -> str:
    deltas = [data["delta"] for name, data in named_events(out) if name == "content_block_delta"]
    return "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("profile", ["clean", "clean-tool", "thinking-tool", "cut-after-stop"])
def test_a_stream_the_sdk_reads_right_passes_byte_for_byte(profile: str, size: int) -> None:
    out, repair = repaired(MessagesRepair, body(profile), size)
    assert out == body(profile)
    assert ending(repair) in (("stop", None), ("tool-calls", None))


@pytest.mark.parametrize("size", SPLITS)
def test_a_repeated_blanked_block_start_is_dropped_and_the_first_identity_kept(size: int) -> None:
    raw = body("seed-bug")
    out, repair = repaired(MessagesRepair, raw, size)
    (start,) = starts(out)
    assert str(start["id"]).startswith("toolu_")
    assert start["name"] == "get_weather"
    assert arguments(out) == ARGUMENTS
    repeats = blocks(raw)[4::2][:2]  # the second and third starts, as the upstream sent them
    assert all(b'"content_block_start"' in r for r in repeats)
    assert out == without(raw, lambda block: block in repeats)
    assert repair.failure is None
    assert repair.finish is not None
    assert repair.finish.reason.kind == "tool-calls"


@pytest.mark.parametrize("size", SPLITS)
def test_a_late_id_fills_in_the_held_start_and_nothing_passes_before_it(size: int) -> None:
    raw = body("late-block-id")
    cut = raw.index(b"event: content_block_start", raw.index(b"event: content_block_start") + 1)
    before, out, repair = fed_around(MessagesRepair, raw, cut, size)
    assert before == b""  # the preamble and the unidentified block are held
    (start,) = starts(out)
    assert str(start["id"]).startswith("toolu_")
    assert start["name"] == "get_weather"
    assert arguments(out) == ARGUMENTS
    assert [name for name, _ in named_events(out)][:3] == ["message_start", "ping", "content_block_start"]
    assert repair.failure is None


@pytest.mark.parametrize("size", SPLITS)
def test_a_tool_use_never_identified_is_an_anthropic_error_event_before_any_content(size: int) -> None:
    out, repair = repaired(MessagesRepair, body("never-identified"), size)
    assert ending(repair) == ("error", Code.MALFORMED_TOOL_CALL)
    assert repair.finish is not None
    assert repair.finish.reason.failure == repair.failure
    names = [name for name, _ in named_events(out)]
    assert names == ["message_start", "ping", "error"]
    error = named_events(out)[-1][1]
    assert error["type"] == "error"
    assert error["error"]["type"] == "api_error"
    assert error["error"]["message"].startswith("MALFORMED_TOOL_CALL: tool_use block 0 was never identified")


def test_the_http_error_body_is_anthropics_shape_naming_our_code() -> None:
    body_json = json.loads(messages_error_body(Failure(Code.MALFORMED_TOOL_CALL, "never identified")))
    assert body_json == {"type": "error", "error": {"type": "api_error", "code": "MALFORMED_TOOL_CALL",
                                                     "message": "MALFORMED_TOOL_CALL: never identified"}}
    limited = json.loads(messages_error_body(Failure(Code.RATE_LIMIT, "slow down", status=429)))
    assert limited["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize("size", SPLITS)
def test_a_trailing_done_is_dropped(size: int) -> None:
    raw = body("trailing-done")
    out, repair = repaired(MessagesRepair, raw, size)
    assert out == raw.removesuffix(b"data: [DONE]\n\n")
    assert repair.failure is None


@pytest.mark.parametrize("size", SPLITS)
def test_a_cut_before_the_stop_reason_ends_with_stream_closed(size: int) -> None:
    raw = body("drop-mid-stream")
    out, repair = repaired(MessagesRepair, raw, size)
    assert out.startswith(raw)
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    assert named_events(out)[-1][0] == "error"


def test_a_body_broken_off_ends_with_the_failure_given() -> None:
    raw = body("clean")
    repair = MessagesRepair()
    half = raw[: raw.index(b"event: content_block_stop")]
    out = repair.feed(half) + repair.fail(Failure(Code.TIMEOUT, "idle for 30 s"))
    assert out.startswith(half)
    assert named_events(out)[-1][1]["error"]["message"] == "TIMEOUT: idle for 30 s"
    assert repair.failure == Failure(Code.TIMEOUT, "idle for 30 s")
    assert repair.feed(raw) == b""
    assert repair.close() == b""


def test_an_upstream_error_event_passes_as_it_came_and_is_the_failure() -> None:
    raw = body("error-midstream")
    out, repair = repaired(MessagesRepair, raw, 64)
    assert out == raw
    assert ending(repair) == ("error", Code.SERVER)


def _library_failure(raw: bytes) -> str | None:
    finish = pipeline.assemble(pipeline.collect(raw, format="messages")).finish
    return finish.code if finish.kind == "error" else None


@pytest.mark.parametrize("size", SPLITS)
def test_a_message_start_without_a_message_is_malformed_response_as_the_library_reads_it(size: int) -> None:
    """Found by the SDK sweep (peers-formats/messages/25): it passed, and the anthropic SDK raised AttributeError."""
    raw = b'event: message_start\ndata: {"type":"message_start","message":null}\n\n' + body("clean")
    out, repair = repaired(MessagesRepair, raw, size)
    assert repair.failure is not None
    assert repair.failure.code == Code.MALFORMED_RESPONSE == _library_failure(raw)
    assert [name for name, _ in named_events(out)] == ["error"]  # nothing before it: through the transport, HTTP


@pytest.mark.parametrize("size", SPLITS)
def test_a_second_message_start_with_another_id_is_stream_closed_as_the_library_reads_it(size: int) -> None:
    """Found by the SDK sweep (peers-formats/messages/17): it passed, and the anthropic SDK returned one message
    merged from two (decision 0044: the first was cut). A second start with the first's id still passes."""
    parts = blocks(body("clean"))
    again = parts[0].replace(b"msg_emuchatcmpl-repairtest", b"msg_second")
    raw = b"".join([*parts[:5], again, *parts[5:]])
    out, repair = repaired(MessagesRepair, raw, size)
    assert repair.failure is not None
    assert repair.failure.code == Code.STREAM_CLOSED == _library_failure(raw)
    assert out.startswith(b"".join(parts[:5]))
    assert b'"id":"msg_second"' not in out  # the second start is not passed on
    assert named_events(out)[-1][0] == "error"
    duplicate = b"".join([*parts[:5], parts[0], *parts[5:]])
    out, repair = repaired(MessagesRepair, duplicate, size)
    assert (out, repair.failure, _library_failure(duplicate)) == (duplicate, None, None)


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("payload", [
    {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
    {"type": "response.created", "response": {"id": "resp_1"}},
], ids=["chat", "responses"])
def test_a_stream_of_another_format_is_malformed_response_naming_it_as_the_library_does(
    payload: dict[str, object], size: int
) -> None:
    raw = f"data: {json.dumps(payload)}\n\n".encode() + body("clean")
    out, repair = repaired(MessagesRepair, raw, size)
    library = pipeline.assemble(pipeline.collect(raw, format="messages")).finish.failure
    assert repair.failure is not None
    assert library is not None
    assert (repair.failure.code, repair.failure.message) == (Code.MALFORMED_RESPONSE, library.message)
    assert [name for name, _ in named_events(out)] == ["error"]


def test_a_message_start_after_a_held_block_keeps_it_held_and_never_identified_is_an_error() -> None:
    """Found by test_repair_any_split's hypothesis run: a continuation's ``message_start`` after an unidentified
    ``tool_use`` start marked its index as a started block, dropping the held one, and the end raised StopIteration."""
    raw = (b'data: {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":null,"name":""}}\n\n'
           b'data: {"type":"message_start","message":{"content":[{"type":"tool_use"}]}}\n\n'
           b'data: {"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":null}\n\n')
    out, repair = repaired(MessagesRepair, raw, len(raw))
    assert repair.failure is not None
    assert repair.failure.code == Code.MALFORMED_TOOL_CALL
    assert named_events(out)[-1][0] == "error"


def test_the_last_event_without_its_blank_line_is_read_and_a_cut_line_dropped() -> None:
    raw = body("clean")
    out, repair = repaired(MessagesRepair, raw.removesuffix(b"\n\n"), 5)
    assert out == raw.removesuffix(b"\n\n")
    assert repair.failure is None
    cut = raw[: raw.index(b"event: message_delta")] + b'event: message_delta\ndata: {"type":"mess'
    out, repair = repaired(MessagesRepair, cut, 5)
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    assert b"event: message_delta" not in out
    assert named_events(out)[-1][0] == "error"


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("profile", ["clean", "seed-bug", "thinking-tool"])
def test_a_data_only_stream_gets_each_event_named_after_its_type(profile: str, size: int) -> None:
    named = repaired(MessagesRepair, body(profile), 1 << 20)[0]
    data_only = re.sub(rb"(?m)^event: [a-z_]+\n", b"", body(profile))
    out, repair = repaired(MessagesRepair, data_only, size)
    assert out == named  # the emulator names every event after its type: the same bytes
    assert repair.failure is None


def test_reads_given_as_a_reused_buffer_give_the_same_bytes() -> None:
    raw = body("seed-bug")
    repair = MessagesRepair()
    buffer = bytearray(7)
    out = []
    for start in range(0, len(raw), 7):
        piece = raw[start : start + 7]
        buffer[: len(piece)] = piece
        out.append(repair.feed(memoryview(buffer)[: len(piece)]))  # type: ignore[arg-type]
    out.append(repair.close())
    assert b"".join(out) == repaired(MessagesRepair, raw, 7)[0]


def test_crlf_framing_passes_byte_for_byte() -> None:
    raw = body("clean").replace(b"\n", b"\r\n")
    for size in SPLITS:
        out, repair = repaired(MessagesRepair, raw, size)
        assert out == raw
        assert repair.failure is None


def test_the_request_api_key_is_redacted_from_what_passes() -> None:
    key = "sk-ant-secret-key-0123"
    raw = body("clean").replace(b"Hello", key.encode())
    out, _ = repaired(lambda: MessagesRepair(api_key=key), raw, 7)
    assert key.encode() not in out
    assert b"[redacted]" in out


def test_bytes_after_message_stop_are_neither_passed_on_nor_kept() -> None:
    from operators import Limits

    repair = MessagesRepair(limits=Limits(max_event_bytes=1024))
    out = repair.feed(body("clean"))
    assert out == body("clean")
    assert repair.feed(b"data: " + b"x" * 5000) == b""
    assert repair.feed(b"y" * 5000) == b""
    assert repair._split.pending <= 1024  # an endless line after the end is not buffered
    assert repair.close() == b""
    assert repair.failure is None


def test_what_waits_behind_an_unidentified_call_is_bounded_by_max_text_bytes() -> None:
    from operators import Limits

    raw = body("late-block-id")
    held_part = raw[: raw.index(b"event: content_block_start", raw.index(b"event: content_block_start") + 1)]
    repair = MessagesRepair(limits=Limits(max_text_bytes=4096))
    delta = (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
             b'"delta":{"type":"input_json_delta","partial_json":"aaaaaaaaaaaaaaaaaaaa"}}\n\n')
    out = repair.feed(held_part) + repair.feed(delta * 40)
    assert ending(repair) == ("error", Code.LIMIT_EXCEEDED)
    assert named_events(out)[-1][0] == "error"


def test_an_event_over_the_limit_ends_in_limit_exceeded() -> None:
    from operators import Limits

    repair = MessagesRepair(limits=Limits(max_event_bytes=1024))
    out = repair.feed(b"event: content_block_delta\ndata: " + b"x" * 2000)
    assert ending(repair) == ("error", Code.LIMIT_EXCEEDED)
    assert named_events(out)[-1][0] == "error"


def _empty_answer() -> bytes:
    raw = body("clean")
    start = raw.index(b"event: content_block_start")
    return raw[:start] + raw[raw.index(b"event: message_delta") :]


def test_strict_makes_an_empty_answer_empty_response_before_any_content() -> None:
    plain, repair = repaired(MessagesRepair, _empty_answer(), 17)
    assert plain == _empty_answer()
    assert repair.failure is None
    out, repair = repaired(lambda: MessagesRepair(strict=True), _empty_answer(), 17)
    assert ending(repair) == ("error", Code.EMPTY_RESPONSE)
    assert [name for name, _ in named_events(out)] == ["message_start", "message_delta", "error"]


def test_strict_makes_a_refusal_stop_reason_refusal() -> None:
    raw = body("clean").replace(b'"stop_reason":"end_turn"', b'"stop_reason":"refusal"')
    plain, repair = repaired(MessagesRepair, raw, 64)
    assert plain == raw
    assert repair.failure is None
    assert repair.finish is not None
    assert repair.finish.reason.code == Code.REFUSAL  # the finish says so; the SDK reads stop_reason itself
    out, repair = repaired(lambda: MessagesRepair(strict=True), raw, 64)
    assert ending(repair) == ("error", Code.REFUSAL)
    assert named_events(out)[-1][0] == "error"
    clean, repair = repaired(lambda: MessagesRepair(strict=True), body("clean"), 64)
    assert clean == body("clean")
    assert repair.failure is None
