"""The SDKs' own accumulators against ours, bytes -> assembled message, on the streams of ``benchmarks.formats``.

- chat: openai's ``ChatCompletionStreamState`` and langchain-core's ``add_ai_message_chunks`` (``_peers.py``);
- messages: anthropic's ``accumulate_event`` (what ``client.messages.stream()`` runs per event: the SDK's
  ``SSEDecoder``, ``sse.json()``, ``construct_type(RawMessageStreamEvent)``, ``accumulate_event`` and
  ``build_events``), when the ``anthropic`` package is installed.

Ours is ``pipeline.assemble(pipeline.collect(pieces, format=...))``. Each ratio is peer time / ours, the median of
interleaved rounds (each round runs ours and then the peer).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from functools import partial
from typing import Any

import pipeline
from benchmarks._format_streams import GENERATORS, texts
from benchmarks._workloads import Message, Pieces

__all__ = ["anthropic_sdk", "report"]

_MESSAGES_EVENTS = frozenset({"message_start", "message_delta", "message_stop", "content_block_start",
                              "content_block_delta", "content_block_stop"})


def anthropic_sdk(pieces: Pieces) -> Message:
    from anthropic._models import construct_type
    from anthropic._streaming import SSEDecoder
    from anthropic.lib.streaming._messages import accumulate_event, build_events
    from anthropic.types import RawMessageStreamEvent

    snapshot: Any = None
    buffers: dict[int, bytes] = {}
    for sse in SSEDecoder().iter_bytes(iter(pieces)):
        if sse.event in _MESSAGES_EVENTS:
            event: Any = construct_type(type_=RawMessageStreamEvent, value=sse.json())
            snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=buffers)
            build_events(event=event, message_snapshot=snapshot)
    text = "".join(block.text for block in snapshot.content if block.type == "text")
    calls = [(block.id, block.name, block.input) for block in snapshot.content if block.type == "tool_use"]
    return Message(text, calls, snapshot.stop_reason)


def _ours(pieces: Pieces, name: str) -> Message:
    message = pipeline.assemble(pipeline.collect(pieces, format=name))  # type: ignore[arg-type]
    return Message(message.text, [(c.id, c.name, c.arguments) for c in message.tool_calls], None)


def _peers() -> list[tuple[str, str, Callable[[Pieces], Message]]]:
    from benchmarks import _peers

    found: list[tuple[str, str, Callable[[Pieces], Message]]] = [
        ("chat", "openai ChatCompletionStreamState", _peers.openai_sdk),
        ("chat", "langchain-core add_ai_message_chunks", _peers.langchain_merge("add_ai_message_chunks")),
    ]
    try:
        import anthropic  # noqa: F401
    except ImportError:
        print("  anthropic: not installed (pip install anthropic); its row is skipped")
    else:
        found.append(("messages", "anthropic accumulate_event", anthropic_sdk))
    return found


def report(events: int, rounds: int) -> None:
    from benchmarks._timing import split, timed

    events = min(events, 2000)  # the openai accumulator costs ~0.5 ms an event
    print(f"accumulators, bytes -> assembled message ({events:,} text deltas, 4 KB reads, medians of {rounds} "
          "interleaved rounds; x ours = peer time / ours):")
    for name, label, run in _peers():
        pieces = split(GENERATORS[name](events), "4k")
        got = run(pieces)
        if got.text != "".join(texts(events)):
            print(f"  {label}: assembled another text; not timed")
            continue
        ours_times, peer_times = [], []
        for _ in range(rounds):
            ours_times.append(timed(partial(_ours, pieces, name)))
            peer_times.append(timed(partial(run, pieces)))
        ratios = [peer / ours for peer, ours in zip(peer_times, ours_times, strict=True)]
        print(f"  {name:<9} {label:<40} ours {statistics.median(ours_times) * 1e3:8.2f} ms  peer "
              f"{statistics.median(peer_times) * 1e3:9.2f} ms  x ours {statistics.median(ratios):6.1f} "
              f"({min(ratios):.1f}-{max(ratios):.1f})")
