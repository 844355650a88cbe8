"""The unmodified openai SDK's ``responses.stream()`` on the calls a client runs (decision 0072), served as the upstream
sent them, through ``SanitizingTransport`` (sync and async) and through the proxy: the held-out set
``tests/corpus/client-calls`` and the recorded ``responses/03``, ``06``, ``08``.

A sound stream reads as the plain SDK reads it; a custom call's identity blanked on ``.done`` and changed in
``response.completed`` (which the plain SDK raises on) reads with the first; a call never identified, a built-in call
never finished and a cut inside a custom input are an ``APIError`` naming the code, never a call with no id or half a
patch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.server  # tests/tiers.py

openai = pytest.importorskip("openai")
httpx2 = pytest.importorskip("httpx2")

from bytes_server import BytesServer  # noqa: E402
from corpus import CLIENT_CALL_STREAMS, RESPONSES_STREAMS  # noqa: E402

from pipeline import SanitizingTransport  # noqa: E402
from pipeline.proxy import Proxy  # noqa: E402

HELD_OUT = sorted(CLIENT_CALL_STREAMS.glob("*.sse"))
RECORDED = [next(RESPONSES_STREAMS.glob(f"{n}-*.sse")) for n in ("03", "06", "08")]
FAILS = {"03": "STREAM_CLOSED", "04": "MALFORMED_TOOL_CALL", "09": "MALFORMED_TOOL_CALL"}
"""The held-out streams that are an error for the SDK once repaired, and their codes."""
PLAIN_RAISES = {"02": "identity changed", "03": "response.completed", "09": "unfinished output items"}
"""What the plain SDK raises on the held-out streams it cannot read (``04`` it reads, to a call with no id)."""

_ID_FIELD = {"mcp_approval_request": "id"}
_KIND = {"function_call": "function", "custom_tool_call": "custom", "apply_patch_call": "apply_patch",
         "shell_call": "shell", "local_shell_call": "local_shell", "computer_call": "computer",
         "mcp_approval_request": "mcp_approval"}


def with_content_parts(raw: bytes) -> bytes:
    """``raw`` with the ``response.content_part.added`` OpenAI sends before a message's first text delta: held-out
    ``06`` and ``08`` leave it out (the library does not need it; the SDK indexes a text delta's part by it)."""
    out, seen = [], set()
    for event in raw.split(b"\n\n"):
        if event.startswith(b"event: response.output_text.delta\n"):
            data = json.loads(event.split(b"data: ", 1)[1])
            if data["item_id"] not in seen:
                seen.add(data["item_id"])
                part = {"type": "response.content_part.added", "output_index": data["output_index"],
                        "item_id": data["item_id"], "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}}
                out.append(b"event: response.content_part.added\ndata: " + json.dumps(part).encode())
        out.append(event)
    return b"\n\n".join(out)


def body_of(path: Path) -> bytes:
    raw = path.read_bytes()
    return with_content_parts(raw) if path.parent == CLIENT_CALL_STREAMS and path.name[:2] in ("06", "08") else raw


def expected_calls(path: Path) -> list[tuple[str, str, Any]]:
    """The calls the stream's expectation lists: (id, kind, arguments as the SDK's item holds them)."""
    expected = json.loads(path.with_suffix(".expected.json").read_text())
    out = []
    for call in expected["tool_calls"] or []:
        kind = call.get("kind", "function")
        arguments = call["arguments"] if kind in ("function", "custom") else json.loads(call["arguments"])
        out.append((call["id"], kind, arguments))
    return out


def calls_of(response: Any) -> list[tuple[str, str, Any]]:
    """The calls in the SDK's final response, as ``expected_calls`` gives them (a hosted shell call is not one)."""
    out = []
    for item in response.output:
        data = item.to_dict()
        kind = _KIND.get(data["type"])
        if kind is None or data.get("environment", {}).get("type", "local") != "local":
            continue
        if kind == "function":
            arguments: Any = data["arguments"]
        elif kind == "custom":
            arguments = data["input"]
        elif kind == "apply_patch":
            arguments = data["operation"]
        elif kind == "computer":
            arguments = {k: data[k] for k in ("action", "actions", "pending_safety_checks") if k in data}
        elif kind == "mcp_approval":
            arguments = {k: data[k] for k in ("server_label", "name", "arguments")}
        else:
            arguments = data["action"]
        out.append((data[_ID_FIELD.get(data["type"], "call_id")], kind, arguments))
    return out


@pytest.fixture(scope="module")
def server() -> Iterator[BytesServer]:
    with BytesServer() as running:
        yield running


def sdk(base_url: str, *, transport: bool) -> Any:
    http = httpx2.Client(transport=SanitizingTransport()) if transport else None
    return openai.OpenAI(base_url=base_url, api_key="sk-test-key-12345", max_retries=0, http_client=http)


def final_response(client: Any, server: BytesServer, body: bytes) -> Any:
    server.serve(body)
    with client.responses.stream(model="m", input="hi") as stream:
        return stream.get_final_response()


@pytest.mark.parametrize("path", HELD_OUT + RECORDED, ids=lambda p: p.parent.name[:6] + "-" + p.stem[:36])
def test_the_openai_sdk_through_the_transport_reads_each_stream_as_its_expectation(
    server: BytesServer, path: Path
) -> None:
    body = body_of(path)
    number = path.name[:2] if path.parent == CLIENT_CALL_STREAMS else ""
    plain, through = sdk(server.base_url + "/v1", transport=False), sdk(server.base_url + "/v1", transport=True)
    if number in FAILS:
        with pytest.raises(openai.APIError, match=FAILS[number]):
            final_response(through, server, body)
    else:
        assert calls_of(final_response(through, server, body)) == expected_calls(path)
    if number in PLAIN_RAISES:
        with pytest.raises(RuntimeError, match=PLAIN_RAISES[number]):
            final_response(plain, server, body)
    elif number == "04":
        assert [item.call_id for item in final_response(plain, server, body).output] == [""]
    else:  # a sound stream: the SDK reads it through the transport as it reads it plain
        assert (final_response(through, server, body).model_dump()
                == final_response(plain, server, body).model_dump())


def test_a_never_identified_custom_call_is_an_http_error_the_sdk_raises(server: BytesServer) -> None:
    server.serve(next(CLIENT_CALL_STREAMS.glob("04-*.sse")).read_bytes())
    with pytest.raises(openai.APIStatusError, match="MALFORMED_TOOL_CALL") as raised:
        sdk(server.base_url + "/v1", transport=True).responses.create(model="m", input="hi", stream=True)
    assert raised.value.status_code == 502
    assert raised.value.response.headers["x-should-retry"] == "true"
    assert raised.value.code == "MALFORMED_TOOL_CALL"


async def test_the_async_sdk_through_the_transport_reads_a_blanked_custom_call_identity_as_the_first(
    server: BytesServer,
) -> None:
    path = next(CLIENT_CALL_STREAMS.glob("02-*.sse"))
    server.serve(path.read_bytes())
    client = openai.AsyncOpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0,
                                http_client=httpx2.AsyncClient(transport=SanitizingTransport()))
    async with client, client.responses.stream(model="m", input="hi") as stream:
        response = await stream.get_final_response()
    assert calls_of(response) == expected_calls(path)


@pytest.mark.parametrize("number", ["01", "02", "04", "06", "10"])
def test_the_openai_sdk_through_the_proxy_reads_as_through_the_transport(server: BytesServer, number: str) -> None:
    path = next(CLIENT_CALL_STREAMS.glob(f"{number}-*.sse"))
    body = body_of(path)
    with Proxy(server.base_url + "/v1") as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="k", max_retries=0)
        if number in FAILS:
            with pytest.raises(openai.APIError, match=FAILS[number]):
                final_response(client, server, body)
        else:
            assert calls_of(final_response(client, server, body)) == expected_calls(path)
