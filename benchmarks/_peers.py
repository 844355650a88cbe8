"""Peers doing the same job (bytes -> assembled message) on the same 4 KB pieces.

openai
    What ``client.chat.completions.stream(...)`` does, without the HTTP: the SDK's own ``SSEDecoder.iter_bytes``,
    ``sse.json()``, ``construct_type(type_=ChatCompletionChunk, value=data)`` (the SDK's
    ``_process_response_data`` with the default non-strict validation), ``ChatCompletionStreamState.handle_chunk``
    per chunk (it also builds the stream events), and ``get_final_completion()`` at the end.

langchain-core
    What ``ChatOpenAI.stream(...)`` hands out, favourably to langchain: the openai SDK's SSE decoder and
    ``sse.json()``, then each chunk dict converted to an ``AIMessageChunk`` with ``tool_call_chunks`` the way
    ``langchain_openai`` does (``_convert_delta_to_message_chunk`` / ``_convert_chunk_to_generation_chunk``:
    content, tool_call_chunks, finish_reason/model_name metadata, usage_metadata) -- but without the
    ``ChatCompletionChunk`` construction and ``model_dump()`` langchain-openai also pays, without the
    ``ChatGenerationChunk`` wrapper and without callbacks. So its numbers are a lower bound of its cost.
    Then merged: ``add_ai_message_chunks(first, *rest)`` or ``merge_message_runs`` (whichever is faster, chosen at
    run time), or ``acc = acc + chunk`` (quadratic: only run on short streams).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.messages.ai import UsageMetadata, add_ai_message_chunks
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.messages.utils import merge_message_runs
from openai._models import construct_type
from openai._streaming import SSEDecoder as OpenAISSEDecoder
from openai.lib.streaming.chat._completions import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from ._workloads import Message, Pieces

__all__ = [
    "langchain_chunks",
    "langchain_merge",
    "openai_sdk",
    "openai_survives_type_null",
    "pick_langchain_merge",
]


def openai_sdk(pieces: Pieces) -> Message:
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for sse in OpenAISSEDecoder().iter_bytes(iter(pieces)):
        if sse.data.startswith("[DONE]"):
            break
        data = sse.json()
        chunk = construct_type(type_=ChatCompletionChunk, value=data)
        state.handle_chunk(chunk)  # type: ignore[arg-type]
    final = state.get_final_completion()
    choice = final.choices[0]
    calls: list[tuple[str | None, str | None, Any]] = [
        (tc.id, tc.function.name, tc.function.arguments) for tc in choice.message.tool_calls or []
    ]
    return Message(choice.message.content or "", calls, choice.finish_reason)


def openai_survives_type_null(body: bytes) -> str:
    """Runs the openai accumulator over ``body`` (the emulator's ``seed-bug`` profile, whose null-style
    continuation deltas carry ``"type": null``): ``"ok"``, or the exception it raised."""
    try:
        openai_sdk([body])
    except Exception as exc:
        return f"{type(exc).__name__} {exc}".strip()
    return "ok"


# --------------------------------------------------------------------------------------------------- langchain


def _usage(usage: dict[str, Any]) -> UsageMetadata:
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return UsageMetadata(
        input_tokens=usage.get("prompt_tokens", 0),
        output_tokens=usage.get("completion_tokens", 0),
        total_tokens=usage.get("total_tokens", 0),
        input_token_details={"audio": prompt_details.get("audio_tokens", 0),
                             "cache_read": prompt_details.get("cached_tokens", 0)},
        output_token_details={"audio": completion_details.get("audio_tokens", 0),
                              "reasoning": completion_details.get("reasoning_tokens", 0)},
    )


def _to_message_chunk(data: dict[str, Any]) -> AIMessageChunk | None:
    usage = data.get("usage")
    usage_metadata = _usage(usage) if usage else None
    choices = data.get("choices") or []
    if not choices:
        return AIMessageChunk(content="", usage_metadata=usage_metadata, response_metadata={"model_provider": "openai"})
    choice = choices[0]
    delta = choice.get("delta")
    if delta is None:
        return None
    tool_call_chunks = [
        tool_call_chunk(
            name=call["function"].get("name"),
            args=call["function"].get("arguments"),
            id=call.get("id"),
            index=call["index"],
        )
        for call in delta.get("tool_calls") or []
    ]
    metadata: dict[str, Any] = {"model_provider": "openai"}
    if finish_reason := choice.get("finish_reason"):
        metadata["finish_reason"] = finish_reason
        metadata["model_name"] = data.get("model")
        metadata["system_fingerprint"] = data.get("system_fingerprint")
        metadata["service_tier"] = data.get("service_tier")
    return AIMessageChunk(
        content=delta.get("content") or "",
        id=data.get("id"),
        tool_call_chunks=tool_call_chunks,
        usage_metadata=usage_metadata,
        response_metadata=metadata,
    )


def langchain_chunks(pieces: Pieces) -> list[AIMessageChunk]:
    """Bytes to ``AIMessageChunk``s (see the module docstring)."""
    out: list[AIMessageChunk] = []
    for sse in OpenAISSEDecoder().iter_bytes(iter(pieces)):
        if sse.data.startswith("[DONE]"):
            break
        chunk = _to_message_chunk(sse.json())
        if chunk is not None:
            out.append(chunk)
    return out


def _bulk_add(chunks: Sequence[AIMessageChunk]) -> BaseMessage:
    return add_ai_message_chunks(chunks[0], *chunks[1:])


def _merge_runs(chunks: Sequence[AIMessageChunk]) -> BaseMessage:
    return merge_message_runs(list(chunks), chunk_separator="")[0]


def _incremental(chunks: Sequence[AIMessageChunk]) -> BaseMessage:
    acc = chunks[0]
    for chunk in chunks[1:]:
        acc = acc + chunk
    return acc


MERGES: dict[str, Callable[[Sequence[AIMessageChunk]], BaseMessage]] = {
    "add_ai_message_chunks": _bulk_add,
    "merge_message_runs": _merge_runs,
    "acc + chunk": _incremental,
}


def _message(merged: BaseMessage) -> Message:
    text = merged.content if isinstance(merged.content, str) else json.dumps(merged.content)
    finish = merged.response_metadata.get("finish_reason")
    if isinstance(merged, AIMessageChunk) and merged.tool_call_chunks:
        calls: list[tuple[str | None, str | None, Any]] = [
            (c.get("id"), c.get("name"), c.get("args")) for c in merged.tool_call_chunks
        ]
    else:  # merge_message_runs gives an AIMessage: only the parsed arguments are left
        calls = [(c.get("id"), c.get("name"), c.get("args")) for c in getattr(merged, "tool_calls", [])]
    return Message(text, calls, finish)


def langchain_merge(merge: str) -> Callable[[Pieces], Message]:
    """Bytes to the merged message with the named merge."""
    function = MERGES[merge]

    def run(pieces: Pieces) -> Message:
        return _message(function(langchain_chunks(pieces)))

    return run


def pick_langchain_merge(pieces: Pieces) -> tuple[str, dict[str, float]]:
    """Times both bulk merges on the same converted chunks (one run each: ``merge_message_runs`` adds pairwise, so
    it is quadratic); returns the faster and the timings."""
    chunks = langchain_chunks(pieces)
    timings: dict[str, float] = {}
    for name in ("add_ai_message_chunks", "merge_message_runs"):
        start = time.perf_counter()
        MERGES[name](chunks)
        timings[name] = time.perf_counter() - start
    return min(timings, key=lambda name: timings[name]), timings
