"""The API key never comes back out: ``redact_key`` on chunks, and ``ChatClient`` against a gateway echoing the key
(``leaky_gateway``) in every place a server can put a string. docs/decisions/0015-redaction.md."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
import reactivex as rx
from hypothesis import given
from hypothesis import strategies as st
from leaky_gateway import CASES, FORMAT_CASES, KEY, LeakyGateway

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Chunk,
    Failure,
    Finish,
    FinishReason,
    ReasoningDelta,
    Retry,
    RetryPolicy,
    TextBlock,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
)
from pipeline.agent import ToolRegistry, run_turn
from pipeline.client import ChatClient
from pipeline.compose import redact_key
from pipeline.session import Session

R = "[redacted]"
MESSAGES = [{"role": "user", "content": "hi"}]


def leaks(text: str) -> bool:
    """The key, any 9 or more of its first characters, in any letter case, or in its code form (``SK_PROJ_...``)."""
    folded = text.lower()
    return KEY[:9].lower() in folded or KEY[:9].lower().replace("-", "_") in folded


def logged(caplog: pytest.LogCaptureFixture) -> str:
    """Every log record's text, traceback included, except httpcore's DEBUG trace of the raw response headers (its
    own logger, off by default; a server's echo of the key in a header shows there: docs/decisions/0015)."""
    formatter = logging.Formatter()
    return "\n".join(formatter.format(r) for r in caplog.records if not r.name.startswith("httpcore"))


def redacted(chunks: Sequence[Chunk], key: str = KEY) -> list[Chunk]:
    out: list[Chunk] = []
    rx.from_iterable(chunks).pipe(redact_key(key)).subscribe(on_next=out.append)
    return out


def texts(chunks: Sequence[Chunk]) -> list[str]:
    return [c.text for c in chunks if isinstance(c, TextDelta | ReasoningDelta)]


# -- the operator -------------------------------------------------------------------------------------------------


def test_a_key_split_across_text_deltas_is_redacted() -> None:
    out = redacted([BlockStart(0, "text"), TextDelta(0, "key " + KEY[:5]), TextDelta(0, KEY[5:] + " ok")])
    assert texts(out) == ["key ", R + " ok"]


def test_a_held_tail_that_is_not_the_key_is_emitted_with_the_next_delta() -> None:
    out = redacted([TextDelta(0, "see sk-pr"), TextDelta(0, "ose")])
    assert texts(out) == ["see ", "sk-prose"]


def test_a_held_tail_is_emitted_before_its_block_end() -> None:
    out = redacted([TextDelta(0, "a sk-proj"), BlockEnd(0, TextBlock("a sk-proj"))])
    assert [c.to_dict() for c in out] == [
        TextDelta(0, "a ").to_dict(),
        TextDelta(0, "sk-proj").to_dict(),
        out[2].to_dict(),
    ]
    assert isinstance(out[2], BlockEnd)
    assert out[2].block == TextBlock("a sk-proj")


def test_a_held_tail_is_emitted_before_a_finish_a_retry_and_at_the_end() -> None:
    retry = Retry(1, 2, 1.0, Failure("SERVER", "boom"))
    out = redacted([TextDelta(0, "x sk"), retry, TextDelta(0, "y sk"), Finish(FinishReason("stop"))])
    assert [c.type for c in out] == ["text-delta", "text-delta", "retry", "text-delta", "text-delta", "finish"]
    assert "".join(texts(out)) == "x sky sk"
    assert texts(redacted([TextDelta(0, "z sk")])) == ["z ", "sk"]


def test_a_finish_reason_equal_to_the_key_becomes_the_code_redacted() -> None:
    code = KEY.upper().replace("-", "_")
    out = redacted([Finish(FinishReason.error(code, f"model stopped: {KEY}", request_id=KEY))])
    assert out == [Finish(FinishReason.error("REDACTED", f"model stopped: {R}", request_id=R))]


def test_a_key_in_any_letter_case_and_a_cut_quote_are_redacted_in_messages() -> None:
    failure = Failure("AUTH", f"{KEY.upper()} / {KEY.lower()} / quoted: {KEY[:12]} (truncated)")
    (out,) = redacted([Finish(FinishReason("error", failure))])
    assert isinstance(out, Finish)
    assert out.reason.failure is not None
    assert out.reason.failure.message == f"{R} / {R} / quoted: {R} (truncated)"


def test_tool_call_ids_names_and_arguments_are_redacted() -> None:
    out = redacted(
        [
            ToolCallDelta(0, f"call_{KEY}", KEY, '{"k": "' + KEY[:4]),
            ToolCallDelta(0, f"call_{KEY}", KEY, KEY[4:] + '"}'),
            BlockEnd(0, ToolCallBlock(f"call_{KEY}", KEY, '{"k": "' + KEY + '"}')),
        ]
    )
    assert [c.to_dict() for c in out] == [
        ToolCallDelta(0, f"call_{R}", R, '{"k": "').to_dict(),
        ToolCallDelta(0, f"call_{R}", R, R + '"}').to_dict(),
        BlockEnd(0, ToolCallBlock(f"call_{R}", R, '{"k": "' + R + '"}')).to_dict(),
    ]


def test_anomaly_details_and_retry_failures_are_redacted() -> None:
    out = redacted([Anomaly("comment", None, f"comment line ignored: {KEY}"), Retry(1, 2, 1.0, Failure("X", KEY))])
    assert not leaks(json.dumps([c.to_dict() for c in out]))


def test_a_key_shorter_than_eight_characters_is_not_redacted() -> None:
    chunks: list[Chunk] = [TextDelta(0, "a banana"), Finish(FinishReason.error("AUTH", "bad key a"))]
    assert redacted(chunks, key="a") == chunks
    assert redacted(chunks, key="") == chunks


def test_each_subscription_starts_with_fresh_state() -> None:
    source = rx.from_iterable([TextDelta(0, "x " + KEY[:6])]).pipe(redact_key(KEY))
    first: list[Chunk] = []
    second: list[Chunk] = []
    source.subscribe(on_next=first.append)
    source.subscribe(on_next=second.append)
    assert texts(first) == texts(second) == ["x ", KEY[:6]]


_key_alphabet = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789-_", min_size=8, max_size=20)


@given(key=_key_alphabet, before=st.text(max_size=30), after=st.text(max_size=30), cuts=st.lists(st.integers(0, 90)))
def test_any_split_of_a_text_joins_to_the_whole_text_redacted(
    key: str, before: str, after: str, cuts: list[int]
) -> None:
    whole = before + key + after + key
    points = sorted({min(c, len(whole)) for c in cuts})
    pieces = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True) if b > a]
    out = redacted([TextDelta(0, piece) for piece in pieces] + [BlockEnd(0, TextBlock(whole))], key=key)
    joined = "".join(texts(out))
    assert key not in joined
    assert joined == R.join(whole.split(key))
    assert out[-1] == BlockEnd(0, TextBlock(joined))


@given(text=st.text(alphabet="abc -", max_size=60), cuts=st.lists(st.integers(0, 60)))
def test_text_without_the_key_passes_unchanged(text: str, cuts: list[int]) -> None:
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True) if b > a]
    out = redacted([TextDelta(0, piece) for piece in pieces], key="sk-proj-abcdef")
    assert "".join(texts(out)) == text


# -- ChatClient against a gateway that echoes the key ---------------------------------------------------------------


def _client(gateway: LeakyGateway, case: str) -> ChatClient:
    policy = RetryPolicy.normal(max_retries=1, initial_delay_ms=1, max_delay_ms=2, jitter_ratio=0)
    return ChatClient(gateway.base_url, model=case, api_key=KEY, retry_policy=policy)


@pytest.mark.parametrize("case", sorted(CASES))
async def test_no_chunk_carries_the_key_a_gateway_echoes(
    gateway: LeakyGateway, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with _client(gateway, case) as client:
        chunks = [chunk async for chunk in client.stream(MESSAGES, anomalies=True)]
        message = await client.complete(MESSAGES)
    shown = json.dumps([chunk.to_dict() for chunk in chunks], ensure_ascii=False)
    assert R in shown or R in json.dumps(message.to_dict())  # the gateway did put the key somewhere
    assert not leaks(shown)
    assert not leaks(json.dumps(message.to_dict(), ensure_ascii=False))
    assert not leaks(logged(caplog))


@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
async def test_no_chunk_carries_the_key_echoed_into_a_reasoning_field(
    gateway: LeakyGateway, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A Messages thinking ``signature``, a Responses ``encrypted_content`` and a reasoning item ``id`` (0040)."""
    caplog.set_level(logging.DEBUG)
    api = FORMAT_CASES[case][0]
    async with ChatClient(gateway.base_url, model=case, api_key=KEY, api=api) as client:  # type: ignore[arg-type]
        chunks = [chunk async for chunk in client.stream(MESSAGES, anomalies=True)]
        message = await client.complete(MESSAGES)
    assert chunks[-1].to_dict()["reason"] == {"kind": "stop"}
    assert [block.text for block in message.reasoning_blocks] == ["hmm"]
    assert not leaks(json.dumps([chunk.to_dict() for chunk in chunks], ensure_ascii=False))
    assert not leaks(repr(message))
    assert not leaks(logged(caplog))


async def test_incorrect_api_key_provided_leaves_the_key_in_no_failure(gateway: LeakyGateway) -> None:
    async with _client(gateway, "http-401") as client:
        message = await client.complete(MESSAGES)
    assert message.finish.failure == Failure(
        "AUTH", f"Incorrect API key provided: {R}. Check Bearer {R}.", status=401, request_id=f"req_{R}"
    )


async def test_a_tool_run_on_leaked_arguments_logs_and_records_no_key(
    gateway: LeakyGateway, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    registry = ToolRegistry()

    @registry.register
    def echo(text: str) -> str:
        seen.append(text)
        raise ValueError(f"refusing to echo {text}")

    path = tmp_path / "turn.jsonl"
    async with _client(gateway, "tool-arguments") as client:
        with Session.open(path) as session:
            events = [event async for event in run_turn(client, session, registry, "go")]
    assert seen == [R]
    assert events[-1].kind == "turn-end"
    assert "tool echo failed" in caplog.text  # the registry did log the failure, traceback included
    assert not leaks(logged(caplog))
    assert not leaks(path.read_text())
