"""The fuzz targets of scripts/fuzz.py: their oracle holds on every seed, catches what it claims to catch, and the
runner's built-in loop (used where atheris is not importable) runs bounded and counts its inputs."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest
from builders import finish, tool, tools

import operators._fused
from benchmarks._format_streams import gemini as gemini_stream
from operators import (
    FORMATS,
    BlockEnd,
    BlockStart,
    Chunk,
    Code,
    Finish,
    FinishReason,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
)
from operators._parse_format import HOT_READS
from operators.gemini._fast import gemini_read
from operators.gemini._stage import _ParseGemini
from scripts import fuzz, fuzz_gemini, fuzz_reference


def sse(*payloads: object) -> bytes:
    return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in [*payloads, "[DONE]"] if p != "[DONE]") + (
        b"data: [DONE]\n\n"
    )


def test_the_seed_corpus_is_read_in_place_from_the_in_repo_corpus() -> None:
    seeds = fuzz.seed_files("fast_path")  # every folder, the Gemini peer corpus too

    assert len(seeds) >= 244 + 70
    assert fuzz.FIXTURES == fuzz.ROOT / "tests" / "corpus" / "fixtures"
    assert all(path.suffix == ".sse" and path.is_relative_to(fuzz.ROOT / "tests" / "corpus") for path in seeds)
    assert any("client-calls" in path.parts for path in fuzz.seed_files("responses"))


def test_the_fast_path_target_reads_gemini_seeds_and_names_each_format() -> None:
    seeds = [path.read_bytes()[: fuzz.MAX_LEN] for path in fuzz.seed_files("fast_path") if "gemini-peers" in path.parts]
    named = {FORMATS[zlib.crc32(seed) % len(FORMATS)] for seed in fuzz.seed_inputs("fast_path")}

    assert len(seeds) >= 70
    assert named == {"chat", "messages", "responses", "gemini"}
    for seed in seeds[:8]:
        fuzz.TARGETS["fast_path"](seed)


def test_the_fast_path_target_refuses_a_gemini_fast_path_that_differs_from_the_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def dropping(chain: Any, piece: bytes) -> bool:  # the real fast path, then its last delta lost
        taken = gemini_read(chain, piece)
        if taken and chain.out and type(chain.out[-1]) is TextDelta:
            chain.out.pop()
        return taken

    def roomy(data: bytes) -> bool:  # the input's own limits leave its events and text alone
        limits = fuzz.plan(data)[0]
        return limits.max_event_bytes >= 4096 and limits.max_text_bytes >= 1024

    # benchmarks.formats' Gemini stream: text parts, usage on every event, a call, the finish
    seed = next(data for data in map(gemini_stream, range(8, 80)) if roomy(data))
    fuzz.TARGETS["fast_path"](seed)
    monkeypatch.setattr(operators._fused, "HOT_READS", {**HOT_READS, _ParseGemini: dropping})
    with pytest.raises(fuzz.OracleFailure, match="the fast path and the rule chain differ"):
        fuzz.TARGETS["fast_path"](seed)


@pytest.mark.slow
@pytest.mark.parametrize("target", sorted(fuzz.TARGETS))
def test_every_seed_keeps_the_oracle(target: str) -> None:
    assert fuzz.seed_inputs(target)
    for seed in fuzz.seed_inputs(target):
        fuzz.TARGETS[target](seed)


def test_the_plan_of_an_input_is_fixed_by_its_bytes() -> None:
    data = sse({"choices": [{"delta": {"content": "hello"}}]})

    assert fuzz.plan(data) == fuzz.plan(data)
    _limits, splits = fuzz.plan(data)
    assert all(b"".join(pieces) == data for pieces in splits)
    assert [len(piece) for piece in splits[-1]] == [1] * len(data)


def test_the_oracle_refuses_two_tool_call_block_ends_sharing_an_id() -> None:
    out: list[Chunk] = [
        BlockStart(0, "tool-call"),
        BlockStart(1, "tool-call"),
        BlockEnd(0, ToolCallBlock("call_1", "f", "{}")),
        BlockEnd(1, ToolCallBlock("call_1", "g", "{}")),
        Finish(FinishReason("tool-calls")),
    ]

    with pytest.raises(fuzz.OracleFailure, match="share the id"):
        fuzz.check_chunks(out)


def test_the_oracle_refuses_a_delta_before_its_block_start_and_a_finish_not_last() -> None:
    with pytest.raises(fuzz.OracleFailure, match="block-start precedes"):
        fuzz.check_chunks([ToolCallDelta(0, "c", "f", "{"), Finish(FinishReason("tool-calls"))])
    with pytest.raises(fuzz.OracleFailure, match="exactly one finish"):
        fuzz.check_chunks([Finish(FinishReason("tool-calls")), BlockStart(0, "text")])


def test_two_tool_calls_sharing_an_id_keep_the_translate_oracle() -> None:
    data = sse(
        tools(tool(0, id="call_1", name="f", arguments="{}")),
        tools(tool(1, id="call_1", name="g", arguments="{}")),
        finish("tool_calls"),
    )

    fuzz.check_translate(data)


def test_usage_counts_out_of_range_keep_the_translate_oracle() -> None:
    data = (
        b'data: {"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":1e999,"completion_tokens":-1}}\n\ndata: [DONE]\n\n'
    )

    fuzz.check_translate(data)


def test_the_built_in_loop_runs_bounded_and_prints_the_inputs_executed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = fuzz.main(["--target", "parse_sse", "--seconds", "1", "--no-atheris", "--artifacts", str(tmp_path)])

    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "built-in mutation loop" in printed
    assert int(printed.split("inputs=")[1].split()[0]) > 0
    assert list(tmp_path.iterdir()) == []


def test_reproduce_replays_one_input_file_through_the_oracle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input"
    path.write_bytes(sse({"choices": [{"delta": {"content": "x"}, "finish_reason": "stop"}]}))

    assert fuzz.main(["--target", "translate", "--reproduce", str(path)]) == 0
    assert "the oracle holds" in capsys.readouterr().out


def test_the_seeds_cover_messages_and_responses() -> None:
    assert any("messages" in path.parts for path in fuzz.seed_files("messages"))
    assert any("responses" in path.parts for path in fuzz.seed_files("responses"))
    assert not set(fuzz.seed_files("messages")) & set(fuzz.seed_files("translate"))  # translate: the chat fixtures


def test_the_oracle_refuses_a_successful_response_in_which_two_calls_claimed_one_id() -> None:
    data = sse(
        tools(tool(0, id="call_1", name="f", arguments='{"x":1}')),
        tools(tool(1, id="call_1", name="f", arguments='{"y":2}')),
        finish("tool_calls"),
    )
    merged: list[Chunk] = [
        BlockStart(0, "tool-call"),
        BlockEnd(0, ToolCallBlock("call_1", "f", '{"x":1}{"y":2}')),
        Finish(FinishReason("tool-calls")),
    ]

    with pytest.raises(fuzz.OracleFailure, match="two calls claimed the id"):
        fuzz_reference.check_reference(data, merged, "chat")
    fuzz.check_translate(data, "chat")  # the pipeline refuses it: the oracle holds


def test_the_oracle_refuses_a_usage_that_lost_its_valid_prompt_count_to_a_later_invalid_one() -> None:
    data = sse(
        {"choices": [{"index": 0, "delta": {"content": "a"}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
        {"choices": [], "usage": {"prompt_tokens": -3, "completion_tokens": 2}},
    )
    erased: list[Chunk] = [UsageChunk(Usage(input_tokens=0, output_tokens=2)), Finish(FinishReason("stop"))]

    with pytest.raises(fuzz.OracleFailure, match="not the last valid one sent"):
        fuzz_reference.check_reference(data, erased, "chat")
    fuzz.check_translate(data, "chat")


@pytest.mark.slow
@pytest.mark.parametrize("target", ["messages", "responses"])
def test_the_format_targets_run_bounded(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = fuzz.main(["--target", target, "--seconds", "1", "--no-atheris", "--artifacts", str(tmp_path)])

    printed = capsys.readouterr().out
    assert code == 0, printed
    assert f"target={target}" in printed


def gemini(*payloads: object) -> bytes:
    return b"".join(b"data: " + json.dumps(p).encode() + b"\r\n\r\n" for p in payloads)


def gemini_call(name: str, **extra: object) -> dict[str, object]:
    return {"candidates": [{"content": {"parts": [{"functionCall": {"name": name, "args": {}, **extra}}]}}]}


GEMINI_STOP = {"candidates": [{"content": {"parts": [{"text": ""}]}, "finishReason": "STOP"}]}


def test_the_gemini_target_reads_the_peer_corpus_in_the_repository() -> None:
    seeds = fuzz.seed_files("gemini")

    assert len(seeds) >= 70
    assert all(path.is_relative_to(fuzz.ROOT / "tests" / "corpus" / "gemini-peers") for path in seeds)
    assert set(seeds) <= set(fuzz.seed_files("repair"))


def test_the_gemini_oracle_refuses_a_call_id_no_one_sent_and_a_wire_id_lost() -> None:
    data = gemini(gemini_call("f", id="call_1"), gemini_call("g"), GEMINI_STOP)
    right: list[Chunk] = [
        BlockStart(0, "tool-call"), BlockStart(1, "tool-call"),
        BlockEnd(0, ToolCallBlock("call_1", "f", "{}")), BlockEnd(1, ToolCallBlock("gemini-made-1", "g", "{}")),
        Finish(FinishReason("tool-calls")),
    ]
    invented = [*right[:3], BlockEnd(1, ToolCallBlock("call_2", "g", "{}")), right[4]]
    lost = [right[0], BlockEnd(0, ToolCallBlock("gemini-made-0", "f", "{}")), right[4]]

    fuzz_gemini.check_gemini_reference(data, right)
    with pytest.raises(fuzz.OracleFailure, match="a call id no one sent"):
        fuzz_gemini.check_gemini_reference(data, invented)
    with pytest.raises(fuzz.OracleFailure, match="no call has them"):
        fuzz_gemini.check_gemini_reference(data, lost)
    fuzz.check_gemini(data)


@pytest.mark.parametrize("later", [None, "7", -1, 2.5, {"n": 1}])
def test_the_gemini_oracle_refuses_a_usage_that_lost_a_valid_count_to_a_later_invalid_one(later: object) -> None:
    counts = {"promptTokenCount": 10, "cachedContentTokenCount": 4, "candidatesTokenCount": 3, "thoughtsTokenCount": 2}
    data = gemini({"candidates": [{"content": {"parts": [{"text": "a"}]}}], "usageMetadata": counts},
                  {**GEMINI_STOP, "usageMetadata": {"promptTokenCount": later, "candidatesTokenCount": later}})
    kept = Usage(input_tokens=6, output_tokens=5, cache_read_tokens=4, reasoning_tokens=2)
    erased = Usage(input_tokens=None, output_tokens=2, cache_read_tokens=4, reasoning_tokens=2)

    assert fuzz_gemini.last_counts(data) == {"input_tokens": 6, "cache_read_tokens": 4, "output_tokens": 5,
                                             "reasoning_tokens": 2}
    fuzz_gemini.check_gemini_reference(data, [UsageChunk(kept), Finish(FinishReason("stop"))])
    with pytest.raises(fuzz.OracleFailure, match="not the last valid count sent"):
        fuzz_gemini.check_gemini_reference(data, [UsageChunk(erased), Finish(FinishReason("stop"))])
    fuzz.check_gemini(data)


def test_the_gemini_oracle_holds_a_response_cut_before_its_finish_to_its_counts() -> None:
    data = gemini({"candidates": [{"content": {"parts": [{"text": "a"}]}}], "usageMetadata": {"promptTokenCount": 9}},
                  {"usageMetadata": {"promptTokenCount": -1}})
    cut = FinishReason.error(Code.STREAM_CLOSED, "ended before any finishReason")
    other = FinishReason.error(Code.MALFORMED_RESPONSE, "not read that far")

    fuzz_gemini.check_gemini_reference(data, [UsageChunk(Usage(9, None)), Finish(cut)])
    with pytest.raises(fuzz.OracleFailure, match="not the last valid count sent"):
        fuzz_gemini.check_gemini_reference(data, [UsageChunk(Usage(None, None)), Finish(cut)])
    fuzz_gemini.check_gemini_reference(data, [UsageChunk(Usage(None, None)), Finish(other)])  # read only so far
    fuzz.check_gemini(data)


def test_the_gemini_reading_takes_a_whole_last_event_without_its_blank_line_as_the_parser_does() -> None:
    data = gemini({**GEMINI_STOP, "usageMetadata": {"promptTokenCount": 3}}).rstrip()
    cut = data[:-5]

    assert fuzz_gemini.last_counts(data) == {"input_tokens": 3}
    assert fuzz_gemini.last_counts(cut) == {}
    fuzz.check_gemini(data)
    fuzz.check_gemini(cut)


@pytest.mark.slow
def test_the_gemini_target_runs_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = fuzz.main(["--target", "gemini", "--seconds", "1", "--no-atheris", "--artifacts", str(tmp_path)])

    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "target=gemini" in printed
