"""The reasoning round trip (docs/decisions/0028-reasoning-round-trip.md): an answer's reasoning blocks with a
signature, redacted data or an encrypted Responses item reach the next request of the API that gave them, through
``AssistantMessage.to_message()`` and through the session log; chat completions never get them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from operators import (
    BlockEnd,
    BlockStart,
    Finish,
    FinishReason,
    ReasoningBlock,
    ReasoningDelta,
    TextBlock,
    TextDelta,
    ToolCallBlock,
)
from pipeline.compose import assemble
from pipeline.formats import chat_request, messages_request, responses_request
from pipeline.session import Session

SIGNED = ReasoningBlock("I should look it up.", signature="EqQBCkYIBxgCKkD")
REDACTED = ReasoningBlock("", encrypted="EmwKAhgBEgy3va3p")
ITEM = ReasoningBlock("**Plan** weather", encrypted="gAAAAABo", item_id="rs_1")
PLAIN = ReasoningBlock("just text")
CALL = ToolCallBlock("toolu_1", "get_weather", '{"city": "Paris"}')


def answer(*blocks: ReasoningBlock, text: str = "", call: ToolCallBlock | None = CALL) -> Any:
    chunks: list[Any] = []
    for index, block in enumerate(blocks):
        chunks += [BlockStart(index, "reasoning"), ReasoningDelta(index, block.text)]
    at = len(blocks)
    if text:
        chunks += [BlockStart(at, "text"), TextDelta(at, text)]
    if call is not None:
        chunks.append(BlockStart(at + 1, "tool-call"))
    ends = [BlockEnd(i, b) for i, b in enumerate(blocks)]
    if text:
        ends.append(BlockEnd(at, TextBlock(text)))
    if call is not None:
        ends.append(BlockEnd(at + 1, call))
    reason = FinishReason("tool-calls" if call is not None else "stop")
    return assemble([*chunks, *ends, Finish(reason)])


def conversation(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "weather?"}, message,
            {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"}]


def test_the_assembled_message_keeps_every_reasoning_block_in_order() -> None:
    message = answer(SIGNED, REDACTED, PLAIN)

    assert message.reasoning_blocks == (SIGNED, REDACTED, PLAIN)
    assert message.reasoning == SIGNED.text + PLAIN.text


def test_to_message_carries_only_the_blocks_a_provider_needs_back() -> None:
    message = answer(SIGNED, PLAIN, text="Looking.").to_message()

    assert message == {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [{"id": "toolu_1", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}],
        "reasoning_blocks": [SIGNED.to_dict()],
    }
    assert "reasoning_blocks" not in answer(PLAIN).to_message()


def test_messages_request_sends_thinking_then_redacted_thinking_before_the_tool_use() -> None:
    body = messages_request(conversation(answer(SIGNED, REDACTED).to_message()), model="m")

    assert body["messages"][1] == {"role": "assistant", "content": [
        {"type": "thinking", "thinking": SIGNED.text, "signature": SIGNED.signature},
        {"type": "redacted_thinking", "data": REDACTED.encrypted},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]}


def test_messages_request_leaves_out_a_responses_item_and_unsigned_thinking() -> None:
    message = answer(ITEM, SIGNED).to_message()
    message["reasoning_blocks"].append({"type": "reasoning", "text": "unsigned"})

    content = messages_request(conversation(message), model="m")["messages"][1]["content"]
    assert [block["type"] for block in content] == ["thinking", "tool_use"]


def test_responses_request_sends_the_reasoning_item_before_the_function_call() -> None:
    body = responses_request(conversation(answer(ITEM, SIGNED).to_message()), model="m")

    assert body["input"][1:3] == [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": ITEM.text}],
         "encrypted_content": ITEM.encrypted},
        {"type": "function_call", "call_id": "toolu_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
    ]


def test_a_reasoning_item_without_text_or_encrypted_content_is_sent_by_its_id() -> None:
    message = answer(ReasoningBlock("x", item_id="rs_9")).to_message()
    message["reasoning_blocks"][0]["text"] = ""

    assert responses_request(conversation(message), model="m")["input"][1] == {
        "type": "reasoning", "id": "rs_9", "summary": []}


def test_chat_request_never_sends_reasoning_blocks() -> None:
    body = chat_request(conversation(answer(SIGNED, ITEM).to_message()), model="m")

    assert all("reasoning_blocks" not in message for message in body["messages"])
    assert body["messages"][1]["tool_calls"][0]["id"] == "toolu_1"


@pytest.mark.parametrize("bad", [
    [{"type": "reasoning", "text": "t", "signature": ""}],
    [{"type": "reasoning", "text": 3}],
    [{"type": "thinking", "thinking": "t"}],
    "not a list",
])
def test_a_malformed_reasoning_block_is_a_value_error_naming_the_message(bad: Any) -> None:
    message = answer(SIGNED).to_message()
    message["reasoning_blocks"] = bad
    for build in (messages_request, responses_request):
        with pytest.raises(ValueError, match="message 1"):
            build(conversation(message), model="m")


def test_the_session_log_keeps_the_blocks_and_its_history_sends_them_back(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    message = answer(SIGNED, REDACTED, PLAIN, text="Looking.")
    content = [*message.reasoning_blocks, TextBlock(message.text), *message.tool_calls]
    with Session.open(log, fsync=False) as session:
        session.append_user_message("weather?")
        session.append_assistant_message(1, 1, content=content, provider="p", model="m", usage=None,
                                         finish=message.finish)
        first = session.messages()
    loaded = Session.open(log, fsync=False)
    with loaded:
        assert loaded.messages() == first
    assert first[1] == message.to_message()
    assert first[1]["reasoning_blocks"] == [SIGNED.to_dict(), REDACTED.to_dict()]
