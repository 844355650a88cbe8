"""One row per wire format: bytes -> chunks over the json.loads floor, on a generated stream of each format.

    python -m benchmarks.formats [--events 9000] [--repeat 9]

Each stream carries the same response: ``--events`` text deltas (about 30 characters each), then one tool call
whose arguments arrive in 40 fragments, then the usage and the finish, in the format's own vocabulary (chat
completions, the Messages API, the Responses API). The floor is ``json.loads`` of every ``data:`` payload of that
stream (the least any reader must do); the row is ``pipeline.collect(pieces, format=...)`` over 4 KB pieces. Best of
``--repeat``, gc off while timed. The ratio is row time / floor time, as in ``benchmarks.run``.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import pipeline
from operators import Finish

PIECE = 4096


def _sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = []
    for name, payload in events:
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {json.dumps(payload, separators=(',', ':'))}\n\n")
    return "".join(out).encode()


def _texts(events: int) -> list[str]:
    return [f"token {n:05d} of the generated answer " for n in range(events)]


def _fragments() -> list[str]:
    arguments = json.dumps({"path": "src/" + "x" * 200, "pattern": "**/*.py", "limit": 10})
    size = max(1, len(arguments) // 40)
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def chat(events: int) -> bytes:
    base = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    out: list[tuple[str | None, dict[str, Any]]] = []
    for text in _texts(events):
        out.append((None, {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}))
    for n, fragment in enumerate(_fragments()):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": fragment}}
        if n == 0:
            call.update(id="call_b", type="function", function={"name": "Glob", "arguments": fragment})
        out.append((None, {**base, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}))
    out.append((None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
    usage = {"prompt_tokens": 100, "completion_tokens": events, "total_tokens": 100 + events}
    out.append((None, {**base, "choices": [], "usage": usage}))
    return _sse(out) + b"data: [DONE]\n\n"


def messages(events: int) -> bytes:
    usage = {"input_tokens": 100, "output_tokens": 1, "cache_read_input_tokens": 0}
    out: list[tuple[str | None, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_b", "type": "message", "role": "assistant",
                                                                  "model": "bench", "content": [], "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
    ]
    for text in _texts(events):
        delta = {"type": "text_delta", "text": text}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    block = {"type": "tool_use", "id": "toolu_b", "name": "Glob", "input": {}}
    out.append(("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block}))
    for fragment in _fragments():
        delta = {"type": "input_json_delta", "partial_json": fragment}
        out.append(("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta}))
    out.append(("content_block_stop", {"type": "content_block_stop", "index": 1}))
    out.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                  "usage": {"output_tokens": events}}))
    out.append(("message_stop", {"type": "message_stop"}))
    return _sse(out)


def responses(events: int) -> bytes:
    out: list[tuple[str | None, dict[str, Any]]] = []
    seq = 0

    def add(kind: str, **fields: Any) -> None:
        nonlocal seq
        out.append((kind, {"type": kind, "sequence_number": seq, **fields}))
        seq += 1

    add("response.created", response={"id": "resp_b", "status": "in_progress", "output": []})
    add("response.output_item.added", output_index=0, item={"type": "message", "id": "msg_b", "role": "assistant"})
    for text in _texts(events):
        add("response.output_text.delta", item_id="msg_b", output_index=0, content_index=0, delta=text)
    item = {"type": "function_call", "id": "fc_b", "call_id": "call_b", "name": "Glob", "arguments": ""}
    add("response.output_item.added", output_index=1, item=item)
    for fragment in _fragments():
        add("response.function_call_arguments.delta", item_id="fc_b", output_index=1, delta=fragment)
    add("response.output_item.done", output_index=1, item={**item, "arguments": "".join(_fragments())})
    usage = {"input_tokens": 100, "output_tokens": events, "total_tokens": 100 + events,
             "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    add("response.completed", response={"id": "resp_b", "status": "completed", "usage": usage})
    return _sse(out)


GENERATORS: dict[str, Callable[[int], bytes]] = {"chat": chat, "messages": messages, "responses": responses}


def _payloads(data: bytes) -> list[bytes]:
    return [line[6:] for line in data.split(b"\n") if line.startswith(b"data: ") and line != b"data: [DONE]"]


def _best(function: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            function()
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
    return best


def measure(events: int, repeat: int) -> list[dict[str, Any]]:
    rows = []
    for name, generate in GENERATORS.items():
        data = generate(events)
        pieces = [data[i : i + PIECE] for i in range(0, len(data), PIECE)]
        payloads = _payloads(data)
        chunks = pipeline.collect(pieces, format=name)  # type: ignore[arg-type]
        message = pipeline.assemble(chunks)
        finish = chunks[-1]
        assert isinstance(finish, Finish)
        assert finish.reason.kind == "tool-calls", (name, finish)
        assert message.text == "".join(_texts(events)), name
        assert message.tool_calls[0].arguments == "".join(_fragments()), name
        floor = _best(lambda payloads=payloads: [json.loads(p) for p in payloads], repeat)  # type: ignore[misc]
        ours = _best(lambda pieces=pieces, name=name: pipeline.collect(pieces, format=name), repeat)  # type: ignore[misc]
        rows.append({"format": name, "events": len(payloads), "bytes": len(data), "floor_s": floor, "ours_s": ours})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=9000, help="text deltas per stream (default 9000)")
    parser.add_argument("--repeat", type=int, default=9, help="best of N (default 9)")
    args = parser.parse_args(argv)
    print(f"bytes -> chunks per wire format (best of {args.repeat}; floor = json.loads of every data: payload)")
    print(f"  {'format':<10} {'events':>7} {'MB':>6} {'floor ms':>9} {'ours ms':>9} {'x floor':>8}")
    for row in measure(args.events, args.repeat):
        ratio = row["ours_s"] / row["floor_s"]
        print(f"  {row['format']:<10} {row['events']:>7,} {row['bytes'] / 1e6:>6.2f} {row['floor_s'] * 1e3:>9.2f} "
              f"{row['ours_s'] * 1e3:>9.2f} {ratio:>8.2f}")


if __name__ == "__main__":
    main()
