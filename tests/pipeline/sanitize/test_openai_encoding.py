"""What the sanitizer writes: clean, standard OpenAI SSE, whatever the upstream sent (no HTTP here). ``Sanitizer`` is
deprecated on its face (a ``DeprecationWarning``); these tests read it from its module, and check the warning."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pipeline
from operators import Failure, Finish, FinishReason, Usage
from pipeline.emulator import PROFILES, ScriptOptions, build_script
from pipeline.sanitize import _encode, _sanitizer, usage_json
from pipeline.sanitize._sanitizer import Sanitizer

STREAMED = sorted(
    name for name in PROFILES if name not in ("agent", "replay", "stall") and build_script(name).is_event_stream
)


def sanitize(data: bytes, pieces: list[int] | None = None) -> bytes:
    sanitizer = Sanitizer(model="m")
    out = bytearray()
    start = 0
    for size in pieces or []:
        out += sanitizer.feed(data[start : start + size])
        start += size
    if start < len(data):
        out += sanitizer.feed(data[start:])
    return bytes(out + sanitizer.close())


def events(data: bytes) -> list[Any]:
    """The ``data:`` payloads, decoded (``[DONE]`` kept as the string)."""
    out: list[Any] = []
    for block in data.decode().split("\n\n"):
        if block.startswith("data: "):
            payload = block[len("data: ") :]
            out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def tool_deltas(data: bytes) -> list[dict[str, Any]]:
    return [
        call
        for event in events(data)
        if isinstance(event, dict) and event.get("choices")
        for call in event["choices"][0]["delta"].get("tool_calls", [])
    ]


def test_each_tool_calls_first_delta_carries_its_identity_and_continuations_only_arguments() -> None:
    deltas = tool_deltas(sanitize(build_script("seed-bug").body))
    firsts = [d for d in deltas if "id" in d]
    assert [d["index"] for d in firsts] == [0, 1]
    for first in firsts:
        assert first["type"] == "function"
        assert first["id"]
        assert first["function"]["name"] == "get_weather"
    for continuation in (d for d in deltas if "id" not in d):
        assert set(continuation) == {"index", "function"}
        assert set(continuation["function"]) == {"arguments"}


def test_ollamas_two_calls_at_wire_index_zero_become_indices_zero_and_one() -> None:
    deltas = tool_deltas(sanitize(build_script("ollama-parallel").body))
    assert [(d["index"], d["function"]["name"]) for d in deltas] == [(0, "get_weather"), (1, "get_time")]


def test_a_call_whose_id_arrives_late_is_held_until_identified_with_its_arguments_so_far() -> None:
    deltas = tool_deltas(sanitize(build_script("late-id").body))
    assert deltas[0]["id"] == "call_emu0_mpl-emulator"
    assert "".join(d["function"]["arguments"] for d in deltas) == '{"city": "Paris"}'


def test_a_never_identified_call_is_never_written_and_the_stream_ends_with_the_error_event() -> None:
    out = sanitize(build_script("never-identified").body)
    assert tool_deltas(out) == []
    last = events(out)[-1]
    assert last["error"]["code"] == "MALFORMED_TOOL_CALL"
    assert "[DONE]" not in events(out)


def test_usage_trails_in_an_empty_choices_chunk_in_openais_shape_before_done() -> None:
    out = events(sanitize(build_script("clean", ScriptOptions(include_usage=True)).body))
    assert out[-1] == "[DONE]"
    assert out[-2]["choices"] == []
    assert out[-2]["usage"] == {
        "prompt_tokens": 12,
        "completion_tokens": 5,
        "total_tokens": 17,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert out[-3]["choices"][0]["finish_reason"] == "stop"


def test_usage_json_reports_billed_prompt_tokens_as_uncached_plus_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=10, output_tokens=4, cache_read_tokens=80, cache_write_tokens=6, reasoning_tokens=2)
    assert usage_json(usage) == {
        "prompt_tokens": 96,
        "completion_tokens": 4,
        "total_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 80, "cache_write_tokens": 6},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def test_usage_json_leaves_out_a_count_the_upstream_did_not_give_never_zero() -> None:
    assert usage_json(Usage(input_tokens=None, output_tokens=4)) == {"completion_tokens": 4}
    assert usage_json(Usage(input_tokens=7, output_tokens=None)) == {"prompt_tokens": 7}


def test_reasoning_is_written_as_reasoning_content() -> None:
    wire = (
        b'data: {"id":"x","choices":[{"index":0,"delta":{"reasoning":"think"}}]}\n\n'
        b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    deltas = [e["choices"][0]["delta"] for e in events(sanitize(wire)) if isinstance(e, dict) and e["choices"]]
    assert deltas[0] == {"role": "assistant", "reasoning_content": "think"}
    assert deltas[1] == {"content": "hi"}


def test_every_event_repeats_the_upstream_completion_id_and_model() -> None:
    out = events(sanitize(build_script("clean", ScriptOptions(model="deepseek-chat")).body))
    ids = {(e["id"], e["model"]) for e in out if isinstance(e, dict)}
    assert ids == {("chatcmpl-emulator", "deepseek-chat")}


def test_a_content_filter_finish_is_written_as_openais_content_filter_finish_reason() -> None:
    wire = (
        b'data: {"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"content_filter"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    out = events(sanitize(wire))
    assert out[-2]["choices"][0]["finish_reason"] == "content_filter"
    assert out[-1] == "[DONE]"


def test_a_finish_with_an_upstream_failure_writes_the_code_in_the_error_event() -> None:
    sanitizer = Sanitizer(model="m")
    out = sanitizer.fail(Failure("TIMEOUT", "no data for 1 s"))
    assert events(out) == [{"error": {"message": "no data for 1 s", "type": "llm_stream_error", "code": "TIMEOUT"}}]
    assert sanitizer.finish == Finish(FinishReason.error("TIMEOUT", "no data for 1 s"))


def test_the_api_key_the_request_carried_is_redacted_from_what_is_written() -> None:
    key = "sk-live-0123456789abcdef"
    wire = f'data: {{"choices":[{{"index":0,"delta":{{"content":"your key is {key}"}},"finish_reason":"stop"}}]}}\n\n'
    out = Sanitizer(model="m", api_key=key)
    written = out.feed(wire.encode()) + out.close()
    assert key.encode() not in written


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(STREAMED), st.lists(st.integers(1, 97), max_size=40))
def test_re_reading_the_sanitized_stream_assembles_the_same_message_as_the_original(
    profile: str, pieces: list[int]
) -> None:
    data = build_script(profile, ScriptOptions(include_usage=True)).body
    original = pipeline.assemble(pipeline.collect(data))
    again = pipeline.assemble(pipeline.collect(sanitize(data, pieces)))
    assert (again.text, again.reasoning, again.tool_calls) == (original.text, original.reasoning, original.tool_calls)
    assert again.usage == original.usage
    assert again.finish.kind == original.finish.kind
    assert again.finish.code == original.finish.code


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(STREAMED), st.lists(st.integers(1, 97), max_size=40))
def test_any_split_of_the_upstream_bytes_gives_the_same_sanitized_bytes(profile: str, pieces: list[int]) -> None:
    data = build_script(profile).body
    whole = sanitize(data)
    split = sanitize(data, pieces)
    assert events(split) == events(whole)


@pytest.mark.parametrize(
    ("name", "defined"), [("Sanitizer", _sanitizer.Sanitizer), ("OpenAIEncoder", _encode.OpenAIEncoder)]
)
def test_the_old_re_encoders_still_work_from_the_face_with_a_deprecation_warning_naming_the_replacement(
    name: str, defined: type
) -> None:
    with pytest.warns(DeprecationWarning, match=f"pipeline.sanitize.{name} is deprecated") as caught:
        value = getattr(pipeline.sanitize, name)
    assert value is defined
    assert value.__module__ == "pipeline.sanitize"  # still named by the face while it lasts
    (warning,) = caught
    assert "SanitizingTransport" in str(warning.message)
    assert "StreamRepair" in str(warning.message)
    assert warning.filename == __file__  # points at the caller's line
    assert name not in pipeline.sanitize.__all__
    assert name not in dir(pipeline.sanitize)


def test_the_deprecated_sanitizer_taken_from_the_face_still_re_encodes() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from pipeline.sanitize import Sanitizer as FromFace
    assert caught
    assert all(issubclass(w.category, DeprecationWarning) for w in caught)
    wire = b'data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
    make: Any = FromFace  # the face's __getattr__ is typed as giving an object
    sanitizer = make(model="m")
    out = events(sanitizer.feed(wire) + sanitizer.close())
    assert out[0]["choices"][0]["delta"] == {"role": "assistant", "content": "hi"}
    assert out[-1] == "[DONE]"


@pytest.mark.server
def test_the_library_itself_never_takes_the_deprecated_names_from_the_face() -> None:
    script = (
        "import warnings\n"
        "warnings.filterwarnings('error', category=DeprecationWarning, module=r'(pipeline|operators)(\\.|$)')\n"
        "import pipeline, pipeline.cli, pipeline.proxy, pipeline.sanitize\n"
        "pipeline.sanitize.SanitizingTransport()\n"
        "pipeline.proxy.ProxyConfig.from_env({'LLM_STREAM_PROXY_UPSTREAM': 'http://127.0.0.1:9/v1'})\n"
        "print('clean')\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert result.stdout.strip() == "clean", result.stderr
