"""What the corpus generator (``corpus.py``) writes into its events: the text deltas, the tool-call arguments and
their fragment sizes, and the full OpenAI envelope of every event (``Envelopes``), all drawn from the caller's seeded
``random.Random``, so the same seed gives the same bytes.
"""

from __future__ import annotations

import json
import random
import string
from collections.abc import Callable
from typing import Any

__all__ = ["OBFUSCATION", "TOOL_NAMES", "Envelopes", "Json", "arguments_text", "fragment_sizes", "text_delta"]

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------------- content

_WORDS = (
    "the", "a", "an", "of", "to", "in", "on", "for", "with", "by", "from", "as", "at", "is", "are", "was", "be",
    "this", "that", "it", "its", "stream", "pipeline", "chunk", "operator", "event", "delta", "token", "response",
    "message", "tool", "call", "argument", "parser", "decoder", "buffer", "batch", "byte", "line", "payload", "json",
    "schema", "value", "field", "index", "identity", "block", "text", "reasoning", "finish", "usage", "model",
    "client", "server", "gateway", "request", "retry", "error", "timeout", "latency", "throughput", "memory",
    "allocation", "function", "return", "result", "state", "machine", "observable", "subscribe", "emit", "complete",
    "dispose", "source", "sink", "protocol", "wire", "frame", "envelope", "choice", "content", "role", "assistant",
    "user", "system", "we", "you", "they", "can", "will", "should", "must", "may", "might", "could", "would", "does",
    "did", "has", "have", "had", "not", "but", "and", "or", "so", "then", "because", "when", "while", "where",
    "which", "who", "what", "how", "why", "first", "second", "next", "last", "each", "every", "some", "many", "few",
    "more", "most",
)
_SPECIAL = ("café", "naïve", "—", "→", "über", "🚀", "✅", "日本語", "Ω", "½")
_PUNCT = (",", ".", ":", ";", "!", "?")


def text_delta(rng: random.Random) -> str:
    """One or two tokens, the way a model streams them."""
    roll = rng.random()
    if roll < 0.03:
        return "\n\n"
    if roll < 0.06:
        return " " + rng.choice(_SPECIAL)
    word = rng.choice(_WORDS)
    if roll < 0.35:
        word += " " + rng.choice(_WORDS)
    piece = " " + word
    if rng.random() < 0.12:
        piece += rng.choice(_PUNCT)
    if rng.random() < 0.03:
        piece += ' "quoted"'
    return piece


TOOL_NAMES = ("write_file", "run_shell", "search_code", "get_weather", "create_issue", "edit_file")


def arguments_text(rng: random.Random, length: int, n: int) -> str:
    """A JSON object of exactly ``length`` characters (at least 9), with escapes in it (quotes, newlines,
    backslashes, non-ASCII) when there is room."""
    if length < 80:
        return _padded({"q": ""}, "q", length)
    body: Json = {"path": f"src/module_{n}.py", "mode": "overwrite", "line": n * 7, "content": ""}
    budget = length - len(_compact(body)) - 12
    words: list[str] = []
    total = 0
    while total < budget:
        word = rng.choice(_WORDS)
        roll = rng.random()
        if roll < 0.05:
            word += "\n"
        elif roll < 0.07:
            word = f'"{word}"'
        elif roll < 0.08:
            word = "C:\\tmp\\" + word
        elif roll < 0.09:
            word = rng.choice(_SPECIAL)
        words.append(word)
        total += len(_compact(word)) - 1
    body["content"] = " ".join(words)
    while len(_compact(body)) > length:
        words.pop()
        body["content"] = " ".join(words)
    return _padded(body, "content", length)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _padded(body: Json, key: str, length: int) -> str:
    text = _compact(body)
    missing = length - len(text)
    body[key] += ("Paris Berlin Tokyo Lima Oslo " * (missing // 29 + 1))[:missing]
    text = _compact(body)
    if len(text) != length:
        raise AssertionError(f"arguments of {len(text)} characters, wanted {length}")
    return text


def fragment_sizes(rng: random.Random, count: int) -> list[int]:
    """``count`` sizes of 3 to 12 characters, adding up to at least 9 (the smallest JSON object used)."""
    sizes = [rng.randint(3, 12) for _ in range(count)]
    at = 0
    while sum(sizes) < 9:
        sizes[at] = min(12, sizes[at] + 9 - sum(sizes))
        at += 1
    return sizes


# --------------------------------------------------------------------------------------------------- envelopes

OBFUSCATION = string.ascii_letters + string.digits


class Envelopes:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        suffix = "".join(rng.choice(OBFUSCATION) for _ in range(29))
        self.head = {
            "id": f"chatcmpl-{suffix}",
            "object": "chat.completion.chunk",
            "created": 1_733_011_200 + rng.randint(0, 10_000_000),
            "model": "gpt-4o-2024-08-06",
            "service_tier": "default",
            "system_fingerprint": "fp_" + "".join(rng.choice("0123456789abcdef") for _ in range(10)),
        }
        self.dumps: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        # The envelope around the delta, encoded once (the same bytes json.dumps gives for the whole object).
        self.prefix = "data: " + self.dumps(self.head)[:-1] + ',"choices":[{"index":0,"delta":'

    def _obfuscation(self) -> str:
        return "".join(self.rng.choices(OBFUSCATION, k=self.rng.randint(0, 8)))

    def delta(self, delta: Json, finish_reason: str | None = None, *, obfuscation: str | None = None) -> bytes:
        reason = "null" if finish_reason is None else self.dumps(finish_reason)
        padding = self._obfuscation() if obfuscation is None else obfuscation
        return (
            f'{self.prefix}{self.dumps(delta)},"logprobs":null,"finish_reason":{reason}}}],'
            f'"usage":null,"obfuscation":"{padding}"}}\n\n'
        ).encode()

    def usage(self, usage: Json, *, obfuscation: str | None = None) -> bytes:
        env: Json = dict(self.head)
        env["choices"] = []
        env["usage"] = usage
        env["obfuscation"] = self._obfuscation() if obfuscation is None else obfuscation
        return b"data: " + self.dumps(env).encode() + b"\n\n"
