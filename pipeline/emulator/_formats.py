"""The other API formats the emulator speaks, beside chat completions: which profile a request gets, without HTTP.
Each is keyed by its name in ``pipeline.formats.WIRE_FORMATS``, whose record gives the path and the title; the
emulator's own record of each is an ``ApiFormat`` (``_api_format.py``).

    POST /v1/messages    (also /messages)     Anthropic Messages streaming          ``MESSAGES_PROFILES``
    POST /v1/responses   (also /responses)    OpenAI Responses streaming            ``RESPONSES_PROFILES``
    (Gemini: ``gemini.GEMINI_API_FORMAT``, ``POST /v1beta/models/{model}:streamGenerateContent``)

The profile is chosen as for chat (``_routing.py``): the ``x-emulator-profile`` header (or ``?profile=``), else the
model (the body's ``model``, else the path's ``{model}``) ``"emulator/<format>/<profile>"`` (as ``GET /v1/models``
lists it, ``listed_models``; Gemini's ``"emulator-gemini-<profile>"``, a path segment holding no ``/``), that id
without its ``emulator/`` (``"responses/<profile>"``, as a client that strips a provider prefix sends it),
``"emulator/<profile>"`` or a bare ``"<profile>"`` of that format. Any other model name gets
``EmulatorConfig.default_profile`` when it is set and the format has it, else it is a 404 listing the format's profiles;
a request without a model gets ``clean``. A profile the format does not have is a 404 naming the format. The knobs
``x-emulator-fail-first`` / ``x-emulator-then`` / ``x-emulator-key``, ``x-emulator-drip-ms`` and
``x-emulator-retry-after`` work as for chat; the fail-first counter's default key is ``"<format>/<profile>"`` (so chat
and the other formats never share a counter). ``agent`` is a two-step tool loop: the ``seed-bug`` tool call (the
record's ``agent_first``; Gemini's ``clean-tool``) while the request has no assistant turn (Messages: no ``assistant``
message; Responses: no assistant message, nor any call item or its output (``function_call``, ``function_call_output``,
``CLIENT_CALL_TURNS``) in ``input``; Gemini: no ``"role": "model"`` turn in ``contents``), then the ``clean`` text.
``thinking-tool`` (Messages) and ``reasoning-tool`` (Responses) take the same two steps: their own first answer, then,
once the format's check (its record's ``sent_back``, from its package's ``_sent_back.py``) has found that the request
sends the thinking / reasoning back as it was sent (a 400 if not), the ``clean`` text; so do Responses'
``custom-tools``, ``custom-grammar``, ``apply-patch`` and ``shell-call``, whose follow-up must send each call's output
item (``responses/_tool_outputs.py``). These formats are stream only: a request that does not ask for a stream as the
format's record says (``WireFormat.streams``: ``"stream": true``; Gemini's ``alt=sse``) is a 400 saying what the format
needs (``ApiFormat.stream_request``). Errors are answered in each API's own error shape (the record's ``error_shape``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from ._api_format import ApiFormat, SentBack
from ._errors import RequestError, error_body
from ._profiles import PROFILES
from ._routing import Knobs, script_options
from ._script import Script
from ._state import EmulatorConfig, EmulatorState
from .gemini import GEMINI_API_FORMAT
from .messages import MESSAGES_PROFILES, check_thinking_sent_back, messages_error_shape
from .responses import CLIENT_CALL_CHECKS, CLIENT_CALL_TURNS, RESPONSES_PROFILES, check_reasoning_sent_back

__all__ = [
    "FORMATS",
    "ApiFormat",
    "SentBack",
    "choose_format_profile",
    "format_error",
    "format_script",
    "listed_models",
    "profile_summary",
]

_TURNS = frozenset({"function_call", "function_call_output", *CLIENT_CALL_TURNS})


def _openai_shape(error: RequestError) -> dict[str, Any]:
    return error_body(error.message, "invalid_request_error", error.code, error.param)


FORMATS: Mapping[str, ApiFormat] = MappingProxyType(
    {
        "messages": ApiFormat(
            "messages", MESSAGES_PROFILES, "msg", "messages", "system", messages_error_shape,
            {"thinking-tool": check_thinking_sent_back},
        ),
        "responses": ApiFormat(
            "responses", RESPONSES_PROFILES, "resp", "input", "instructions", _openai_shape,
            {"reasoning-tool": check_reasoning_sent_back, **CLIENT_CALL_CHECKS},
            turn_types=_TURNS,
        ),
        "gemini": GEMINI_API_FORMAT,
    }
)
"""The formats the emulator serves besides chat, keyed by their names in ``pipeline.formats.WIRE_FORMATS``."""


def listed_models() -> list[str]:
    """The model ids ``GET /v1/models`` lists: ``emulator/<profile>`` per chat profile, then each format's
    (``emulator/messages/<profile>``, ``emulator/responses/<profile>``, ...); each selects its profile on its
    endpoint."""
    ids = [f"emulator/{name}" for name in PROFILES]
    for api in FORMATS.values():
        ids.extend(api.model_prefix + name for name in api.profiles)
    return ids


def profile_summary() -> str:
    """How many profiles each format has: ``"32 chat, 10 Messages, 10 Responses profiles"``."""
    counts = [f"{len(PROFILES)} chat", *(f"{len(api.profiles)} {api.name.title()}" for api in FORMATS.values())]
    return ", ".join(counts) + " profiles"


def _model_hint(api: ApiFormat) -> str:
    return "emulator/" if api.model_prefix.startswith("emulator/") else api.model_prefix


def _check(api: ApiFormat, name: str, what: str) -> None:
    if name not in api.profiles:
        raise RequestError(
            404,
            f"Unknown emulator {what} {name!r} for {api.title} (POST {api.paths[0]}). Expected one of: "
            f"{', '.join(api.profiles)}. Choose it with the x-emulator-profile header or the model name "
            f"'{_model_hint(api)}<profile>'.",
            "model_not_found",
            "model",
        )


def choose_format_profile(
    api: ApiFormat,
    knobs: Knobs,
    body: Mapping[str, Any],
    config: EmulatorConfig,
    state: EmulatorState,
    where: tuple[str, str] = ("", ""),
) -> str:
    """The profile of ``api`` that answers this request (``RequestError`` 404 if it has none by that name; 400 if the
    request, posted to ``where`` (its URL path and query), does not ask for a stream by the format's record)."""
    name = knobs.text("x-emulator-profile", "profile")
    model = body.get("model")
    if name is None and isinstance(model, str):
        short = api.model_prefix.removeprefix("emulator/")  # the listed id without "emulator/": "responses/"
        if model.startswith(api.model_prefix):
            name = model.removeprefix(api.model_prefix)
        elif short != api.model_prefix and model.startswith(short) and model.removeprefix(short) in api.profiles:
            name = model.removeprefix(short)
        elif model.startswith("emulator/"):
            name = model.removeprefix("emulator/")
        elif model in api.profiles or config.default_profile not in api.profiles:
            name = model  # a model that names no profile, and no default for it: the 404 below
        else:
            name = config.default_profile
    name = name or "clean"
    _check(api, name, "profile" if name != model else "model")
    if not api.asks_stream(*where, body):
        raise RequestError(
            400, f"The emulator serves {api.title} as a stream only: send {api.stream_request}.", None, "stream"
        )
    if name == "agent":
        name = api.agent_first if _agent_step(api, body) == 0 else "clean"
    elif name in api.sent_back and _agent_step(api, body) > 0:
        api.sent_back[name](body)  # the follow-up of a tool loop: what it must send back, checked (400 if not)
        name = "clean"
    fail_first = knobs.integer("x-emulator-fail-first", "fail_first")
    if not fail_first:
        return name
    then = knobs.text("x-emulator-then", "then") or "clean"
    _check(api, then, "x-emulator-then")
    key = knobs.text("x-emulator-key", "key") or f"{api.name}/{name}"
    return name if state._next_attempt(key) < fail_first else then


def _agent_step(api: ApiFormat, body: Mapping[str, Any]) -> int:
    """The ``agent`` profile's step: the assistant turns (and, for Responses, tool items) the request carries."""
    items = body.get(api.input_field)
    return sum(1 for item in items if api.is_turn(item)) if isinstance(items, list) else 0


def format_script(api: ApiFormat, knobs: Knobs, body: Mapping[str, Any], profile: str) -> Script:
    """The script that answers this request with ``profile`` of ``api``."""
    options = script_options(knobs, body)
    field = body.get(api.input_field)
    system = body.get(api.system_field)
    size = len(json.dumps([field, system])) // 4 if field or system else 4
    options = attrs.evolve(
        options,
        prompt_tokens=max(1, size),
        completion_id=api.id_prefix + options.completion_id.removeprefix("chatcmpl"),
    )
    return api.profiles[profile].build(options)


def format_error(api: ApiFormat, error: RequestError) -> dict[str, Any]:
    """A refused request's body in the format's own error shape."""
    return api.error_shape(error)
