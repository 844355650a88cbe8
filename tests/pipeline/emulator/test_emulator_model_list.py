"""``GET /v1/models`` lists a model per profile of every format, each id selects its profile when sent as the model
to its own endpoint, the openai SDK reads the list, and the start line of ``llm-stream emulate`` counts the profiles
per format."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import httpx
import openai
import pytest
from emulator_helpers import request_body
from format_helpers import format_body

from pipeline.emulator import PROFILES, Emulator
from pipeline.emulator._formats import FORMATS, listed_models, profile_summary
from pipeline.emulator._server import start_line
from pipeline.emulator.messages import MESSAGES_PROFILES
from pipeline.emulator.responses import RESPONSES_PROFILES

ROOT = Path(__file__).resolve().parents[3]
ASK_GEMINI = {"contents": [{"role": "user", "parts": [{"text": "Weather in Paris?"}]}]}


def endpoint_of(model: str) -> tuple[str, str]:
    """(path, profile) a listed model id stands for (the path as posted under ``/v1``, the model filled in)."""
    for api in FORMATS.values():
        if model.startswith(api.model_prefix):
            return api.paths[1].replace("{model}", model), model.removeprefix(api.model_prefix)
    return "/chat/completions", model.removeprefix("emulator/")


def send(http: httpx.Client, path: str, model: str) -> int:
    """POST ``model`` to ``path`` with no profile header; the status (a stream cut mid-body is read up to the cut)."""
    body = request_body(model=model) if path == "/chat/completions" else format_body(model=model)
    if path == "/responses":
        body = format_body(model=model, responses=True)
    if path.endswith(":streamGenerateContent"):  # Gemini: the model is in the path, a stream is asked by alt=sse
        path, body = path + "?alt=sse", ASK_GEMINI
    with http.stream("POST", path, json=body, headers={"x-emulator-stall-s": "0"}) as response:
        with contextlib.suppress(httpx.RemoteProtocolError):  # drop-mid-stream: the cut is the profile
            response.read()
        return response.status_code


def test_models_lists_every_profile_of_every_format(http: httpx.Client) -> None:
    response = http.get("/models")
    assert response.status_code == 200
    assert response.json()["object"] == "list"
    ids = [m["id"] for m in response.json()["data"]]
    assert ids == listed_models()
    assert ids[: len(PROFILES)] == [f"emulator/{p}" for p in PROFILES]
    assert [i for i in ids if i.startswith("emulator/messages/")] == [
        f"emulator/messages/{p}" for p in MESSAGES_PROFILES
    ]
    assert [i for i in ids if i.startswith("emulator/responses/")] == [
        f"emulator/responses/{p}" for p in RESPONSES_PROFILES
    ]
    assert len(set(ids)) == len(ids) == len(PROFILES) + sum(len(api.profiles) for api in FORMATS.values())
    for model in response.json()["data"]:
        assert set(model) == {"id", "object", "created", "owned_by"}
        assert model["object"] == "model"


def test_the_openai_sdk_lists_every_model(emu: Emulator) -> None:
    sdk = openai.OpenAI(base_url=emu.base_url, api_key="test", max_retries=0)
    models = list(sdk.models.list())
    assert [m.id for m in models] == listed_models()
    assert {m.owned_by for m in models} == {"llm-stream-emulator"}


@pytest.mark.parametrize("model", listed_models())
def test_every_listed_model_selects_its_profile_on_its_own_endpoint(
    emu: Emulator, http: httpx.Client, model: str
) -> None:
    path, profile = endpoint_of(model)
    status = send(http, path, model)
    assert status != 404
    recorded = emu.state.requests[-1]
    assert recorded.path == "/v1" + path
    # ``agent`` is resolved to its first step (the format's ``agent_first``); every other profile is recorded under its
    # own name
    first = next((api.agent_first for api in FORMATS.values() if model.startswith(api.model_prefix)), "seed-bug")
    assert recorded.profile == (first if profile == "agent" else profile)


@pytest.mark.parametrize("model", listed_models())
def test_every_listed_model_without_its_emulator_prefix_selects_the_same_profile(
    emu: Emulator, http: httpx.Client, model: str
) -> None:
    """``responses/rotated-ids`` as ``emulator/responses/rotated-ids`` (what a client that strips a provider prefix
    sends); chat's ``emulator/seed-bug`` becomes the bare ``seed-bug``; Gemini's ids have no such prefix."""
    path, profile = endpoint_of(model)
    short = model.removeprefix("emulator/")
    assert send(http, path.replace(model, short), short) != 404
    first = next((api.agent_first for api in FORMATS.values() if model.startswith(api.model_prefix)), "seed-bug")
    assert emu.state.requests[-1].profile == (first if profile == "agent" else profile)


@pytest.mark.parametrize(
    ("prefix", "path"), [("emulator/responses/", "/messages"), ("emulator/messages/", "/responses")]
)
def test_a_model_id_of_another_format_is_a_404(http: httpx.Client, prefix: str, path: str) -> None:
    assert send(http, path, prefix + "clean") == 404
    assert send(http, "/chat/completions", prefix + "clean") == 404
    assert send(http, path, prefix.removeprefix("emulator/") + "clean") == 404


def test_the_profile_summary_counts_each_format() -> None:
    counts = [f"{len(PROFILES)} chat", *(f"{len(api.profiles)} {name.title()}" for name, api in FORMATS.items())]
    assert profile_summary() == ", ".join(counts) + " profiles"
    assert profile_summary().startswith("{} chat, {} Messages, {} Responses".format(*(c.split()[0] for c in counts)))
    assert start_line("http://127.0.0.1:8808") == (
        f"llm-stream emulator: base_url http://127.0.0.1:8808/v1 ({profile_summary()}). Ctrl-C stops it."
    )


@pytest.mark.server
def test_emulate_starts_with_the_profiles_per_format() -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "pipeline.cli", "emulate", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert line.startswith("llm-stream emulator: base_url http://127.0.0.1:")
    assert line.endswith(f"/v1 ({profile_summary()}). Ctrl-C stops it.")


@pytest.mark.parametrize("page", ["docs/emulator-formats.md", "docs/cli.md"])
def test_the_docs_give_the_current_profile_counts(page: str) -> None:
    text = " ".join((ROOT / page).read_text(encoding="utf-8").split())
    assert f"({profile_summary()}). Ctrl-C stops it." in text
