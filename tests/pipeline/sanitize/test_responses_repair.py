"""``ResponsesRepair`` fed bytes at several split sizes: one item per ``output_index`` (rotated ids, a late or blanked
``call_id``), a call never identified, a cut, and that any split gives the same bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from repair_helpers import SPLITS, blocks, body_of, ending, fed_around, named_events, repaired

import pipeline
from operators import Code, Failure
from pipeline.emulator.responses import RESPONSES_PROFILES
from pipeline.sanitize import ResponsesRepair
from pipeline.sanitize.responses import responses_error_body

ARGUMENTS = '{"city": "Paris"}'


def body(name: str) -> bytes:
    return body_of(RESPONSES_PROFILES, name)


def by_type(out: bytes, kind: str) -> list[Any]:
    return [data for _, data in named_events(out) if isinstance(data, dict) and data.get("type") == kind]


def item_ids(out: bytes, output_index: int) -> set[str | None]:
    """Every id the events give the item at ``output_index`` (items, ``item_id``s, the completed output's)."""
    ids = set()
    for _, data in named_events(out):
        if not isinstance(data, dict) or data.get("output_index") != output_index:
            continue
        ids.add(data["item"]["id"] if "item" in data else data.get("item_id"))
    return ids


@pytest.mark.parametrize("size", SPLITS)
@pytest.mark.parametrize("profile", ["clean", "clean-tool", "reasoning-tool"])
def test_a_stream_the_sdk_reads_right_passes_byte_for_byte(profile: str, size: int) -> None:
    out, repair = repaired(ResponsesRepair, body(profile), size)
    assert out == body(profile)
    assert ending(repair) in (("stop", None), ("tool-calls", None))


@pytest.mark.parametrize("size", SPLITS)
def test_rotated_item_ids_become_one_item_per_output_index(size: int) -> None:
    raw = body("rotated-ids")
    assert len(item_ids(raw, 0)) > 2  # the upstream's rotation
    out, repair = repaired(ResponsesRepair, raw, size)
    (message_id,) = item_ids(out, 0)
    (call_id_item,) = item_ids(out, 1)
    completed = by_type(out, "response.completed")[0]["response"]["output"]
    assert [item["id"] for item in completed] == [message_id, call_id_item]
    assert repair.failure is None
    texts = [d["delta"] for d in by_type(out, "response.output_text.delta")]
    assert texts == [d["delta"] for d in by_type(raw, "response.output_text.delta")]


@pytest.mark.parametrize("size", SPLITS)
def test_a_late_call_id_fills_in_the_held_added_item_and_nothing_passes_before_it(size: int) -> None:
    raw = body("late-id")
    cut = raw.index(b"event: response.output_item.done")
    before, out, repair = fed_around(ResponsesRepair, raw, cut, size)
    assert before == b""
    (added,) = by_type(out, "response.output_item.added")
    (done,) = by_type(out, "response.output_item.done")
    (sent_done,) = by_type(raw, "response.output_item.done")
    assert "call_id" not in by_type(raw, "response.output_item.added")[0]["item"]
    assert added["item"]["call_id"] == done["item"]["call_id"] == sent_done["item"]["call_id"]
    assert added["item"]["id"] == done["item"]["id"]
    assert "".join(d["delta"] for d in by_type(out, "response.function_call_arguments.delta")) == ARGUMENTS
    assert repair.failure is None


@pytest.mark.parametrize("size", SPLITS)
def test_a_blanked_call_id_on_done_gets_the_first_one(size: int) -> None:
    out, repair = repaired(ResponsesRepair, body("seed-bug"), size)
    (added,) = by_type(out, "response.output_item.added")
    (done,) = by_type(out, "response.output_item.done")
    assert (done["item"]["call_id"], done["item"]["name"]) == (added["item"]["call_id"], "get_weather")
    assert repair.failure is None


@pytest.mark.parametrize("size", SPLITS)
def test_a_call_never_identified_is_an_error_event_the_sdk_raises_before_any_content(size: int) -> None:
    out, repair = repaired(ResponsesRepair, body("never-identified"), size)
    assert ending(repair) == ("error", Code.MALFORMED_TOOL_CALL)
    kinds = [data["type"] for _, data in named_events(out)]
    assert kinds == ["response.created", "response.in_progress", "error"]
    error = named_events(out)[-1][1]
    assert error["code"] == "MALFORMED_TOOL_CALL"
    assert error["error"] == {"type": "llm_stream_error", "code": "MALFORMED_TOOL_CALL", "param": None,
                              "message": error["message"]}


def test_the_http_error_body_is_openais_shape_naming_our_code() -> None:
    got = json.loads(responses_error_body(Failure(Code.STREAM_CLOSED, "cut")))
    assert got == {"error": {"message": "STREAM_CLOSED: cut", "type": "llm_stream_error", "code": "STREAM_CLOSED",
                             "param": None}}


@pytest.mark.parametrize("size", SPLITS)
def test_a_cut_before_the_terminal_event_ends_with_stream_closed(size: int) -> None:
    raw = body("drop-mid-stream")
    out, repair = repaired(ResponsesRepair, raw, size)
    assert out.startswith(raw)
    assert ending(repair) == ("error", Code.STREAM_CLOSED)
    assert named_events(out)[-1][1]["error"]["code"] == "STREAM_CLOSED"


def test_an_upstream_error_event_passes_as_it_came() -> None:
    raw = body("error-midstream")
    out, repair = repaired(ResponsesRepair, raw, 64)
    assert out == raw
    assert ending(repair) == ("error", Code.SERVER)


def test_a_trailing_done_after_the_terminal_event_passes_and_nothing_else() -> None:
    raw = body("clean")
    extra = b'data: {"type":"response.output_text.delta","output_index":0,"delta":"late"}\n\n'
    out, repair = repaired(ResponsesRepair, raw + b"data: [DONE]\n\n" + extra, 9)
    assert out == raw + b"data: [DONE]\n\n"
    assert repair.failure is None


def test_a_second_added_for_an_index_is_dropped() -> None:
    raw = body("clean-tool")
    start = raw.index(b"event: response.output_item.added")
    added = raw[start : raw.index(b"\n\n", start) + 2]
    doubled = raw.replace(added, added + added.replace(b'"sequence_number":2', b'"sequence_number":99'))
    out, _ = repaired(ResponsesRepair, doubled, 13)
    assert out == raw


def test_a_lifecycle_event_with_another_response_id_gets_the_first() -> None:
    raw = body("clean")
    completed_at = raw.index(b"event: response.completed")
    changed = raw[:completed_at] + raw[completed_at:].replace(b'"id":"resp_emu', b'"id":"resp_other', 1)
    out, _ = repaired(ResponsesRepair, changed, 64)
    assert out == raw


def test_strict_makes_a_refusal_refusal_and_an_empty_answer_empty_response() -> None:
    raw = body("clean")
    refusal = raw.replace(b"response.output_text.delta", b"response.refusal.delta")
    plain, repair = repaired(ResponsesRepair, refusal, 64)
    assert plain == refusal
    assert repair.failure is None
    strict = ResponsesRepair(strict=True)
    terminal = refusal.index(b"event: response.completed")
    assert strict.feed(refusal[:terminal]) == b""  # a refusal says nothing: all held, so the error can come first
    out = strict.feed(refusal[terminal:]) + strict.close()
    assert strict.failure is not None
    assert strict.failure.code == Code.REFUSAL
    assert named_events(out)[-1][1]["type"] == "error"
    empty = b"".join(b for b in blocks(raw) if b"response.output_text.delta" not in b)
    out, repair = repaired(lambda: ResponsesRepair(strict=True), empty, 64)
    assert ending(repair) == ("error", Code.EMPTY_RESPONSE)
    clean, repair = repaired(lambda: ResponsesRepair(strict=True), raw, 64)
    assert clean == raw
    assert repair.failure is None


@pytest.mark.parametrize("size", SPLITS)
def test_a_chat_completions_stream_on_the_responses_path_is_malformed_response_naming_it(size: int) -> None:
    """Found by the SDK sweep (peers-formats/responses/02): it passed, and the SDK's responses.stream() raised
    RuntimeError; the library reads it as MALFORMED_RESPONSE naming the format (decision 0045)."""
    chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk",
             "choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    raw = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
    out, repair = repaired(ResponsesRepair, raw, size)
    library = pipeline.assemble(pipeline.collect(raw, format="responses")).finish.failure
    assert repair.failure is not None
    assert library is not None
    assert repair.failure.code == library.code == Code.MALFORMED_RESPONSE
    assert "format='chat'" in repair.failure.message
    assert repair.failure.message == library.message
    assert [data["code"] for _, data in named_events(out)] == [Code.MALFORMED_RESPONSE]
