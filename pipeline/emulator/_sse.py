"""SSE events and their framing: the building blocks every stream profile is written with.

Every event is a realistic OpenAI ``chat.completion.chunk`` envelope (``id``, ``object``, ``created``, ``model``,
``system_fingerprint``, ``choices[{index, delta, logprobs: null, finish_reason}]``), with a trailing
``"choices": []`` usage chunk when ``stream_options.include_usage`` is true. ``Envelopes`` builds them,
``event_stream`` frames a list of events (LF or CRLF, optional ``id:`` lines, a prefix, a drip) into a ``Script``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import attrs

from .._json import dumps
from ._script import SSE_CONTENT_TYPE, Pause, Script, ScriptOptions, Step, Write

__all__ = [
    "DONE",
    "SYSTEM_FINGERPRINT",
    "Envelopes",
    "Event",
    "Json",
    "arguments",
    "data_event",
    "drip_seconds",
    "event_stream",
    "frame",
    "opener",
    "raw_event",
    "stream_script",
    "writes",
]

Json: TypeAlias = dict[str, Any]

SYSTEM_FINGERPRINT = "fp_emulator"


@attrs.frozen
class Event:
    """One SSE event: its lines (without line endings)."""

    lines: tuple[str, ...]


def data_event(payload: Json) -> Event:
    return Event((f"data: {dumps(payload)}",))


def raw_event(*lines: str) -> Event:
    return Event(tuple(lines))


DONE = raw_event("data: [DONE]")


class Envelopes:
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
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": choices,
        }
        if self.include_usage:
            env["usage"] = None
        env.update(extra)
        return env

    def delta(self, delta: Json, finish_reason: str | None = None) -> Event:
        choice: Json = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return data_event(self.envelope([choice]))

    def role(self, content: str | None = "") -> Event:
        return self.delta({"role": "assistant", "content": content, "refusal": None})

    def text(self, text: str) -> Event:
        return self.delta({"content": text})

    def tools(self, *calls: Json) -> Event:
        return self.delta({"tool_calls": list(calls)})

    def finish(self, reason: str) -> Event:
        return self.delta({}, reason)

    def usage(self, completion_tokens: int) -> Event:
        prompt = self.options.prompt_tokens
        usage: Json = {
            "prompt_tokens": prompt,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        return data_event(self.envelope([], usage=usage))

    def end(self, reason: str, completion_tokens: int, *, done: bool = True) -> list[Event]:
        """The finish chunk, the usage trailer when asked for, then ``[DONE]``."""
        events = [self.finish(reason)]
        if self.include_usage:
            events.append(self.usage(completion_tokens))
        if done:
            events.append(DONE)
        return events


def opener(index: int, call_id: str | None, name: str | None, fragment: str = "") -> Json:
    """The first delta of a tool call; ``None`` leaves the ``id`` or the ``name`` out."""
    call: Json = {"index": index}
    if call_id is not None:
        call["id"] = call_id
    call["type"] = "function"
    function: Json = {}
    if name is not None:
        function["name"] = name
    function["arguments"] = fragment
    call["function"] = function
    return call


def arguments(index: int, fragment: str) -> Json:
    """A continuation delta of a tool call: only its index and an arguments fragment."""
    return {"index": index, "function": {"arguments": fragment}}


def frame(events: Iterable[Event], *, newline: str = "\n", ids: bool = False) -> list[bytes]:
    """Each event as its wire bytes; ``ids`` adds an ``id: N`` line and one extra blank line per event."""
    frames: list[bytes] = []
    for n, event in enumerate(events, start=1):
        lines = (f"id: {n}", *event.lines) if ids else event.lines
        text = newline.join(lines) + newline + newline
        if ids:
            text += newline
        frames.append(text.encode("utf-8"))
    return frames


def writes(frames: Sequence[bytes], drip_s: float = 0.0) -> list[Step]:
    """One ``Write`` per frame, with a ``Pause(drip_s)`` between two frames when ``drip_s`` is positive."""
    steps: list[Step] = []
    for n, piece in enumerate(frames):
        if n and drip_s > 0:
            steps.append(Pause(drip_s))
        steps.append(Write(piece))
    return steps


def drip_seconds(options: ScriptOptions, default_ms: float = 0.0) -> float:
    ms = default_ms if options.drip_ms is None else options.drip_ms
    return ms / 1000.0


def event_stream(steps: Iterable[Step]) -> Script:
    """A 200 ``text/event-stream`` response replaying ``steps``."""
    return Script(200, SSE_CONTENT_TYPE, tuple(steps), {"cache-control": "no-cache"})


def stream_script(
    events: Sequence[Event],
    options: ScriptOptions,
    *,
    newline: str = "\n",
    ids: bool = False,
    prefix: bytes = b"",
    default_drip_ms: float = 0.0,
) -> Script:
    """``events`` framed and dripped as the options say, as a 200 event stream."""
    frames = frame(events, newline=newline, ids=ids)
    if prefix:
        frames = [prefix, *frames]
    return event_stream(writes(frames, drip_seconds(options, default_drip_ms)))
