"""The emulator's Responses profiles of the calls a client runs (decision 0072; ``responses/_client_calls.py``), read
through ``ChatClient(api="responses")`` over loopback to their calls and finishes: parallel custom calls with
interleaved input deltas, a grammar-constrained input, an identity blanked on ``.done``, a cut inside a custom input,
an ``apply_patch_call``, a ``shell_call`` and a ``local_shell_call``; the follow-ups that must send each call's output
item back (``responses/_tool_outputs.py``); and the plain openai SDK reading the sound ones."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import openai
import pytest
from emulator_helpers import CLEAN
from format_helpers import events, post_format

import pipeline
from operators import RetryPolicy, ToolCallKind
from pipeline import ChatClient
from pipeline.emulator import Emulator
from pipeline.emulator._script import ScriptOptions, Write
from pipeline.emulator.responses._client_calls import (
    APPLY_PATCH_OPERATION,
    GRAMMAR_REGEX,
    LOCAL_SHELL_ACTION,
    SHELL_ACTION,
)
from pipeline.emulator.responses._profiles import RESPONSES_PROFILES

pytestmark = pytest.mark.server  # tests/tiers.py

ONCE = RetryPolicy(max_retries=0)
USER = [{"role": "user", "content": "Do it."}]
SQL, PYTHON = "SELECT name FROM users WHERE age > 25", "print(sum(range(10)))\n"
CALLS: dict[str, list[tuple[int, str, str, str]]] = {  # profile -> (output_index, name, kind, arguments) of its calls
    "custom-tools": [(0, "run_sql", ToolCallKind.CUSTOM, SQL), (1, "run_python", ToolCallKind.CUSTOM, PYTHON)],
    "custom-grammar": [(0, "schedule_at", ToolCallKind.CUSTOM, "2026-01-15T10:30")],
    "custom-blanked-id": [(0, "run_sql", ToolCallKind.CUSTOM, SQL)],
    "apply-patch": [(0, "apply_patch", ToolCallKind.APPLY_PATCH, json.dumps(APPLY_PATCH_OPERATION,
                                                                            separators=(",", ":")))],
    "shell-call": [(0, "shell", ToolCallKind.SHELL, json.dumps(SHELL_ACTION, separators=(",", ":")))],
    "local-shell": [(1, "local_shell", ToolCallKind.LOCAL_SHELL, json.dumps(LOCAL_SHELL_ACTION,
                                                                            separators=(",", ":")))],
}
PROFILES = [*CALLS, "custom-cut"]


async def complete(emu: Emulator, profile: str, **extra: Any) -> pipeline.AssistantMessage:
    async with ChatClient(emu.base_url, model=profile, api="responses", retry_policy=ONCE) as client:
        return await client.complete(USER, **extra)


@pytest.mark.parametrize("profile", list(CALLS))
async def test_each_client_call_profile_reads_to_its_calls_and_finishes_tool_calls(emu: Emulator, profile: str) -> None:
    message = await complete(emu, profile)
    read = [(call.name, call.kind, call.arguments) for call in message.tool_calls]
    assert read == [(name, kind, arguments) for _, name, kind, arguments in CALLS[profile]]
    for call, (index, *_) in zip(message.tool_calls, CALLS[profile], strict=True):
        assert re.fullmatch(rf"call_emu{index}_[0-9a-f]{{12}}", call.id)
    assert message.finish.kind == "tool-calls"
    assert message.text == ""


def test_custom_tools_interleave_the_two_inputs_delta_by_delta(http: httpx.Client) -> None:
    sent = events(post_format(http, "/responses", "custom-tools").content)
    deltas = [e.data for e in sent if e.name == "response.custom_tool_call_input.delta"]
    assert [d["output_index"] for d in deltas] == [0, 1] * 3
    assert "".join(d["delta"] for d in deltas if d["output_index"] == 1) == PYTHON
    added = [e.data["item"] for e in sent if e.name == "response.output_item.added"]
    assert [(i["type"], i["name"], i["input"]) for i in added] == [("custom_tool_call", "run_sql", ""),
                                                                   ("custom_tool_call", "run_python", "")]
    first_done = next(n for n, e in enumerate(sent) if e.name == "response.custom_tool_call_input.done")
    assert first_done > max(n for n, e in enumerate(sent) if e.name == "response.custom_tool_call_input.delta")


async def test_custom_grammar_input_matches_its_regex_grammar(emu: Emulator) -> None:
    (call,) = (await complete(emu, "custom-grammar")).tool_calls
    assert re.fullmatch(GRAMMAR_REGEX, call.arguments)


async def test_a_custom_call_identity_blanked_on_done_keeps_the_first(emu: Emulator, http: httpx.Client) -> None:
    sent = events(post_format(http, "/responses", "custom-blanked-id").content)
    added = next(e.data["item"] for e in sent if e.name == "response.output_item.added")
    done = next(e.data["item"] for e in sent if e.name == "response.output_item.done")
    final = next(e.data["response"]["output"][0] for e in sent if e.name == "response.completed")
    assert (done["call_id"], done["name"]) == (final["call_id"], final["name"]) == ("", "")
    assert added["call_id"].startswith("call_emu0_")
    (call,) = (await complete(emu, "custom-blanked-id")).tool_calls
    assert (call.name, call.id[:10]) == ("run_sql", "call_emu0_")


async def test_a_cut_inside_a_custom_input_is_an_error_never_half_the_input(emu: Emulator) -> None:
    message = await complete(emu, "custom-cut")
    assert message.tool_calls == ()
    assert message.finish.failure is not None
    assert message.finish.failure.code == "TRANSPORT"  # the connection cut, as drop-mid-stream's
    script = RESPONSES_PROFILES["custom-cut"].build(ScriptOptions(completion_id="resp-emulator-cut"))
    body = b"".join(step.data for step in script.steps if isinstance(step, Write))
    assert not body.endswith(b"\n\n")  # the body ends inside an event
    read = pipeline.assemble(pipeline.collect(body, format="responses"))  # the bytes alone, as llm-stream replay
    assert (read.tool_calls, read.finish.failure.code if read.finish.failure else None) == ((), "STREAM_CLOSED")


# -- the follow-ups: each call's output item, sent back


def _echo(profile: str, message: pipeline.AssistantMessage) -> list[dict[str, Any]]:
    """The first answer's calls as the request's input items (what a round trip sends back)."""
    kinds = {"custom-tools": "custom_tool_call", "custom-grammar": "custom_tool_call",
             "apply-patch": "apply_patch_call", "shell-call": "shell_call"}
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "Do it."}]
    for call in message.tool_calls:
        item: dict[str, Any] = {"type": kinds[profile], "call_id": call.id}
        if profile.startswith("custom"):
            item.update(name=call.name, input=call.arguments)
        else:
            item["operation" if profile == "apply-patch" else "action"] = json.loads(call.arguments)
        items.append(item)
    return items


def _outputs(profile: str, message: pipeline.AssistantMessage) -> list[dict[str, Any]]:
    if profile.startswith("custom"):
        return [{"type": "custom_tool_call_output", "call_id": c.id, "output": "ok"} for c in message.tool_calls]
    if profile == "apply-patch":
        return [{"type": "apply_patch_call_output", "call_id": c.id, "status": "completed", "output": "Done."}
                for c in message.tool_calls]
    return [{"type": "shell_call_output", "call_id": c.id, "max_output_length": 4096,
             "output": [{"stdout": "1 passed\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
            for c in message.tool_calls]


@pytest.mark.parametrize("profile", ["custom-tools", "custom-grammar", "apply-patch", "shell-call"])
async def test_a_follow_up_with_each_calls_output_gets_the_final_answer(emu: Emulator, profile: str) -> None:
    first = await complete(emu, profile)
    answer = await complete(emu, profile, input=[*_echo(profile, first), *_outputs(profile, first)])
    assert (answer.text, answer.tool_calls, answer.finish.kind) == (CLEAN, (), "stop")


@pytest.mark.parametrize(("profile", "outputs", "message"), [
    ("apply-patch", lambda calls: [], "No tool output found for apply_patch_call call {0}."),
    ("apply-patch", lambda calls: [{"type": "apply_patch_call_output", "call_id": calls[0], "status": "done"}],
     "input.2.status: an apply_patch_call_output's status is 'completed' or 'failed'"),
    ("apply-patch", lambda calls: [{"type": "apply_patch_call_output", "call_id": "call_other", "status": "failed"}],
     "No tool output found for apply_patch_call call {0}."),
    ("custom-tools", lambda calls: [{"type": "custom_tool_call_output", "call_id": calls[0], "output": "ok"}],
     "No tool output found for custom_tool_call call {1}."),
    ("shell-call", lambda calls: [{"type": "shell_call_output", "call_id": calls[0], "output": "1 passed"}],
     "input.2.output: a shell_call_output's output is a list"),
])
async def test_a_follow_up_without_a_calls_output_is_the_apis_400(
    emu: Emulator, profile: str, outputs: Any, message: str
) -> None:
    first = await complete(emu, profile)
    ids = [call.id for call in first.tool_calls]
    refused = await complete(emu, profile, input=[*_echo(profile, first), *outputs(ids)])
    failure = refused.finish.failure
    assert failure is not None
    assert (failure.code, failure.status, failure.message) == ("INVALID_REQUEST", 400, message.format(*ids))


def test_an_output_alone_relying_on_previous_response_id_is_answered(http: httpx.Client) -> None:
    body = {"model": "emulator/responses/apply-patch", "stream": True, "previous_response_id": "resp_emu_x",
            "input": [{"type": "apply_patch_call_output", "call_id": "call_emu0_x", "status": "completed"}]}
    sent = events(http.post("/responses", json=body).content)
    assert "".join(e.data["delta"] for e in sent if e.name == "response.output_text.delta") == CLEAN


# -- listed, and the plain SDK


def test_every_client_call_profile_is_listed_and_selected_by_its_model_id(http: httpx.Client) -> None:
    listed = {m["id"] for m in http.get("/models").json()["data"]}
    assert {f"emulator/responses/{p}" for p in PROFILES} <= listed
    for profile in PROFILES:
        body = {"model": f"emulator/responses/{profile}", "stream": True, "input": "hi"}
        with http.stream("POST", "/responses", json=body) as response:
            assert response.status_code == 200, profile
            first = next(response.iter_bytes())
        assert first.startswith(b"event: response.created\n"), profile


@pytest.mark.parametrize("profile", [p for p in CALLS if p != "custom-blanked-id"])
def test_the_openai_sdk_reads_each_sound_client_call_profile(emu: Emulator, profile: str) -> None:
    sdk = openai.OpenAI(base_url=emu.base_url, api_key="test", max_retries=0)
    with sdk.responses.stream(model=f"emulator/responses/{profile}", input="hi") as stream:
        response = stream.get_final_response()
    items = [item for item in response.output if item.type != "reasoning"]
    assert [getattr(item, "call_id", None) for item in items] == [
        f"call_emu{index}_{response.id[-12:]}" for index, *_ in CALLS[profile]]
