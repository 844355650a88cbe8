"""Invariants of parse_responses_sse under the unchanged rule chain (hypothesis).

1. Any split of a fixture's bytes (or of a generated stream's) gives the same chunks, anomalies included.
2. No tool-call block-end without a non-empty id and name: a function_call identified by its first non-empty
   ``call_id`` and ``name`` (on ``output_item.added`` or ``.done``) is closed with them; any other makes the response
   end with ``MALFORMED_TOOL_CALL`` and no block-end at all.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import attrs
from corpus import RESPONSES_STREAMS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from operators import Anomaly, BlockEnd, Chunk, Code, Finish, ToolCallBlock
from operators.responses import parse_responses_sse
from pipeline.compose import apply, bytes_source, protocol_rules, to_chunks

FIXTURES = RESPONSES_STREAMS
STREAMS = sorted(FIXTURES.glob("*.sse"))
FIXTURE_BYTES = [p.read_bytes() for p in STREAMS]

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_ABSENT: Any = object()
IDENTITY = st.sampled_from([_ABSENT, None, "", 7])  # never identity


def collect(source: bytes | list[bytes]) -> list[Chunk]:
    out: list[Chunk] = []
    chain = to_chunks(anomalies=True)(apply(parse_responses_sse()(bytes_source(source)), protocol_rules()))
    chain.subscribe(on_next=out.append)
    return out


@st.composite
def splits(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at arbitrary positions into non-empty pieces (inside UTF-8 characters more often than chance)."""
    if len(data) < 2:
        return [data]
    tricky = [i for i in range(1, len(data)) if 0x80 <= data[i] < 0xC0 or data[i - 1] == 0x0A]
    position = st.integers(1, len(data) - 1)
    if tricky:
        position = st.one_of(position, st.sampled_from(tricky))
    cuts = sorted(draw(st.lists(position, max_size=16, unique=True)))
    edges = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


# -- generated streams -----------------------------------------------------------------------------------------------


@attrs.frozen
class Call:
    output_index: int
    added: tuple[Any, Any]  # (call_id, name) on output_item.added
    done: tuple[Any, Any]  # on output_item.done
    deltas: tuple[str, ...]
    arguments: str

    def identity(self) -> tuple[str | None, str | None]:
        def first(values: tuple[Any, Any]) -> str | None:
            return next((v for v in values if isinstance(v, str) and v), None)

        return first((self.added[0], self.done[0])), first((self.added[1], self.done[1]))


def ev(kind: str, **fields: Any) -> bytes:
    data = json.dumps({"type": kind, **fields}, ensure_ascii=False)
    return f"event: {kind}\ndata: {data}\n\n".encode()


def item(call: Call, values: tuple[Any, Any], arguments: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function_call", "id": f"fc_{call.output_index}", "arguments": arguments}
    for key, value in zip(("call_id", "name"), values, strict=True):
        if value is not _ABSENT:
            out[key] = value
    return out


@st.composite
def calls(draw: st.DrawFn, output_index: int) -> Call:
    call_id, name = f"call_{output_index}", f"tool_{output_index}"
    added = (draw(st.one_of(st.just(call_id), IDENTITY)), draw(st.one_of(st.just(name), IDENTITY)))
    done = (draw(st.one_of(st.just(call_id), IDENTITY)), draw(st.one_of(st.just(name), IDENTITY)))
    arguments = draw(st.sampled_from(["", "{}", '{"city":"Zürich"}', '{"q":"😀"}']))
    if draw(st.booleans()) and arguments:  # streamed, else given whole (LM Studio)
        cuts = sorted(draw(st.lists(st.integers(1, len(arguments)), max_size=3, unique=True)))
        edges = [0, *cuts, len(arguments)]
        deltas = tuple(arguments[a:b] for a, b in itertools.pairwise(edges) if b > a)
    else:
        deltas = ()
    return Call(output_index, added, done, deltas, arguments)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[Call]]:
    events = [ev("response.created", response={"status": "in_progress"})]
    made: list[Call] = []
    for output_index in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            events.append(ev("response.output_text.delta", output_index=output_index, delta="héllo "))
            continue
        call = draw(calls(output_index))
        made.append(call)
        rotated = draw(st.booleans())  # GitHub Copilot: a new item_id on every event
        events.append(ev("response.output_item.added", output_index=output_index, item=item(call, call.added, "")))
        for n, delta in enumerate(call.deltas):
            item_id = f"rot_{n}" if rotated else f"fc_{output_index}"
            events.append(ev("response.function_call_arguments.delta", output_index=output_index, item_id=item_id,
                             delta=delta))
        events.append(ev("response.function_call_arguments.done", output_index=output_index,
                         item_id=f"fc_{output_index}", arguments=call.arguments))
        events.append(ev("response.output_item.done", output_index=output_index,
                         item=item(call, call.done, call.arguments)))
    usage = {"input_tokens": 9, "output_tokens": 3, "total_tokens": 12}
    events.append(ev("response.completed", response={"status": "completed", "usage": usage}))
    return b"".join(events), made


# -- 1. any split gives the same chunks ------------------------------------------------------------------------------


@FAST
@given(data=st.data(), which=st.integers(0, max(len(FIXTURE_BYTES) - 1, 0)))
def test_any_split_of_a_fixture_gives_the_same_chunks(data: st.DataObject, which: int) -> None:
    if not FIXTURE_BYTES:
        return
    raw = FIXTURE_BYTES[which]
    pieces = data.draw(splits(raw))

    assert collect(pieces) == collect(raw)


@FAST
@given(data=st.data(), stream=streams())
def test_any_split_of_a_generated_stream_gives_the_same_chunks(data: st.DataObject,
                                                               stream: tuple[bytes, list[Call]]) -> None:
    raw, _ = stream

    assert collect(data.draw(splits(raw))) == collect(raw)


# -- 2. no tool-call block-end without identity ----------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream=streams())
def test_no_tool_call_block_end_without_a_non_empty_id_and_name(stream: tuple[bytes, list[Call]]) -> None:
    raw, made = stream
    out = collect(raw)
    finish = out[-1]
    assert isinstance(finish, Finish)
    ends = [c.block for c in out if isinstance(c, BlockEnd) and isinstance(c.block, ToolCallBlock)]

    identities = [call.identity() for call in made]
    if all(call_id and name for call_id, name in identities):
        assert [(b.id, b.name, b.arguments) for b in ends] == [
            (call_id, name, call.arguments) for (call_id, name), call in zip(identities, made, strict=True)
        ]
        assert finish.reason.kind == ("tool-calls" if made else "stop") or finish.reason.code == Code.EMPTY_RESPONSE
    else:
        assert not [c for c in out if isinstance(c, BlockEnd)]
        assert finish.reason.code == Code.MALFORMED_TOOL_CALL
    assert all(b.id and b.name for b in ends)
    assert not [c for c in out if isinstance(c, Anomaly) and c.kind == "arguments-mismatch"]
