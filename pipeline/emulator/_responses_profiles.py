"""The OpenAI Responses API profiles (``POST /v1/responses``): event-named SSE, modelled on real recordings.

A clean stream (every payload has ``type`` and an increasing ``sequence_number``)::

    response.created, response.in_progress            {"response": {..., "status": "in_progress", "usage": null}}
    response.output_item.added                        {"output_index": 0, "item": {"type": "message", ...}}
    response.content_part.added
    response.output_text.delta                        {"item_id", "output_index", "content_index", "delta"}  (each)
    response.output_text.done, response.content_part.done, response.output_item.done
    response.completed                                {"response": {..., "status": "completed", "output", "usage"}}

A tool call is a ``function_call`` item (``id`` fc_..., ``call_id`` call_..., ``name``) whose arguments come in
``response.function_call_arguments.delta`` events, then ``.done``. Usage (on ``response.completed``):
``input_tokens`` includes ``input_tokens_details.cached_tokens`` = ``CACHED_TOKENS``; ``output_tokens`` includes
``output_tokens_details.reasoning_tokens`` = ``REASONING_TOKENS``. ``RESPONSES_PROFILES`` names the profiles.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from .._json import dumps
from . import _error_profiles as http
from ._profiles import Profile
from ._script import Cut, Script, ScriptOptions
from ._sse import Event, Json, raw_event, stream_script
from ._stream_profiles import CLEAN_TEXT, WEATHER_ARGUMENTS

__all__ = [
    "CACHED_TOKENS",
    "REASONING_TOKENS",
    "RESPONSES_PROFILES",
    "ResponseEvents",
    "clean",
    "clean_tool",
    "drop_mid_stream",
    "error_midstream",
    "late_id",
    "never_identified",
    "rotated_ids",
    "seed_bug",
]

CACHED_TOKENS = 16
"""``input_tokens_details.cached_tokens`` of every completed Responses stream (part of ``input_tokens``)."""
REASONING_TOKENS = 4
"""``output_tokens_details.reasoning_tokens`` of every completed Responses stream (part of ``output_tokens``)."""

_CLEAN = "".join(CLEAN_TEXT)
_RESPONSE_SETTINGS: Json = {
    **dict.fromkeys(("error", "incomplete_details", "instructions", "max_output_tokens", "previous_response_id")),
    "background": False,
    "parallel_tool_calls": True,
    "reasoning": {"effort": None, "summary": None},
    "store": True,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}},
    "tool_choice": "auto",
    "tools": [],
    "top_p": 1.0,
    "truncation": "disabled",
    "metadata": {},
}
_ARGUMENTS = "".join(WEATHER_ARGUMENTS)


class ResponseEvents:
    """Builds the events of one Responses stream: one response id, and the sequence numbers in order."""

    def __init__(self, options: ScriptOptions) -> None:
        self.options = options
        suffix = options.completion_id[-24:]
        self.response_id = f"resp_emu{suffix}"
        self.message_item = f"msg_emu{suffix}"
        self.call_item = f"fc_emu{suffix}"
        self.call_id = f"call_emu0_{suffix[-12:]}"
        self._sequence = itertools.count()
        self._rotation = itertools.count(1)
        self.call_index = 0
        """The ``output_index`` of the function call."""

    def rotated(self) -> str:
        """A fresh item id, as GitHub Copilot gives on every event."""
        return f"item_emu{next(self._rotation)}_{self.response_id[-12:]}"

    def event(self, name: str, payload: Json) -> Event:
        body = {"type": name, "sequence_number": next(self._sequence), **payload}
        return raw_event(f"event: {name}", f"data: {dumps(body)}")

    def response(self, status: str, output: list[Json] | None = None, *, completed: bool = False) -> Json:
        """The response object of ``response.created`` / ``.in_progress`` / ``.completed``."""
        response: Json = {
            "id": self.response_id,
            "object": "response",
            "created_at": self.options.created,
            "status": status,
            **_RESPONSE_SETTINGS,
            "model": self.options.model,
            "output": output or [],
            "usage": None,
        }
        if completed:
            response["completed_at"] = self.options.created
        return response

    def opening(self) -> list[Event]:
        return [
            self.event("response.created", {"response": self.response("in_progress")}),
            self.event("response.in_progress", {"response": self.response("in_progress")}),
        ]

    def usage(self, output_tokens: int) -> Json:
        prompt = self.options.prompt_tokens + CACHED_TOKENS
        output = output_tokens + REASONING_TOKENS
        return {
            "input_tokens": prompt,
            "input_tokens_details": {"cached_tokens": CACHED_TOKENS},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": REASONING_TOKENS},
            "total_tokens": prompt + output,
        }

    def completed(self, output: list[Json], output_tokens: int) -> Event:
        response = self.response("completed", output, completed=True)
        response["usage"] = self.usage(output_tokens)
        return self.event("response.completed", {"response": response})

    # -- a message item

    def message(self, text: str, status: str = "completed", item_id: str | None = None) -> Json:
        content = (
            [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}]
            if status != "in_progress"
            else []
        )
        return {
            "id": item_id or self.message_item,
            "type": "message",
            "status": status,
            "content": content,
            "role": "assistant",
        }

    def text_events(self, pieces: tuple[str, ...], *, rotate: bool = False, whole: bool = True) -> list[Event]:
        """A message item at ``output_index`` 0 (a new item id on every event when ``rotate``; only its opening
        and deltas unless ``whole``)."""

        def item_id() -> str:
            return self.rotated() if rotate else self.message_item

        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
        where = {"output_index": 0, "content_index": 0}
        text = "".join(pieces)
        added = {"output_index": 0, "item": self.message("", "in_progress", item_id())}
        events = [
            self.event("response.output_item.added", added),
            self.event("response.content_part.added", {"item_id": item_id(), **where, "part": part}),
        ]
        for piece in pieces:
            delta = {"item_id": item_id(), **where, "delta": piece, "logprobs": []}
            events.append(self.event("response.output_text.delta", delta))
        if not whole:
            return events
        return [
            *events,
            self.event("response.output_text.done", {"item_id": item_id(), **where, "text": text, "logprobs": []}),
            self.event("response.content_part.done", {"item_id": item_id(), **where, "part": {**part, "text": text}}),
            self.event("response.output_item.done", {"output_index": 0, "item": self.message(text, item_id=item_id())}),
        ]

    # -- a function_call item

    def call(
        self,
        arguments: str,
        status: str = "completed",
        *,
        call_id: str | None = "",
        item_id: str = "",
        name: str | None = "get_weather",
    ) -> Json:
        """A ``function_call`` item; ``call_id=None`` leaves ``call_id`` out, ``""`` means this stream's id."""
        item: Json = {
            "id": item_id or self.call_item,
            "type": "function_call",
            "status": status,
            "arguments": arguments,
        }
        if call_id is not None:
            item["call_id"] = call_id or self.call_id
        item["name"] = name
        return item

    def added(self, item: Json) -> Event:
        return self.event("response.output_item.added", {"output_index": self.call_index, "item": item})

    def arguments(self, fragment: str, item_id: str = "", **extra: object) -> Event:
        payload = {"item_id": item_id or self.call_item, "output_index": self.call_index, "delta": fragment, **extra}
        return self.event("response.function_call_arguments.delta", payload)

    def arguments_done(self, item_id: str = "") -> Event:
        payload = {"item_id": item_id or self.call_item, "output_index": self.call_index, "arguments": _ARGUMENTS}
        return self.event("response.function_call_arguments.done", payload)

    def item_done(self, item: Json) -> Event:
        return self.event("response.output_item.done", {"output_index": self.call_index, "item": item})


def _tool_stream(r: ResponseEvents, *, added_id: str | None = "", done_id: str | None = "") -> list[Event]:
    """One function call in fragments; ``added_id`` / ``done_id``: the ``call_id`` of its added / done item."""
    done = r.call(_ARGUMENTS, call_id=done_id)
    return [
        *r.opening(),
        r.added(r.call("", "in_progress", call_id=added_id)),
        *(r.arguments(f) for f in WEATHER_ARGUMENTS),
        r.arguments_done(),
        r.item_done(done),
        r.completed([done], len(WEATHER_ARGUMENTS)),
    ]


# -- well-formed


def clean(options: ScriptOptions) -> Script:
    r = ResponseEvents(options)
    events = [*r.opening(), *r.text_events(CLEAN_TEXT), r.completed([r.message(_CLEAN)], len(CLEAN_TEXT))]
    return stream_script(events, options)


def clean_tool(options: ScriptOptions) -> Script:
    return stream_script(_tool_stream(ResponseEvents(options)), options)


# -- tool-call identity deviations


def seed_bug(options: ScriptOptions) -> Script:
    """Later events repeat the call's identity blanked out: deltas with ``call_id: ""`` / ``name: null``, and an
    ``output_item.done`` whose item has ``call_id: ""`` and ``name: null``."""
    r = ResponseEvents(options)
    blanked = r.call(_ARGUMENTS, call_id=None, name=None)
    blanked["call_id"] = ""
    events = [
        *r.opening(),
        r.added(r.call("", "in_progress")),
        r.arguments(WEATHER_ARGUMENTS[0]),
        *(r.arguments(f, call_id="" if n % 2 else None, name=None) for n, f in enumerate(WEATHER_ARGUMENTS[1:])),
        r.arguments_done(),
        r.item_done(blanked),
        r.completed([r.call(_ARGUMENTS)], len(WEATHER_ARGUMENTS)),
    ]
    return stream_script(events, options)


def never_identified(options: ScriptOptions) -> Script:
    """A ``function_call`` item with no ``call_id`` in any event."""
    return stream_script(_tool_stream(ResponseEvents(options), added_id=None, done_id=None), options)


def late_id(options: ScriptOptions) -> Script:
    """The ``call_id`` only on ``output_item.done`` (absent from ``output_item.added``)."""
    return stream_script(_tool_stream(ResponseEvents(options), added_id=None), options)


def rotated_ids(options: ScriptOptions) -> Script:
    """GitHub Copilot: text, then a function call at ``output_index`` 0, a new item id on every event."""
    r = ResponseEvents(options)
    events = [*r.opening(), *r.text_events(CLEAN_TEXT, rotate=True)]
    r.call_index = 1
    events.append(r.added(r.call("", "in_progress", item_id=r.rotated())))
    events.extend(r.arguments(f, r.rotated()) for f in WEATHER_ARGUMENTS)
    events.append(r.arguments_done(r.rotated()))
    done = r.call(_ARGUMENTS, item_id=r.rotated())
    events.extend([r.item_done(done), r.completed([r.message(_CLEAN), done], len(CLEAN_TEXT) + len(WEATHER_ARGUMENTS))])
    return stream_script(events, options)


# -- faults


def error_midstream(options: ScriptOptions) -> Script:
    """Text deltas, then an in-band ``error`` event (``server_error``); no ``response.completed``."""
    r = ResponseEvents(options)
    events = [
        *r.opening(),
        *r.text_events(CLEAN_TEXT[:2], whole=False),
        r.event(
            "error",
            {
                "code": "server_error",
                "message": "The server had an error while processing your request. Sorry about that!",
                "param": None,
            },
        ),
    ]
    return stream_script(events, options)


def drop_mid_stream(options: ScriptOptions) -> Script:
    """Half of a clean stream, then the connection is cut: no ``response.completed``."""
    r = ResponseEvents(options)
    events = [*r.opening(), *r.text_events(CLEAN_TEXT)]
    script = stream_script(events[: len(events) // 2], options)
    return attrs.evolve(script, steps=(*script.steps, Cut("drop-mid-stream")))


_REGISTRY: tuple[Profile, ...] = (
    Profile("clean", 'text "Hello from the emulator." in output_text deltas, completed with usage', clean),
    Profile("clean-tool", 'one function_call get_weather {"city": "Paris"} in argument deltas', clean_tool),
    Profile("seed-bug", 'later events repeat the call identity as call_id "" / name null', seed_bug),
    Profile("never-identified", "a function_call item with no call_id in any event", never_identified),
    Profile("late-id", "the call_id only on response.output_item.done", late_id),
    Profile("rotated-ids", "GitHub Copilot: a new item id on every event (text, then a function call)", rotated_ids),
    Profile(
        "error-midstream", "text, then an in-band error event server_error (no response.completed)", error_midstream
    ),
    Profile(
        "drop-mid-stream", "half of a clean stream, then the connection is cut (no response.completed)", drop_mid_stream
    ),
    Profile("rate-limit", "HTTP 429 rate_limit_exceeded with Retry-After (retry_after, default 2)", http.rate_limit),
    Profile(
        "agent",
        "a two-step tool loop: seed-bug while the request has no assistant turn, then clean (see _formats.py)",
        clean,
    ),
)

RESPONSES_PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in _REGISTRY})
"""Profile name -> ``Profile``, for ``POST /v1/responses``."""
