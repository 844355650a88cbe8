"""Issue 20's sweep: every recorded chat-completions stream in ``../shared/fixtures`` (``sse/real``, ``sse/peers``)
that the plain openai SDK reads to a finish, and reads the same way as this library, comes through
``SanitizingTransport`` with the SDK's final result equal to the plain SDK's, field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from faithful import Kind, final
from gateway import Gateway, chunk

import pipeline
from operators import Finish, TextDelta, ToolCallBlock

ROOT = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "sse"
STREAMS = sorted(p for folder in ("real", "peers") for p in (ROOT / folder).glob("*.sse")) if ROOT.is_dir() else []


def _response(body: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
    return head + chunk(body) + b"0\r\n\r\n"


def _library_reads(body: bytes) -> tuple[str, list[tuple[str, str, str]]] | None:
    """The library's text and calls for the stream, or ``None`` when it ends in an error."""
    chunks = pipeline.collect(body)
    finish = next((c for c in chunks if isinstance(c, Finish)), None)
    if finish is None or finish.reason.failure is not None:
        return None
    text = "".join(c.text for c in chunks if isinstance(c, TextDelta))
    calls = [(b.id, b.name, b.arguments) for c in chunks
             if isinstance(block := getattr(c, "block", None), ToolCallBlock) for b in (block,)]
    return text, calls


def _sdk_reads(result: Any) -> tuple[str, list[tuple[str, str, str]]] | None:
    if not isinstance(result, dict) or not result["choices"]:
        return None
    choice = result["choices"][0]
    if choice["finish_reason"] is None:
        return None
    message = choice["message"]
    calls = [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()]
    return message.get("content") or "", calls


@pytest.mark.skipif(not STREAMS, reason="the shared fixtures are not present")
@pytest.mark.parametrize("kind", ["httpx2", "httpx"])
def test_every_stream_the_plain_sdk_reads_like_the_library_comes_through_unchanged(kind: Kind) -> None:
    compared: list[str] = []
    differ: list[str] = []
    for path in STREAMS:
        body = path.read_bytes()
        with Gateway(_response(body)) as gateway:
            plain = final(kind, gateway.base_url, transport=False, max_retries=0)
            reads = _sdk_reads(plain)
            if reads is None or reads != _library_reads(body):
                continue
            compared.append(path.name)
            if final(kind, gateway.base_url, transport=True, max_retries=0) != plain:
                differ.append(path.name)
    assert len(compared) >= 50, compared  # 57 of the 108 today; the others the plain SDK cannot read to a finish
    assert not differ, differ
