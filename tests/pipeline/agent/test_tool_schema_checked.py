"""A tool's schema is checked and compiled when the tool is defined: a bad schema is a ToolDefinitionError at
registration (never an error result at call time), and calls validate with the validator compiled then."""

from __future__ import annotations

import copy
import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from tool_builders import args, error

from pipeline.agent import Tool, ToolDefinitionError, ToolRegistry, validate
from pipeline.agent import _validate as validate_module


def echo(**arguments: Any) -> Any:
    return arguments


def register(parameters: dict[str, Any]) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(echo, parameters=parameters)
    return registry


def test_a_schema_that_is_not_draft_2020_12_is_refused_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match=r"not a valid JSON Schema \(Draft 2020-12\): at \$\.properties\.n"):
        register({"type": "object", "properties": {"n": {"type": "integr"}}})


def test_a_keyword_of_the_wrong_kind_is_refused_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match=r"at \$\.properties\.n\.minimum: 'one' is not of type 'number'"):
        register({"type": "object", "properties": {"n": {"minimum": "one"}}})


def test_a_ref_that_does_not_resolve_is_refused_at_registration() -> None:
    with pytest.raises(ToolDefinitionError, match=r"the \$ref '#/\$defs/City' at \$\.properties\.to does not resolve"):
        register({"type": "object", "properties": {"to": {"$ref": "#/$defs/City"}}})


@pytest.fixture
def schema_server() -> Iterator[tuple[str, list[str]]]:
    """A loopback server that would serve a schema, and the paths requested from it."""
    requested: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requested.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/city.json", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.server
def test_a_remote_ref_is_refused_and_never_fetched(schema_server: tuple[str, list[str]]) -> None:
    url, requested = schema_server

    with pytest.raises(ToolDefinitionError, match="remote references are not fetched"):
        register({"type": "object", "properties": {"to": {"$ref": url}}})
    assert requested == []


def test_a_ref_under_a_nested_id_resolves_against_that_id() -> None:
    schema = {
        "type": "object",
        "properties": {
            "to": {"$id": "urn:example:city", "$defs": {"name": {"type": "string"}}, "$ref": "#/$defs/name"},
        },
    }

    assert validate({"to": 3}, schema) == ["$.to: expected string, got integer"]


async def test_a_call_validates_with_the_validator_compiled_at_definition(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = register({"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False})

    def refuse(schema: Any) -> Any:
        raise AssertionError("a call checked the schema again")

    monkeypatch.setattr(validate_module, "check_schema", refuse)

    assert (await registry.call("echo", args(n=1))).text == '{"n": 1}'
    assert await registry.call("echo", args(n="1")) == error(
        'invalid arguments for tool "echo":\n- $.n: expected integer, got string'
    )


async def test_changing_the_given_schema_after_definition_changes_nothing() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}
    registry = register(schema)

    schema["properties"]["n"]["type"] = "string"

    assert (await registry.call("echo", args(n=1))).text == '{"n": 1}'


def test_a_copied_tool_is_equal_and_validates_alike() -> None:
    tool = Tool.from_function(echo, parameters={"type": "object", "properties": {"n": {"const": 1}}})

    copied = copy.deepcopy(tool)

    assert copied == tool
    assert copied.parameters == {"type": "object", "properties": {"n": {"const": 1}}}
    assert validate({"n": 2}, copied.parameters) == ["$.n: expected 1, got 2"]


def test_a_bare_false_subschema_keeps_the_path_of_the_value_it_refuses() -> None:
    schema = {"type": "object", "properties": {"secret": False}, "anyOf": [False, {"required": ["a"]}]}

    assert validate({"secret": 1, "a": 0}, schema) == ["$.secret: no value is allowed here"]
    assert Tool.from_function(echo, parameters=schema).to_openai()["function"]["parameters"] == schema
