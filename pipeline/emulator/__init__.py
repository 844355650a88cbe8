"""The fault-injecting gateway emulator: a real OpenAI-compatible HTTP server for tests, the CLI and benchmarks.

    with Emulator() as emu:                           # a loopback port, served from a background thread
        client = openai.OpenAI(base_url=emu.base_url, api_key="test")
        client.chat.completions.create(model="emulator/seed-bug", ...)
        emu.state.requests, emu.state.disconnects      # what the server saw

``PROFILES`` names every way it can answer (clean streams, gateway deviations, faults, HTTP errors); a request picks
one with the ``x-emulator-profile`` header or the model ``"emulator/<profile>"``. ``build_script`` and
``replay_script`` give a profile's response as data (``Script``). Serving it (``Emulator``, ``create_app``,
``run_emulator``) needs the ``emulator`` extra, starlette and uvicorn: ``pip install 'llm-stream-pipeline[emulator]'``.
Everything else here imports and works without it. To add a profile, see ``pipeline/emulator/_profiles.py``.

It also speaks two more streaming APIs, each with its own profiles in its own package: ``POST /v1/messages``
(Anthropic Messages, ``messages/``) and ``POST /v1/responses`` (OpenAI Responses, ``responses/``), routed by
``_formats.py``; see docs/emulator-formats.md. ``GET /v1/models`` lists every format's profiles
(``emulator/<profile>``, ``emulator/messages/<profile>``, ``emulator/responses/<profile>``). Gemini's package
(``gemini/``, ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``, models ``emulator-gemini-<profile>``) is
served once its records are registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from operators.extend import publish as _publish

from .._lazy import load_serving_name as _load_serving_name
from ._profiles import PROFILES, build_script
from ._replay import replay_script
from ._script import Script, ScriptOptions
from ._state import EmulatorConfig, EmulatorState, RecordedRequest

if TYPE_CHECKING:
    from ._gateway import create_app
    from ._server import Emulator, run_emulator

__all__ = [
    "PROFILES",
    "Emulator",
    "EmulatorConfig",
    "EmulatorState",
    "RecordedRequest",
    "Script",
    "ScriptOptions",
    "build_script",
    "create_app",
    "replay_script",
    "run_emulator",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")

_INSTALL_HINT = "pip install 'llm-stream-pipeline[emulator]'"

_SERVING = {"Emulator": "._server", "run_emulator": "._server", "create_app": "._gateway"}
_EXTRA = frozenset({"starlette", "uvicorn"})


def __getattr__(name: str) -> object:
    """``Emulator``, ``create_app`` and ``run_emulator`` import starlette and uvicorn on first use, not before."""
    return _load_serving_name(globals(), name, _SERVING, _EXTRA, "serves HTTP with starlette and uvicorn",
                              f"Install the emulator extra: {_INSTALL_HINT}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
