"""Where the reference corpus is, resolved once: the copy in the repository (``tests/corpus/``, so the suite runs
from a clone alone), or the folder an environment variable names.

``tests/corpus/`` mirrors ``../shared`` (the project's shared reference material): ``tests/corpus/fixtures`` is a
byte-for-byte copy of ``../shared/fixtures``, and ``test_the_in_repo_corpus_equals_the_shared_one``
(``tests/test_corpus.py``) keeps the two equal wherever ``../shared`` sits beside the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
"""The repository root."""
SHARED = ROOT / "tests" / "corpus"
"""The in-repo copy of the shared reference material (the part the suite, the scripts and the docs use)."""
FIXTURES = SHARED / "fixtures"
"""The recorded streams and their expectations: a copy of ``../shared/fixtures``."""
OUTSIDE_SHARED = ROOT.parent / "shared"
"""The shared reference material beside the repository, where it exists (the copy's origin; only the test that
compares the two reads it)."""

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
GEMINI_PEER_STREAMS = Path(os.environ.get("LLM_STREAM_GEMINI_PEERS", SHARED / "gemini-peers"))
"""Gemini ``streamGenerateContent?alt=sse`` streams rebuilt from other projects' test suites, with what our rules
require (``LLM_STREAM_GEMINI_PEERS``); kept in the repository only, not a copy of ``../shared``."""
CLIENT_CALL_STREAMS = Path(os.environ.get("LLM_STREAM_CLIENT_CALLS", SHARED / "client-calls"))
"""Responses streams whose items the client runs (custom tools, apply_patch, shell, computer, MCP approvals), written
for decision 0072 with what the rules require (``LLM_STREAM_CLIENT_CALLS``); kept in the repository only."""
