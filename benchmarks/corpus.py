"""A seeded generator of realistic OpenAI ``chat.completion.chunk`` streams, so every run measures the same bytes.

One response is:

- a role delta (``{"role": "assistant", "content": "", "refusal": null}``);
- a long text in many small deltas (one or two words, with punctuation, newlines, and some non-ASCII: accents,
  dashes, arrows and 4-byte emoji, so 4 KB reads cut UTF-8 characters);
- K tool calls, one after the other as OpenAI sends parallel calls: an opener carrying ``id``, ``type``,
  ``function.name`` and ``arguments: ""``, then the arguments (a JSON object) in 3 to 12 character fragments.
  Continuation deltas come in the three shapes seen on the wire: plain (``{"index", "function": {"arguments"}}``),
  and the seed's shapes repeating the identity blanked out: ``"id": "", "name": ""`` and ``"id": null,
  "name": null`` (``type`` stays ``"function"``: see ``run.py``'s peer note on ``"type": null``);
- a ``finish_reason`` delta (``tool_calls`` when there are calls, else ``stop``);
- a usage-only trailing chunk (``"choices": []`` with ``usage``), as ``stream_options.include_usage`` sends it;
- ``data: [DONE]``.

Every event is the full OpenAI envelope (``id``, ``object``, ``created``, ``model``, ``service_tier``,
``system_fingerprint``, ``choices[{index, delta, logprobs: null, finish_reason}]``, ``usage: null`` and the
``obfuscation`` padding OpenAI adds to stream chunks), ~330 bytes an event on average.

``response(events=N)`` builds a response of N JSON payloads (the ``[DONE]`` line is not counted), and returns the
bytes with what it put in them (text, tool calls, counts), for checking the assembled message.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # python benchmarks/corpus.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._corpus_events import (
    OBFUSCATION,
    TOOL_NAMES,
    Envelopes,
    Json,
    arguments_text,
    fragment_sizes,
    text_delta,
)

__all__ = [
    "CORPUS_DIR",
    "SIZES",
    "Corpus",
    "ExpectedCall",
    "Size",
    "build",
    "fixed_size_response",
    "response",
    "write",
]

CORPUS_DIR = Path(__file__).resolve().parent / ".corpus"
"""Where corpora are written for the replay-from-file tests (git-ignored)."""

DEFAULT_SEED = 20240611



@dataclass(frozen=True)
class Size:
    """A named corpus size: ``events`` JSON payloads in one response with ``tools`` tool calls."""

    name: str
    events: int
    tools: int
    tool_share: float
    """The share of the payloads that carry tool-call arguments (the rest is mostly text)."""
    note: str


SIZES: dict[str, Size] = {
    "small": Size("small", 10, 2, 0.5, "one short answer, ~3.5 KB"),
    "smoke": Size("smoke", 920, 3, 0.25, "~300 KB, for --smoke"),
    "4k": Size("4k", 4_000, 3, 0.25, "~1.3 MB, for the linearity check"),
    "medium": Size("medium", 9_000, 4, 0.25, "~3 MB"),
    "large": Size("large", 153_000, 6, 0.2, "~50 MB: one long response (a long text plus tool calls)"),
}


@dataclass(frozen=True)
class ExpectedCall:
    id: str
    name: str
    arguments: str


@dataclass
class Corpus:
    """One generated response and what the generator put in it."""

    name: str
    data: bytes
    text: str
    tool_calls: list[ExpectedCall]
    payloads: int
    """JSON ``data:`` payloads, ``[DONE]`` excluded: what the floor counts, and ``parse_sse``'s WireChunks."""
    text_deltas: int
    """Payloads carrying non-empty ``content`` (each gives one ``text-delta`` chunk)."""
    tool_deltas: int
    """Payloads carrying a tool-call entry, openers included (each gives one ``tool-call-delta`` chunk)."""
    usage: Json = field(default_factory=dict)

    @property
    def expected_chunks(self) -> int:
        """Chunks ``pipeline.translate`` should give (anomalies off): every block's start and end, one delta per
        text or tool payload, the usage and the finish."""
        blocks = (1 if self.text_deltas else 0) + len(self.tool_calls)
        return 2 * blocks + self.text_deltas + self.tool_deltas + 2

    @property
    def arguments_bytes(self) -> int:
        return sum(len(call.arguments.encode()) for call in self.tool_calls)

    @property
    def text_bytes(self) -> int:
        return len(self.text.encode())

    def pieces(self, size: int = 4096) -> list[bytes]:
        """The bytes as reads of ``size`` bytes (the same pieces for every row of the benchmark)."""
        data = self.data
        return [data[start : start + size] for start in range(0, len(data), size)]


def response(events: int, tools: int = 2, tool_share: float = 0.25, *, seed: int = DEFAULT_SEED,
             name: str = "custom") -> Corpus:
    """One response of ``events`` JSON payloads (``[DONE]`` not counted): text, then ``tools`` tool calls."""
    rng = random.Random(f"{seed}:{events}:{tools}:{tool_share}")
    env = Envelopes(rng)
    fixed = 3  # role, finish, usage
    body = max(events - fixed, 0)
    tools = min(tools, body // 2)
    tool_events = max(round(body * tool_share), 2 * tools) if tools else 0
    text_events = body - tool_events

    frames: list[bytes] = [env.delta({"role": "assistant", "content": "", "refusal": None})]
    text_parts: list[str] = []
    for _ in range(text_events):
        piece = text_delta(rng)
        text_parts.append(piece)
        frames.append(env.delta({"content": piece}))

    calls: list[ExpectedCall] = []
    tool_deltas = 0
    # Split the tool events between the calls; each call is an opener plus its argument fragments.
    shares = [tool_events // tools + (1 if n < tool_events % tools else 0) for n in range(tools)] if tools else []
    for n, share in enumerate(shares):
        call_id = "call_" + "".join(rng.choice(OBFUSCATION) for _ in range(24))
        tool_name = TOOL_NAMES[n % len(TOOL_NAMES)]
        sizes = fragment_sizes(rng, share - 1)
        arguments = arguments_text(rng, sum(sizes), n)
        fragments: list[str] = []
        at = 0
        for step in sizes:  # cut anywhere: inside words, escapes and multi-byte characters' neighbours
            fragments.append(arguments[at : at + step])
            at += step
        opener = {"index": n, "id": call_id, "type": "function", "function": {"name": tool_name, "arguments": ""}}
        frames.append(env.delta({"tool_calls": [opener]}))
        for fragment in fragments:
            roll = rng.random()
            if roll < 0.5:
                entry: Json = {"index": n, "function": {"arguments": fragment}}
            elif roll < 0.75:  # the seed: identity repeated as ""
                entry = {"index": n, "id": "", "type": "function", "function": {"name": "", "arguments": fragment}}
            else:  # the seed: identity repeated as null (``type`` kept: with ``"type": null`` the openai SDK's
                # ChatCompletionStreamState fails an assertion, and it could not be measured at all)
                entry = {"index": n, "id": None, "type": "function", "function": {"name": None, "arguments": fragment}}
            frames.append(env.delta({"tool_calls": [entry]}))
        tool_deltas += 1 + len(fragments)
        calls.append(ExpectedCall(call_id, tool_name, arguments))

    frames.append(env.delta({}, "tool_calls" if calls else "stop"))
    completion = text_events + tool_events
    usage: Json = {
        "prompt_tokens": 1_843,
        "completion_tokens": completion,
        "total_tokens": 1_843 + completion,
        "prompt_tokens_details": {"cached_tokens": 1_024, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    frames.append(env.usage(usage))
    payloads = len(frames)
    frames.append(b"data: [DONE]\n\n")
    text = "".join(text_parts)
    return Corpus(
        name=name,
        data=b"".join(frames),
        text=text,
        tool_calls=calls,
        payloads=payloads,
        text_deltas=sum(1 for part in text_parts if part),
        tool_deltas=tool_deltas,
        usage=usage,
    )


def fixed_size_response(events: int, size: int = 448, *, seed: int = DEFAULT_SEED) -> Corpus:
    """A text response whose every payload event is exactly ``size`` bytes (padded in ``obfuscation``), so a server
    writing ``size``-byte pieces sends one event per write (the concurrency test drips them at 20 events/s)."""
    rng = random.Random(f"{seed}:fixed:{events}:{size}")
    env = Envelopes(rng)

    def padded(make: Callable[[str], bytes]) -> bytes:
        missing = size - len(make(""))
        if missing < 0:
            raise ValueError(f"an event needs {size - missing} bytes, more than {size}")
        frame = make("".join(rng.choices(OBFUSCATION, k=missing)))
        assert len(frame) == size
        return frame

    texts = [text_delta(rng) for _ in range(max(events - 3, 0))]
    frames = [padded(lambda o: env.delta({"role": "assistant", "content": "", "refusal": None}, obfuscation=o))]
    for text in texts:
        frames.append(padded(lambda o, text=text: env.delta({"content": text}, obfuscation=o)))  # type: ignore[misc]
    frames.append(padded(lambda o: env.delta({}, "stop", obfuscation=o)))
    usage: Json = {"prompt_tokens": 12, "completion_tokens": len(texts), "total_tokens": 12 + len(texts)}
    frames.append(padded(lambda o: env.usage(usage, obfuscation=o)))
    payloads = len(frames)
    frames.append(b"data: [DONE]\n\n")
    return Corpus(
        name=f"fixed-{events}x{size}",
        data=b"".join(frames),
        text="".join(texts),
        tool_calls=[],
        payloads=payloads,
        text_deltas=sum(1 for text in texts if text),
        tool_deltas=0,
        usage=usage,
    )


def build(name: str, *, seed: int = DEFAULT_SEED) -> Corpus:
    """The named corpus (see ``SIZES``)."""
    size = SIZES[name]
    return response(size.events, size.tools, size.tool_share, seed=seed, name=name)


def write(corpus: Corpus, directory: Path = CORPUS_DIR) -> Path:
    """Writes the bytes to ``<directory>/<name>.sse`` and what they contain to ``<name>.json``; returns the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{corpus.name}.sse"
    if not path.exists() or path.stat().st_size != len(corpus.data) or path.read_bytes() != corpus.data:
        path.write_bytes(corpus.data)
    facts = {
        "payloads": corpus.payloads,
        "bytes": len(corpus.data),
        "text_bytes": corpus.text_bytes,
        "arguments_bytes": corpus.arguments_bytes,
        "expected_chunks": corpus.expected_chunks,
    }
    path.with_suffix(".json").write_text(json.dumps(facts, indent=2) + "\n")
    return path


def _main() -> None:
    import argparse
    import time

    parser = argparse.ArgumentParser(description="Generate the benchmark corpora and show their shape.")
    parser.add_argument("--write", metavar="NAME", help="write the named corpus to benchmarks/.corpus/NAME.sse")
    args = parser.parse_args()
    if args.write:
        print(write(build(args.write)))
        return
    for name in SIZES:
        start = time.perf_counter()
        corpus = build(name)
        took = time.perf_counter() - start
        print(
            f"{name:7} {corpus.payloads:>8,} payloads {len(corpus.data):>12,} bytes "
            f"({len(corpus.data) / corpus.payloads:.0f} B/event) text {corpus.text_bytes:,} B, "
            f"{len(corpus.tool_calls)} calls {corpus.arguments_bytes:,} B args, {corpus.expected_chunks:,} chunks, "
            f"{took * 1000:.0f} ms"
        )


if __name__ == "__main__":
    _main()
