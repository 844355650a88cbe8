"""The emulator's Anthropic Messages face (POST /v1/messages) over real loopback HTTP: each profile's event sequence,
its shapes, the identity fields as the profile says, usage on every stream that ends, and the request handling."""

from __future__ import annotations

import httpx
import pytest
from emulator_helpers import CLEAN, client
from format_helpers import SseEvent, cut_body, events, post_format

from pipeline.emulator import Emulator, EmulatorConfig
from pipeline.emulator._stream_profiles import CLEAN_TEXT
from pipeline.emulator.messages._profiles import CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, MESSAGES_PROFILES

ARGUMENTS = '{"city": "Paris"}'
NAMES = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
    "ping",
    "error",
}
USAGE_FIELDS = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}


def stream(http: httpx.Client, profile: str) -> list[SseEvent]:
    response = post_format(http, "/messages", profile)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return events(response.content)


def tool_starts(sent: list[SseEvent]) -> list[dict[str, object]]:
    return [e.data["content_block"] for e in sent if e.name == "content_block_start"]


def partial_json(sent: list[SseEvent]) -> str:
    deltas = [e.data["delta"] for e in sent if e.name == "content_block_delta"]
    return "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta")


# (profile, ends with message_stop, stop_reason of message_delta or None)
ENDINGS = [
    ("clean", True, "end_turn"),
    ("clean-tool", True, "tool_use"),
    ("seed-bug", True, "tool_use"),
    ("never-identified", True, "tool_use"),
    ("late-block-id", True, "tool_use"),
    ("error-midstream", False, None),
    ("cut-after-stop", False, "end_turn"),
]


@pytest.mark.parametrize(("profile", "terminal", "stop_reason"), ENDINGS)
def test_messages_streams_end_as_their_profile_says(
    http: httpx.Client, profile: str, terminal: bool, stop_reason: str | None
) -> None:
    sent = stream(http, profile)
    assert sent[0].name == "message_start"
    assert (sent[-1].name == "message_stop") is terminal
    reasons = [e.data["delta"]["stop_reason"] for e in sent if e.name == "message_delta"]
    assert reasons == ([stop_reason] if stop_reason else [])


@pytest.mark.parametrize("profile", [p for p, _, _ in ENDINGS])
def test_every_messages_event_is_named_after_its_type(http: httpx.Client, profile: str) -> None:
    for event in stream(http, profile):
        assert event.name in NAMES
        assert event.data["type"] == event.name
        if event.name.startswith("content_block"):
            assert event.data["index"] == 0


@pytest.mark.parametrize("profile", [p for p, terminal, _ in ENDINGS if terminal])
def test_every_messages_stream_that_ends_carries_usage_with_cache_fields(http: httpx.Client, profile: str) -> None:
    sent = stream(http, profile)
    start = sent[0].data["message"]
    assert start["id"].startswith("msg_")
    assert start["role"] == "assistant"
    assert start["model"] == "claude-sonnet-4-5"
    assert set(start["usage"]) >= USAGE_FIELDS
    final = next(e.data["usage"] for e in sent if e.name == "message_delta")
    assert set(final) >= USAGE_FIELDS
    assert final["cache_read_input_tokens"] == CACHE_READ_TOKENS
    assert final["cache_creation_input_tokens"] == CACHE_WRITE_TOKENS
    assert final["output_tokens"] > start["usage"]["output_tokens"] == 1


def test_messages_clean_streams_text_deltas_in_one_text_block(http: httpx.Client) -> None:
    sent = stream(http, "clean")
    assert tool_starts(sent) == [{"type": "text", "text": ""}]
    texts = [e.data["delta"]["text"] for e in sent if e.name == "content_block_delta"]
    assert texts == list(CLEAN_TEXT)
    assert "".join(texts) == CLEAN
    assert any(e.name == "ping" for e in sent)
    assert [e.name for e in sent][-4:] == ["content_block_delta", "content_block_stop", "message_delta", "message_stop"]


def test_messages_clean_tool_is_one_identified_tool_use_in_fragments(http: httpx.Client) -> None:
    sent = stream(http, "clean-tool")
    (block,) = tool_starts(sent)
    assert block["type"] == "tool_use"
    assert str(block["id"]).startswith("toolu_")
    assert block["name"] == "get_weather"
    assert block["input"] == {}
    assert partial_json(sent) == ARGUMENTS
    assert len([e for e in sent if e.name == "content_block_delta"]) > 2


def test_messages_seed_bug_repeats_the_block_start_with_blank_then_null_identity(http: httpx.Client) -> None:
    sent = stream(http, "seed-bug")
    starts = tool_starts(sent)
    assert [(s["id"], s["name"]) for s in starts][1:] == [("", ""), (None, None)]
    assert str(starts[0]["id"]).startswith("toolu_")
    assert starts[0]["name"] == "get_weather"
    assert partial_json(sent) == ARGUMENTS
    assert [e.name for e in sent].index("content_block_delta") < [e.name for e in sent].index("content_block_start", 3)


def test_messages_late_block_id_starts_blank_and_a_repeated_start_gives_the_id(http: httpx.Client) -> None:
    sent = stream(http, "late-block-id")
    first, second = tool_starts(sent)
    assert (first["id"], first["name"]) == ("", "get_weather")
    assert str(second["id"]).startswith("toolu_")
    assert partial_json(sent) == ARGUMENTS
    names = [e.name for e in sent]
    second_start = names.index("content_block_start", names.index("content_block_start") + 1)
    assert names.index("content_block_delta") < second_start


def test_messages_trailing_done_ends_with_data_done_after_message_stop(http: httpx.Client) -> None:
    response = post_format(http, "/messages", "trailing-done")
    assert response.content.endswith(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\ndata: [DONE]\n\n")
    clean = [e.name for e in events(post_format(http, "/messages", "clean").content)]
    assert [e.name for e in events(response.content[: -len(b"data: [DONE]\n\n")])] == clean


def test_messages_never_identified_has_a_name_but_no_id_anywhere(http: httpx.Client) -> None:
    sent = stream(http, "never-identified")
    (block,) = tool_starts(sent)
    assert "id" not in block
    assert block["name"] == "get_weather"
    assert all("id" not in e.data.get("delta", {}) for e in sent)
    assert partial_json(sent) == ARGUMENTS


def test_messages_error_midstream_ends_with_an_overloaded_error_event_after_text(http: httpx.Client) -> None:
    sent = stream(http, "error-midstream")
    assert sent[-1].data == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert [e.data["delta"]["text"] for e in sent if e.name == "content_block_delta"] == list(CLEAN_TEXT[:2])
    assert not any(e.name in {"message_delta", "message_stop", "content_block_stop"} for e in sent)


def test_messages_drop_mid_stream_cuts_before_any_stop_reason(http: httpx.Client) -> None:
    sent = events(cut_body(http, "/messages", "drop-mid-stream"))
    assert sent[0].name == "message_start"
    assert any(e.name == "content_block_delta" for e in sent)
    assert not any(e.name in {"message_delta", "message_stop"} for e in sent)


def test_messages_rate_limit_is_a_429_in_the_anthropic_error_shape(http: httpx.Client) -> None:
    response = post_format(http, "/messages", "rate-limit", {"x-emulator-retry-after": "7"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.json()["type"] == "error"
    assert response.json()["error"]["type"] == "rate_limit_error"


@pytest.mark.parametrize("profile", ["late-id", "rotated-ids", "parallel", "no-such-profile"])
def test_a_profile_messages_does_not_have_is_a_404_naming_the_format(http: httpx.Client, profile: str) -> None:
    response = post_format(http, "/messages", profile)
    assert response.status_code == 404
    error = response.json()
    assert error["type"] == "error"
    assert error["error"]["type"] == "not_found_error"
    assert "Anthropic Messages" in error["error"]["message"]
    assert profile in error["error"]["message"]


def test_messages_profile_is_chosen_by_the_model_name_too(http: httpx.Client) -> None:
    sent = events(post_format(http, "/messages", None, model="emulator/clean-tool").content)
    assert tool_starts(sent)[0]["type"] == "tool_use"
    assert post_format(http, "/messages", None, model="emulator/late-id").status_code == 404


def test_messages_an_unknown_model_is_a_404_listing_the_profiles(http: httpx.Client) -> None:
    response = post_format(http, "/messages", None, model="claude-opus-4")
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "not_found_error"
    assert "'claude-opus-4'" in response.json()["error"]["message"]
    assert "thinking-tool" in response.json()["error"]["message"]


@pytest.mark.server
def test_messages_a_configured_default_profile_answers_any_other_model() -> None:
    with Emulator(config=EmulatorConfig(default_profile="clean")) as emulator, client(emulator.base_url) as http:
        sent = events(post_format(http, "/messages", None, model="claude-opus-4").content)
    assert "".join(e.data["delta"]["text"] for e in sent if e.name == "content_block_delta") == CLEAN


def test_messages_is_stream_only(http: httpx.Client) -> None:
    response = post_format(http, "/messages", "clean", stream=False)
    assert response.status_code == 400
    assert "stream only" in response.json()["error"]["message"]
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_messages_fail_first_then_serves_the_retry(emu: Emulator, http: httpx.Client) -> None:
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "clean-tool", "x-emulator-key": "messages-retry"}
    first = post_format(http, "/messages", "rate-limit", headers)
    second = post_format(http, "/messages", "rate-limit", headers)
    assert (first.status_code, second.status_code) == (429, 200)
    assert tool_starts(events(second.content))[0]["name"] == "get_weather"
    assert emu.state.attempts["messages-retry"] == 2
    assert emu.state.requests[-1].path == "/v1/messages"
    assert emu.state.requests[-1].profile == "clean-tool"


def test_messages_then_must_be_a_messages_profile(http: httpx.Client) -> None:
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "rotated-ids"}
    response = post_format(http, "/messages", "rate-limit", headers)
    assert response.status_code == 404
    assert "x-emulator-then" in response.json()["error"]["message"]


def test_messages_agent_calls_the_seed_bug_tool_then_answers_after_the_tool_result(
    emu: Emulator, http: httpx.Client
) -> None:
    first = events(post_format(http, "/messages", "agent").content)
    assert emu.state.requests[-1].profile == "seed-bug"
    assert [s["id"] for s in tool_starts(first)][1:] == ["", None]
    turn = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ]
    second = http.post("/messages", json={"model": "emulator/agent", "stream": True, "messages": turn})
    assert emu.state.requests[-1].profile == "clean"
    assert tool_starts(events(second.content)) == [{"type": "text", "text": ""}]


def test_messages_profiles_are_all_tested_here() -> None:
    covered = {p for p, _, _ in ENDINGS} | {"drop-mid-stream", "rate-limit", "agent", "trailing-done"}
    covered |= {"thinking-tool"}  # test_emulator_sent_back.py
    assert covered == set(MESSAGES_PROFILES)
