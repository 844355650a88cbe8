"""The emulator's scripted streams: what each fault profile sends, as data, with no I/O.

A profile is a function from ``ScriptOptions`` (model, include_usage, timings, ...) to a ``Script``: an HTTP
status, headers, and a list of steps the server replays in order:

    Write(bytes) ..... send these bytes as one HTTP body piece
    Pause(seconds) ... send nothing for a while (drip, stall); cut short when the server shuts down
    Cut() ............ close the connection abruptly: no [DONE], no chunked terminator

Every event is a realistic OpenAI ``chat.completion.chunk`` envelope (``id``, ``object``, ``created``, ``model``,
``system_fingerprint``, ``choices[{index, delta, logprobs: null, finish_reason}]``), with a trailing
``"choices": []`` usage chunk when ``stream_options.include_usage`` is true. ``Script.chunks`` keeps the
envelopes so a ``"stream": false`` request can be answered with the assembled ``chat.completion``.

The server (``pipeline._emulator``) only chooses the profile and replays the steps; all wire shapes live here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeAlias

import attrs

__all__ = [
    "PROFILES",
    "Cut",
    "Pause",
    "Script",
    "ScriptOptions",
    "Step",
    "Write",
    "assemble_completion",
    "build_script",
    "error_script",
    "replay_script",
]

Json: TypeAlias = dict[str, Any]

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"

CLEAN_TEXT: tuple[str, ...] = ("Hello", " from", " the", " emulator", ".")
"""The ``clean`` answer, one delta per piece: ``"Hello from the emulator."``."""

WEATHER_ARGUMENTS: tuple[str, ...] = ('{"', "city", '": "', "Paris", '"}')
"""``get_weather`` arguments in fragments: ``{"city": "Paris"}``."""

TIME_ARGUMENTS: tuple[str, ...] = ('{"time', 'zone": ', '"Europe/', 'Paris"}')
"""``get_time`` arguments in fragments: ``{"timezone": "Europe/Paris"}``."""


# --------------------------------------------------------------------------------------------------- steps


@attrs.frozen
class Write:
    """Send ``data`` as one HTTP body piece."""

    data: bytes


@attrs.frozen
class Pause:
    """Send nothing for ``seconds`` (the server cuts the pause short when it shuts down)."""

    seconds: float


@attrs.frozen
class Cut:
    """Close the connection abruptly, mid-body."""

    reason: str = "scripted drop"


Step: TypeAlias = Write | Pause | Cut


@attrs.frozen
class Script:
    """One scripted HTTP response."""

    status: int
    content_type: str
    steps: tuple[Step, ...]
    headers: Mapping[str, str] = attrs.field(factory=dict)
    chunks: tuple[Json, ...] = ()
    """The ``chat.completion.chunk`` envelopes the stream carries (empty for raw bodies and HTTP errors)."""

    @property
    def is_event_stream(self) -> bool:
        return self.content_type.startswith("text/event-stream")

    @property
    def body(self) -> bytes:
        """Every written byte, concatenated (pauses and cuts ignored)."""
        return b"".join(step.data for step in self.steps if isinstance(step, Write))


@attrs.frozen
class ScriptOptions:
    """Per-request knobs a profile may read."""

    model: str = "emulator"
    include_usage: bool = False
    prompt_tokens: int = 12
    completion_id: str = "chatcmpl-emulator"
    created: int = 0
    drip_ms: float | None = None
    """Pause between events; ``None`` means the profile's default (50 ms for ``slow-drip``, none otherwise)."""
    stall_s: float = 3600.0
    retry_after: str = "2"


# --------------------------------------------------------------------------------------------------- events


@attrs.frozen
class _Event:
    """One SSE event: its lines (without line endings) and, for data events, the JSON payload."""

    lines: tuple[str, ...]
    payload: Json | None = None


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _data(payload: Json) -> _Event:
    return _Event((f"data: {_dumps(payload)}",), payload)


_DONE = _Event(("data: [DONE]",))


def _raw(*lines: str) -> _Event:
    return _Event(tuple(lines))


class _Chunks:
    """Builds chunk envelopes that share one completion id, model and creation time."""

    def __init__(self, options: ScriptOptions, *, include_usage: bool | None = None) -> None:
        self.options = options
        self.include_usage = options.include_usage if include_usage is None else include_usage

    def call_id(self, n: int) -> str:
        return f"call_emu{n}_{self.options.completion_id[-12:]}"

    def envelope(self, choices: list[Json], **extra: Any) -> Json:
        env: Json = {
            "id": self.options.completion_id,
            "object": "chat.completion.chunk",
            "created": self.options.created,
            "model": self.options.model,
            "system_fingerprint": "fp_emulator",
            "choices": choices,
        }
        if self.include_usage:
            env["usage"] = None
        env.update(extra)
        return env

    def delta(self, delta: Json, finish_reason: str | None = None) -> _Event:
        choice: Json = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data(self.envelope([choice]))

    def role(self, content: str | None = "") -> _Event:
        return self.delta({"role": "assistant", "content": content, "refusal": None})

    def text(self, text: str) -> _Event:
        return self.delta({"content": text})

    def tools(self, *calls: Json) -> _Event:
        return self.delta({"tool_calls": list(calls)})

    def finish(self, reason: str) -> _Event:
        return self.delta({}, reason)

    def usage(self, completion_tokens: int) -> _Event:
        prompt = self.options.prompt_tokens
        usage: Json = {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        return _data(self.envelope([], usage=usage))

    def end(self, reason: str, completion_tokens: int, *, done: bool = True) -> list[_Event]:
        """The finish chunk, the usage trailer when asked for, then ``[DONE]``."""
        events = [self.finish(reason)]
        if self.include_usage:
            events.append(self.usage(completion_tokens))
        if done:
            events.append(_DONE)
        return events


def _opener(index: int, call_id: str | None, name: str | None, arguments: str = "") -> Json:
    call: Json = {"index": index}
    if call_id is not None:
        call["id"] = call_id
    call["type"] = "function"
    function: Json = {}
    if name is not None:
        function["name"] = name
    function["arguments"] = arguments
    call["function"] = function
    return call


def _arguments(index: int, fragment: str) -> Json:
    return {"index": index, "function": {"arguments": fragment}}


# --------------------------------------------------------------------------------------------------- framing


def _frame(events: Iterable[_Event], *, newline: str = "\n", ids: bool = False) -> list[bytes]:
    """Each event as its wire bytes; ``ids`` adds an ``id: N`` line and one extra blank line per event."""
    frames: list[bytes] = []
    for n, event in enumerate(events, start=1):
        lines = (f"id: {n}", *event.lines) if ids else event.lines
        text = newline.join(lines) + newline + newline
        if ids:
            text += newline
        frames.append(text.encode("utf-8"))
    return frames


def _writes(frames: Sequence[bytes], drip_s: float = 0.0) -> list[Step]:
    steps: list[Step] = []
    for n, frame in enumerate(frames):
        if n and drip_s > 0:
            steps.append(Pause(drip_s))
        steps.append(Write(frame))
    return steps


def _drip(options: ScriptOptions, default_ms: float = 0.0) -> float:
    ms = default_ms if options.drip_ms is None else options.drip_ms
    return ms / 1000.0


def _stream(
    events: Sequence[_Event],
    options: ScriptOptions,
    *,
    newline: str = "\n",
    ids: bool = False,
    prefix: bytes = b"",
    default_drip_ms: float = 0.0,
) -> Script:
    frames = _frame(events, newline=newline, ids=ids)
    if prefix:
        frames = [prefix, *frames]
    steps = _writes(frames, _drip(options, default_drip_ms))
    return _event_stream(steps, events)


def _event_stream(steps: Iterable[Step], events: Iterable[_Event]) -> Script:
    chunks = tuple(e.payload for e in events if e.payload is not None)
    return Script(200, SSE_CONTENT_TYPE, tuple(steps), {"cache-control": "no-cache"}, chunks)


# --------------------------------------------------------------------------------------------------- profiles


def _clean_events(options: ScriptOptions, *, done: bool = True, include_usage: bool | None = None) -> list[_Event]:
    c = _Chunks(options, include_usage=include_usage)
    return [c.role(), *(c.text(t) for t in CLEAN_TEXT), *c.end("stop", len(CLEAN_TEXT), done=done)]


def _clean(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options), options)


def _clean_tool(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    events = [
        c.role(None),
        c.tools(_opener(0, c.call_id(0), "get_weather")),
        *(c.tools(_arguments(0, f)) for f in WEATHER_ARGUMENTS),
        *c.end("tool_calls", len(WEATHER_ARGUMENTS) + 1),
    ]
    return _stream(events, options)


def _seed_bug(options: ScriptOptions) -> Script:
    c = _Chunks(options)

    def repeat(index: int, value: str | None, fragment: str) -> Json:
        # The bug: continuation deltas repeat the identity, blanked out ("" or null) instead of omitted.
        kind = None if value is None else "function"
        return {"index": index, "id": value, "type": kind, "function": {"name": value, "arguments": fragment}}

    events = [
        c.role(None),
        c.tools(_opener(0, c.call_id(0), "get_weather")),
        c.tools(repeat(0, "", '{"ci')),
        c.tools(repeat(0, None, 'ty": ')),
        c.tools(repeat(0, "", '"Paris"}')),
        c.tools(_opener(1, c.call_id(1), "get_weather")),
        c.tools(repeat(1, None, '{"city": ')),
        c.tools(repeat(1, None, '"Berlin"}')),
        *c.end("tool_calls", 8),
    ]
    return _stream(events, options)


def _late_id(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    events = [
        c.role(None),
        c.tools(_opener(0, None, "get_weather")),
        c.tools({"index": 0, "id": c.call_id(0), "function": {"arguments": '{"city"'}}),
        c.tools(_arguments(0, ': "Paris"}')),
        *c.end("tool_calls", 3),
    ]
    return _stream(events, options)


def _never_identified(*, missing: str) -> Callable[[ScriptOptions], Script]:
    def build(options: ScriptOptions) -> Script:
        c = _Chunks(options)
        opener = _opener(0, None, "get_weather") if missing == "id" else _opener(0, c.call_id(0), None)
        events = [
            c.role(None),
            c.tools(opener),
            *(c.tools(_arguments(0, f)) for f in WEATHER_ARGUMENTS),
            *c.end("tool_calls", len(WEATHER_ARGUMENTS) + 1),
        ]
        return _stream(events, options)

    return build


def _parallel(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    events = [c.role(None), c.tools(_opener(0, c.call_id(0), "get_weather"))]
    events.append(c.tools(_opener(1, c.call_id(1), "get_time")))
    for n in range(max(len(WEATHER_ARGUMENTS), len(TIME_ARGUMENTS))):
        if n < len(WEATHER_ARGUMENTS):
            events.append(c.tools(_arguments(0, WEATHER_ARGUMENTS[n])))
        if n < len(TIME_ARGUMENTS):
            events.append(c.tools(_arguments(1, TIME_ARGUMENTS[n])))
    events.extend(c.end("tool_calls", len(WEATHER_ARGUMENTS) + len(TIME_ARGUMENTS) + 2))
    return _stream(events, options)


def _ollama_parallel(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    whole = [
        _opener(0, c.call_id(0), "get_weather", "".join(WEATHER_ARGUMENTS)),
        _opener(0, c.call_id(1), "get_time", "".join(TIME_ARGUMENTS)),
    ]
    events = [c.delta({"role": "assistant", "content": "", "tool_calls": [call]}) for call in whole]
    events.append(c.delta({"role": "assistant", "content": ""}, "tool_calls"))
    if c.include_usage:
        events.append(c.usage(24))
    events.append(_DONE)
    return _stream(events, options)


def _usage_trailer(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options, include_usage=True), options)


def _crlf(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options), options, newline="\r\n")


def _keepalive(options: ScriptOptions) -> Script:
    events: list[_Event] = [_raw(": OPENROUTER PROCESSING")] * 2
    for event in _clean_events(options):
        events.extend((event, _raw(": keepalive")))
    return _stream(events[:-1], options)


def _bom(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options), options, prefix=b"\xef\xbb\xbf")


def _slow_drip(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options), options, default_drip_ms=50.0)


def _drop_mid_stream(options: ScriptOptions) -> Script:
    events = _clean_events(options)
    sent = events[: len(events) // 2]
    script = _stream(sent, options)
    return attrs.evolve(script, steps=(*script.steps, Cut("drop-mid-stream")))


def _stall(options: ScriptOptions) -> Script:
    events = _clean_events(options)
    frames = _frame(events)
    drip = _drip(options)
    steps = [*_writes(frames[:3], drip), Pause(options.stall_s), *_writes(frames[3:], drip)]
    return _event_stream(steps, events)


def _error_midstream(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    error = {"error": {"message": "upstream overloaded", "type": "server_error"}}
    events = [c.role(), c.text("Hello"), c.text(" from"), _raw(f"data: {_dumps(error)}"), _DONE]
    return _stream(events, options)


def _event_error(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    error = {
        "error": {
            "message": "Tool choice is required, but model did not call a tool",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "status_code": 400,
        }
    }
    events = [c.role(), c.text("maybe"), _raw("event: error", f"data: {_dumps(error)}")]
    return _stream(events, options)


def _malformed_json(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    events = [
        c.role(),
        c.text("Hello"),
        _raw('data: {bad json, "choices": [{"delta": {"content": " from'),
        c.text(" the emulator."),
        *c.end("stop", 3),
    ]
    return _stream(events, options)


def _no_done(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options, done=False), options)


def _no_done_no_finish(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    return _stream([c.role(), *(c.text(t) for t in CLEAN_TEXT)], options)


def _empty_200(options: ScriptOptions) -> Script:
    return Script(200, SSE_CONTENT_TYPE, ())


def _id_after_sse_id(options: ScriptOptions) -> Script:
    return _stream(_clean_events(options), options, ids=True)


def _empty_response(options: ScriptOptions) -> Script:
    c = _Chunks(options)
    return _stream([c.role(), *c.end("stop", 0)], options)


def error_script(
    status: int,
    message: str,
    error_type: str,
    code: str | None = None,
    param: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Script:
    """An OpenAI-style JSON error response: ``{"error": {"message", "type", "param", "code"}}``."""
    body = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return Script(status, JSON_CONTENT_TYPE, (Write(_dumps(body).encode()),), dict(headers or {}))


def _rate_limit(options: ScriptOptions) -> Script:
    return error_script(
        429,
        "Rate limit reached for requests on the emulator. Please try again in 2s.",
        "requests",
        "rate_limit_exceeded",
        headers={"retry-after": options.retry_after, "x-ratelimit-remaining-requests": "0"},
    )


def _server_error(options: ScriptOptions) -> Script:
    return error_script(500, "The server had an error while processing your request. Sorry about that!", "server_error")


def _unavailable(options: ScriptOptions) -> Script:
    return error_script(503, "The engine is currently overloaded, please try again later.", "server_error")


def _auth(options: ScriptOptions) -> Script:
    return error_script(
        401,
        "Incorrect API key provided: te**st. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )


def _quota(options: ScriptOptions) -> Script:
    return error_script(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        "insufficient_quota",
        "insufficient_quota",
    )


def _context(options: ScriptOptions) -> Script:
    return error_script(
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9731 tokens. "
        "Please reduce the length of the messages.",
        "invalid_request_error",
        "context_length_exceeded",
        "messages",
    )


_HTML_PAGE = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>cloudflare</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def _html_200(options: ScriptOptions) -> Script:
    return Script(200, "text/html; charset=utf-8", (Write(_HTML_PAGE.encode()),))


def _replay_placeholder(options: ScriptOptions) -> Script:
    raise ValueError("the replay profile needs a file: use replay_script(data, ...)")


_PROFILES: dict[str, tuple[str, Callable[[ScriptOptions], Script]]] = {
    "clean": ('text "Hello from the emulator." in several deltas, finish stop, [DONE]', _clean),
    "clean-tool": ('one tool call get_weather {"city": "Paris"} in fragments, finish tool_calls', _clean_tool),
    "seed-bug": (
        'continuation tool deltas repeat id/name as "" and null (index 0), null (index 1)',
        _seed_bug,
    ),
    "late-id": ("the first tool-call delta has no id; the id arrives in the second delta", _late_id),
    "never-identified": ("a tool call whose deltas never carry an id", _never_identified(missing="id")),
    "never-identified-name": ("a tool call whose deltas never carry a name", _never_identified(missing="name")),
    "parallel": ("two tool calls, index 0 and 1, with interleaved argument deltas", _parallel),
    "ollama-parallel": ("two whole tool calls, both with index 0, each with its own id", _ollama_parallel),
    "usage-trailer": ('clean text; usage always sent in a trailing "choices": [] chunk', _usage_trailer),
    "crlf": ("clean, with CRLF line endings", _crlf),
    "keepalive": (": OPENROUTER PROCESSING before the first event, : keepalive between events", _keepalive),
    "bom": ("clean, with a UTF-8 BOM before the first event", _bom),
    "slow-drip": ("clean, one event every drip_ms (default 50 ms)", _slow_drip),
    "drop-mid-stream": ("half the events, then the connection is cut (no [DONE])", _drop_mid_stream),
    "stall": ("a few events, then nothing for stall_s (default 3600 s), then the rest", _stall),
    "rate-limit": ("HTTP 429 JSON error with Retry-After (retry_after, default 2)", _rate_limit),
    "server-error": ("HTTP 500 JSON error", _server_error),
    "unavailable": ("HTTP 503 JSON error", _unavailable),
    "html-200": ("HTTP 200 text/html gateway error page instead of a stream", _html_200),
    "error-midstream": ('text deltas, then data: {"error": ...} in-band, then [DONE]', _error_midstream),
    "event-error": ("Groq style: text, then event: error with status_code 400, no [DONE]", _event_error),
    "malformed-json": ("a data: {bad json event in the middle of a clean stream", _malformed_json),
    "no-done": ("a complete response with finish_reason but no [DONE]", _no_done),
    "no-done-no-finish": ("text deltas, then the body ends: no finish_reason, no [DONE]", _no_done_no_finish),
    "empty-200": ("HTTP 200 text/event-stream with an empty body", _empty_200),
    "auth": ("HTTP 401 invalid_api_key", _auth),
    "quota": ("HTTP 429 insufficient_quota (not retryable)", _quota),
    "context": ("HTTP 400 context_length_exceeded (maximum context length is 8192 tokens)", _context),
    "id-after-sse-id": ("events with id: lines followed by extra blank lines (httpx-sse deviation)", _id_after_sse_id),
    "empty-response": ("only a role delta, then finish stop and [DONE]", _empty_response),
    "agent": (
        "a multi-step tool-calling conversation, by the number of assistant messages in the request: "
        "step 1 the seed's bug (two calls, identity repeated as \"\" and null); step 2 first a never-identified "
        "call, then (on retry) two parallel calls; later steps a final text answer",
        _clean,
    ),
    "replay": (
        "serve a recorded .sse file byte for byte (x-emulator-file, x-emulator-chunk-bytes)",
        _replay_placeholder,
    ),
}

PROFILES: Mapping[str, str] = MappingProxyType({name: desc for name, (desc, _) in _PROFILES.items()})
"""Profile name -> one-line description."""


def build_script(profile: str, options: ScriptOptions | None = None) -> Script:
    """The script for ``profile`` (``KeyError`` if unknown; ``replay`` needs ``replay_script``)."""
    if profile not in _PROFILES:
        raise KeyError(f"unknown emulator profile {profile!r}; known: {', '.join(_PROFILES)}")
    return _PROFILES[profile][1](options or ScriptOptions())


def replay_script(data: bytes, *, chunk_bytes: int | None = None, drip_ms: float | None = None) -> Script:
    """Serve ``data`` byte for byte, optionally in pieces of ``chunk_bytes`` with ``drip_ms`` between them."""
    size = chunk_bytes if chunk_bytes and chunk_bytes > 0 else max(len(data), 1)
    pieces = [data[i : i + size] for i in range(0, len(data), size)]
    steps = _writes(pieces, (drip_ms or 0.0) / 1000.0)
    return Script(200, SSE_CONTENT_TYPE, tuple(steps), {"cache-control": "no-cache"})


# --------------------------------------------------------------------------------------------------- stream=false


def assemble_completion(chunks: Sequence[Json]) -> Json:
    """Fold chunk envelopes into one ``chat.completion`` (for ``"stream": false`` requests).

    Tool calls: the first non-empty ``id`` and ``name`` win, ``arguments`` are concatenated per call; a new
    non-empty ``id`` at an index that already has a different one starts a new call (Ollama).
    """
    first: Json = chunks[0] if chunks else {}
    content: list[str] = []
    calls: list[Json] = []
    open_at: dict[int, Json] = {}
    finish_reason: str | None = None
    usage: Json | None = None
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                index = int(tc.get("index", 0))
                function = tc.get("function") or {}
                call = open_at.get(index)
                new_id = tc.get("id")
                if call is None or (new_id and call["id"] and new_id != call["id"]):
                    call = {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
                    open_at[index] = call
                    calls.append(call)
                if new_id and not call["id"]:
                    call["id"] = new_id
                if function.get("name") and not call["function"]["name"]:
                    call["function"]["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    call["function"]["arguments"] += function["arguments"]
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    message: Json = {"role": "assistant", "content": "".join(content) if content or not calls else None}
    message["refusal"] = None
    if calls:
        message["tool_calls"] = calls
    completion: Json = {
        "id": first.get("id", "chatcmpl-emulator"),
        "object": "chat.completion",
        "created": first.get("created", 0),
        "model": first.get("model", "emulator"),
        "system_fingerprint": first.get("system_fingerprint"),
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
    }
    if usage is not None:
        completion["usage"] = usage
    return completion
