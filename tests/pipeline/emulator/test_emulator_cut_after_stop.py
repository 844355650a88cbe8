"""Messages ``cut-after-stop`` over real loopback HTTP: everything through ``message_delta`` (stop reason, usage), then
the body ends and the server closes the connection with no ``message_stop`` (the twin of chat's ``no-done``); and
there is no such profile for Responses, whose stop reason lives only in its terminal event."""

from __future__ import annotations

import httpx
from emulator_helpers import CLEAN
from format_helpers import events, post_format

import pipeline
from pipeline.emulator._script import ScriptOptions
from pipeline.emulator.messages._profiles import CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, MESSAGES_PROFILES, clean
from pipeline.emulator.responses import RESPONSES_PROFILES


def test_cut_after_stop_ends_after_message_delta_with_the_stop_reason_and_usage(http: httpx.Client) -> None:
    response = post_format(http, "/messages", "cut-after-stop")
    assert response.status_code == 200
    sent = events(response.content)
    assert [e.name for e in sent][-3:] == ["content_block_delta", "content_block_stop", "message_delta"]
    assert "message_stop" not in [e.name for e in sent]
    final = sent[-1].data
    assert final["delta"]["stop_reason"] == "end_turn"
    assert final["usage"]["cache_read_input_tokens"] == CACHE_READ_TOKENS
    assert final["usage"]["cache_creation_input_tokens"] == CACHE_WRITE_TOKENS
    assert "".join(e.data["delta"]["text"] for e in sent if e.name == "content_block_delta") == CLEAN
    assert response.content.endswith(b"\n\n")


def test_cut_after_stop_is_the_clean_stream_without_its_last_event() -> None:
    options = ScriptOptions(completion_id="msg-emu" + "0" * 24)
    whole = clean(options).body
    cut = MESSAGES_PROFILES["cut-after-stop"].build(options).body
    assert whole == cut + b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


def test_cut_after_stop_closes_the_connection_after_the_body(http: httpx.Client) -> None:
    response = post_format(http, "/messages", "cut-after-stop")
    assert response.headers["connection"] == "close"
    assert post_format(http, "/messages", "clean").headers.get("connection") != "close"


def test_the_pipeline_reads_cut_after_stop_as_a_stop_without_message_stop(http: httpx.Client) -> None:
    body = post_format(http, "/messages", "cut-after-stop").content
    chunks = pipeline.collect(body, anomalies=True, format="messages")
    message = pipeline.assemble(chunks)
    assert message.text == CLEAN
    assert message.finish.kind == "stop"
    assert message.usage is not None
    assert any(getattr(c, "kind", None) == "missing-message-stop" for c in chunks)


def test_responses_has_no_cut_after_stop_profile(http: httpx.Client) -> None:
    assert "cut-after-stop" not in RESPONSES_PROFILES
    assert post_format(http, "/responses", "cut-after-stop").status_code == 404
