"""A ``"stream": false`` answer: the profile's stream run through the pipeline, as one ``chat.completion``.

The emulator does not fold the chunks itself: ``pipeline.compose.collect`` and ``assemble`` turn the script's bytes
into an ``AssistantMessage`` exactly as a client of the stream would see it, and this module writes that message in
the non-streaming wire shape. So a non-streaming request gets the repaired answer (the seed's blanked identities
coalesced, Ollama's two calls at one index kept apart), and a stream the pipeline rejects says so:

    finish stop / tool-calls / max-tokens ... finish_reason "stop" / "tool_calls" / "length"
    error CONTENT_FILTER .................... finish_reason "content_filter"
    error REFUSAL ........................... finish_reason "stop", message.refusal holds the text
    any other error ......................... finish_reason null, the text decoded before the failure, and a
                                              top-level "error" {"message", "type": "server_error", "code"}

Tool calls that never became valid (no id or no name by ``[DONE]``) are not in the message: see
``docs/decisions/0002-coalesce-identity.md`` and ``docs/decisions/0004-close-on-done.md``.
"""

from __future__ import annotations

from typing import Any

from operators import Code, ToolCallBlock, Usage
from pipeline.compose import AssistantMessage, assemble, collect

from ._script import Script, ScriptOptions
from ._sse import SYSTEM_FINGERPRINT

__all__ = ["completion", "completion_json"]

Json = dict[str, Any]

_FINISH_REASONS = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


def completion(script: Script, options: ScriptOptions) -> Json:
    """The ``chat.completion`` a ``"stream": false`` request gets for ``script`` (an event-stream script)."""
    return completion_json(assemble(collect(script.body)), options)


def completion_json(message: AssistantMessage, options: ScriptOptions) -> Json:
    """``message`` in OpenAI's non-streaming shape, with the id, model and creation time of ``options``."""
    finish_reason, error = _finish(message)
    refusal = message.refusal
    body: Json = {"role": "assistant"}
    if refusal is not None:
        body["content"] = None
    else:
        body["content"] = message.text if message.text or not message.tool_calls else None
    body["refusal"] = refusal
    if message.reasoning:
        body["reasoning_content"] = message.reasoning
    if message.tool_calls:
        body["tool_calls"] = [_tool_call(call) for call in message.tool_calls]
    out: Json = {
        "id": options.completion_id,
        "object": "chat.completion",
        "created": options.created,
        "model": options.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": [{"index": 0, "message": body, "logprobs": None, "finish_reason": finish_reason}],
    }
    if message.usage is not None:
        out["usage"] = _usage(message.usage)
    if error is not None:
        out["error"] = error
    return out


def _finish(message: AssistantMessage) -> tuple[str | None, Json | None]:
    """The wire ``finish_reason``, and the error object of a response the pipeline ended with an error."""
    finish = message.finish
    if finish.kind in _FINISH_REASONS:
        return _FINISH_REASONS[finish.kind], None
    failure = finish.failure
    if failure is not None and failure.code == Code.CONTENT_FILTER:
        return "content_filter", None
    if failure is not None and failure.code == Code.REFUSAL:
        return "stop", None
    code = failure.code if failure is not None else Code.UNKNOWN
    text = failure.message if failure is not None else "the response ended without a finish"
    return None, {"message": text, "type": "server_error", "code": str(code)}


def _tool_call(call: ToolCallBlock) -> Json:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def _usage(usage: Usage) -> Json:
    """The disjoint protocol counts back in OpenAI's shape (cached input is part of ``prompt_tokens``)."""
    cache_read = usage.cache_read_tokens or 0
    prompt = (usage.input_tokens or 0) + cache_read + (usage.cache_write_tokens or 0)  # the emulator's own counts
    completion_tokens = usage.output_tokens or 0
    total = usage.total_tokens if usage.total_tokens is not None else prompt + completion_tokens
    prompt_details: Json = {"cached_tokens": cache_read, "audio_tokens": 0}
    if usage.cache_write_tokens is not None:
        prompt_details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": total,
        "prompt_tokens_details": prompt_details,
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0, "audio_tokens": 0},
    }
