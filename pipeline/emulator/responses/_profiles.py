"""The OpenAI Responses API profiles (``POST /v1/responses``): event-named SSE, modelled on real recordings.

A clean stream (every payload has ``type`` and an increasing ``sequence_number``)::

    response.created, response.in_progress            {"response": {..., "status": "in_progress", "usage": null}}
    response.output_item.added                        {"output_index": 0, "item": {"type": "message", ...}}
    response.content_part.added
    response.output_text.delta                        {"item_id", "output_index", "content_index", "delta"}  (each)
    response.output_text.done, response.content_part.done, response.output_item.done
    response.completed                                {"response": {..., "status": "completed", "output", "usage"}}

A tool call is a ``function_call`` item (``id`` fc_..., ``call_id`` call_..., ``name``) whose arguments come in
``response.function_call_arguments.delta`` events, then ``.done``; the calls of another kind a client runs (custom
tools, ``apply_patch_call``, ``shell_call``, ``local_shell_call``) are in ``_client_calls.py``. Usage (on
``response.completed``): ``input_tokens`` includes ``input_tokens_details.cached_tokens`` = ``CACHED_TOKENS``;
``output_tokens`` includes ``output_tokens_details.reasoning_tokens`` = ``REASONING_TOKENS``. The events are built by
``ResponseEvents`` (``_events.py``); ``RESPONSES_PROFILES`` names the profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import attrs

from .. import _error_profiles as http
from .._profiles import Profile
from .._script import Cut, Script, ScriptOptions
from .._sse import Event, stream_script
from .._stream_profiles import CLEAN_TEXT, WEATHER_ARGUMENTS
from ._client_calls import (
    GRAMMAR_REGEX,
    apply_patch,
    custom_blanked_id,
    custom_cut,
    custom_grammar,
    custom_tools,
    local_shell,
    shell_call,
)
from ._events import ARGUMENTS, CACHED_TOKENS, CLEAN, REASONING_TOKENS, ResponseEvents
from ._sent_back import SUMMARY, SUMMARY_PIECES

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
    "reasoning_tool",
    "rotated_ids",
    "seed_bug",
]

def _tool_stream(r: ResponseEvents, *, added_id: str | None = "", done_id: str | None = "") -> list[Event]:
    """One function call in fragments; ``added_id`` / ``done_id``: the ``call_id`` of its added / done item."""
    done = r.call(ARGUMENTS, call_id=done_id)
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
    events = [*r.opening(), *r.text_events(CLEAN_TEXT), r.completed([r.message(CLEAN)], len(CLEAN_TEXT))]
    return stream_script(events, options)


def clean_tool(options: ScriptOptions) -> Script:
    return stream_script(_tool_stream(ResponseEvents(options)), options)


# -- tool-call identity deviations


def seed_bug(options: ScriptOptions) -> Script:
    """Later events repeat the call's identity blanked out: deltas with ``call_id: ""`` / ``name: null``, and an
    ``output_item.done`` whose item has ``call_id: ""`` and ``name: null``."""
    r = ResponseEvents(options)
    blanked = r.call(ARGUMENTS, call_id=None, name=None)
    blanked["call_id"] = ""
    events = [
        *r.opening(),
        r.added(r.call("", "in_progress")),
        r.arguments(WEATHER_ARGUMENTS[0]),
        *(r.arguments(f, call_id="" if n % 2 else None, name=None) for n, f in enumerate(WEATHER_ARGUMENTS[1:])),
        r.arguments_done(),
        r.item_done(blanked),
        r.completed([r.call(ARGUMENTS)], len(WEATHER_ARGUMENTS)),
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
    done = r.call(ARGUMENTS, item_id=r.rotated())
    events.extend([r.item_done(done), r.completed([r.message(CLEAN), done], len(CLEAN_TEXT) + len(WEATHER_ARGUMENTS))])
    return stream_script(events, options)


# -- reasoning that a tool loop must send back


def reasoning_tool(options: ScriptOptions) -> Script:
    """A ``reasoning`` item (summary streamed, ``encrypted_content`` on done), then a function call; the follow-up
    request is checked by ``_sent_back.check_reasoning_sent_back`` (the record in ``pipeline/emulator/_formats.py``)."""
    r = ResponseEvents(options)
    events = [*r.opening(), *r.reasoning_events(SUMMARY_PIECES)]
    r.call_index = 1
    done = r.call(ARGUMENTS)
    events.extend([r.added(r.call("", "in_progress")), *(r.arguments(f) for f in WEATHER_ARGUMENTS)])
    events.extend([r.arguments_done(), r.item_done(done)])
    events.append(r.completed([r.reasoning(SUMMARY), done], len(SUMMARY_PIECES) + len(WEATHER_ARGUMENTS)))
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
    Profile(
        "reasoning-tool",
        "a reasoning item (summary, encrypted_content) then a function_call; the follow-up must send the reasoning "
        "item back before the function_call (else 400), then a final text answer",
        reasoning_tool,
    ),
    Profile("custom-tools", "two custom_tool_call items (run_sql, run_python), their input deltas interleaved; the "
            "follow-up must send a custom_tool_call_output for each, then clean", custom_tools),
    Profile("custom-grammar", f"a custom_tool_call schedule_at whose input matches its regex grammar {GRAMMAR_REGEX}; "
            "the follow-up must send its custom_tool_call_output, then clean", custom_grammar),
    Profile("custom-blanked-id", 'a custom_tool_call whose call_id and name are "" on output_item.done and in '
            "response.completed", custom_blanked_id),
    Profile("custom-cut", "a custom_tool_call's input deltas, then the body ends inside a delta event (cut)",
            custom_cut),
    Profile("apply-patch", "an apply_patch_call update_file src/app.py; the follow-up must send its "
            "apply_patch_call_output (status completed or failed), then clean", apply_patch),
    Profile("shell-call", "a shell_call in the local environment (shell_call_command progress events); the "
            "follow-up must send its shell_call_output, then clean", shell_call),
    Profile("local-shell", "a reasoning item, then a local_shell_call added with an empty command, done with it",
            local_shell),
    Profile("rate-limit", "HTTP 429 rate_limit_exceeded with Retry-After (retry_after, default 2)", http.rate_limit),
    Profile(
        "agent",
        "a two-step tool loop: seed-bug while the request has no assistant turn, then clean (see _formats.py)",
        clean,
    ),
)

RESPONSES_PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in _REGISTRY})
"""Profile name -> ``Profile``, for ``POST /v1/responses``."""
