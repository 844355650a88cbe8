"""Gemini's ``streamGenerateContent?alt=sse`` profiles (the Gemini API's and Vertex AI's paths): one per quirk of
Google's stream (decision 0071), modelled on the Gemini peer corpus (``tests/corpus/gemini-peers/``).

A clean stream: one ``data: <GenerateContentResponse>`` event per text piece, CRLF CRLF, no ``[DONE]``::

    data: {"candidates": [{"content": {"parts": [{"text": "Hello"}], "role": "model"}, "index": 0}],
           "usageMetadata": {...so far...}, "modelVersion": "<model>", "responseId": "emu..."}
    ...
    data: {"candidates": [{"content": {"parts": [{"text": "."}], "role": "model"}, "finishReason": "STOP", ...}]...}

A call is a ``functionCall`` part (``name``, ``args`` whole; an ``id`` only where the profile says), usually with
``finishReason: STOP`` on its event. Events are built by ``GeminiEvents`` (``_events.py``); ``GEMINI_PROFILES``
names the profiles.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from .._profiles import Profile
from .._script import Cut, Script, ScriptOptions
from .._sent_back import opaque
from .._sse import Event, Json, stream_script
from .._stream_profiles import CLEAN_TEXT
from ._events import NEWLINE, GeminiEvents, rate_limit
from ._sent_back import SIGNATURE, THOUGHT_PIECES, TOOL

__all__ = ["ARGS", "GEMINI_PROFILES", "OTHER_TEXT", "TEXT_SIGNATURE", "THOUGHT_SIGNATURE"]

ARGS: Json = {"city": "Paris"}
"""The arguments of every ``get_weather`` call."""
TIME_ARGS: Json = {"timezone": "Europe/Paris"}
OTHER_TEXT = ("Bonjour", " de", " l'émulateur", ".")
"""The second candidate's text in ``two-candidates``."""
THOUGHT_SIGNATURE = base64.b64encode(b"\x12\x9c\x01" + opaque("gemini/thought-part", 177)).decode()
"""The ``thoughtSignature`` on the thought part of ``thinking-signatures``."""
TEXT_SIGNATURE = base64.b64encode(b"\x12\xb4\x02" + opaque("gemini/empty-text-part", 237)).decode()
"""The ``thoughtSignature`` on the empty final text part of ``thinking-signatures``."""


def _stream(events: list[Event], options: ScriptOptions) -> Script:
    return stream_script(events, options, newline=NEWLINE)


def _text(g: GeminiEvents, pieces: tuple[str, ...] = CLEAN_TEXT, finish: str | None = "STOP") -> list[Event]:
    """One event per piece, ``finish`` on the last one."""
    return [g.text(p, finish if n == len(pieces) - 1 else None) for n, p in enumerate(pieces)]


def _contentless(g: GeminiEvents, reason: str, message: str | None = None) -> Event:
    """A finishing candidate with an empty ``content`` (``{}``), as Google sends a call it could not parse."""
    candidate: Json = {"content": {}, "finishReason": reason}
    if message is not None:
        candidate["finishMessage"] = message
    return g.event(g.payload([{**candidate, "index": 0}]))


# -- well-formed


def clean(options: ScriptOptions) -> Script:
    g = GeminiEvents(options)
    return _stream(_text(g), options)


def thinking_signatures(options: ScriptOptions) -> Script:
    """Signed thought parts, the answer's text, then an empty final text part with its own signature (Gemini 3)."""
    g = GeminiEvents(options)
    events = [g.thought(THOUGHT_PIECES[0], THOUGHT_SIGNATURE), g.thought(THOUGHT_PIECES[1])]
    events += _text(g, finish=None)
    events.append(g.parts([{"text": "", "thoughtSignature": TEXT_SIGNATURE}], "STOP"))
    return _stream(events, options)


def clean_tool(options: ScriptOptions) -> Script:
    """One ``functionCall`` with no ``id`` (the Gemini API's way), ``finishReason: STOP`` on its event."""
    g = GeminiEvents(options)
    return _stream([g.parts([g.call(TOOL, ARGS)], "STOP")], options)


def call_with_id(options: ScriptOptions) -> Script:
    """One ``functionCall`` with a wire ``id`` (Vertex AI, newer models)."""
    g = GeminiEvents(options)
    return _stream([g.parts([g.call(TOOL, ARGS, call_id=f"call-{g.response_id[-12:]}")], "STOP")], options)


def parallel(options: ScriptOptions) -> Script:
    """Two ``functionCall`` parts in one event (get_weather, get_time), then ``STOP`` on an event of its own."""
    g = GeminiEvents(options)
    calls = g.parts([g.call(TOOL, ARGS), g.call("get_time", TIME_ARGS)])
    return _stream([calls, g.finish("STOP", [{"text": ""}])], options)


def call_then_stop(options: ScriptOptions) -> Script:
    """A ``functionCall`` event with no finish, then a bare ``STOP`` event with an empty text part."""
    g = GeminiEvents(options)
    return _stream([g.parts([g.call(TOOL, ARGS)]), g.finish("STOP", [{"text": ""}])], options)


def streamed_args(options: ScriptOptions) -> Script:
    """Vertex AI's streamed arguments: the call's name with ``willContinue``, then ``partialArgs`` whose string value
    continues (``willContinue``), then an empty ``functionCall`` that ends it, then ``STOP``."""
    g = GeminiEvents(options)
    piece = {"jsonPath": "$.city", "stringValue": "Par", "willContinue": True}
    events = [
        g.parts([g.call(TOOL, willContinue=True)]),
        g.parts([g.call(None, partialArgs=[piece], willContinue=True)]),
        g.parts([g.call(None, partialArgs=[{"jsonPath": "$.city", "stringValue": "is"}], willContinue=True)]),
        g.parts([g.call(None)]),
        g.finish("STOP", [{"text": ""}]),
    ]
    return _stream(events, options)


def two_candidates(options: ScriptOptions) -> Script:
    """``candidateCount: 2``: every event carries candidate 0 and candidate 1, ``STOP`` on both at the end."""
    g = GeminiEvents(options)
    events = []
    for n, (first, second) in enumerate(zip(CLEAN_TEXT[:-1], OTHER_TEXT, strict=True)):
        finish = "STOP" if n == len(OTHER_TEXT) - 1 else None
        g.output += 2
        pair = [g.candidate([{"text": first}], finish), g.candidate([{"text": second}], finish, index=1)]
        events.append(g.event(g.payload(pair)))
    return _stream(events, options)


def empty_parts(options: ScriptOptions) -> Script:
    """Empty text parts between and beside the text, then a finishing event whose content has no ``parts``."""
    g = GeminiEvents(options)
    events = [g.text(""), g.text(CLEAN_TEXT[0]), g.parts([{"text": ""}, {"text": "".join(CLEAN_TEXT[1:3])}])]
    events += [g.text(""), g.text("".join(CLEAN_TEXT[3:])), g.finish("STOP")]
    return _stream(events, options)


# -- a call the API refuses or that is not a call


def never_identified_name(options: ScriptOptions) -> Script:
    """A ``functionCall`` with arguments and no ``name`` (nor id), ``STOP``."""
    g = GeminiEvents(options)
    return _stream([g.parts([g.call(None, ARGS)], "STOP")], options)


def malformed_function_call(options: ScriptOptions) -> Script:
    """``MALFORMED_FUNCTION_CALL`` with a ``finishMessage`` and an empty content: the model's call did not parse."""
    g = GeminiEvents(options)
    message = "Malformed function call: print(default_api.get_weather(city='Paris')"
    return _stream([_contentless(g, "MALFORMED_FUNCTION_CALL", message)], options)


def unexpected_tool_call(options: ScriptOptions) -> Script:
    """``UNEXPECTED_TOOL_CALL``: the model called a tool the request did not declare; empty content."""
    g = GeminiEvents(options)
    return _stream([_contentless(g, "UNEXPECTED_TOOL_CALL")], options)


# -- finishes that are not stop

_BLOCKED = [
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
]


def max_tokens(options: ScriptOptions) -> Script:
    g = GeminiEvents(options)
    return _stream(_text(g, CLEAN_TEXT[:3], "MAX_TOKENS"), options)


def safety(options: ScriptOptions) -> Script:
    """Text, then ``finishReason: SAFETY`` with a ``finishMessage`` and the blocking rating, content without parts."""
    g = GeminiEvents(options)
    message = "The response was blocked because it may contain dangerous content."
    events = [*_text(g, CLEAN_TEXT[:2], None), g.finish("SAFETY", finish_message=message, safetyRatings=_BLOCKED)]
    return _stream(events, options)


def prompt_blocked(options: ScriptOptions) -> Script:
    """``promptFeedback.blockReason: SAFETY`` and no ``candidates``: the prompt was blocked before any answer."""
    g = GeminiEvents(options)
    feedback = {"blockReason": "SAFETY", "safetyRatings": _BLOCKED}
    return _stream([g.event(g.payload(None, promptFeedback=feedback))], options)


# -- faults


def no_finish(options: ScriptOptions) -> Script:
    """Text events, then the body ends normally before any ``finishReason``: a cut that looks like an end."""
    g = GeminiEvents(options)
    return _stream(_text(g, CLEAN_TEXT[:3], None), options)


def drop_mid_stream(options: ScriptOptions) -> Script:
    """Two text events, then the connection is cut."""
    g = GeminiEvents(options)
    script = _stream(_text(g, CLEAN_TEXT[:2], None), options)
    return attrs.evolve(script, steps=(*script.steps, Cut("drop-mid-stream")))


def error_midstream(options: ScriptOptions) -> Script:
    """Text, then an in-band ``{"error": {"code": 503, "status": "UNAVAILABLE"}}`` event; the body ends there."""
    g = GeminiEvents(options)
    error = g.error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
    return _stream([*_text(g, CLEAN_TEXT[:2], None), error], options)


# -- a tool loop whose follow-up must send the signature back


def thinking_tool(options: ScriptOptions) -> Script:
    """Thought parts, then a ``functionCall`` part carrying ``thoughtSignature`` (``STOP``); the follow-up is
    checked by ``_sent_back.check_signature_sent_back``."""
    g = GeminiEvents(options)
    events = [g.thought(t) for t in THOUGHT_PIECES]
    events.append(g.parts([g.call(TOOL, ARGS, signature=SIGNATURE)], "STOP"))
    return _stream(events, options)


_REGISTRY: tuple[Profile, ...] = (
    Profile("clean", 'text "Hello from the emulator." over five events, STOP on the last, no [DONE]', clean),
    Profile(
        "thinking-signatures",
        "signed thought parts, the text, then an empty final text part with its own thoughtSignature, STOP",
        thinking_signatures,
    ),
    Profile("clean-tool", 'one functionCall get_weather {"city": "Paris"} without id, STOP on its event', clean_tool),
    Profile("call-with-id", "one functionCall with a wire functionCall.id (Vertex AI), STOP", call_with_id),
    Profile("parallel", "two functionCall parts in one event (get_weather, get_time), then STOP", parallel),
    Profile("call-then-stop", "a functionCall event, then a bare STOP event with an empty text part", call_then_stop),
    Profile("max-tokens", "three text events, finishReason MAX_TOKENS", max_tokens),
    Profile("safety", "text, then finishReason SAFETY with finishMessage and safetyRatings", safety),
    Profile("prompt-blocked", "promptFeedback.blockReason SAFETY and no candidates", prompt_blocked),
    Profile(
        "malformed-function-call",
        "finishReason MALFORMED_FUNCTION_CALL with finishMessage, empty content",
        malformed_function_call,
    ),
    Profile("unexpected-tool-call", "finishReason UNEXPECTED_TOOL_CALL, empty content", unexpected_tool_call),
    Profile("never-identified-name", "a functionCall with args but no name (nor id), STOP", never_identified_name),
    Profile("no-finish", "three text events, then the body ends: no finishReason (a cut body)", no_finish),
    Profile("drop-mid-stream", "two text events, then the connection is cut", drop_mid_stream),
    Profile(
        "error-midstream", 'text, then an in-band {"error": {"code": 503, "status": "UNAVAILABLE"}}', error_midstream
    ),
    Profile(
        "rate-limit",
        "HTTP 429 RESOURCE_EXHAUSTED (google.rpc) with RetryInfo retryDelay (retry_after, default 2s)",
        rate_limit,
    ),
    Profile("empty-parts", "empty text parts beside the text, then a STOP event with no parts", empty_parts),
    Profile(
        "streamed-args",
        "Vertex AI streamed arguments: functionCall.partialArgs with willContinue, then STOP",
        streamed_args,
    ),
    Profile("two-candidates", "candidateCount 2: candidates 0 and 1 on every event, STOP on both", two_candidates),
    Profile(
        "thinking-tool",
        "thought parts, then a functionCall carrying thoughtSignature; the follow-up must send the signature back on "
        "the functionCall part and a functionResponse named get_weather (else 400 INVALID_ARGUMENT), then clean",
        thinking_tool,
    ),
    Profile(
        "agent",
        "a two-step tool loop: clean-tool while contents has no model turn, then clean (see _formats.py)",
        clean,
    ),
)

GEMINI_PROFILES: Mapping[str, Profile] = MappingProxyType({p.name: p for p in _REGISTRY})
"""Profile name -> ``Profile``, for ``POST .../models/{model}:streamGenerateContent?alt=sse``."""
