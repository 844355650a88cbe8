"""Chunks back into clean, standard OpenAI chat-completions SSE (``chat.completion.chunk`` events).

What a client reading the result sees (docs/decisions/0022-sanitizing-transport.md):

- the first event carries ``role: "assistant"``; text is ``content``, reasoning is ``reasoning_content``;
- a tool call appears once it is identified: its first delta carries ``index``, ``id``, ``type: "function"``,
  ``function.name`` and every argument fragment held so far; its continuations carry only ``index`` and
  ``function.arguments``. Indices are dense, 0, 1, ... in the order the calls are identified (for every stream
  seen so far that is the order they first appear in), so Ollama's two calls at wire index 0 become 0 and 1;
- the finish is its own event (``stop``, ``tool_calls``, ``length``, ``content_filter``), then the usage in a
  trailing ``"choices": []`` event in OpenAI's shape, then ``data: [DONE]``;
- an error finish is the usage seen, then ``data: {"error": {"message", "type", "code"}}`` with our code, and no
  ``[DONE]``: the openai SDK raises it as ``APIError``.
"""

from __future__ import annotations

import json
from typing import Any

import attrs

from operators import (
    BlockEnd,
    BlockStart,
    Chunk,
    Code,
    Failure,
    Finish,
    ReasoningDelta,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    Usage,
    UsageChunk,
)
from operators.extend import OWN_ERROR_TYPE

__all__ = ["DONE", "Identity", "OpenAIEncoder", "error_event", "usage_json"]

DONE = b"data: [DONE]\n\n"

_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


@attrs.frozen
class Identity:
    """What every event of the response repeats: the completion's id, model, creation time (and fingerprint)."""

    id: str
    model: str
    created: int
    system_fingerprint: str | None = None


def usage_json(usage: Usage) -> dict[str, Any]:
    """A ``Usage`` in OpenAI's shape: ``prompt_tokens`` is billed input (uncached + cache reads + cache writes). A
    count the upstream did not give (``None``) is left out, never sent as 0 (decision 0046)."""
    cache_read = usage.cache_read_tokens or 0
    cache_write = usage.cache_write_tokens or 0
    prompt = None if usage.input_tokens is None else usage.input_tokens + cache_read + cache_write
    completion = usage.output_tokens
    total: int | float | None = usage.total_tokens
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    counts = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}
    out: dict[str, Any] = {key: value for key, value in counts.items() if value is not None}
    details: dict[str, Any] = {}
    if usage.cache_read_tokens is not None:
        details["cached_tokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens is not None:
        details["cache_write_tokens"] = usage.cache_write_tokens
    if details:
        out["prompt_tokens_details"] = details
    if usage.reasoning_tokens is not None:
        out["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    return out


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False, allow_nan=False).encode() + b"\n\n"


def error_event(failure: Failure) -> bytes:
    """The in-band error event for ``failure`` (OpenAI's ``{"error": {...}}`` shape, our code)."""
    error: dict[str, Any] = {"message": failure.message, "type": OWN_ERROR_TYPE, "code": failure.code}
    if failure.status is not None:
        error["status"] = failure.status
    return _event({"error": error})


@attrs.define
class _Call:
    """One tool call, by its block index: held (``openai_index is None``) until identified."""

    held: list[str] = attrs.field(factory=list)
    openai_index: int | None = None


class OpenAIEncoder:
    """Encodes one response's chunks, in order, as OpenAI SSE bytes. ``encode`` returns ``b""`` for a chunk that
    produces nothing yet (a block start, a held call, the usage until the finish).

    Deprecated (``pipeline.sanitize.OpenAIEncoder`` warns): ``ChatRepair`` forwards the upstream's own events."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.finish: Finish | None = None
        self._role_sent = False
        self._calls: dict[int, _Call] = {}
        self._usage: Usage | None = None

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        payload: dict[str, Any] = {
            "id": self.identity.id,
            "object": "chat.completion.chunk",
            "created": self.identity.created,
            "model": self.identity.model,
        }
        if self.identity.system_fingerprint is not None:
            payload["system_fingerprint"] = self.identity.system_fingerprint
        payload["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        return _event(payload)

    def _tool_delta(self, call: _Call, arguments: str, name: str | None = None, call_id: str | None = None) -> bytes:
        entry: dict[str, Any] = {"index": call.openai_index}
        if call_id is not None:
            entry.update(id=call_id, type="function", function={"name": name, "arguments": arguments})
        else:
            entry["function"] = {"arguments": arguments}
        return self._chunk({"tool_calls": [entry]})

    def _identify(self, call: _Call, call_id: str, name: str, more: str) -> bytes:
        call.openai_index = sum(1 for c in self._calls.values() if c.openai_index is not None)
        arguments = "".join(call.held) + more
        call.held.clear()
        return self._tool_delta(call, arguments, name=name, call_id=call_id)

    def encode(self, chunk: Chunk) -> bytes:
        if isinstance(chunk, TextDelta):
            return self._chunk({"content": chunk.text}) if chunk.text else b""
        if isinstance(chunk, ReasoningDelta):
            return self._chunk({"reasoning_content": chunk.text}) if chunk.text else b""
        if isinstance(chunk, ToolCallDelta):
            return self._tool_call_delta(chunk)
        if isinstance(chunk, BlockStart):
            if chunk.block_type == "tool-call":
                self._calls.setdefault(chunk.index, _Call())
            return b""
        if isinstance(chunk, BlockEnd) and isinstance(chunk.block, ToolCallBlock):
            call = self._calls.setdefault(chunk.index, _Call())
            if call.openai_index is None:  # identified only by its end: sent whole
                return self._identify(call, chunk.block.id, chunk.block.name, "")
            return b""
        if isinstance(chunk, UsageChunk):
            self._usage = chunk.usage
            return b""
        if isinstance(chunk, Finish):
            return self._finish(chunk)
        return b""  # anomalies, retries, text/reasoning block ends: nothing on the wire

    def _tool_call_delta(self, chunk: ToolCallDelta) -> bytes:
        call = self._calls.setdefault(chunk.index, _Call())
        if call.openai_index is not None:
            return self._tool_delta(call, chunk.arguments_delta) if chunk.arguments_delta else b""
        if chunk.id and chunk.name:
            return self._identify(call, chunk.id, chunk.name, chunk.arguments_delta)
        call.held.append(chunk.arguments_delta)
        return b""

    def _usage_event(self) -> bytes:
        if self._usage is None:
            return b""
        payload: dict[str, Any] = {
            "id": self.identity.id,
            "object": "chat.completion.chunk",
            "created": self.identity.created,
            "model": self.identity.model,
            "choices": [],
            "usage": usage_json(self._usage),
        }
        return _event(payload)

    def _finish(self, chunk: Finish) -> bytes:
        self.finish = chunk
        reason = chunk.reason
        failure = reason.failure
        if failure is not None and failure.code == Code.CONTENT_FILTER:
            return self._chunk({}, "content_filter") + self._usage_event() + DONE
        if failure is not None:
            return self._usage_event() + error_event(failure)
        return self._chunk({}, _FINISH_REASONS[reason.kind]) + self._usage_event() + DONE
