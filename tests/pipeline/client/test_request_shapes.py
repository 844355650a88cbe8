"""Each API's request body from the chat-shaped conversation (pipeline/client/_requests.py,
docs/decisions/0027-request-shapes.md)."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.formats import DEFAULT_MAX_TOKENS, chat_request, messages_request, responses_request

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(text: str | None = None, *calls: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return message


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


SYSTEM = {"role": "system", "content": "Be brief."}
CONVERSATION = [
    SYSTEM,
    user("Weather in Paris and Rome?"),
    assistant("Looking.", call("call_1"), call("call_2", arguments='{"city": "Rome"}')),
    tool("call_1", "sunny"),
    tool("call_2", "rain"),
]


# -- chat -----------------------------------------------------------------------------------------------------------


def test_chat_request_keeps_the_messages_and_asks_for_usage() -> None:
    body = chat_request(CONVERSATION, model="m", tools=[WEATHER])
    assert body == {
        "model": "m",
        "messages": CONVERSATION,
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [WEATHER],
    }


def test_chat_request_puts_a_given_system_prompt_first() -> None:
    body = chat_request([user("hi")], model="m", system="Be brief.", max_tokens=5, stop="x", temperature=0.0)
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, user("hi")]
    assert (body["max_tokens"], body["stop"], body["temperature"]) == (5, "x", 0.0)


# -- messages -------------------------------------------------------------------------------------------------------


def test_messages_request_shapes_system_tools_tool_use_and_results() -> None:
    body = messages_request(CONVERSATION, model="m", tools=[WEATHER])
    assert body == {
        "model": "m",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "stream": True,
        "system": "Be brief.",
        "tools": [{
            "name": "get_weather",
            "description": "The weather in a city.",
            "input_schema": WEATHER["function"]["parameters"],
        }],
        "messages": [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"city": "Rome"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "rain"},
            ]},
        ],
    }


def test_messages_request_has_no_stream_options() -> None:
    assert "stream_options" not in messages_request([user("hi")], model="m")


def test_messages_request_takes_max_tokens_when_given() -> None:
    assert messages_request([user("hi")], model="m", max_tokens=12)["max_tokens"] == 12


def test_messages_request_joins_every_system_message_after_the_given_prompt() -> None:
    messages = [SYSTEM, user("hi"), {"role": "developer", "content": [{"type": "text", "text": "Use French."}]}]
    body = messages_request(messages, model="m", system="You are a bot.")
    assert body["system"] == "You are a bot.\n\nBe brief.\n\nUse French."
    assert body["messages"] == [user("hi")]


def test_messages_request_without_a_system_prompt_has_no_system_key() -> None:
    assert "system" not in messages_request([user("hi")], model="m")


def test_messages_request_merges_a_user_message_after_tool_results() -> None:
    messages = [user("a"), assistant(None, call("c1")), tool("c1", "ok"), user("and now?")]
    body = messages_request(messages, model="m")
    assert body["messages"][-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "c1", "content": "ok"},
        {"type": "text", "text": "and now?"},
    ]}
    assert body["messages"][1] == {"role": "assistant", "content": [
        {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
    ]}


def test_messages_request_leaves_out_an_empty_assistant_message() -> None:
    body = messages_request([user("a"), assistant(""), user("b")], model="m")
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text",
                                                                                             "text": "b"}]}]


def test_messages_request_keeps_a_text_only_assistant_message_as_a_string() -> None:
    body = messages_request([user("a"), assistant("b")], model="m")
    assert body["messages"][1] == {"role": "assistant", "content": "b"}


@pytest.mark.parametrize(
    "arguments",
    ["{not json", "", "   ", "[1, 2]", '"text"', "null"],
    ids=["bad-json", "empty", "blank", "array", "string", "null"],
)
def test_messages_request_sends_arguments_that_are_not_a_json_object_as_an_empty_input(arguments: str) -> None:
    body = messages_request([user("a"), assistant(None, call("c1", arguments=arguments)), tool("c1", "bad")],
                            model="m")
    assert body["messages"][1]["content"][0]["input"] == {}


def test_messages_request_maps_stop_and_tool_choice() -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    assert messages_request([user("a")], model="m", stop="END")["stop_sequences"] == ["END"]
    assert messages_request([user("a")], model="m", stop=["A", "B"])["stop_sequences"] == ["A", "B"]
    choices = {choice if isinstance(choice, str) else "named": messages_request(
        [user("a")], model="m", tool_choice=choice)["tool_choice"] for choice in ("auto", "none", "required", named)}
    assert choices == {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"},
                       "named": {"type": "tool", "name": "get_weather"}}


def test_messages_request_converts_user_images() -> None:
    content = [{"type": "text", "text": "what is it?"},
               {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
               {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]
    body = messages_request([{"role": "user", "content": content}], model="m")
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    ]


def test_a_tool_that_is_not_chat_shaped_goes_through_as_given() -> None:
    server_tool = {"type": "web_search_20250305", "name": "web_search"}
    assert messages_request([user("a")], model="m", tools=[server_tool])["tools"] == [server_tool]
    assert responses_request([user("a")], model="m", tools=[{"type": "web_search"}])["tools"] == [
        {"type": "web_search"}]


def test_a_tool_without_parameters_gets_an_empty_object_schema() -> None:
    bare = {"type": "function", "function": {"name": "now"}}
    assert messages_request([user("a")], model="m", tools=[bare])["tools"] == [
        {"name": "now", "input_schema": {"type": "object", "properties": {}}}]


# -- responses ------------------------------------------------------------------------------------------------------


def test_responses_request_shapes_instructions_tools_calls_and_outputs() -> None:
    body = responses_request(CONVERSATION, model="m", tools=[WEATHER])
    assert body == {
        "model": "m",
        "stream": True,
        "instructions": "Be brief.",
        "tools": [{
            "type": "function",
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": WEATHER["function"]["parameters"],
            "strict": False,
        }],
        "input": [
            {"type": "message", "role": "user", "content": "Weather in Paris and Rome?"},
            {"type": "message", "role": "assistant", "content": "Looking."},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
            {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city": "Rome"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            {"type": "function_call_output", "call_id": "call_2", "output": "rain"},
        ],
    }


def test_responses_request_keeps_strict_when_the_chat_tool_asks_for_it() -> None:
    strict = {"type": "function", "function": {**WEATHER["function"], "strict": True}}
    assert responses_request([user("a")], model="m", tools=[strict])["tools"][0]["strict"] is True


def test_responses_request_sends_bad_arguments_verbatim_and_blank_ones_as_an_empty_object() -> None:
    messages = [user("a"), assistant(None, call("c1", arguments="{not json"), call("c2", arguments=""))]
    calls = responses_request(messages, model="m")["input"][1:]
    assert [item["arguments"] for item in calls] == ["{not json", "{}"]


def test_responses_request_maps_max_tokens_and_tool_choice_and_refuses_stop() -> None:
    named = {"type": "function", "function": {"name": "get_weather"}}
    body = responses_request([user("a")], model="m", max_tokens=7, tool_choice=named, temperature=0.5)
    assert (body["max_output_tokens"], body["tool_choice"], body["temperature"]) == (
        7, {"type": "function", "name": "get_weather"}, 0.5)
    assert "stream_options" not in body
    assert "max_tokens" not in body
    assert responses_request([user("a")], model="m", tool_choice="required")["tool_choice"] == "required"
    with pytest.raises(ValueError, match="no stop sequences"):
        responses_request([user("a")], model="m", stop="END")


def test_responses_request_converts_user_parts() -> None:
    content = [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": "https://x/a.png"}}]
    body = responses_request([{"role": "user", "content": content}], model="m")
    assert body["input"][0]["content"] == [{"type": "input_text", "text": "look"},
                                           {"type": "input_image", "image_url": "https://x/a.png"}]


# -- what cannot be sent --------------------------------------------------------------------------------------------

BUILDERS = [chat_request, messages_request, responses_request]
SHAPERS = [messages_request, responses_request]


@pytest.mark.parametrize("build", SHAPERS, ids=["messages", "responses"])
@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ([{"role": "robot", "content": "x"}], "role 'robot'"),
        ([{"content": "x"}], "role None"),
        ([user("a"), assistant(None, call(""))], "non-empty id"),
        ([user("a"), assistant(None, call("c1", name=""))], "non-empty id"),
        ([user("a"), {"role": "tool", "content": "x"}], "tool_call_id"),
        ([{"role": "user", "content": [{"type": "audio"}]}], "'audio'"),
        ([{"role": "user", "content": 5}], "not a string or a list"),
    ],
    ids=["unknown-role", "no-role", "call-without-id", "call-without-name", "result-without-id", "audio", "number"],
)
def test_a_conversation_the_api_cannot_express_is_refused_naming_the_message(
    build: Any, messages: list[dict[str, Any]], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        build(messages, model="m")


@pytest.mark.parametrize("build", SHAPERS, ids=["messages", "responses"])
@pytest.mark.parametrize("function", [{}, {"name": ""}, {"name": 3}], ids=["missing", "empty", "number"])
def test_a_chat_tool_without_a_name_is_refused(build: Any, function: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"non-empty function\.name"):
        build([user("a")], model="m", tools=[{"type": "function", "function": function}])


@pytest.mark.parametrize("build", BUILDERS, ids=["chat", "messages", "responses"])
def test_building_leaves_the_conversation_unchanged(build: Any) -> None:
    before = json.dumps(CONVERSATION)
    body = build(CONVERSATION, model="m", tools=[WEATHER])
    assert json.dumps(CONVERSATION) == before
    assert body["stream"] is True


# -- invariants -----------------------------------------------------------------------------------------------------

_ids = st.text(alphabet="abcdefghij0123456789_", min_size=1, max_size=8)
_args = st.one_of(
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(json.dumps),
    st.text(max_size=10),
)


@given(st.lists(st.tuples(_ids, _args), min_size=1, max_size=5, unique_by=lambda pair: pair[0]))
def test_every_tool_call_round_trips_with_its_result_in_both_shapes(calls: list[tuple[str, str]]) -> None:
    messages = [user("go"), assistant(None, *[call(i, arguments=a) for i, a in calls])]
    messages += [tool(i, f"result {i}") for i, _ in calls]
    ids = [i for i, _ in calls]

    shaped = messages_request(messages, model="m")["messages"]
    assert [m["role"] for m in shaped] == ["user", "assistant", "user"]
    assert [block["id"] for block in shaped[1]["content"]] == ids
    assert [block["tool_use_id"] for block in shaped[2]["content"]] == ids
    for block, (_, arguments) in zip(shaped[1]["content"], calls, strict=True):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        assert block["input"] == (parsed if isinstance(parsed, dict) else {})

    items = responses_request(messages, model="m")["input"][1:]
    assert [item["call_id"] for item in items if item["type"] == "function_call"] == ids
    assert [item["call_id"] for item in items if item["type"] == "function_call_output"] == ids
    assert [item["output"] for item in items if item["type"] == "function_call_output"] == [
        f"result {i}" for i in ids]


@st.composite
def _histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Chat histories as ``Session.messages()`` writes them: turns of a user message, tool steps (an assistant with
    calls, then one result per call) and a final assistant answer (possibly empty)."""
    messages: list[dict[str, Any]] = []
    number = 0
    for _ in range(draw(st.integers(1, 3))):
        messages.append(user(draw(st.text(min_size=1, max_size=5))))
        for _ in range(draw(st.integers(0, 2))):
            ids = [f"c{number + k}" for k in range(draw(st.integers(1, 3)))]
            number += len(ids)
            messages.append(assistant(draw(st.sampled_from([None, "", "hm"])), *[call(i) for i in ids]))
            messages.extend(tool(i, "ok") for i in ids)
        messages.append(assistant(draw(st.sampled_from(["", "done"]))))
    return messages


@given(_histories())
def test_messages_roles_alternate_and_each_result_follows_its_call(messages: list[dict[str, Any]]) -> None:
    shaped = messages_request(messages, model="m")["messages"]
    roles = [m["role"] for m in shaped]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))
    for before, after in itertools.pairwise(shaped):
        if before["role"] == "assistant" and isinstance(before["content"], list):
            used = [b["id"] for b in before["content"] if b["type"] == "tool_use"]
            results = [b for b in after["content"] if b["type"] == "tool_result"]
            assert [b["tool_use_id"] for b in results] == used
            assert after["content"][: len(results)] == results  # results first
    assert all(m["content"] for m in shaped)
