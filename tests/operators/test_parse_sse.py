"""parse_sse: bytes split anywhere to typed wire values; [DONE] to Done; malformed, in-band errors and a cut stream
to Halt. The operator is tested alone: batches of bytes in, batches of wire values out."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
import reactivex
from reactivex import abc
from reactivex.disposable import Disposable
from reactivex.subject import Subject
from reactivex.testing.marbles import marbles_testing

import pipeline
from operators import Anomaly, Code, Failure, parse_sse
from operators.extend import Batch, Done, Halt
from operators.wire import WireChunk, decode_chunk

Json = dict[str, Any]

TEXT: Json = {"choices": [{"index": 0, "delta": {"content": "héllo 😀"}}]}
CALL: Json = {
    "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "Glob"}}]}}]
}
STOP: Json = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
USAGE: Json = {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}


# -- helpers ---------------------------------------------------------------------------------------------------------


def payload(value: Json | list[Any] | str) -> str:
    """A ``data:`` payload: JSON for a dict or list, the string itself otherwise (UTF-8 kept as is)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def event(value: Json | list[Any] | str, *, eol: str = "\n", field: str = "data: ") -> bytes:
    """One SSE event carrying ``value`` as a single data line."""
    return f"{field}{payload(value)}{eol}{eol}".encode()


def done(eol: str = "\n") -> bytes:
    return event("[DONE]", eol=eol)


def wire(value: Json | list[Any]) -> WireChunk:
    """The typed wire value ``parse_sse`` should produce for ``value``."""
    return decode_chunk(json.dumps(value).encode())


@attrs.define
class Run:
    """What the operator emitted: the batches, and how it ended."""

    batches: list[Batch[Any]] = attrs.Factory(list)
    completed: bool = False
    error: Exception | None = None

    @property
    def items(self) -> list[Any]:
        return [item for batch in self.batches for item in batch]

    def on_next(self, batch: Batch[Any]) -> None:
        self.batches.append(batch)

    def on_error(self, error: Exception) -> None:
        self.error = error

    def on_completed(self) -> None:
        self.completed = True


def feed(*pieces: bytes, comments: bool = False) -> Run:
    """Feeds ``pieces`` (one per read) to a fresh ``parse_sse`` and records what comes out."""
    run = Run()
    operator = parse_sse(comments=comments)
    reactivex.from_iterable(pieces).pipe(operator).subscribe(run.on_next, run.on_error, run.on_completed)
    return run


def split_at(data: bytes, *positions: int) -> list[bytes]:
    cuts = [0, *positions, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(cuts)]


def halt(run: Run) -> Failure:
    last = run.items[-1]
    assert isinstance(last, Halt), f"expected the stream to end with a Halt, got {run.items!r}"
    return last.failure


def kinds(run: Run) -> list[str]:
    return [item.kind for item in run.items if isinstance(item, Anomaly)]


# -- typed values and framing ----------------------------------------------------------------------------------------


def test_each_payload_becomes_one_typed_wire_chunk_and_done_ends_the_stream() -> None:
    run = feed(event(TEXT) + event(STOP) + done())

    assert run.batches == [[wire(TEXT), wire(STOP), Done()]]
    assert run.completed
    assert run.error is None


def test_the_batches_follow_the_reads() -> None:
    run = feed(event(TEXT), event(STOP), done())

    assert run.batches == [[wire(TEXT)], [wire(STOP)], [Done()]]


STREAM = b"".join([b": keep-alive\n", event(TEXT), event(CALL), event(STOP), event(USAGE), done()])


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_bytes_split_at_any_position_give_the_same_values(eol: str) -> None:
    data = STREAM.replace(b"\n", eol.encode())
    whole = feed(data).items

    for position in range(len(data) + 1):
        assert feed(*split_at(data, position)).items == whole, f"split at byte {position}"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_one_byte_reads_give_the_same_values(eol: str) -> None:
    data = STREAM.replace(b"\n", eol.encode())

    assert feed(*(data[i : i + 1] for i in range(len(data)))).items == feed(data).items


def test_a_utf8_character_split_across_reads_is_kept_whole() -> None:
    data = event({"choices": [{"delta": {"content": "😀"}}]}) + done()
    inside = data.index("😀".encode()) + 2  # between the second and third byte of the 4-byte character

    run = feed(*split_at(data, inside))

    assert run.items == [wire({"choices": [{"delta": {"content": "😀"}}]}), Done()]


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_lf_cr_and_crlf_line_ends_frame_the_same_events(eol: str) -> None:
    assert feed(event(TEXT, eol=eol) + event(STOP, eol=eol) + done(eol)).items == [wire(TEXT), wire(STOP), Done()]


def test_a_crlf_split_between_cr_and_lf_is_one_line_end() -> None:
    # If the LF after a read ending in CR counted as a line end of its own, the first data line would be dispatched
    # alone as '{"choices":' (malformed) instead of being joined with the second.
    data = b'data: {"choices":\r\ndata: []}\r\n\r\n' + done("\r\n")
    after_first_cr = data.index(b"\r") + 1

    assert feed(*split_at(data, after_first_cr)).items == [wire({"choices": []}), Done()]


def test_an_empty_read_between_cr_and_lf_keeps_them_one_line_end() -> None:
    run = feed(b'data: {"choices":\r', b"", b"\ndata: []}\r\n\r\n", done())

    assert run.items == [wire({"choices": []}), Done()]


def test_a_leading_bom_is_dropped() -> None:
    assert feed(b"\xef\xbb\xbf" + event(TEXT) + done()).items == [wire(TEXT), Done()]


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_leading_bom_split_across_reads_is_dropped(cut: int) -> None:
    data = b"\xef\xbb\xbf" + event(TEXT) + done()

    assert feed(*split_at(data, cut)).items == [wire(TEXT), Done()]


def test_a_bom_split_into_one_byte_reads_is_dropped() -> None:
    assert feed(b"\xef", b"\xbb", b"\xbf", event(TEXT), done()).items == [wire(TEXT), Done()]


def test_comment_lines_are_reported_as_comment_anomalies_when_asked_for_and_dispatch_nothing() -> None:
    run = feed(b": OPENROUTER PROCESSING\n\n" + event(TEXT) + b":\n" + done(), comments=True)

    assert [type(item) for item in run.items] == [Anomaly, WireChunk, Anomaly, Done]
    assert kinds(run) == ["comment", "comment"]
    assert "OPENROUTER PROCESSING" in run.items[0].detail


def test_comment_lines_cost_no_object_unless_asked_for() -> None:
    assert feed(b": OPENROUTER PROCESSING\n\n" + event(TEXT) + b":\n" + done()).items == [wire(TEXT), Done()]


@pytest.mark.parametrize("field", ["data: ", "data:"], ids=["with-space", "without-space"])
def test_data_field_is_read_with_or_without_one_space(field: str) -> None:
    assert feed(event(TEXT, field=field) + done()).items == [wire(TEXT), Done()]


def test_several_data_lines_are_joined_into_one_payload() -> None:
    data = b'data: {"choices":\ndata: [{"delta": {"content": "hi"}}]}\n\n' + done()

    assert feed(data).items == [wire({"choices": [{"delta": {"content": "hi"}}]}), Done()]


def test_several_data_lines_are_joined_with_a_newline() -> None:
    # The quote of the (malformed) payload shows the joiner.
    assert halt(feed(b"data: first\ndata: second\n\n")).message == "malformed SSE payload: first\nsecond"


def test_event_id_and_retry_fields_change_nothing() -> None:
    data = b"event: message\nid: 42\nretry: 3000\n" + event(TEXT) + b"id: 43\n" + done()

    assert feed(data).items == [wire(TEXT), Done()]


def test_an_event_without_data_dispatches_nothing() -> None:
    assert feed(b"event: ping\n\n" + b"event: message\nid: 1\n\n" + done()).items == [Done()]


def test_blank_lines_after_an_id_produce_nothing() -> None:
    # httpx-sse yields an empty event for each of these blank lines once an id was seen; parse_sse does not.
    assert feed(b"id: 7\n\n\n\n\n" + event(TEXT) + b"\n\n" + done()).items == [wire(TEXT), Done()]


# -- [DONE] ----------------------------------------------------------------------------------------------------------


def test_done_gives_done_and_completes() -> None:
    run = feed(done())

    assert run.batches == [[Done()]]
    assert run.completed
    assert run.error is None


def test_payloads_after_done_in_the_same_read_are_not_read_and_are_reported() -> None:
    run = feed(done() + event(TEXT) + event(STOP))

    assert run.items == [Anomaly("payload-after-done", None, "data arrived after [DONE]; it was not read"), Done()]
    assert run.completed


def test_reads_after_done_are_not_read() -> None:
    run = feed(event(TEXT), done(), event(STOP), b"data: not json\n\n")

    assert run.batches == [[wire(TEXT)], [Done()]]
    assert run.completed
    assert run.error is None


def test_done_disposes_the_upstream_subscription() -> None:
    source: Subject[bytes] = Subject()
    run = Run()
    source.pipe(parse_sse()).subscribe(run.on_next, run.on_error, run.on_completed)
    assert source.observers, "parse_sse subscribed to its source"

    source.on_next(event(TEXT) + done())

    assert source.observers == []
    source.on_next(event(STOP))  # nobody listens any more
    assert run.batches == [[wire(TEXT), Done()]]


def test_done_disposes_a_source_that_records_its_disposal() -> None:
    observers: list[abc.ObserverBase[bytes]] = []
    disposed: list[bool] = []

    def subscribe(observer: abc.ObserverBase[bytes], scheduler: abc.SchedulerBase | None = None) -> Disposable:
        observers.append(observer)
        return Disposable(lambda: disposed.append(True))

    run = Run()
    reactivex.create(subscribe).pipe(parse_sse()).subscribe(run.on_next, run.on_error, run.on_completed)
    observers[0].on_next(event(TEXT))
    assert disposed == []

    observers[0].on_next(done())

    assert disposed == [True]
    assert run.completed


def test_done_stops_reading_a_synchronous_byte_source() -> None:
    pulled: list[bytes] = []

    def reads() -> Iterator[bytes]:
        for piece in (event(TEXT), done(), event(STOP), event(USAGE)):
            pulled.append(piece)
            yield piece

    run = Run()
    pipeline.bytes_source(reads()).pipe(parse_sse()).subscribe(run.on_next, run.on_error, run.on_completed)

    assert run.items == [wire(TEXT), Done()]
    assert pulled == [event(TEXT), done()]


def test_the_marble_of_the_docstring() -> None:
    with marbles_testing() as (start, cold, _hot, exp):
        reads = cold("-a-b-|", {"a": event(TEXT) + b"da", "b": b"ta: [DONE]\n\n"}, None)

        assert start(reads.pipe(parse_sse())) == exp("-c-(d,|)", {"c": [wire(TEXT)], "d": [Done()]}, None)


# -- malformed payloads ----------------------------------------------------------------------------------------------


def test_malformed_json_halts_quoting_the_first_120_characters() -> None:
    text = "this is not JSON " + "x" * 200
    run = feed(event(TEXT) + event(text), event(STOP), done())

    assert run.items == [wire(TEXT), Halt(Failure(Code.MALFORMED_RESPONSE, f"malformed SSE payload: {text[:120]}"))]
    assert run.completed


@pytest.mark.parametrize(
    "value",
    [
        [1, 2],
        {"choices": "x"},
        {"choices": [], "usage": {"prompt_tokens": "5", "completion_tokens": 2}},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": {"path": "*.py"}}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": 7}}]}}]},
    ],
    ids=["array", "choices-string", "usage-string-count", "arguments-object", "arguments-number"],
)
def test_a_payload_of_the_wrong_shape_halts_malformed_response(value: Json | list[Any]) -> None:
    run = feed(event(value), event(TEXT), done())

    failure = halt(run)
    assert failure.code == Code.MALFORMED_RESPONSE
    assert failure.message.startswith(f"malformed SSE payload: {payload(value)[:120]}")
    assert run.items == [Halt(failure)]
    assert run.completed


@pytest.mark.parametrize("value", [7, None, "", {"nested": ["x"]}, ["a", "b"], True, 1.5], ids=repr)
def test_any_json_is_accepted_for_a_tool_call_id_and_name(value: Any) -> None:
    value_json: Json = {
        "choices": [{"delta": {"tool_calls": [{"index": 0, "id": value, "function": {"name": value}}]}}]
    }

    (chunk, end) = feed(event(value_json) + done()).items

    assert end == Done()
    assert isinstance(chunk, WireChunk)
    assert chunk.choices is not None
    delta = chunk.choices[0].delta
    assert delta is not None
    assert delta.tool_calls is not None
    call = delta.tool_calls[0]
    assert call.id == value
    assert call.function is not None
    assert call.function.name == value


def test_a_halt_is_not_reported_as_payload_after_done() -> None:
    run = feed(b"data: nope\n\n" + event(TEXT))

    assert halt(run).code == Code.MALFORMED_RESPONSE
    assert "payload-after-done" not in kinds(run)


# -- in-band errors --------------------------------------------------------------------------------------------------


def test_a_top_level_error_without_a_status_halts_as_server() -> None:
    error: Json = {"error": {"message": "upstream overloaded", "type": "server_error"}}
    run = feed(event(error), event(TEXT), done())

    assert run.items == [wire(error), Halt(Failure("SERVER", "upstream overloaded", status=None))]
    assert run.completed


@pytest.mark.parametrize(
    ("error", "code", "status"),
    [
        ({"message": "slow down", "code": 429}, "RATE_LIMIT", 429),
        ({"message": "bad tool schema", "status_code": 400}, "INVALID_REQUEST", 400),
        ({"message": "gateway broke", "code": 502}, "SERVER", 502),
        ({"message": "no such model", "status_code": 404}, "HTTP_404", 404),
    ],
    ids=["code-429", "status_code-400", "code-502", "status_code-404"],
)
def test_a_top_level_error_is_classified_with_the_status_it_states(error: Json, code: str, status: int) -> None:
    failure = halt(feed(event({"error": error}) + done()))

    assert failure == Failure(code, error["message"], status=status)


def test_a_string_error_halts_with_that_string() -> None:
    assert halt(feed(event({"error": "something broke"}) + done())) == Failure("SERVER", "something broke")


def test_a_null_error_is_no_error() -> None:
    value: Json = {"choices": [], "error": None}

    assert feed(event(value) + done()).items == [wire(value), Done()]


def test_an_error_event_halts_classified() -> None:  # Groq: "event: error" before the data line
    data = b'event: error\ndata: {"error": {"message": "rate limited", "type": "rate_limit_error"}}\n\n' + done()

    run = feed(event(TEXT) + data.removesuffix(done()), done())

    assert run.items == [wire(TEXT), Halt(Failure("RATE_LIMIT", "rate limited"))]
    assert run.completed


def test_an_error_event_that_is_not_json_halts_with_its_text() -> None:
    failure = halt(feed(b"event: error\ndata: upstream exploded\n\n" + done()))

    assert failure == Failure("SERVER", "upstream exploded")


def test_an_error_event_nested_too_deep_for_json_still_halts_classified() -> None:
    run = feed(b"event: error\ndata: " + b"[" * 1000 + b"\n\n")

    assert run.error is None
    assert halt(run).code == "SERVER"


def test_the_event_name_is_forgotten_after_its_event() -> None:
    data = b"event: error\n\n" + event(TEXT) + done()

    assert feed(data).items == [wire(TEXT), Done()]


# -- the end of the bytes --------------------------------------------------------------------------------------------


def test_the_end_of_the_bytes_before_done_halts_stream_closed() -> None:
    run = feed(event(TEXT))

    assert run.items == [wire(TEXT), Halt(Failure(Code.STREAM_CLOSED, "SSE stream ended without [DONE]"))]
    assert run.completed


def test_no_bytes_at_all_halts_stream_closed() -> None:
    assert halt(feed()).code == Code.STREAM_CLOSED


def test_the_end_after_a_finish_reason_without_done_is_a_synthetic_done() -> None:
    run = feed(event(TEXT), event(STOP), event(USAGE))

    assert run.items == [
        wire(TEXT),
        wire(STOP),
        wire(USAGE),
        Anomaly("missing-done", None, "the stream ended after a finish_reason without [DONE]"),
        Done(synthetic=True),
    ]
    assert run.completed


def test_an_unterminated_last_event_is_discarded() -> None:
    run = feed(event(TEXT) + event(STOP).rstrip(b"\n"))

    assert run.items == [
        wire(TEXT),
        Anomaly("unterminated-event", None, "the last event had no terminating blank line; discarded"),
        Halt(Failure(Code.STREAM_CLOSED, "SSE stream ended without [DONE]")),
    ]


def test_an_unterminated_done_after_a_finish_reason_is_still_a_synthetic_done() -> None:
    run = feed(event(STOP) + b"data: [DONE]\n")

    assert kinds(run) == ["unterminated-event", "missing-done"]
    assert run.items[-1] == Done(synthetic=True)


# -- per-subscription state ------------------------------------------------------------------------------------------


def test_each_subscription_starts_from_fresh_state() -> None:
    # A shared state would have dropped the BOM only once and would stay finished after the first [DONE].
    reads = reactivex.from_iterable([b"\xef\xbb", b"\xbf" + event(TEXT) + b"da", b"ta: [DONE]\n\n"])
    parsed = reads.pipe(parse_sse())

    first, second = Run(), Run()
    parsed.subscribe(first.on_next, first.on_error, first.on_completed)
    parsed.subscribe(second.on_next, second.on_error, second.on_completed)

    assert first.batches == second.batches == [[wire(TEXT)], [Done()]]
    assert first.completed
    assert second.completed
