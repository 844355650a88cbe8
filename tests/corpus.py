"""Where the shared reference corpus is, resolved once: ``../shared`` beside the repository (read, never copied), or
the folder an environment variable names."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
"""The shared reference material (``../shared`` from the repository root)."""
FIXTURES = SHARED / "fixtures"

REAL_STREAMS = Path(os.environ.get("LLM_STREAM_FIXTURES", FIXTURES / "sse" / "real"))
"""Recorded chat-completions streams of real gateways (``LLM_STREAM_FIXTURES``)."""
MESSAGES_STREAMS = Path(os.environ.get("LLM_STREAM_MESSAGES_FIXTURES", FIXTURES / "messages"))
"""The Messages API corpus (``LLM_STREAM_MESSAGES_FIXTURES``)."""
RESPONSES_STREAMS = Path(os.environ.get("LLM_STREAM_RESPONSES_FIXTURES", FIXTURES / "responses"))
"""The Responses API corpus (``LLM_STREAM_RESPONSES_FIXTURES``)."""
PEER_STREAMS = Path(os.environ.get("LLM_STREAM_PEERS", FIXTURES / "sse" / "peers"))
"""What peer libraries make of the streams (``LLM_STREAM_PEERS``)."""
PEER_FORMAT_STREAMS = Path(os.environ.get("LLM_STREAM_PEER_FORMATS", FIXTURES / "peers-formats"))
"""Messages and Responses streams rebuilt from other projects' test suites, with what they assert
(``LLM_STREAM_PEER_FORMATS``)."""
