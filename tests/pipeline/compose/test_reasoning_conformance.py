"""Reasoning round trip over the real corpora (the corpus' ``messages/`` and ``responses/``): every
thinking signature, redacted_thinking data and Responses encrypted reasoning a stream carries is on a reasoning
block, exactly, in order (docs/decisions/0028-reasoning-round-trip.md).

The oracle reads each stream's ``data:`` payloads with ``json`` and the rules written out here, not the parser's:
Messages, per thinking block the last non-empty signature (its start's, then each ``signature_delta``), per
redacted_thinking block its ``data``; Responses, per reasoning ``output_item.done`` its ``id`` and
``encrypted_content``. Each stops at the stream's terminal event.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from corpus import FIXTURES

from operators import BlockEnd, ReasoningBlock
from pipeline.compose import collect

SHARED = FIXTURES
MESSAGES = sorted(Path(os.environ.get("LLM_STREAM_MESSAGES_FIXTURES", SHARED / "messages")).glob("*.sse"))
RESPONSES = sorted(Path(os.environ.get("LLM_STREAM_RESPONSES_FIXTURES", SHARED / "responses")).glob("*.sse"))

pytestmark = pytest.mark.skipif(not (MESSAGES and RESPONSES) and not os.environ.get("CI"), reason="no corpus")


def payloads(path: Path) -> Iterator[dict[str, Any]]:
    for event in path.read_text(encoding="utf-8").replace("\r\n", "\n").split("\n\n"):
        data = "\n".join(line[5:].lstrip(" ") for line in event.split("\n") if line.startswith("data:"))
        try:
            body = json.loads(data)
        except ValueError:
            continue
        if isinstance(body, dict):
            yield body


def messages_oracle(path: Path) -> list[tuple[str | None, str | None, str | None]]:
    """(signature, encrypted, item_id) per block that carries one, in block order."""
    blocks: dict[int, list[Any]] = {}
    for body in payloads(path):
        kind = body.get("type")
        if kind in ("message_stop", "error"):
            break
        if kind == "content_block_start":
            block = body["content_block"]
            if block.get("type") == "thinking":
                blocks[body["index"]] = ["thinking", block.get("signature") or None]
            elif block.get("type") == "redacted_thinking":
                blocks[body["index"]] = ["redacted", block.get("data") or None]
        elif kind == "content_block_delta" and body["delta"].get("type") == "signature_delta":
            entry = blocks.get(body["index"])
            if entry is not None and entry[0] == "thinking" and body["delta"].get("signature"):
                entry[1] = body["delta"]["signature"]
    out: list[tuple[str | None, str | None, str | None]] = []
    for index in sorted(blocks):
        kind, value = blocks[index]
        if value:
            out.append((value, None, None) if kind == "thinking" else (None, value, None))
    return out


def responses_oracle(path: Path) -> list[tuple[str | None, str | None, str | None]]:
    out: list[tuple[str | None, str | None, str | None]] = []
    for body in payloads(path):
        kind = body.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed", "error"):
            break
        item = body.get("item")
        if kind == "response.output_item.done" and isinstance(item, dict) and item.get("type") == "reasoning":
            encrypted = item.get("encrypted_content") or None
            if encrypted:
                out.append((None, encrypted, item.get("id") or None))
    return out


def opaque_of(path: Path, fmt: str) -> list[tuple[str | None, str | None, str | None]]:
    chunks = collect(path, format=fmt)  # type: ignore[arg-type]
    blocks = [c.block for c in chunks if isinstance(c, BlockEnd) and isinstance(c.block, ReasoningBlock)]
    return [(b.signature, b.encrypted, b.item_id) for b in blocks if b.signature or b.encrypted]


@pytest.mark.parametrize("path", MESSAGES, ids=[p.stem for p in MESSAGES])
def test_every_messages_signature_and_redacted_block_is_kept(path: Path) -> None:
    assert opaque_of(path, "messages") == messages_oracle(path)


@pytest.mark.parametrize("path", RESPONSES, ids=[p.stem for p in RESPONSES])
def test_every_responses_encrypted_reasoning_is_kept_with_its_item_id(path: Path) -> None:
    assert opaque_of(path, "responses") == responses_oracle(path)


def test_the_corpora_hold_signatures_redacted_data_and_encrypted_reasoning() -> None:
    """The two tests above are not vacuous: the corpora carry each kind."""
    kept = [entry for path in MESSAGES for entry in messages_oracle(path)]
    assert any(signature for signature, _, _ in kept)
    assert any(encrypted for _, encrypted, _ in kept)
    assert any(encrypted for path in RESPONSES for _, encrypted, _ in responses_oracle(path))
