"""The emulator's OpenAI Responses face (POST /v1/responses) over real loopback HTTP: each profile's event sequence,
its shapes, the identity fields as the profile says, usage on every completed stream, and the unmodified openai SDK
reading the clean profiles."""

from __future__ import annotations

import httpx
import openai
import pytest
from emulator_helpers import CLEAN, client
from format_helpers import SseEvent, cut_body, events, format_body, post_format

from pipeline.emulator import Emulator
from pipeline.emulator._stream_profiles import CLEAN_TEXT
from pipeline.emulator.responses._profiles import CACHED_TOKENS, REASONING_TOKENS, RESPONSES_PROFILES

ARGUMENTS = '{"city": "Paris"}'
CALL_EVENTS = {
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
}


@pytest.fixture(scope="module")
def sdk(emu: Emulator) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.base_url, api_key="test", max_retries=0)


def stream(http: httpx.Client, profile: str) -> list[SseEvent]:
    response = post_format(http, "/responses", profile)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return events(response.content)


def calls(sent: list[SseEvent]) -> list[tuple[str, dict[str, object]]]:
    """(event name, the function_call item) of every added / done event of a function_call item."""
    items = [(e.name or "", e.data.get("item")) for e in sent if e.name in CALL_EVENTS and "item" in e.data]
    return [(name, item) for name, item in items if isinstance(item, dict) and item["type"] == "function_call"]


def argument_deltas(sent: list[SseEvent]) -> str:
    return "".join(e.data["delta"] for e in sent if e.name == "response.function_call_arguments.delta")


def text(sent: list[SseEvent]) -> str:
    return "".join(e.data["delta"] for e in sent if e.name == "response.output_text.delta")


# (profile, ends with response.completed)
ENDINGS = [
    ("clean", True),
    ("clean-tool", True),
    ("seed-bug", True),
    ("never-identified", True),
    ("late-id", True),
    ("rotated-ids", True),
    ("error-midstream", False),
]


@pytest.mark.parametrize(("profile", "terminal"), ENDINGS)
def test_responses_streams_end_as_their_profile_says(http: httpx.Client, profile: str, terminal: bool) -> None:
    sent = stream(http, profile)
    assert [e.name for e in sent][:2] == ["response.created", "response.in_progress"]
    assert (sent[-1].name == "response.completed") is terminal
    assert sum(e.name == "response.completed" for e in sent) == int(terminal)


@pytest.mark.parametrize("profile", [p for p, _ in ENDINGS])
def test_every_responses_event_is_named_after_its_type_in_sequence(http: httpx.Client, profile: str) -> None:
    sent = stream(http, profile)
    assert [e.data["sequence_number"] for e in sent] == list(range(len(sent)))
    for event in sent:
        assert event.data["type"] == event.name
    created = sent[0].data["response"]
    assert created["id"].startswith("resp_")
    assert (created["status"], created["usage"], created["model"]) == ("in_progress", None, "claude-sonnet-4-5")


@pytest.mark.parametrize("profile", [p for p, terminal in ENDINGS if terminal])
def test_every_completed_responses_stream_carries_usage_with_details(http: httpx.Client, profile: str) -> None:
    response = stream(http, profile)[-1].data["response"]
    usage = response["usage"]
    assert response["status"] == "completed"
    assert usage["input_tokens_details"]["cached_tokens"] == CACHED_TOKENS
    assert usage["output_tokens_details"]["reasoning_tokens"] == REASONING_TOKENS
    assert usage["input_tokens"] > CACHED_TOKENS
    assert usage["output_tokens"] > REASONING_TOKENS
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_responses_clean_streams_text_deltas_in_one_message_item(http: httpx.Client) -> None:
    sent = stream(http, "clean")
    assert [e.data["delta"] for e in sent if e.name == "response.output_text.delta"] == list(CLEAN_TEXT)
    assert text(sent) == CLEAN
    assert {e.data.get("item_id") for e in sent if "item_id" in e.data} == {sent[2].data["item"]["id"]}
    (output,) = sent[-1].data["response"]["output"]
    assert output["content"][0]["text"] == CLEAN
    assert calls(sent) == []


def test_responses_clean_tool_is_one_identified_function_call_in_fragments(http: httpx.Client) -> None:
    sent = stream(http, "clean-tool")
    (_, added), (_, done) = calls(sent)
    assert str(added["call_id"]).startswith("call_")
    assert (added["call_id"], added["name"], added["arguments"]) == (done["call_id"], "get_weather", "")
    assert done["arguments"] == argument_deltas(sent) == ARGUMENTS
    assert {e.data["output_index"] for e in sent if "output_index" in e.data} == {0}
    assert {e.data["item_id"] for e in sent if "item_id" in e.data} == {added["id"]}


def test_responses_seed_bug_repeats_the_call_identity_as_blank_and_null(http: httpx.Client) -> None:
    sent = stream(http, "seed-bug")
    (_, added), (_, done) = calls(sent)
    assert str(added["call_id"]).startswith("call_")
    assert added["name"] == "get_weather"
    assert (done["call_id"], done["name"]) == ("", None)
    repeated = [e.data for e in sent if e.name == "response.function_call_arguments.delta" and "call_id" in e.data]
    assert {d["call_id"] for d in repeated} == {"", None}
    assert {d["name"] for d in repeated} == {None}
    assert argument_deltas(sent) == ARGUMENTS


def test_responses_never_identified_has_no_call_id_in_any_event(http: httpx.Client) -> None:
    sent = stream(http, "never-identified")
    assert [name for name, _ in calls(sent)] == ["response.output_item.added", "response.output_item.done"]
    assert all("call_id" not in item for _, item in calls(sent))
    assert all("call_id" not in e.data for e in sent)
    assert all("call_id" not in item for item in sent[-1].data["response"]["output"])
    assert argument_deltas(sent) == ARGUMENTS


def test_responses_late_id_gives_the_call_id_only_on_output_item_done(http: httpx.Client) -> None:
    sent = stream(http, "late-id")
    (_, added), (_, done) = calls(sent)
    assert "call_id" not in added
    assert str(done["call_id"]).startswith("call_")
    assert added["name"] == done["name"] == "get_weather"


def test_responses_rotated_ids_give_a_new_item_id_on_every_event(http: httpx.Client) -> None:
    sent = stream(http, "rotated-ids")
    ids = [e.data.get("item_id") or e.data["item"]["id"] for e in sent if "item_id" in e.data or "item" in e.data]
    assert len(ids) > 10
    assert len(set(ids)) == len(ids)
    indexes = [e.data["output_index"] for e in sent if "output_index" in e.data]
    assert indexes == sorted(indexes)
    assert set(indexes) == {0, 1}
    assert text(sent) == CLEAN
    assert argument_deltas(sent) == ARGUMENTS
    (_, added), (_, done) = calls(sent)
    assert added["call_id"] == done["call_id"]


def test_responses_error_midstream_ends_with_a_server_error_event_after_text(http: httpx.Client) -> None:
    sent = stream(http, "error-midstream")
    assert sent[-1].name == "error"
    assert sent[-1].data["code"] == "server_error"
    assert sent[-1].data["message"]
    assert text(sent) == "".join(CLEAN_TEXT[:2])


def test_responses_drop_mid_stream_cuts_before_the_terminal_event(http: httpx.Client) -> None:
    sent = events(cut_body(http, "/responses", "drop-mid-stream"))
    assert sent[0].name == "response.created"
    assert not any(e.name in {"response.completed", "response.failed", "error"} for e in sent)


def test_responses_rate_limit_is_a_429_in_the_openai_error_shape(http: httpx.Client) -> None:
    response = post_format(http, "/responses", "rate-limit", {"x-emulator-retry-after": "3"})
    assert response.status_code == 429
    assert response.headers["retry-after"] == "3"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


@pytest.mark.parametrize("profile", ["parallel", "crlf", "no-such-profile"])
def test_a_profile_responses_does_not_have_is_a_404_naming_the_format(http: httpx.Client, profile: str) -> None:
    response = post_format(http, "/responses", profile)
    assert response.status_code == 404
    error = response.json()["error"]
    assert "OpenAI Responses" in error["message"]
    assert profile in error["message"]
    assert error["code"] == "model_not_found"


def test_responses_is_stream_only(http: httpx.Client) -> None:
    response = post_format(http, "/responses", "clean", stream=False)
    assert response.status_code == 400
    assert "stream only" in response.json()["error"]["message"]


def test_responses_fail_first_then_serves_the_retry(emu: Emulator, http: httpx.Client) -> None:
    headers = {"x-emulator-fail-first": "1", "x-emulator-then": "late-id"}
    first = post_format(http, "/responses", "rate-limit", headers)
    second = post_format(http, "/responses", "rate-limit", headers)
    assert (first.status_code, second.status_code) == (429, 200)
    assert "call_id" not in calls(events(second.content))[0][1]
    assert emu.state.attempts["responses/rate-limit"] == 2
    assert emu.state.requests[-1].path == "/v1/responses"


def test_the_unprefixed_paths_serve_the_formats_too(emu: Emulator) -> None:
    root = emu.base_url.removesuffix("/v1")
    with client(root) as bare:
        assert text(events(post_format(bare, "/responses", "clean").content)) == CLEAN
        assert post_format(bare, "/messages", "clean").status_code == 200
        assert bare.post("/v1/responses", json=format_body(responses=True, model="clean")).status_code == 200


def test_the_openai_sdk_streams_the_clean_text(sdk: openai.OpenAI) -> None:
    with sdk.responses.stream(model="emulator/clean", input="Hello?") as responses:
        deltas = [e.delta for e in responses if e.type == "response.output_text.delta"]
        final = responses.get_final_response()
    assert "".join(deltas) == final.output_text == CLEAN
    assert final.usage is not None
    assert final.usage.input_tokens_details.cached_tokens == CACHED_TOKENS
    assert final.usage.output_tokens_details.reasoning_tokens == REASONING_TOKENS


def test_the_openai_sdk_streams_the_clean_tool_call(sdk: openai.OpenAI) -> None:
    with sdk.responses.stream(model="emulator/clean-tool", input="Weather in Paris?") as responses:
        final = responses.get_final_response()
    (call,) = final.output
    assert call.type == "function_call"
    assert (call.name, call.arguments) == ("get_weather", ARGUMENTS)
    assert call.call_id.startswith("call_")


def test_the_openai_sdk_create_stream_reads_the_clean_tool_events(sdk: openai.OpenAI) -> None:
    seen = list(sdk.responses.create(model="emulator/clean-tool", input="Weather?", stream=True))
    assert seen[-1].type == "response.completed"
    done = [e for e in seen if e.type == "response.function_call_arguments.done"]
    assert [e.arguments for e in done] == [ARGUMENTS]


def test_responses_agent_calls_the_seed_bug_tool_then_answers_after_the_tool_output(
    emu: Emulator, http: httpx.Client
) -> None:
    first = events(post_format(http, "/responses", "agent").content)
    assert emu.state.requests[-1].profile == "seed-bug"
    assert calls(first)[-1][1]["call_id"] == ""
    turn = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ARGUMENTS},
        {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
    ]
    second = http.post("/responses", json={"model": "emulator/agent", "stream": True, "input": turn})
    assert emu.state.requests[-1].profile == "clean"
    assert text(events(second.content)) == CLEAN


def test_responses_profiles_are_all_tested_here() -> None:
    covered = {p for p, _ in ENDINGS} | {"drop-mid-stream", "rate-limit", "agent"}
    covered |= {"reasoning-tool"}  # test_emulator_sent_back.py
    covered |= {"custom-tools", "custom-grammar", "custom-blanked-id", "custom-cut", "apply-patch", "shell-call",
                "local-shell"}  # test_emulator_client_calls.py
    assert covered == set(RESPONSES_PROFILES)
