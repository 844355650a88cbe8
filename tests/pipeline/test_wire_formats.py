"""One record per wire format on each side, keyed by the same names: the parsers' (``operators.FORMATS``) and the
pipeline's (``pipeline.formats.WIRE_FORMATS``), which the client, the emulator and the CLI read; and
``RequestOptions``, the one way to pass a request's options to every builder and to ``ChatClient``."""

from __future__ import annotations

import re
from typing import Any

import pytest

import operators
from pipeline.cli._main import build_parser
from pipeline.client import ChatClient, ClientConfig, ConfigError
from pipeline.emulator._formats import FORMATS as EMULATED
from pipeline.formats import (
    APIS,
    WIRE_FORMATS,
    RequestOptions,
    chat_request,
    messages_request,
    responses_request,
    wire_format,
)
from pipeline.sanitize._formats import STREAM_FORMATS, streamed_format

HISTORY = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
WEATHER = {"type": "function", "function": {"name": "weather", "description": "d", "parameters": {"type": "object"}}}


def test_the_pipeline_has_one_record_per_format_the_parsers_read_in_their_order() -> None:
    assert tuple(WIRE_FORMATS) == operators.FORMATS == APIS
    assert all(record.name == name for name, record in WIRE_FORMATS.items())


@pytest.mark.parametrize("api", operators.FORMATS)
def test_chat_client_takes_each_format_the_parsers_read_and_posts_to_its_path_and_query(api: operators.Format) -> None:
    client = ChatClient("http://127.0.0.1:9/v1", model="m", api=api)

    assert client.config.url == "http://127.0.0.1:9/v1" + WIRE_FORMATS[api].target("m")


@pytest.mark.parametrize("api", ["bedrock", "Chat", "", 3])
def test_an_unknown_format_is_refused_naming_the_known_ones(api: Any) -> None:
    with pytest.raises(ConfigError) as refused:
        ClientConfig(base_url="http://127.0.0.1:9/v1", model="m", api=api)
    with pytest.raises(ValueError, match="api is one of") as looked_up:
        wire_format(api)

    for message in (str(refused.value), str(looked_up.value)):
        assert all(repr(name) in message for name in operators.FORMATS)


def test_the_cli_offers_exactly_the_registered_formats() -> None:
    parser = build_parser()
    commands = next(action for action in parser._actions if action.dest == "command")
    chat = commands.choices["chat"]  # type: ignore[index]
    replay = commands.choices["replay"]  # type: ignore[index]

    assert next(a for a in chat._actions if a.dest == "api").choices == APIS
    assert next(a for a in replay._actions if a.dest == "format").choices == operators.FORMATS


def test_the_emulator_serves_each_of_its_formats_at_the_records_paths() -> None:
    for name, emulated in EMULATED.items():
        assert emulated.paths[:2] == (f"/v1{WIRE_FORMATS[name].path}", WIRE_FORMATS[name].path)
        assert all(WIRE_FORMATS[name].matches(path) for path in emulated.paths)  # Gemini's: /v1beta, Vertex's too
        assert emulated.title == WIRE_FORMATS[name].title


def test_the_sanitizer_repairs_exactly_the_registered_formats_at_their_paths() -> None:
    assert [repair.name for repair in STREAM_FORMATS] == list(WIRE_FORMATS)
    for name, record in WIRE_FORMATS.items():
        # a body that says stream for the formats that read it, the query for Gemini's (which streams by its URL)
        found = streamed_format("POST", f"/v1{record.url_path('m')}", b'{"stream": true}', "alt=sse")
        assert found is not None
        assert found.name == name


def test_a_messages_request_carries_the_records_headers_and_the_key_twice() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", model="m", api="messages", api_key="k-1")

    headers = client._request_headers()

    assert headers["anthropic-version"] == WIRE_FORMATS["messages"].headers["anthropic-version"]
    assert headers["Authorization"] == "Bearer k-1"
    assert headers["x-api-key"] == "k-1"


@pytest.mark.parametrize("build", [chat_request, messages_request], ids=["chat", "messages"])
def test_options_as_a_value_and_as_keywords_build_the_same_body(build: Any) -> None:
    fields: dict[str, Any] = {"tools": [WEATHER], "system": "S", "temperature": 0.5, "max_tokens": 9,
                              "stop": ["END", "STOP"], "tool_choice": "auto"}

    assert build(HISTORY, model="m", options=RequestOptions(**fields)) == build(HISTORY, model="m", **fields)


def test_chat_request_sends_stop_sequences_as_a_list() -> None:
    assert chat_request(HISTORY, model="m", options=RequestOptions(stop=["A", "B"]))["stop"] == ["A", "B"]


def test_a_keyword_sets_its_option_over_the_options_value() -> None:
    body = messages_request(HISTORY, model="m", options=RequestOptions(max_tokens=9, system="A"), system="B")

    assert (body["max_tokens"], body["system"]) == (9, "B\n\nBe brief.")


def test_an_unknown_keyword_is_refused_naming_the_options() -> None:
    with pytest.raises(TypeError, match=re.escape("unexpected keyword top_p")):
        responses_request(HISTORY, model="m", top_p=0.1)


def test_the_client_reads_options_from_keywords_and_passes_other_keys_into_the_body() -> None:
    client = ChatClient("http://127.0.0.1:9/v1", model="m", api="responses")

    body = client.request_body(HISTORY, max_tokens=5, tools=[WEATHER], top_p=0.1)
    same = client.request_body(HISTORY, options=RequestOptions(max_tokens=5, tools=[WEATHER]), top_p=0.1)

    assert body == same
    assert (body["max_output_tokens"], body["top_p"], body["tools"][0]["name"]) == (5, 0.1, "weather")
