"""Odd Responses and Messages input stays linear and its messages bounded: 40,000 distinct unsupported Responses items
(the scenario: under 5 s, no chunk over 20,000 characters), item and event types of any length quoted within a
bound."""

from __future__ import annotations

import json
import time
from typing import Any

import pipeline


def _event(payload: dict[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


_COMPLETED = {"type": "response.completed",
              "response": {"id": "r", "status": "completed", "output": [], "usage": {"input_tokens": 1}}}


def _added(index: int, kind: str) -> dict[str, Any]:
    return {"type": "response.output_item.added", "output_index": index, "item": {"type": kind, "id": f"x{index}"}}


def test_40000_distinct_unsupported_items_end_within_5_s_with_no_chunk_over_20000_characters() -> None:
    data = b"".join(_event(_added(i, f"custom_kind_{i}")) for i in range(40_000)) + _event(_COMPLETED)

    started = time.process_time()  # CPU time: what a quadratic pass would grow, and not another process's load
    out = pipeline.collect(data, anomalies=True)
    took = time.process_time() - started

    assert took < 5
    assert max(len(json.dumps(chunk.to_dict())) for chunk in out) <= 20_000
    failure = out[-1].reason.failure  # type: ignore[union-attr]
    assert failure is not None
    assert failure.code == "UNSUPPORTED_OUTPUT"
    assert "custom_kind_0, custom_kind_1" in failure.message
    assert failure.message.endswith("and 39990 more kinds, which the protocol does not carry")


def test_an_item_or_event_type_of_any_length_is_quoted_within_a_bound() -> None:
    long = "k" * 100_000
    data = (
        _event(_added(0, long))
        + _event(_added(1, "web_search_call" + long))
        + f"event: x\ndata: {json.dumps({'type': 'response.' + long})}\n\n".encode()
        + _event(_COMPLETED)
    )

    out = pipeline.collect(data, anomalies=True)

    assert max(len(json.dumps(chunk.to_dict())) for chunk in out) < 1_000


def test_a_messages_server_tool_block_with_a_huge_name_is_quoted_within_a_bound() -> None:
    block = {"type": "server_tool_use", "id": "s", "name": "n" * 100_000, "input": {}}
    data = _event({"type": "content_block_start", "index": 0, "content_block": block})

    out = pipeline.collect(data, anomalies=True)

    assert max(len(json.dumps(chunk.to_dict())) for chunk in out) < 1_000
