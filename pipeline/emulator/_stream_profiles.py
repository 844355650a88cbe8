"""The stream profiles: well-formed streams, gateway deviations, and faults inside an event stream.

Each function takes ``ScriptOptions`` and returns a ``Script``; ``_profiles.py`` names them and describes them.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from .._json import dumps
from ._script import SSE_CONTENT_TYPE, Cut, Pause, Script, ScriptOptions
from ._sse import (
    DONE,
    Envelopes,
    Event,
    Json,
    arguments,
    drip_seconds,
    event_stream,
    frame,
    opener,
    raw_event,
    stream_script,
    writes,
)

__all__ = [
    "CLEAN_TEXT",
    "TIME_ARGUMENTS",
    "WEATHER_ARGUMENTS",
    "bom",
    "clean",
    "clean_tool",
    "crlf",
    "drop_mid_stream",
    "empty_200",
    "empty_response",
    "error_midstream",
    "event_error",
    "id_after_sse_id",
    "keepalive",
    "late_id",
    "malformed_json",
    "never_identified",
    "no_done",
    "no_done_no_finish",
    "ollama_parallel",
    "parallel",
    "seed_bug",
    "slow_drip",
    "stall",
    "usage_trailer",
]

CLEAN_TEXT: tuple[str, ...] = ("Hello", " from", " the", " emulator", ".")
"""The ``clean`` answer, one delta per piece: ``"Hello from the emulator."``."""

WEATHER_ARGUMENTS: tuple[str, ...] = ('{"', "city", '": "', "Paris", '"}')
"""``get_weather`` arguments in fragments: ``{"city": "Paris"}``."""

TIME_ARGUMENTS: tuple[str, ...] = ('{"time', 'zone": ', '"Europe/', 'Paris"}')
"""``get_time`` arguments in fragments: ``{"timezone": "Europe/Paris"}``."""


def _clean_events(options: ScriptOptions, *, done: bool = True, include_usage: bool | None = None) -> list[Event]:
    c = Envelopes(options, include_usage=include_usage)
    return [c.role(), *(c.text(t) for t in CLEAN_TEXT), *c.end("stop", len(CLEAN_TEXT), done=done)]


# -- well-formed


def clean(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options), options)


def clean_tool(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    events = [
        c.role(None),
        c.tools(opener(0, c.call_id(0), "get_weather")),
        *(c.tools(arguments(0, f)) for f in WEATHER_ARGUMENTS),
        *c.end("tool_calls", len(WEATHER_ARGUMENTS) + 1),
    ]
    return stream_script(events, options)


def parallel(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    events = [c.role(None), c.tools(opener(0, c.call_id(0), "get_weather"))]
    events.append(c.tools(opener(1, c.call_id(1), "get_time")))
    for n in range(max(len(WEATHER_ARGUMENTS), len(TIME_ARGUMENTS))):
        if n < len(WEATHER_ARGUMENTS):
            events.append(c.tools(arguments(0, WEATHER_ARGUMENTS[n])))
        if n < len(TIME_ARGUMENTS):
            events.append(c.tools(arguments(1, TIME_ARGUMENTS[n])))
    events.extend(c.end("tool_calls", len(WEATHER_ARGUMENTS) + len(TIME_ARGUMENTS) + 2))
    return stream_script(events, options)


def usage_trailer(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options, include_usage=True), options)


# -- tool-call identity deviations


def seed_bug(options: ScriptOptions) -> Script:
    c = Envelopes(options)

    def repeat(index: int, value: str | None, fragment: str) -> Json:
        # The bug: continuation deltas repeat the identity, blanked out ("" or null) instead of omitted.
        kind = None if value is None else "function"
        return {"index": index, "id": value, "type": kind, "function": {"name": value, "arguments": fragment}}

    events = [
        c.role(None),
        c.tools(opener(0, c.call_id(0), "get_weather")),
        c.tools(repeat(0, "", '{"ci')),
        c.tools(repeat(0, None, 'ty": ')),
        c.tools(repeat(0, "", '"Paris"}')),
        c.tools(opener(1, c.call_id(1), "get_weather")),
        c.tools(repeat(1, None, '{"city": ')),
        c.tools(repeat(1, None, '"Berlin"}')),
        *c.end("tool_calls", 8),
    ]
    return stream_script(events, options)


def late_id(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    events = [
        c.role(None),
        c.tools(opener(0, None, "get_weather")),
        c.tools({"index": 0, "id": c.call_id(0), "function": {"arguments": '{"city"'}}),
        c.tools(arguments(0, ': "Paris"}')),
        *c.end("tool_calls", 3),
    ]
    return stream_script(events, options)


def never_identified(*, missing: str) -> Callable[[ScriptOptions], Script]:
    """A tool call whose deltas never carry its ``missing`` part (``"id"`` or ``"name"``)."""

    def build(options: ScriptOptions) -> Script:
        c = Envelopes(options)
        first = opener(0, None, "get_weather") if missing == "id" else opener(0, c.call_id(0), None)
        events = [
            c.role(None),
            c.tools(first),
            *(c.tools(arguments(0, f)) for f in WEATHER_ARGUMENTS),
            *c.end("tool_calls", len(WEATHER_ARGUMENTS) + 1),
        ]
        return stream_script(events, options)

    return build


def ollama_parallel(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    whole = [
        opener(0, c.call_id(0), "get_weather", "".join(WEATHER_ARGUMENTS)),
        opener(0, c.call_id(1), "get_time", "".join(TIME_ARGUMENTS)),
    ]
    events = [c.delta({"role": "assistant", "content": "", "tool_calls": [call]}) for call in whole]
    events.append(c.delta({"role": "assistant", "content": ""}, "tool_calls"))
    if c.include_usage:
        events.append(c.usage(24))
    events.append(DONE)
    return stream_script(events, options)


# -- framing deviations


def crlf(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options), options, newline="\r\n")


def keepalive(options: ScriptOptions) -> Script:
    events: list[Event] = [raw_event(": OPENROUTER PROCESSING")] * 2
    for event in _clean_events(options):
        events.extend((event, raw_event(": keepalive")))
    return stream_script(events[:-1], options)


def bom(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options), options, prefix=b"\xef\xbb\xbf")


def id_after_sse_id(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options), options, ids=True)


# -- timing and the connection


def slow_drip(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options), options, default_drip_ms=50.0)


def drop_mid_stream(options: ScriptOptions) -> Script:
    events = _clean_events(options)
    script = stream_script(events[: len(events) // 2], options)
    return attrs.evolve(script, steps=(*script.steps, Cut("drop-mid-stream")))


def stall(options: ScriptOptions) -> Script:
    frames = frame(_clean_events(options))
    drip = drip_seconds(options)
    return event_stream([*writes(frames[:3], drip), Pause(options.stall_s), *writes(frames[3:], drip)])


# -- faults inside the stream


def error_midstream(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    error = {"error": {"message": "upstream overloaded", "type": "server_error"}}
    events = [c.role(), c.text("Hello"), c.text(" from"), raw_event(f"data: {dumps(error)}"), DONE]
    return stream_script(events, options)


def event_error(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    error = {
        "error": {
            "message": "Tool choice is required, but model did not call a tool",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "status_code": 400,
        }
    }
    events = [c.role(), c.text("maybe"), raw_event("event: error", f"data: {dumps(error)}")]
    return stream_script(events, options)


def malformed_json(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    events = [
        c.role(),
        c.text("Hello"),
        raw_event('data: {bad json, "choices": [{"delta": {"content": " from'),
        c.text(" the emulator."),
        *c.end("stop", 3),
    ]
    return stream_script(events, options)


def no_done(options: ScriptOptions) -> Script:
    return stream_script(_clean_events(options, done=False), options)


def no_done_no_finish(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    return stream_script([c.role(), *(c.text(t) for t in CLEAN_TEXT)], options)


def empty_200(options: ScriptOptions) -> Script:
    return Script(200, SSE_CONTENT_TYPE, ())


def empty_response(options: ScriptOptions) -> Script:
    c = Envelopes(options)
    return stream_script([c.role(), *c.end("stop", 0)], options)
