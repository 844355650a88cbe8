"""The profile registry: every profile the emulator answers with, by name, in one table (``_REGISTRY``).

Adding a profile
----------------
1. Write a function ``(ScriptOptions) -> Script``: in ``_stream_profiles.py`` for anything sent as an event stream
   (build the events with ``Envelopes`` and frame them with ``stream_script``, both in ``_sse.py``), in
   ``_error_profiles.py`` for an HTTP error or a body that is not a stream (``error_script``).
2. Add one ``Profile(name, description, function)`` line to ``_REGISTRY`` below. Nothing else: the gateway then
   serves it (``x-emulator-profile: <name>`` or the model ``emulator/<name>``), ``GET /v1/models`` and ``PROFILES``
   list it, and a ``"stream": false`` request gets the completion the pipeline assembles from its stream
   (``_completion.py``), or its HTTP error as it is.
3. Test it under ``tests/pipeline/emulator/``: add it to ``ENDINGS`` in ``test_emulator_streams.py`` (how the
   stream ends; every envelope is then checked too) and give its own rule a test named after it.

Two entries are resolved by the gateway rather than built here: ``agent`` (a different profile per step of a
conversation, see ``_gateway.py``) and ``replay`` (a recorded file, see ``_replay.py``).

This table is the chat-completions format's. The Messages and Responses formats have their own tables, built the
same way from ``Profile`` lines: ``_REGISTRY`` in ``messages/_profiles.py`` and in ``responses/_profiles.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from . import _error_profiles as http
from . import _stream_profiles as sse
from ._script import Script, ScriptOptions

__all__ = ["PROFILES", "Profile", "build_script"]


@attrs.frozen
class Profile:
    """One named way for the emulator to answer."""

    name: str
    description: str
    """One line, shown by ``PROFILES`` and ``llm-stream emulate``."""
    build: Callable[[ScriptOptions], Script]


def _replay_placeholder(options: ScriptOptions) -> Script:
    raise ValueError("the replay profile needs a file: use replay_script(data, ...)")


_REGISTRY: tuple[Profile, ...] = (
    Profile("clean", 'text "Hello from the emulator." in several deltas, finish stop, [DONE]', sse.clean),
    Profile(
        "clean-tool", 'one tool call get_weather {"city": "Paris"} in fragments, finish tool_calls', sse.clean_tool
    ),
    Profile(
        "seed-bug", 'continuation tool deltas repeat id/name as "" and null (index 0), null (index 1)', sse.seed_bug
    ),
    Profile("late-id", "the first tool-call delta has no id; the id arrives in the second delta", sse.late_id),
    Profile("never-identified", "a tool call whose deltas never carry an id", sse.never_identified(missing="id")),
    Profile(
        "never-identified-name", "a tool call whose deltas never carry a name", sse.never_identified(missing="name")
    ),
    Profile("parallel", "two tool calls, index 0 and 1, with interleaved argument deltas", sse.parallel),
    Profile("ollama-parallel", "two whole tool calls, both with index 0, each with its own id", sse.ollama_parallel),
    Profile("usage-trailer", 'clean text; usage always sent in a trailing "choices": [] chunk', sse.usage_trailer),
    Profile("crlf", "clean, with CRLF line endings", sse.crlf),
    Profile("keepalive", ": OPENROUTER PROCESSING before the first event, : keepalive between events", sse.keepalive),
    Profile("bom", "clean, with a UTF-8 BOM before the first event", sse.bom),
    Profile("slow-drip", "clean, one event every drip_ms (default 50 ms)", sse.slow_drip),
    Profile("drop-mid-stream", "half the events, then the connection is cut (no [DONE])", sse.drop_mid_stream),
    Profile("stall", "a few events, then nothing for stall_s (default 3600 s), then the rest", sse.stall),
    Profile("rate-limit", "HTTP 429 JSON error with Retry-After (retry_after, default 2)", http.rate_limit),
    Profile("server-error", "HTTP 500 JSON error", http.server_error),
    Profile("unavailable", "HTTP 503 JSON error", http.unavailable),
    Profile("html-200", "HTTP 200 text/html gateway error page instead of a stream", http.html_200),
    Profile("error-midstream", 'text deltas, then data: {"error": ...} in-band, then [DONE]', sse.error_midstream),
    Profile("event-error", "Groq style: text, then event: error with status_code 400, no [DONE]", sse.event_error),
    Profile("malformed-json", "a data: {bad json event in the middle of a clean stream", sse.malformed_json),
    Profile("no-done", "a complete response with finish_reason but no [DONE]", sse.no_done),
    Profile("no-done-no-finish", "text deltas, then the body ends: no finish_reason, no [DONE]", sse.no_done_no_finish),
    Profile("empty-200", "HTTP 200 text/event-stream with an empty body", sse.empty_200),
    Profile("auth", "HTTP 401 invalid_api_key", http.auth),
    Profile("quota", "HTTP 429 insufficient_quota (not retryable)", http.quota),
    Profile("context", "HTTP 400 context_length_exceeded (maximum context length is 8192 tokens)", http.context),
    Profile(
        "id-after-sse-id",
        "events with id: lines followed by extra blank lines (httpx-sse deviation)",
        sse.id_after_sse_id,
    ),
    Profile("empty-response", "only a role delta, then finish stop and [DONE]", sse.empty_response),
    Profile(
        "agent",
        "a multi-step tool-calling conversation, by the number of assistant messages in the request: "
        "step 1 the seed's bug (two calls, identity repeated as \"\" and null); step 2 first a never-identified "
        "call, then (on retry) two parallel calls; later steps a final text answer",
        sse.clean,
    ),
    Profile(
        "replay",
        "serve a recorded .sse file byte for byte (x-emulator-file, x-emulator-chunk-bytes)",
        _replay_placeholder,
    ),
)

_BY_NAME: Mapping[str, Profile] = MappingProxyType({profile.name: profile for profile in _REGISTRY})

PROFILES: Mapping[str, str] = MappingProxyType({profile.name: profile.description for profile in _REGISTRY})
"""Profile name -> one-line description, in the order ``GET /v1/models`` lists them."""


def build_script(profile: str, options: ScriptOptions | None = None) -> Script:
    """The script for ``profile`` (``KeyError`` if unknown; ``replay`` needs ``replay_script``)."""
    if profile not in _BY_NAME:
        raise KeyError(f"unknown emulator profile {profile!r}; known: {', '.join(_BY_NAME)}")
    return _BY_NAME[profile].build(options or ScriptOptions())
