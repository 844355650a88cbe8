"""The Responses profiles of the calls a client runs (docs/decisions/0072-client-run-tool-calls.md): custom tools, an
``apply_patch_call``, a ``shell_call`` and a ``local_shell_call``, and two faults of a custom call, written with
``ResponseEvents`` (``_events.py``) in the shapes of openai-python's ``types/responses`` and the recorded streams
(``responses/03`` custom tool, ``08`` local shell); ``_profiles.py`` registers them.

Each call's ``call_id`` is ``call_emu<n>_<suffix>`` and its item id ``<prefix>_emu<n>_<suffix>`` (the response's
suffix), ``n`` its ``output_index``. The follow-up of ``custom-tools``, ``custom-grammar``, ``apply-patch`` and
``shell-call`` is checked (``_tool_outputs.py``): it must send each call's output item back, then it gets ``clean``.
"""

from __future__ import annotations

import attrs

from .._script import Cut, Script, ScriptOptions, Write
from .._sse import Event, Json, stream_script
from ._events import ResponseEvents

__all__ = [
    "APPLY_PATCH_OPERATION",
    "CUSTOM_INPUTS",
    "GRAMMAR_INPUT",
    "GRAMMAR_REGEX",
    "LOCAL_SHELL_ACTION",
    "SHELL_ACTION",
    "apply_patch",
    "custom_blanked_id",
    "custom_cut",
    "custom_grammar",
    "custom_tools",
    "local_shell",
    "shell_call",
]

CUSTOM_INPUTS = {  # the two parallel custom calls of ``custom-tools``: name -> their input, in deltas
    "run_sql": ("SELECT name ", "FROM users ", "WHERE age > 25"),
    "run_python": ("print(", "sum(range(10))", ")\n"),
}
GRAMMAR_REGEX = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$"
"""The grammar (``{"type": "grammar", "syntax": "regex", "definition": GRAMMAR_REGEX}``) of ``custom-grammar``'s tool
``schedule_at``: its input matches it."""
GRAMMAR_INPUT = ("2026-01-15", "T10:30")
APPLY_PATCH_OPERATION: Json = {"type": "update_file", "path": "src/app.py",
                               "diff": "@@ def main():\n-    print('hi')\n+    print('hello')\n"}
SHELL_ACTION: Json = {"commands": ["pytest -q tests/test_app.py"], "timeout_ms": 60000, "max_output_length": 4096}
LOCAL_SHELL_ACTION: Json = {"type": "exec", "command": ["git", "status", "--short"], "env": {"GIT_PAGER": "cat"},
                            "timeout_ms": 10000, "working_directory": "/repo"}


def _ids(r: ResponseEvents, prefix: str, n: int) -> tuple[str, str]:
    """An item's id and its call's ``call_id`` at ``output_index`` ``n``."""
    suffix = r.response_id[-12:]
    return f"{prefix}_emu{n}_{suffix}", f"call_emu{n}_{suffix}"


def _custom(r: ResponseEvents, n: int, tool: str, text: str, status: str = "completed", *,
            blanked: bool = False) -> Json:
    """A ``custom_tool_call`` item; ``blanked``: its ``call_id`` and ``name`` are ``""``."""
    item_id, call_id = _ids(r, "ctc", n)
    return {"id": item_id, "type": "custom_tool_call", "status": status, "call_id": "" if blanked else call_id,
            "name": "" if blanked else tool, "input": text}


def _input_delta(r: ResponseEvents, n: int, piece: str) -> Event:
    payload = {"output_index": n, "item_id": _ids(r, "ctc", n)[0], "delta": piece}
    return r.event("response.custom_tool_call_input.delta", payload)


def _custom_done(r: ResponseEvents, n: int, item: Json) -> list[Event]:
    payload = {"output_index": n, "item_id": _ids(r, "ctc", n)[0], "input": item["input"]}
    return [r.event("response.custom_tool_call_input.done", payload),
            r.event("response.output_item.done", {"output_index": n, "item": item})]


def _added(r: ResponseEvents, n: int, item: Json) -> Event:
    return r.event("response.output_item.added", {"output_index": n, "item": item})


def _done(r: ResponseEvents, n: int, item: Json) -> Event:
    return r.event("response.output_item.done", {"output_index": n, "item": item})


def _one_custom(r: ResponseEvents, tool: str, pieces: tuple[str, ...], *, blanked: bool = False) -> list[Event]:
    done = _custom(r, 0, tool, "".join(pieces), blanked=blanked)
    return [
        *r.opening(),
        _added(r, 0, _custom(r, 0, tool, "", "in_progress")),
        *(_input_delta(r, 0, piece) for piece in pieces),
        *_custom_done(r, 0, done),
        r.completed([done], len(pieces)),
    ]


def custom_tools(options: ScriptOptions) -> Script:
    """Two custom tool calls added at output_index 0 and 1, their input deltas interleaved one by one."""
    r = ResponseEvents(options)
    names = list(CUSTOM_INPUTS)
    done = [_custom(r, n, name, "".join(CUSTOM_INPUTS[name])) for n, name in enumerate(names)]
    events = [*r.opening(), *(_added(r, n, _custom(r, n, name, "", "in_progress")) for n, name in enumerate(names))]
    for pieces in zip(*CUSTOM_INPUTS.values(), strict=True):
        events.extend(_input_delta(r, n, piece) for n, piece in enumerate(pieces))
    for n, item in enumerate(done):
        events.extend(_custom_done(r, n, item))
    events.append(r.completed(done, sum(len(p) for p in CUSTOM_INPUTS.values())))
    return stream_script(events, options)


def custom_grammar(options: ScriptOptions) -> Script:
    """One custom tool call ``schedule_at`` whose input matches its regex grammar (``GRAMMAR_REGEX``)."""
    return stream_script(_one_custom(ResponseEvents(options), "schedule_at", GRAMMAR_INPUT), options)


def custom_blanked_id(options: ScriptOptions) -> Script:
    """A custom tool call whose ``call_id`` and ``name`` are ``""`` on ``output_item.done`` and in
    ``response.completed``: the identity first given is the call's."""
    r = ResponseEvents(options)
    return stream_script(_one_custom(r, "run_sql", CUSTOM_INPUTS["run_sql"], blanked=True), options)


def custom_cut(options: ScriptOptions) -> Script:
    """A custom tool call's input deltas, then the body ends inside the next delta event and the connection is cut:
    an error, never half an input."""
    r = ResponseEvents(options)
    pieces = ("*** Begin Patch\n", "*** Add File: b.py\n", "+print('b')\n")
    events = [*r.opening(), _added(r, 0, _custom(r, 0, "apply_diff", "", "in_progress")),
              *(_input_delta(r, 0, piece) for piece in pieces[:2])]
    script = stream_script(events, options)
    partial = "\n".join(_input_delta(r, 0, pieces[2]).lines).encode()[:90]
    return attrs.evolve(script, steps=(*script.steps, Write(partial), Cut("custom-cut")))


def apply_patch(options: ScriptOptions) -> Script:
    """An ``apply_patch_call`` added with an empty diff, finished with its operation (``APPLY_PATCH_OPERATION``)."""
    r = ResponseEvents(options)
    item_id, call_id = _ids(r, "apc", 0)
    added = {"id": item_id, "type": "apply_patch_call", "call_id": call_id, "status": "in_progress",
             "operation": {**APPLY_PATCH_OPERATION, "diff": ""}}
    done = {**added, "status": "completed", "operation": APPLY_PATCH_OPERATION}
    events = [*r.opening(), _added(r, 0, added), _done(r, 0, done), r.completed([done], 12)]
    return stream_script(events, options)


def shell_call(options: ScriptOptions) -> Script:
    """A ``shell_call`` in the local environment, its command streamed by ``shell_call_command.*`` progress events,
    finished with its action (``SHELL_ACTION``)."""
    r = ResponseEvents(options)
    item_id, call_id = _ids(r, "shc", 0)
    added = {"id": item_id, "type": "shell_call", "call_id": call_id, "status": "in_progress",
             "action": {"commands": []}, "environment": {"type": "local"}}
    done = {**added, "status": "completed", "action": SHELL_ACTION}
    where = {"output_index": 0, "command_index": 0}
    command = SHELL_ACTION["commands"][0]
    events = [
        *r.opening(),
        _added(r, 0, added),
        r.event("response.shell_call_command.added", {**where, "command": ""}),
        r.event("response.shell_call_command.delta", {**where, "delta": command}),
        r.event("response.shell_call_command.done", {**where, "command": command}),
        _done(r, 0, done),
        r.completed([done], 8),
    ]
    return stream_script(events, options)


def local_shell(options: ScriptOptions) -> Script:
    """A reasoning item, then a ``local_shell_call`` added with an empty command and finished with it (as recorded
    ``responses/08``)."""
    r = ResponseEvents(options)
    item_id, call_id = _ids(r, "lsh", 1)
    reasoning = {"id": f"rs_emu_{r.response_id[-12:]}", "type": "reasoning", "summary": []}
    added = {"id": item_id, "type": "local_shell_call", "status": "in_progress",
             "action": {"type": "exec", "command": [], "env": {}}, "call_id": call_id}
    done = {**added, "status": "completed", "action": LOCAL_SHELL_ACTION}
    events = [*r.opening(), _added(r, 0, reasoning), _done(r, 0, reasoning), _added(r, 1, added), _done(r, 1, done),
              r.completed([reasoning, done], 8)]
    return stream_script(events, options)
