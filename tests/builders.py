"""Small builders for test inputs: wire chunks, SSE bytes, and the pipeline's output as JSON.

    sse(F, delta(content="Hel"), finish("stop"), usage(5, 2))   -> bytes ending with data: [DONE]
    tool(0, id="call_1", name="Glob", arguments="")            -> one tool_calls entry
    run(sse(...))                                               -> [chunk.to_dict(), ...]
"""

from __future__ import annotations

import json
from typing import Any

import reactivex

import pipeline
from operators import Batch, Chunk, Rule

Json = dict[str, Any]

_ABSENT: Any = object()

F: Json = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "reasoning_content": ""}}]}
"""DeepSeek's live first chunk: role, content null and an empty reasoning_content."""


def delta(*, finish_reason: Any = _ABSENT, index: int = 0, **fields: Any) -> Json:
    """A chunk with one choice whose delta holds ``fields`` (``tool_calls=[tool(...)]``, ``content=...``)."""
    choice: Json = {"index": index, "delta": fields}
    if finish_reason is not _ABSENT:
        choice["finish_reason"] = finish_reason
    return {"choices": [choice]}


def tools(*calls: Json) -> Json:
    """A chunk whose delta carries these tool calls."""
    return delta(tool_calls=list(calls))


def tool(index: Any = _ABSENT, *, id: Any = _ABSENT, name: Any = _ABSENT, arguments: Any = _ABSENT,
         function: Any = _ABSENT) -> Json:
    """One ``tool_calls`` entry; absent arguments stay absent (not null)."""
    call: Json = {}
    if index is not _ABSENT:
        call["index"] = index
    if id is not _ABSENT:
        call["id"] = id
    call["type"] = "function"
    if function is not _ABSENT:
        call["function"] = function
    elif name is not _ABSENT or arguments is not _ABSENT:
        fn: Json = {}
        if name is not _ABSENT:
            fn["name"] = name
        if arguments is not _ABSENT:
            fn["arguments"] = arguments
        call["function"] = fn
    return call


def finish(reason: str | None, **extra: Any) -> Json:
    """A chunk with an empty delta and this finish_reason (plus top-level ``extra`` such as usage)."""
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}], **extra}


def usage(prompt: Any, completion: Any, **extra: Any) -> Json:
    """A usage-only trailing chunk (``choices: []``)."""
    return {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, **extra}}


def sse(*payloads: Json | str | bytes, done: bool = True, crlf: bool = False) -> bytes:
    """SSE bytes: each payload as one ``data:`` event (dicts are JSON-encoded), then ``data: [DONE]``."""
    events = []
    for payload in payloads:
        if isinstance(payload, dict | list):
            text = json.dumps(payload)
        elif isinstance(payload, bytes):
            text = payload.decode()
        else:
            text = payload
        events.append(f"data: {text}\n\n")
    if done:
        events.append("data: [DONE]\n\n")
    body = "".join(events)
    if crlf:
        body = body.replace("\n", "\r\n")
    return body.encode()


def source_of(*batches: Batch[Any]) -> reactivex.Observable[Batch[Any]]:
    """A cold Observable of these batches, typed as the rule operators take it."""
    return reactivex.from_iterable(batches)


def run_operator(operator: Rule, *batches: Batch[Any]) -> list[Any]:
    """Every item one operator emits for these batches, flattened; the operator must not signal an error."""
    out: list[Batch[Any]] = []
    errors: list[Exception] = []
    source_of(*batches).pipe(operator).subscribe(out.append, errors.append)
    assert errors == []
    return [item for batch in out for item in batch]


def chunks(data: bytes, *, anomalies: bool = False) -> list[Chunk]:
    return pipeline.collect(data, anomalies=anomalies)


def run(data: bytes, *, anomalies: bool = False) -> list[Json]:
    """The pipeline's output as JSON dicts."""
    return [c.to_dict() for c in pipeline.collect(data, anomalies=anomalies)]


def of_type(out: list[Json], kind: str) -> list[Json]:
    return [c for c in out if c["type"] == kind]


def error_finish(code: str, message: str) -> Json:
    return {"type": "finish", "reason": {"kind": "error", "failure": {"code": code, "message": message}}}
