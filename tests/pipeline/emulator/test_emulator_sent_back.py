"""The tool loops that must send reasoning back, over real loopback HTTP: Messages ``thinking-tool`` (a signed thinking
block, a redacted_thinking block, a tool_use) and Responses ``reasoning-tool`` (a reasoning item with encrypted
content, a function_call). A follow-up that sends them back as they were sent gets the final answer; one that omits
or alters them gets the provider's 400."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest
from emulator_helpers import CLEAN
from format_helpers import SseEvent, events, post_format

from pipeline.emulator import Emulator
from pipeline.emulator.messages._sent_back import REDACTED_DATA, SIGNATURE, THINKING, THINKING_PIECES
from pipeline.emulator.responses._sent_back import (
    ENCRYPTED_ADDED,
    ENCRYPTED_CONTENT,
    REASONING_ID,
    SUMMARY,
    SUMMARY_PIECES,
)

ARGUMENTS = '{"city": "Paris"}'
THINKING_BLOCK = {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE}
REDACTED_BLOCK = {"type": "redacted_thinking", "data": REDACTED_DATA}
REASONING_ITEM = {
    "type": "reasoning",
    "id": REASONING_ID,
    "encrypted_content": ENCRYPTED_CONTENT,
    "summary": [{"type": "summary_text", "text": SUMMARY}],
}


def first(http: httpx.Client, path: str, profile: str) -> list[SseEvent]:
    response = post_format(http, path, profile)
    assert response.status_code == 200
    return events(response.content)


# ------------------------------------------------------------------------------------------ Messages thinking-tool


def test_thinking_tool_streams_a_signed_thinking_block_a_redacted_block_then_a_tool_use(http: httpx.Client) -> None:
    sent = first(http, "/messages", "thinking-tool")
    starts = [(e.data["index"], e.data["content_block"]) for e in sent if e.name == "content_block_start"]
    assert starts[0] == (0, {"type": "thinking", "thinking": "", "signature": ""})
    assert starts[1] == (1, REDACTED_BLOCK)
    index, tool = starts[2]
    assert index == 2
    assert (tool["type"], tool["name"], tool["input"]) == ("tool_use", "get_weather", {})
    assert str(tool["id"]).startswith("toolu_")
    deltas = [e.data["delta"] for e in sent if e.name == "content_block_delta"]
    assert [d["thinking"] for d in deltas if d["type"] == "thinking_delta"] == list(THINKING_PIECES)
    assert [d["signature"] for d in deltas if d["type"] == "signature_delta"] == [SIGNATURE]
    assert "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta") == ARGUMENTS
    signature_at = next(n for n, e in enumerate(sent) if e.data.get("delta", {}).get("type") == "signature_delta")
    assert sent[signature_at + 1].data == {"type": "content_block_stop", "index": 0}
    assert [e.data["delta"]["stop_reason"] for e in sent if e.name == "message_delta"] == ["tool_use"]
    assert sent[-1].name == "message_stop"
    assert len(SIGNATURE) >= 300


def test_thinking_tool_is_the_same_on_every_request(http: httpx.Client) -> None:
    def blocks(sent: list[SseEvent]) -> list[Any]:
        return [e.data.get("delta") or e.data.get("content_block") for e in sent if e.data.get("index") in (0, 1)]

    assert blocks(first(http, "/messages", "thinking-tool")) == blocks(first(http, "/messages", "thinking-tool"))


def messages_follow_up(assistant: list[Any]) -> dict[str, Any]:
    return {
        "model": "emulator/messages/thinking-tool",
        "stream": True,
        "max_tokens": 256,
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
        ],
    }


TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}


def test_a_follow_up_that_sends_the_thinking_back_gets_the_final_answer(emu: Emulator, http: httpx.Client) -> None:
    thinking = {**THINKING_BLOCK, "cache_control": {"type": "ephemeral"}}  # extra keys are allowed
    response = http.post("/messages", json=messages_follow_up([thinking, REDACTED_BLOCK, TOOL_USE]))
    assert response.status_code == 200
    sent = events(response.content)
    assert "".join(e.data["delta"]["text"] for e in sent if e.name == "content_block_delta") == CLEAN
    assert [e.data["delta"]["stop_reason"] for e in sent if e.name == "message_delta"] == ["end_turn"]
    assert emu.state.requests[-1].profile == "clean"


ONE_CHARACTER_OFF = SIGNATURE[:-1] + ("A" if SIGNATURE[-1] != "A" else "B")
MESSAGES_REFUSALS = [
    (
        [TOOL_USE],
        "messages.1.content.0: the thinking block with its signature must be sent back unmodified "
        "(found a 'tool_use' block)",
    ),
    (
        [{**THINKING_BLOCK, "signature": ONE_CHARACTER_OFF}, REDACTED_BLOCK, TOOL_USE],
        "messages.1.content.0: the thinking block with its signature must be sent back unmodified "
        "(its signature differs)",
    ),
    (
        [{"type": "thinking", "thinking": THINKING}, REDACTED_BLOCK, TOOL_USE],
        "messages.1.content.0: the thinking block with its signature must be sent back unmodified "
        "(its signature is missing)",
    ),
    (
        [{**THINKING_BLOCK, "thinking": THINKING_PIECES[0]}, REDACTED_BLOCK, TOOL_USE],
        "messages.1.content.0: the thinking block with its signature must be sent back unmodified "
        "(its thinking differs)",
    ),
    (
        [THINKING_BLOCK, TOOL_USE],
        "messages.1.content.1: the redacted_thinking block must be sent back unmodified after the thinking block "
        "(found a 'tool_use' block)",
    ),
    (
        [THINKING_BLOCK, {**REDACTED_BLOCK, "data": REDACTED_DATA[1:]}, TOOL_USE],
        "messages.1.content.1: the redacted_thinking block must be sent back unmodified after the thinking block "
        "(its data differs)",
    ),
    ([THINKING_BLOCK, REDACTED_BLOCK], "messages.1.content.2: the tool_use block must follow the thinking blocks"),
]


@pytest.mark.parametrize(("assistant", "message"), MESSAGES_REFUSALS)
def test_a_follow_up_that_omits_or_alters_the_thinking_is_a_400(
    http: httpx.Client, assistant: list[Any], message: str
) -> None:
    response = http.post("/messages", json=messages_follow_up(assistant))
    assert response.status_code == 400
    assert response.json() == {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def test_a_string_assistant_content_is_refused_at_its_first_block(http: httpx.Client) -> None:
    response = http.post("/messages", json=messages_follow_up("I will call get_weather."))  # type: ignore[arg-type]
    assert response.status_code == 400
    assert response.json()["error"]["message"].endswith("(found no block there)")


# ---------------------------------------------------------------------------------------- Responses reasoning-tool


def test_reasoning_tool_streams_a_reasoning_item_then_a_function_call(http: httpx.Client) -> None:
    sent = first(http, "/responses", "reasoning-tool")
    names = [e.name for e in sent]
    assert names[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
    ]
    added = sent[2].data["item"]
    assert added == {"id": REASONING_ID, "type": "reasoning", "encrypted_content": ENCRYPTED_ADDED, "summary": []}
    deltas = [e.data for e in sent if e.name == "response.reasoning_summary_text.delta"]
    assert [d["delta"] for d in deltas] == list(SUMMARY_PIECES)
    assert {(d["item_id"], d["output_index"], d["summary_index"]) for d in deltas} == {(REASONING_ID, 0, 0)}
    text_done = next(e.data for e in sent if e.name == "response.reasoning_summary_text.done")
    assert text_done["text"] == SUMMARY
    part_done = next(e.data for e in sent if e.name == "response.reasoning_summary_part.done")
    assert part_done["part"] == {"type": "summary_text", "text": SUMMARY}
    done = [e.data for e in sent if e.name == "response.output_item.done"]
    assert (done[0]["output_index"], done[0]["item"]) == (0, REASONING_ITEM | {"summary": REASONING_ITEM["summary"]})
    assert done[0]["item"]["encrypted_content"] == ENCRYPTED_CONTENT != ENCRYPTED_ADDED
    assert done[1]["output_index"] == 1
    call = done[1]["item"]
    assert (call["type"], call["name"], call["arguments"]) == ("function_call", "get_weather", ARGUMENTS)
    completed = sent[-1].data["response"]
    assert sent[-1].name == "response.completed"
    assert completed["output"] == [done[0]["item"], call]


def responses_follow_up(items: list[Any]) -> dict[str, Any]:
    call = {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": ARGUMENTS}
    output = {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}
    return {
        "model": "emulator/responses/reasoning-tool",
        "stream": True,
        "input": [{"role": "user", "content": "Weather in Paris?"}, *items, call, output],
    }


def test_a_follow_up_that_sends_the_reasoning_back_gets_the_final_answer(emu: Emulator, http: httpx.Client) -> None:
    response = http.post("/responses", json=responses_follow_up([REASONING_ITEM]))
    assert response.status_code == 200
    sent = events(response.content)
    assert "".join(e.data["delta"] for e in sent if e.name == "response.output_text.delta") == CLEAN
    assert sent[-1].name == "response.completed"
    assert emu.state.requests[-1].profile == "clean"




def missing(at: int) -> str:
    """The 400 message when the function_call item at ``input[at]`` has no reasoning item before it."""
    return (
        f"input.{at}: the function_call item was sent without its required reasoning item {REASONING_ID!r} before "
        "it (send the reasoning item back with its id, encrypted_content and summary)"
    )


RESPONSES_REFUSALS = [
    ([], missing(1)),
    ([{**REASONING_ITEM, "id": "rs_other"}], missing(2)),
    (
        [{**REASONING_ITEM, "encrypted_content": ENCRYPTED_ADDED}],
        f"input.1: the encrypted_content of reasoning item {REASONING_ID!r} must be sent back unmodified "
        "(it is different)",
    ),
    (
        [{k: v for k, v in REASONING_ITEM.items() if k != "encrypted_content"}],
        f"input.1: the encrypted_content of reasoning item {REASONING_ID!r} must be sent back unmodified "
        "(it is missing)",
    ),
    (
        [{k: v for k, v in REASONING_ITEM.items() if k != "summary"}],
        f"input.1: the reasoning item {REASONING_ID!r} needs its summary list",
    ),
]


@pytest.mark.parametrize(("items", "message"), RESPONSES_REFUSALS)
def test_a_follow_up_that_omits_or_alters_the_reasoning_is_a_400(
    http: httpx.Client, items: list[Any], message: str
) -> None:
    response = http.post("/responses", json=responses_follow_up(items))
    assert response.status_code == 400
    assert response.json() == {
        "error": {"message": message, "type": "invalid_request_error", "param": "input", "code": None}
    }


def test_the_reasoning_must_come_before_the_function_call(http: httpx.Client) -> None:
    body = responses_follow_up([])
    body["input"].append(REASONING_ITEM)  # after the call and its output: too late
    response = http.post("/responses", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["message"] == missing(1)


def test_the_openai_sdk_reads_the_reasoning_tool_stream(emu: Emulator) -> None:
    sdk = openai.OpenAI(base_url=emu.base_url, api_key="test", max_retries=0)
    with sdk.responses.stream(model="emulator/responses/reasoning-tool", input="Weather in Paris?") as stream:
        final = stream.get_final_response()
    reasoning, call = final.output
    assert reasoning.type == "reasoning"
    assert (reasoning.id, reasoning.encrypted_content) == (REASONING_ID, ENCRYPTED_CONTENT)
    assert [s.text for s in reasoning.summary] == [SUMMARY]
    assert call.type == "function_call"
    assert (call.name, call.arguments) == ("get_weather", ARGUMENTS)
