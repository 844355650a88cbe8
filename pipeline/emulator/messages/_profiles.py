"""The Anthropic Messages API profiles (``POST /v1/messages``): event-named SSE, modelled on real recordings.

A clean stream, as the Messages API sends it::

    event: message_start          {"type": "message_start", "message": {..., "usage": {input, cache, output: 1}}}
    event: content_block_start    {"index": 0, "content_block": {"type": "text", "text": ""}}
    event: ping
    event: content_block_delta    {"index": 0, "delta": {"type": "text_delta", "text": "Hello"}}   (one per piece)
    event: content_block_stop     {"index": 0}
    event: message_delta          {"delta": {"stop_reason": "end_turn", ...}, "usage": {input, cache, output}}
    event: message_stop

A tool call is a ``tool_use`` block (``id``, ``name``, ``input: {}`` in ``content_block_start``, the arguments in
``input_json_delta`` fragments). Usage: ``input_tokens`` excludes the cache, ``cache_read_input_tokens`` =
``CACHE_READ_TOKENS``, ``cache_creation_input_tokens`` = ``CACHE_WRITE_TOKENS``, on every stream that ends.
Each function takes ``ScriptOptions`` and returns a ``Script`` (events built by ``MessageEvents``,
``_events.py``); ``MESSAGES_PROFILES`` names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from ..._json import dumps
from .._profiles import Profile
from .._script import JSON_CONTENT_TYPE, Cut, Script, ScriptOptions, Write
from .._sse import DONE, Event, stream_script
from .._stream_profiles import CLEAN_TEXT, WEATHER_ARGUMENTS
from ._events import CACHE_READ_TOKENS, CACHE_WRITE_TOKENS, MessageEvents, anthropic_error
from ._sent_back import REDACTED_DATA, SIGNATURE, THINKING_PIECES

__all__ = [
    "CACHE_READ_TOKENS",
    "CACHE_WRITE_TOKENS",
    "MESSAGES_PROFILES",
    "MessageEvents",
    "anthropic_error",
    "clean",
    "clean_tool",
    "cut_after_stop",
    "drop_mid_stream",
    "error_midstream",
    "late_id",
    "never_identified",
    "rate_limit",
    "seed_bug",
    "thinking_tool",
    "trailing_done",
]

def _text_events(m: MessageEvents, pieces: tuple[str, ...] = CLEAN_TEXT) -> list[Event]:
    return [m.start(), m.text_block(0), m.ping(), *(m.text(0, t) for t in pieces)]


def _tool_events(m: MessageEvents, tool_id: str | None) -> list[Event]:
    return [m.start(), m.ping(), m.tool_block(0, tool_id), m.json(0, ""), *(m.json(0, f) for f in WEATHER_ARGUMENTS)]


# -- well-formed


def clean(options: ScriptOptions) -> Script:
    m = MessageEvents(options)
    return stream_script([*_text_events(m), m.block_stop(0), *m.end("end_turn", len(CLEAN_TEXT))], options)


def clean_tool(options: ScriptOptions) -> Script:
    m = MessageEvents(options)
    events = [*_tool_events(m, m.tool_id(0)), m.block_stop(0), *m.end("tool_use", len(WEATHER_ARGUMENTS) + 1)]
    return stream_script(events, options)


# -- tool-call identity deviations


def seed_bug(options: ScriptOptions) -> Script:
    """The seed's bug in Messages form: the block start is repeated for the same index, identity blanked out."""
    m = MessageEvents(options)
    events = [
        m.start(),
        m.ping(),
        m.tool_block(0, m.tool_id(0)),
        m.json(0, '{"ci'),
        m.tool_block(0, "", ""),
        m.json(0, 'ty": '),
        m.block_start(0, {"type": "tool_use", "id": None, "name": None, "input": {}}),
        m.json(0, '"Paris"}'),
        m.block_stop(0),
        *m.end("tool_use", 4),
    ]
    return stream_script(events, options)


def never_identified(options: ScriptOptions) -> Script:
    """A ``tool_use`` block whose start has a name but no ``id``; no later event carries one."""
    m = MessageEvents(options)
    events = [*_tool_events(m, None), m.block_stop(0), *m.end("tool_use", len(WEATHER_ARGUMENTS) + 1)]
    return stream_script(events, options)


def late_id(options: ScriptOptions) -> Script:
    """A ``tool_use`` block started with ``id: ""``; a repeated start for its index, after the first fragment, gives
    the id."""
    m = MessageEvents(options)
    events = [
        m.start(),
        m.ping(),
        m.tool_block(0, ""),
        m.json(0, WEATHER_ARGUMENTS[0]),
        m.tool_block(0, m.tool_id(0)),
        *(m.json(0, f) for f in WEATHER_ARGUMENTS[1:]),
        m.block_stop(0),
        *m.end("tool_use", len(WEATHER_ARGUMENTS)),
    ]
    return stream_script(events, options)


# -- thinking that a tool loop must send back


def thinking_tool(options: ScriptOptions) -> Script:
    """A signed ``thinking`` block, a ``redacted_thinking`` block, then a ``tool_use``; the follow-up request is
    checked by ``_sent_back.check_thinking_sent_back`` (the record in ``pipeline/emulator/_formats.py``)."""
    m = MessageEvents(options)
    events = [
        m.start(),
        m.block_start(0, {"type": "thinking", "thinking": "", "signature": ""}),
        m.ping(),
        *(m.delta(0, {"type": "thinking_delta", "thinking": t}) for t in THINKING_PIECES),
        m.delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        m.block_stop(0),
        m.block_start(1, {"type": "redacted_thinking", "data": REDACTED_DATA}),
        m.block_stop(1),
        m.tool_block(2, m.tool_id(0)),
        m.json(2, ""),
        *(m.json(2, f) for f in WEATHER_ARGUMENTS),
        m.block_stop(2),
        *m.end("tool_use", len(THINKING_PIECES) + len(WEATHER_ARGUMENTS) + 1),
    ]
    return stream_script(events, options)


# -- faults


def error_midstream(options: ScriptOptions) -> Script:
    """Text, then an in-band ``event: error`` (``overloaded_error``); the stream ends there (no ``message_stop``)."""
    m = MessageEvents(options)
    events = [*_text_events(m, CLEAN_TEXT[:2]), m.error("overloaded_error", "Overloaded")]
    return stream_script(events, options)


def drop_mid_stream(options: ScriptOptions) -> Script:
    """Half the text deltas, then the connection is cut: no ``message_delta``, no ``message_stop``."""
    m = MessageEvents(options)
    script = stream_script(_text_events(m, CLEAN_TEXT[:2]), options)
    return attrs.evolve(script, steps=(*script.steps, Cut("drop-mid-stream")))


def cut_after_stop(options: ScriptOptions) -> Script:
    """The clean text through ``message_delta`` (stop reason ``end_turn``, usage); then the body ends and the server
    closes the connection (``connection: close``) without ``message_stop``: the twin of chat's ``no-done``."""
    m = MessageEvents(options)
    events = [*_text_events(m), m.block_stop(0), *m.end("end_turn", len(CLEAN_TEXT))[:-1]]
    script = stream_script(events, options)
    return attrs.evolve(script, headers={**script.headers, "connection": "close"})


def trailing_done(options: ScriptOptions) -> Script:
    """The clean stream, then a chat-style ``data: [DONE]`` after ``message_stop`` (as some gateways add)."""
    m = MessageEvents(options)
    return stream_script([*_text_events(m), m.block_stop(0), *m.end("end_turn", len(CLEAN_TEXT)), DONE], options)


def rate_limit(options: ScriptOptions) -> Script:
    """HTTP 429 ``rate_limit_error`` in the Messages shape, with ``retry-after``."""
    body = anthropic_error("rate_limit_error", "This request would exceed your organization's rate limit.")
    headers = {"retry-after": options.retry_after, "anthropic-ratelimit-requests-remaining": "0"}
    return Script(429, JSON_CONTENT_TYPE, (Write(dumps(body).encode()),), headers)


_REGISTRY: tuple[Profile, ...] = (
    Profile("clean", 'text "Hello from the emulator." in text_delta pieces, end_turn, usage with cache fields', clean),
    Profile("clean-tool", 'one tool_use get_weather {"city": "Paris"} in input_json_delta fragments', clean_tool),
    Profile("seed-bug", 'the tool_use block start repeated for index 0 with id/name "" then null', seed_bug),
    Profile("never-identified", "a tool_use block with a name but no id, ever", never_identified),
    Profile(
        "late-block-id", 'a tool_use block started with id "", its id given by a repeated start for index 0', late_id
    ),
    Profile("trailing-done", "the clean stream, then data: [DONE] after message_stop", trailing_done),
    Profile("error-midstream", "text, then event: error overloaded_error (no message_stop)", error_midstream),
    Profile(
        "drop-mid-stream",
        "two text deltas, then the connection is cut (no message_delta, no message_stop)",
        drop_mid_stream,
    ),
    Profile(
        "cut-after-stop",
        "clean text through message_delta end_turn with usage, then the body ends and the connection closes "
        "(no message_stop)",
        cut_after_stop,
    ),
    Profile(
        "thinking-tool",
        "a signed thinking block, a redacted_thinking block, then tool_use get_weather; the follow-up must send "
        "the three blocks back unmodified (else 400), then a final text answer",
        thinking_tool,
    ),
    Profile("rate-limit", "HTTP 429 rate_limit_error with Retry-After (retry_after, default 2)", rate_limit),
    Profile(
        "agent",
        "a two-step tool loop: seed-bug while the request has no assistant turn, then clean (see _formats.py)",
        clean,
    ),
)

MESSAGES_PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in _REGISTRY})
"""Profile name -> ``Profile``, for ``POST /v1/messages``."""
