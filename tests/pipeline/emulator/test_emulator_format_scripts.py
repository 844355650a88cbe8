"""Invariants of every Messages and Responses profile's script, for any request options (no HTTP): each event is
named after its ``type``, Responses sequence numbers count up from 0, the stream is detected as its own format, and
the ids derive from the request's completion id."""

from __future__ import annotations

import pytest
from format_helpers import events
from hypothesis import given
from hypothesis import strategies as st

from operators._parse_format import detect_format
from pipeline.emulator._formats import FORMATS
from pipeline.emulator._script import Cut, ScriptOptions

NAMED = [name for name in FORMATS if name != "gemini"]  # Gemini's events have no names: test_emulator_gemini.py
STREAMED = [(f, p) for f in NAMED for p in FORMATS[f].profiles if p != "rate-limit"]
CUT = {"drop-mid-stream", "custom-cut"}  # the profiles whose connection is cut (custom-cut's inside an event)


def whole_events(body: bytes) -> bytes:
    """``body`` up to its last whole event (custom-cut ends inside one)."""
    return body[: body.rfind(b"\n\n") + 2]

options = st.builds(
    ScriptOptions,
    model=st.text(st.characters(codec="utf-8"), min_size=1, max_size=20),
    prompt_tokens=st.integers(1, 100_000),
    completion_id=st.text("abcdef0123456789", min_size=24, max_size=32).map(lambda s: "msg-emu" + s),
    created=st.integers(0, 2**31),
)


@pytest.mark.parametrize(("format_name", "profile"), STREAMED)
@given(chosen=options)
def test_every_format_event_is_named_after_its_type(format_name: str, profile: str, chosen: ScriptOptions) -> None:
    script = FORMATS[format_name].profiles[profile].build(chosen)
    # messages/trailing-done's chat-style ending
    sent = events(whole_events(script.body).removesuffix(b"data: [DONE]\n\n"))
    assert script.status == 200
    assert script.is_event_stream
    assert sent
    for event in sent:
        assert event.data["type"] == event.name
    if format_name == "responses":
        assert [e.data["sequence_number"] for e in sent] == list(range(len(sent)))
    assert detect_format(script.body) == format_name
    assert isinstance(script.steps[-1], Cut) is (profile in CUT)


@pytest.mark.parametrize(("format_name", "profile"), STREAMED)
@given(chosen=options)
def test_the_model_and_ids_come_from_the_options(format_name: str, profile: str, chosen: ScriptOptions) -> None:
    body = whole_events(FORMATS[format_name].profiles[profile].build(chosen).body).removesuffix(b"data: [DONE]\n\n")
    first = events(body)[0].data
    envelope = first["message"] if format_name == "messages" else first["response"]
    assert envelope["model"] == chosen.model
    assert envelope["id"].endswith(chosen.completion_id[-24:])


def test_the_rate_limit_profiles_are_json_errors_with_retry_after() -> None:
    for name in NAMED:  # Gemini's 429 says its delay in the body (google.rpc RetryInfo): test_emulator_gemini.py
        script = FORMATS[name].profiles["rate-limit"].build(ScriptOptions(retry_after="5"))
        assert (script.status, script.headers["retry-after"], script.is_event_stream) == (429, "5", False)
