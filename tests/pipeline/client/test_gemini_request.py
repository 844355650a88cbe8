"""Gemini's request body from the chat-shaped conversation (pipeline/formats/gemini/_request.py, docs/decisions/
0027-request-shapes.md and 0071-gemini-format.md: call identity, thought signatures), checked field by field and
against what the google-genai SDK itself sends for the same request."""

from __future__ import annotations

import base64
import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.formats import RequestOptions, gemini_request

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                       "additionalProperties": False},
    },
}
CLOCK: dict[str, Any] = {"type": "function", "function": {"name": "get_time"}}


def sig(name: str) -> str:
    """A thought signature as Google sends one: base64 (the SDK's ``bytes`` field reads it so)."""
    return base64.b64encode(f"signature of {name}".encode()).decode()


def call(call_id: str, name: str = "get_weather", arguments: str = '{"city": "Paris"}',
         signature: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    if signature is not None:
        out["extra_content"] = {"google": {"thought_signature": signature}}
    return out


def assistant(text: str | None = None, *calls: dict[str, Any], reasoning: list[dict[str, Any]] | None = None
              ) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    if reasoning:
        message["reasoning_blocks"] = reasoning
    return message


def tool(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def user(content: Any) -> dict[str, Any]:
    return {"role": "user", "content": content}


def thought(text: str, signature: str | None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "reasoning", "text": text}
    if signature is not None:
        block["signature"] = signature
    return block


def build(messages: list[dict[str, Any]], **options: Any) -> dict[str, Any]:
    return gemini_request(messages, model="gemini-2.5-flash", **options)


def function_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [part["functionCall"] for c in body["contents"] for part in c["parts"] if "functionCall" in part]


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [part["functionResponse"] for c in body["contents"] for part in c["parts"] if "functionResponse" in part]


# A conversation with two tool rounds whose calls had no wire id: the made ids repeat from one response to the next
TWO_ROUNDS = [
    {"role": "system", "content": "Be brief."},
    user("Weather in Paris, then the time there?"),
    assistant(None, call("gemini-made-0", signature=sig("call 1")),
              reasoning=[thought("Check the weather.", sig("t1"))]),
    tool("gemini-made-0", "sunny"),
    assistant("It is sunny.", call("gemini-made-0", "get_time", '{"city": "Paris"}', sig("call 2"))),
    tool("gemini-made-0", '{"time": "12:00", "zone": "CET"}'),
    assistant("Sunny, and it is noon.", reasoning=[thought("", sig("text"))]),
    user("Thanks."),
]


# -- the body's frame ---------------------------------------------------------------------------------------------


def test_system_messages_become_one_system_instruction_and_the_url_carries_model_and_stream() -> None:
    body = build([{"role": "system", "content": "Be brief."}, user("hi"), {"role": "developer", "content": "Dev."}],
                 system="First.")

    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "systemInstruction": {"parts": [{"text": "First.\n\nBe brief.\n\nDev."}]},
    }


def test_without_options_the_body_is_the_contents_alone() -> None:
    assert build([user("hi")]) == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_generation_config_carries_max_tokens_temperature_and_stop_sequences() -> None:
    body = build([user("hi")], max_tokens=64, temperature=0.2, stop="END")
    listed = build([user("hi")], options=RequestOptions(stop=["A", "B"]))

    assert body["generationConfig"] == {"maxOutputTokens": 64, "temperature": 0.2, "stopSequences": ["END"]}
    assert listed["generationConfig"] == {"stopSequences": ["A", "B"]}


def test_options_as_a_value_and_as_keywords_build_the_same_body() -> None:
    options = RequestOptions(tools=[WEATHER], system="S", temperature=0.5, max_tokens=9, stop="x", tool_choice="auto")
    keywords = {"tools": [WEATHER], "system": "S", "temperature": 0.5, "max_tokens": 9, "stop": "x",
                "tool_choice": "auto"}

    assert build(TWO_ROUNDS, options=options) == build(TWO_ROUNDS, **keywords)


# -- user parts ---------------------------------------------------------------------------------------------------


def test_user_text_and_image_parts_become_text_inline_data_and_file_data() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    body = build([user([
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{png}"}},
        {"type": "image_url", "image_url": "data:text/plain,a%20b"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
        {"type": "image_url", "image_url": {"url": "gs://bucket/object"}},
    ])])

    assert body["contents"] == [{"role": "user", "parts": [
        {"text": "What is in these?"},
        {"inlineData": {"mimeType": "image/png", "data": png}},
        {"inlineData": {"mimeType": "text/plain", "data": base64.b64encode(b"a b").decode()}},
        {"fileData": {"fileUri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}},
        {"fileData": {"fileUri": "gs://bucket/object"}},
    ]}]


def test_consecutive_user_messages_are_one_user_content() -> None:
    body = build([user("one"), user("two"), assistant("ok"), user("three")])

    assert [(c["role"], len(c["parts"])) for c in body["contents"]] == [("user", 2), ("model", 1), ("user", 1)]


# -- calls and results --------------------------------------------------------------------------------------------


def test_a_call_is_a_function_call_with_parsed_args_and_its_result_names_the_call() -> None:
    body = build([user("Weather?"), assistant("Looking.", call("call_1")), tool("call_1", "sunny")])

    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": [
            {"text": "Looking."},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}},
        ]},
        {"role": "user", "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}, "id": "call_1"}},
        ]},
    ]


def test_a_made_id_is_never_sent_on_the_call_or_its_result() -> None:
    body = build([user("Weather?"), assistant(None, call("gemini-made-0")), tool("gemini-made-0", "sunny")])

    assert function_calls(body) == [{"name": "get_weather", "args": {"city": "Paris"}}]
    assert function_responses(body) == [{"name": "get_weather", "response": {"output": "sunny"}}]
    assert "gemini-made-" not in json.dumps(body)


def test_a_wire_id_is_sent_exactly_on_the_call_and_its_result() -> None:
    wire_id = "fc-7f3a9c::Vertex"
    body = build([user("Weather?"), assistant(None, call(wire_id)), tool(wire_id, "sunny")])

    assert [c["id"] for c in function_calls(body)] == [wire_id]
    assert [r["id"] for r in function_responses(body)] == [wire_id]


def test_the_results_of_parallel_calls_go_back_together_with_a_user_message_after_them() -> None:
    body = build([
        user("Paris and Rome?"),
        assistant(None, call("gemini-made-0"), call("gemini-made-1", arguments='{"city": "Rome"}')),
        tool("gemini-made-0", "sunny"),
        tool("gemini-made-1", "rain"),
        user("And Oslo?"),
    ])

    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["contents"][2]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "sunny"}}},
        {"functionResponse": {"name": "get_weather", "response": {"output": "rain"}}},
        {"text": "And Oslo?"},
    ]


def test_each_result_of_two_tool_rounds_names_its_own_rounds_call_though_the_made_ids_repeat() -> None:
    body = build(TWO_ROUNDS)

    assert [c["role"] for c in body["contents"]] == ["user", "model", "user", "model", "user", "model", "user"]
    assert [r["name"] for r in function_responses(body)] == ["get_weather", "get_time"]
    assert function_responses(body)[1]["response"] == {"time": "12:00", "zone": "CET"}


@pytest.mark.parametrize("text", ['{"time": "12:00"}', ' {"a": [1, {"b": null}]} '])
def test_a_result_that_is_a_json_object_is_the_whole_response(text: str) -> None:
    body = build([user("?"), assistant(None, call("c1")), tool("c1", text)])

    assert function_responses(body)[0]["response"] == json.loads(text)


@pytest.mark.parametrize("text", ["sunny", "", "[1, 2]", '"quoted"', "42", "{not json"])
def test_a_result_that_is_not_a_json_object_goes_under_output(text: str) -> None:
    body = build([user("?"), assistant(None, call("c1")), tool("c1", text)])

    assert function_responses(body)[0]["response"] == {"output": text}


@pytest.mark.parametrize("arguments", ["", "   ", "not json", "[1, 2]", "null", '"text"'])
def test_arguments_that_are_not_a_json_object_are_sent_as_an_empty_object(arguments: str) -> None:
    body = build([user("?"), assistant(None, call("c1", arguments=arguments))])

    assert function_calls(body)[0]["args"] == {}


def test_a_result_whose_call_is_unknown_is_refused_naming_the_message_unless_it_names_itself() -> None:
    with pytest.raises(ValueError, match="message 1: the tool result for 'c9'"):
        build([user("?"), tool("c9", "x")])

    named = build([user("?"), {"role": "tool", "tool_call_id": "c9", "name": "lookup", "content": "x"}])
    assert function_responses(named) == [{"name": "lookup", "response": {"output": "x"}, "id": "c9"}]


def test_an_assistant_message_with_nothing_to_send_is_left_out() -> None:
    body = build([user("hi"), assistant(""), assistant(None, reasoning=[thought("unsigned", None)]), user("again")])

    assert body["contents"] == [{"role": "user", "parts": [{"text": "hi"}, {"text": "again"}]}]


# -- thought signatures in place ----------------------------------------------------------------------------------


def test_a_signed_thought_goes_back_as_a_thought_part_before_the_text_and_calls() -> None:
    body = build([user("?"), assistant("Answer.", call("c1", signature=sig("call")),
                                       reasoning=[thought("Thinking.", sig("thought"))])])

    assert body["contents"][1]["parts"] == [
        {"text": "Thinking.", "thought": True, "thoughtSignature": sig("thought")},
        {"text": "Answer."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"},
         "thoughtSignature": sig("call")},
    ]


def test_each_parallel_calls_own_signature_stays_on_its_part() -> None:
    body = build([user("?"), assistant(None, call("c1", signature=sig("first")), call("c2"))])

    assert [part.get("thoughtSignature") for part in body["contents"][1]["parts"]] == [sig("first"), None]


def test_an_empty_signed_block_puts_its_signature_on_the_text_part() -> None:
    body = build([user("?"), assistant("Hello.", reasoning=[thought("", sig("text"))])])

    assert body["contents"][1]["parts"] == [{"text": "Hello.", "thoughtSignature": sig("text")}]


def test_an_empty_signed_block_without_text_is_an_empty_text_part_with_the_signature() -> None:
    body = build([user("?"), assistant(None, reasoning=[thought("", sig("a")), thought("", sig("b"))])])

    assert body["contents"][1]["parts"] == [{"text": "", "thoughtSignature": sig("a")},
                                            {"text": "", "thoughtSignature": sig("b")}]


def test_unsigned_reasoning_and_other_apis_reasoning_are_not_sent() -> None:
    blocks = [thought("unsigned", None), {"type": "reasoning", "text": "summary", "item_id": "rs_1"},
              {"type": "reasoning", "text": "", "encrypted": "opaque"}]
    body = build([user("?"), assistant("Answer.", reasoning=blocks)])

    assert body["contents"][1]["parts"] == [{"text": "Answer."}]


@pytest.mark.parametrize("bad", ["", 7, ["x"]])
def test_a_call_signature_that_is_not_a_non_empty_string_is_refused(bad: Any) -> None:
    bad_call = call("c1")
    bad_call["extra_content"] = {"google": {"thought_signature": bad}}
    with pytest.raises(ValueError, match=r"message 1: a tool call's extra_content\.google\.thought_signature"):
        build([user("?"), assistant(None, bad_call)])


# -- tools and tool choice ----------------------------------------------------------------------------------------


def test_chat_tools_are_function_declarations_with_their_json_schema_and_other_tools_follow() -> None:
    body = build([user("?")], tools=[WEATHER, {"googleSearch": {}}, CLOCK])

    assert body["tools"] == [
        {"functionDeclarations": [
            {"name": "get_weather", "description": "The weather in a city.",
             "parametersJsonSchema": WEATHER["function"]["parameters"]},
            {"name": "get_time"},
        ]},
        {"googleSearch": {}},
    ]


@pytest.mark.parametrize(("choice", "config"), [
    ("auto", {"functionCallingConfig": {"mode": "AUTO"}}),
    ("none", {"functionCallingConfig": {"mode": "NONE"}}),
    ("required", {"functionCallingConfig": {"mode": "ANY"}}),
    ({"type": "function", "function": {"name": "get_weather"}},
     {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}}),
    ({"functionCallingConfig": {"mode": "VALIDATED"}}, {"functionCallingConfig": {"mode": "VALIDATED"}}),
])
def test_tool_choice_is_the_function_calling_config(choice: Any, config: dict[str, Any]) -> None:
    assert build([user("?")], tools=[WEATHER], tool_choice=choice)["toolConfig"] == config


def test_an_unknown_tool_choice_string_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_choice is 'auto', 'none', 'required' or a function"):
        build([user("?")], tool_choice="any")


# -- what cannot be sent; what is not changed ---------------------------------------------------------------------


@pytest.mark.parametrize(("messages", "match"), [
    ([{"role": "function", "content": "x"}], "message 0 .*has role 'function'"),
    ([user([{"type": "input_audio", "input_audio": {}}])], "message 0: a content part of type 'input_audio'"),
    ([user("?"), assistant(None, {"id": "", "function": {"name": "f"}})], "message 1: a tool call needs"),
    ([user("?"), {"role": "tool", "content": "x"}], "message 1: a tool message needs a non-empty tool_call_id"),
])
def test_a_conversation_gemini_cannot_be_sent_is_refused_naming_the_message(
    messages: list[dict[str, Any]], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        build(messages)


def test_building_leaves_the_conversation_unchanged() -> None:
    before = copy.deepcopy(TWO_ROUNDS)
    build(TWO_ROUNDS, tools=[WEATHER])
    assert before == TWO_ROUNDS


@st.composite
def tool_rounds(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A conversation of tool rounds, each call's id Google's or one the library made, then a final answer."""
    messages: list[dict[str, Any]] = [user("go")]
    for round_number in range(draw(st.integers(1, 4))):
        count = draw(st.integers(1, 3))
        made = draw(st.lists(st.booleans(), min_size=count, max_size=count))
        ids = [f"gemini-made-{n}" if m else f"wire-{round_number}-{n}" for n, m in enumerate(made)]
        names = [f"tool_{round_number}_{n}" for n in range(count)]
        messages.append(assistant(None, *(call(i, name) for i, name in zip(ids, names, strict=True))))
        messages.extend(tool(i, f"result of {name}") for i, name in zip(ids, names, strict=True))
        if draw(st.booleans()):
            messages.append(user("more"))
    messages.append(assistant("done"))
    return messages


@given(tool_rounds())
def test_roles_alternate_and_each_result_answers_the_call_before_it_by_name_and_wire_id(
    messages: list[dict[str, Any]],
) -> None:
    body = build(messages)
    contents = body["contents"]

    assert all(a["role"] != b["role"] for a, b in itertools.pairwise(contents))
    for model, answer in zip(contents[1::2], contents[2::2], strict=False):
        calls = [p["functionCall"] for p in model["parts"] if "functionCall" in p]
        results = [p["functionResponse"] for p in answer["parts"] if "functionResponse" in p]
        assert [(c["name"], c.get("id")) for c in calls] == [(r["name"], r.get("id")) for r in results]
    assert "gemini-made-" not in json.dumps(body)


# -- google-genai's own types and request -------------------------------------------------------------------------


def test_each_content_is_a_google_genai_content() -> None:
    types = pytest.importorskip("google.genai.types")
    body = build(TWO_ROUNDS, tools=[WEATHER])

    for content in body["contents"]:
        typed = types.Content.model_validate_json(json.dumps(content))
        assert typed.model_dump(mode="json", by_alias=True, exclude_none=True) == content


def test_the_body_is_what_the_google_genai_sdk_sends_for_the_same_request() -> None:
    """Our body read into the SDK's own types (camelCase aliases, unknown keys refused) and sent by the SDK: what it
    posts is ours, but for one spelling of its own (the declarations' ``parameters_json_schema``, which the API
    accepts as it accepts every proto field's original name)."""
    genai = pytest.importorskip("google.genai")
    httpx2 = pytest.importorskip("httpx2")
    types = genai.types
    tools = [WEATHER, CLOCK]
    body = build(TWO_ROUNDS, tools=tools, tool_choice={"type": "function", "function": {"name": "get_time"}},
                 max_tokens=256, temperature=0.3, stop=["END"])
    posted: list[tuple[str, dict[str, str], bytes]] = []

    def answer(request: Any) -> Any:
        posted.append((str(request.url), dict(request.headers), request.content))
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=(
            b'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, '
            b'"finishReason": "STOP", "index": 0}]}\r\n\r\n'))

    client = genai.Client(api_key="AIza-sdk-Rf4Nc8Yd", http_options=types.HttpOptions(
        base_url="http://127.0.0.1:9", api_version="v1beta",
        httpx_client=httpx2.Client(transport=httpx2.MockTransport(answer))))
    config = {key: body[key] for key in ("systemInstruction", "tools", "toolConfig")} | body["generationConfig"]
    contents = [types.Content.model_validate_json(json.dumps(content)) for content in body["contents"]]
    list(client.models.generate_content_stream(
        model="gemini-2.5-flash", contents=contents,
        config=types.GenerateContentConfig.model_validate_json(json.dumps(config))))

    ((url, headers, sent),) = posted
    sdk = json.loads(sent)
    for declaration in sdk["tools"][0]["functionDeclarations"]:
        if "parameters_json_schema" in declaration:
            declaration["parametersJsonSchema"] = declaration.pop("parameters_json_schema")
    assert sdk == body
    assert url == "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert (headers["x-goog-api-key"], "authorization" in headers) == ("AIza-sdk-Rf4Nc8Yd", False)  # as ours
