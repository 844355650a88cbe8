"""The fuzz targets of scripts/fuzz.py: their oracle holds on every seed, catches what it claims to catch, and the
runner's built-in loop (used where atheris is not importable) runs bounded and counts its inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import finish, tool, tools

from operators import BlockEnd, BlockStart, Chunk, Finish, FinishReason, ToolCallBlock, ToolCallDelta, Usage, UsageChunk
from scripts import fuzz, fuzz_reference


def sse(*payloads: object) -> bytes:
    return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in [*payloads, "[DONE]"] if p != "[DONE]") + (
        b"data: [DONE]\n\n"
    )


def test_the_seed_corpus_is_read_in_place_from_the_in_repo_corpus() -> None:
    seeds = fuzz.seed_files("fast_path")  # every folder

    assert len(seeds) >= 244
    assert fuzz.FIXTURES == fuzz.ROOT / "tests" / "corpus" / "fixtures"
    assert all(path.suffix == ".sse" and path.is_relative_to(fuzz.FIXTURES) for path in seeds)


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
