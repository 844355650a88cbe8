"""Which profile a request gets, and with which knobs: the gateway's decisions, without HTTP.

The profile comes from, in order:

    1. the ``x-emulator-profile`` header (or ``?profile=``);
    2. the model name: ``"emulator/<profile>"``, or a bare ``"<profile>"``;
    3. for any other model name, ``EmulatorConfig.default_profile`` when it is set, else a 404 listing the profiles
       (a typo such as ``never-identifed`` must not be answered ``clean``); a request without a model gets ``clean``.

An unknown profile named in 1 or 2 is a 404. Per-request knobs (header, or the query parameter in brackets):

    x-emulator-fail-first: N  [fail_first]   the first N requests with the same key get the profile ...
    x-emulator-then: P        [then]         ... later ones get P (default "clean"): retries testable end to end
    x-emulator-key: K         [key]          the counter key (default: the profile name)
    x-emulator-drip-ms        [drip_ms]      pause between events (slow-drip default 50; others 0)
    x-emulator-stall-s        [stall_s]      how long ``stall`` stalls (default 3600)
    x-emulator-retry-after    [retry_after]  Retry-After of ``rate-limit`` (default 2)
    x-emulator-file           [file]         ``replay``: absolute path under ``EmulatorConfig.replay_dirs``
    x-emulator-chunk-bytes    [chunk_bytes]  ``replay``: split the body into pieces of this many bytes
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ._errors import RequestError
from ._profiles import PROFILES, build_script
from ._replay import replay_file, replay_script
from ._script import Script, ScriptOptions
from ._state import EmulatorConfig, EmulatorState

__all__ = ["Knobs", "choose_profile", "request_script", "script_options"]


class Knobs:
    """The ``x-emulator-*`` headers of a request, each with its query-parameter alternative."""

    def __init__(self, headers: Mapping[str, str], query: Mapping[str, str]) -> None:
        self._headers, self._query = headers, query

    def text(self, header: str, query: str) -> str | None:
        value = self._headers.get(header)
        if value is None:
            value = self._query.get(query)
        return None if value is None else value.strip()

    def number(self, header: str, query: str) -> float | None:
        value = self.text(header, query)
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not number >= 0:  # also rejects NaN
            raise RequestError(400, f"{header} must be a non-negative number, got {value!r}")
        return number

    def integer(self, header: str, query: str) -> int | None:
        value = self.text(header, query)
        if value is None:
            return None
        if not value.isdigit():
            raise RequestError(400, f"{header} must be a non-negative integer, got {value!r}")
        return int(value)


def choose_profile(knobs: Knobs, body: Mapping[str, Any], config: EmulatorConfig, state: EmulatorState) -> str:
    """The profile that answers this request (``agent`` resolved to its step's profile)."""
    name = knobs.text("x-emulator-profile", "profile")
    model = body.get("model")
    if name is None and isinstance(model, str):
        if model.startswith("emulator/"):
            name = model.removeprefix("emulator/")
        else:
            name = model if model in PROFILES or config.default_profile is None else config.default_profile
    name = name or "clean"
    _check_profile(name, "profile" if name != model else "model")
    if name == "agent":
        return _agent_step(knobs, body, state)
    fail_first = knobs.integer("x-emulator-fail-first", "fail_first")
    if not fail_first:
        return name
    then = knobs.text("x-emulator-then", "then") or "clean"
    _check_profile(then, "x-emulator-then")
    key = knobs.text("x-emulator-key", "key") or name
    return name if state._next_attempt(key) < fail_first else then


def _agent_step(knobs: Knobs, body: Mapping[str, Any], state: EmulatorState) -> str:
    """The ``agent`` profile: which step of the scripted conversation this request is."""
    messages = body.get("messages")
    step = 0
    if isinstance(messages, list):
        step = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    if step == 0:
        return "seed-bug"
    if step == 1:
        key = knobs.text("x-emulator-key", "key") or "agent"
        return "never-identified" if state._next_attempt(f"{key}/agent-step-2") < 1 else "parallel"
    return "clean"


def _check_profile(name: str, what: str) -> None:
    if name not in PROFILES:
        raise RequestError(
            404,
            f"Unknown emulator {what} {name!r}. Expected one of: {', '.join(PROFILES)}. Choose it with the "
            "x-emulator-profile header or the model name 'emulator/<profile>'.",
            "model_not_found",
            "model",
        )


def _estimate_prompt_tokens(body: Mapping[str, Any]) -> int:
    messages = body.get("messages")
    return max(1, len(json.dumps(messages)) // 4) if messages else 1


def script_options(knobs: Knobs, body: Mapping[str, Any], *, include_usage: bool | None = None) -> ScriptOptions:
    """The options a profile is built with; ``include_usage`` defaults to the request's ``stream_options``."""
    stream_options = body.get("stream_options")
    if include_usage is None:
        include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    model = body.get("model")
    stall_s = knobs.number("x-emulator-stall-s", "stall_s")
    retry_after = knobs.number("x-emulator-retry-after", "retry_after")
    return ScriptOptions(
        model=model if isinstance(model, str) and model else "emulator",
        include_usage=include_usage,
        prompt_tokens=_estimate_prompt_tokens(body),
        completion_id=f"chatcmpl-emu{uuid.uuid4().hex[:24]}",
        created=int(time.time()),
        drip_ms=knobs.number("x-emulator-drip-ms", "drip_ms"),
        stall_s=3600.0 if stall_s is None else stall_s,
        retry_after="2" if retry_after is None else f"{retry_after:g}",
    )


def request_script(knobs: Knobs, body: Mapping[str, Any], profile: str, config: EmulatorConfig) -> Script:
    """The script that answers this request with ``profile``."""
    options = script_options(knobs, body)
    if profile != "replay":
        return build_script(profile, options)
    return replay_script(
        replay_file(knobs.text("x-emulator-file", "file"), config.replay_dirs).read_bytes(),
        chunk_bytes=knobs.integer("x-emulator-chunk-bytes", "chunk_bytes"),
        drip_ms=options.drip_ms,
    )
