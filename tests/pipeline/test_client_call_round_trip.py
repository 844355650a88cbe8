"""Every kind of tool call on its way back (issue 33 item 2, docs/decisions/0072-client-run-tool-calls.md, "Round
trip"): the chat-shaped history keeps the kind as the call's ``type``; the Responses builder sends each kind's call
and output item; the session log stores the kind (a log written before it reads as function calls); the other
formats' builders refuse a call that is not a function with ``ToolKindError``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from operators import BlockEnd, BlockStart, Finish, FinishReason, LlmStreamError, ToolCallBlock, ToolCallKind
from pipeline.compose import assemble
from pipeline.formats import (
    ToolKindError,
    chat_request,
    gemini_request,
    messages_request,
    responses_request,
)
from pipeline.session import AssistantMessageEvent, Session, SessionWriteError, ToolCallEvent

PATCH = '{"type":"create_file","path":"a.txt","diff":"+hi\\n"}'
CALLS = (
    ToolCallBlock("call_f", "get_weather", '{"city":"Paris"}'),
    ToolCallBlock("call_c", "run_sql", "SELECT {x} FROM t", kind=ToolCallKind.CUSTOM),
    ToolCallBlock("call_p", "apply_patch", PATCH, kind=ToolCallKind.APPLY_PATCH),
    ToolCallBlock("call_s", "shell", '{"commands":["ls"]}', kind=ToolCallKind.SHELL),
    ToolCallBlock("call_l", "local_shell", '{"type":"exec","command":["ls"],"env":{}}', kind=ToolCallKind.LOCAL_SHELL),
    ToolCallBlock("call_u", "computer", '{"actions":[{"type":"screenshot"}],"pending_safety_checks":[]}',
                  kind=ToolCallKind.COMPUTER),
    ToolCallBlock("mcpr_1", "mcp_approval", '{"server_label":"wiki","name":"ask","arguments":"{}"}',
                  kind=ToolCallKind.MCP_APPROVAL),
)


def answer(*calls: ToolCallBlock) -> Any:
    starts = [BlockStart(i, "tool-call") for i in range(len(calls))]
    ends = [BlockEnd(i, call) for i, call in enumerate(calls)]
    return assemble([*starts, *ends, Finish(FinishReason("tool-calls"))])


def history(*calls: ToolCallBlock, results: dict[str, str] | None = None) -> list[dict[str, Any]]:
    results = results or {}
    return [
        {"role": "user", "content": "go"},
        answer(*calls).to_message(),
        *({"role": "tool", "tool_call_id": call.id, "content": results.get(call.id, f"done {call.id}")}
          for call in calls),
    ]


def test_to_message_writes_the_kind_as_the_calls_type_and_a_function_as_before() -> None:
    calls = answer(*CALLS).to_message()["tool_calls"]
    assert [call["type"] for call in calls] == ["function", "custom", "apply_patch", "shell", "local_shell",
                                                 "computer", "mcp_approval"]
    assert calls[0] == {"id": "call_f", "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}
    assert calls[1]["function"] == {"name": "run_sql", "arguments": "SELECT {x} FROM t"}


def test_the_responses_builder_sends_each_kinds_call_item() -> None:
    items = responses_request(history(*CALLS), model="m")["input"][1:8]
    assert items == [
        {"type": "function_call", "call_id": "call_f", "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "custom_tool_call", "call_id": "call_c", "name": "run_sql", "input": "SELECT {x} FROM t"},
        {"type": "apply_patch_call", "call_id": "call_p", "status": "completed", "operation": json.loads(PATCH)},
        {"type": "shell_call", "call_id": "call_s", "status": "completed", "action": {"commands": ["ls"]}},
        {"type": "local_shell_call", "call_id": "call_l", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "computer_call", "call_id": "call_u", "status": "completed", "actions": [{"type": "screenshot"}],
         "pending_safety_checks": []},
        {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "wiki", "name": "ask", "arguments": "{}"},
    ]


def test_a_registry_answer_of_each_kind_becomes_its_output_item() -> None:
    screenshot = {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}
    results = {
        "call_p": '{"status": "completed", "output": "created a.txt"}',
        "call_s": '{"output": [{"stdout": "a.txt\\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}',
        "call_l": "a.txt\n",
        "call_u": json.dumps({"output": screenshot, "acknowledged_safety_checks": []}),
        "mcpr_1": '{"approve": true}',
    }
    items = responses_request(history(*CALLS, results=results), model="m")["input"][8:]
    assert items == [
        {"type": "function_call_output", "call_id": "call_f", "output": "done call_f"},
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": "done call_c"},
        {"type": "apply_patch_call_output", "call_id": "call_p", "status": "completed", "output": "created a.txt"},
        {"type": "shell_call_output", "call_id": "call_s",
         "output": [{"stdout": "a.txt\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]},
        {"type": "local_shell_call_output", "id": "call_l", "call_id": "call_l", "output": "a.txt\n"},
        {"type": "computer_call_output", "call_id": "call_u", "output": screenshot, "acknowledged_safety_checks": []},
        {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
    ]


def test_an_error_text_goes_in_each_kinds_failing_form() -> None:
    error = 'unknown tool "x" (kind x): no handler'
    results = dict.fromkeys(("call_p", "call_s", "call_u", "mcpr_1"), error)
    items = {item.get("call_id", item.get("approval_request_id")): item
             for item in responses_request(history(*CALLS, results=results), model="m")["input"][8:]}
    assert items["call_p"] == {"type": "apply_patch_call_output", "call_id": "call_p", "status": "failed",
                               "output": error}
    assert items["call_s"]["output"] == [{"stdout": "", "stderr": error, "outcome": {"type": "exit", "exit_code": 1}}]
    assert items["call_u"] == {"type": "computer_call_output", "call_id": "call_u",
                               "output": {"type": "computer_screenshot"}}
    assert items["mcpr_1"] == {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": False,
                               "reason": error}


def test_a_kind_the_responses_builder_does_not_know_is_a_tool_kind_error() -> None:
    call = ToolCallBlock("call_t", "tool_search", "{}", kind="tool_search")
    with pytest.raises(ToolKindError, match="'tool_search' call, which the Responses API request builder has no item"):
        responses_request(history(call), model="m")


def test_a_built_in_call_whose_arguments_are_not_a_json_object_names_its_message() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_p", "type": "apply_patch", "function": {"name": "apply_patch", "arguments": "[1]"}}]}
    with pytest.raises(ValueError, match="message 0: the apply_patch call 'call_p' needs its arguments as a JSON"):
        responses_request([message], model="m")


def test_a_hand_written_call_without_a_type_is_a_function_call() -> None:
    message = {"role": "assistant", "content": None,
               "tool_calls": [{"id": "call_1", "function": {"name": "f", "arguments": "{}"}}]}
    assert responses_request([message], model="m")["input"] == [
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"}]
    assert messages_request([message], model="m")["messages"][0]["content"][0]["type"] == "tool_use"


@pytest.mark.parametrize(
    ("build", "api"),
    [(chat_request, "chat completions"), (messages_request, "the Messages API"), (gemini_request, "Gemini")],
)
@pytest.mark.parametrize("call", CALLS[1:], ids=lambda call: call.kind)
def test_another_formats_builder_refuses_a_call_that_is_not_a_function(build: Any, api: str, call: Any) -> None:
    with pytest.raises(ToolKindError) as refused:
        build(history(CALLS[0], call), model="m")
    said = f"message 1: tool call '{call.id}' is a '{call.kind}' call, which {api} has no form for"
    assert said in str(refused.value)
    assert isinstance(refused.value, ValueError)
    assert isinstance(refused.value, LlmStreamError)
    build(history(CALLS[0]), model="m")  # a function call alone goes as before


def test_the_session_log_stores_each_kind_and_its_history_sends_the_same_items(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    message = answer(*CALLS)
    with Session.open(log, fsync=False) as session:
        session.append_user_message("go")
        session.append_assistant_message(1, 1, content=list(message.tool_calls), provider="p", model="m",
                                         usage=None, finish=message.finish)
        for call in CALLS:
            session.append_tool_call(1, 1, call.id, call.name, call.arguments, kind=call.kind)
            session.append_tool_result(1, 1, call.id, f"done {call.id}")
        written = session.messages()
    with Session.open(log, fsync=False) as loaded:
        assert loaded.messages() == written
    assert written == history(*CALLS)
    assert responses_request(written, model="m") == responses_request(history(*CALLS), model="m")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    stored = next(line for line in lines if line["type"] == "assistant/message")["data"]["message"]["content"]
    assert stored[0] == {"type": "tool-call", "id": "call_f", "name": "get_weather", "arguments": '{"city":"Paris"}'}
    assert list(stored[1]) == ["type", "id", "name", "kind", "arguments"]  # as ToolCallBlock.to_dict() writes it
    assert [part.get("kind") for part in stored] == [None, *(call.kind for call in CALLS[1:])]
    recorded = [line["data"] for line in lines if line["type"] == "tool/call"]
    assert "kind" not in recorded[0]
    assert [data.get("kind") for data in recorded[1:]] == [call.kind for call in CALLS[1:]]


def test_a_log_written_before_the_kind_reads_as_function_calls(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    call = {"type": "tool-call", "id": "call_1", "name": "run_sql", "arguments": "{}"}
    message = {"id": "a1", "role": "assistant", "source": {"kind": "model", "provider": "p", "model": "m"},
               "content": [call], "finish": {"kind": "tool-calls"}}
    lines = [
        {"type": "user/message", "data": {"id": "u1", "role": "user", "source": {"kind": "user"},
                                          "content": [{"type": "text", "text": "go"}]}},
        {"type": "assistant/message", "data": {"turn": 1, "step": 1, "message": message}},
        {"type": "tool/call", "data": {"turn": 1, "step": 1, "call_id": "call_1", "name": "run_sql",
                                       "arguments": "{}"}},
    ]
    before = "".join(json.dumps({"v": 1, "seq": n, **line}) + "\n" for n, line in enumerate(lines, 1))
    log.write_text(before)
    with Session.open(log, fsync=False) as session:
        committed, called = session.events[1], session.events[2]
        assert isinstance(committed, AssistantMessageEvent)
        assert isinstance(called, ToolCallEvent)
        assert committed.message.tool_calls[0].kind == called.kind == "function"
        assert session.messages()[1]["tool_calls"][0]["type"] == "function"
        assert responses_request(session.messages(), model="m")["input"][1]["type"] == "function_call"
        session.append_tool_result(1, 1, "call_1", "ok")
    assert log.read_text().startswith(before)  # the old lines stay as they were


def test_the_log_still_refuses_an_empty_call_id_and_a_kind_other_than_the_calls(tmp_path: Path) -> None:
    message = answer(CALLS[1])
    with Session.open(tmp_path / "s.jsonl", fsync=False) as session:
        session.append_user_message("go")
        session.append_assistant_message(1, 1, content=list(message.tool_calls), provider="p", model="m",
                                         usage=None, finish=message.finish)
        with pytest.raises(SessionWriteError, match="must have a non-empty string call_id, got ''"):
            session.append_tool_call(1, 1, "", "run_sql", "SELECT 1", kind="custom")
        with pytest.raises(SessionWriteError, match="is a 'function' call; the assistant/message's is a 'custom'"):
            session.append_tool_call(1, 1, "call_c", "run_sql", "SELECT 1")
        with pytest.raises(SessionWriteError, match="must have a non-empty string id, got ''"):
            session.append_assistant_message(
                1, 2, content=[{"type": "tool-call", "id": "", "name": "x", "kind": "custom", "arguments": ""}],
                provider="p", model="m", usage=None, finish=message.finish)
