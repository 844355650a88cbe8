"""Fuzz the parsers and the whole ``translate`` with atheris (libFuzzer), or a built-in mutation loop without it.

    python scripts/fuzz.py --target translate --seconds 600    # or parse_sse, messages, responses, gemini,
                                                               # fast_path, proxy, repair
    python scripts/fuzz.py --target translate --reproduce crash-file    # replay one input, print what broke

One input is the SSE bytes. Everything else a run needs comes from those bytes alone, so a crash file replays
exactly: small ``Limits`` and the split points are drawn from a PRNG seeded with the input's CRC-32 (a mutation
of any byte moves them). The oracle (``check_translate``/``check_parse_sse``): no exception escapes; the output is
the same for the unsplit bytes, for the drawn split and (inputs up to 2 KiB) for one byte per read; and for
``translate`` (format detected) and ``messages`` / ``responses`` (format given) exactly one finish and it is last,
block-start before deltas before block-end, no block-end for a tool call without an id and a name, no two tool-call
block-ends sharing an id, every chunk's ``to_dict()`` strict JSON (``json.dumps(allow_nan=False)``), and, held
against the input's own naive reading (``fuzz_reference.py``), no successful response in which two calls claimed
one id (refused, never merged) and, for chat, a usage keeping the last valid prompt count (never lost to a later
invalid one); for ``gemini`` (format given) the reading of ``fuzz_gemini.py`` (every call id the wire gave
is one call's, the others made; each usage count the last valid one sent). Seeds: the ``*.sse`` files of the in-repo
corpus ``tests/corpus/fixtures/sse`` (chat; messages and responses, with peers-formats, for those targets; a copy of
../shared/fixtures; for responses also ``tests/corpus/client-calls``, the calls a client runs) and
``tests/corpus/gemini-peers`` (``gemini``; in the repository only), read in place.
The ``proxy`` target (``fuzz_proxy.py``) takes one HTTP request as its input instead, with an oracle of its own; the
``repair`` target (``fuzz_repair.py``) holds the transport's repairers against the library's reading of the input.
New inputs go to a temporary directory (or ``--corpus DIR``), crash files to ``--artifacts DIR``; never the repo.
How a target is run (atheris, or the built-in loop) is ``fuzz_runner.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import reactivex

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file: make the repo's packages importable
    sys.path.insert(0, str(ROOT))

import pipeline  # noqa: E402
from operators import (  # noqa: E402
    BlockEnd,
    BlockStart,
    Chunk,
    Finish,
    Limits,
    ReasoningDelta,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
    detect_format,
    parse_sse,
)
from scripts.fuzz_fast_path import check_fast_path  # noqa: E402  (the default chain against the rule chain)
from scripts.fuzz_gemini import GEMINI_TOKENS, check_gemini_reference  # noqa: E402  (the gemini target's parts)
from scripts.fuzz_proxy import PROXY_TOKENS, check_proxy, proxy_seeds  # noqa: E402  (the proxy's request side)
from scripts.fuzz_reference import OracleFailure as OracleFailure  # noqa: E402  (re-exported: the oracle's failure)
from scripts.fuzz_reference import check_reference, ensure  # noqa: E402
from scripts.fuzz_repair import atheris_mutator, check_repair, mutator  # noqa: E402  (the repairers against the library's reading)
from scripts.fuzz_runner import MAX_LEN as MAX_LEN  # noqa: E402  (re-exported, with mutate: tests use them)
from scripts.fuzz_runner import TOKENS, atheris_child, fallback, run_atheris  # noqa: E402
from scripts.fuzz_runner import mutate as mutate  # noqa: E402

FIXTURES = ROOT / "tests" / "corpus" / "fixtures"  # the in-repo copy of ../shared/fixtures (tests/corpus/README.md)
CHAT_SEEDS = [FIXTURES / "sse" / "real", FIXTURES / "sse" / "peers"]
MESSAGES_SEEDS = [FIXTURES / "messages", FIXTURES / "peers-formats" / "messages"]
RESPONSES_SEEDS = [FIXTURES / "responses", FIXTURES / "peers-formats" / "responses",
                   ROOT / "tests" / "corpus" / "client-calls"]  # the calls a client runs (decision 0072)
GEMINI_SEEDS = [ROOT / "tests" / "corpus" / "gemini-peers"]  # the Gemini peer corpus: in the repository only
SEED_DIRS = CHAT_SEEDS + MESSAGES_SEEDS + RESPONSES_SEEDS
ONE_BYTE_SPLIT_UP_TO = 2048


SPLIT_DEPENDENT = {"payload-after-done"}  # reports only what arrived in the read carrying [DONE] (docs/operators.md)
_FROM_ENV = filter(None, os.environ.get("FUZZ_IGNORE_ANOMALIES", "").split(","))
IGNORED_ANOMALIES: set[str] = SPLIT_DEPENDENT | set(_FROM_ENV)
"""Anomaly kinds left out when splits are compared (``--ignore-anomaly``): to go on past a finding already reported."""


def comparable(values: list[Any]) -> list[Any]:
    return [
        value
        for value in values
        if getattr(value, "kind", None) not in IGNORED_ANOMALIES or type(value).__name__ != "Anomaly"
    ]




# -- what one input decides -------------------------------------------------------------------------------------------


def plan(data: bytes) -> tuple[Limits, list[list[bytes]]]:
    """The small ``Limits`` and the splits (besides the unsplit bytes) one input is checked under."""
    rng = random.Random(zlib.crc32(data))
    limits = Limits(
        max_event_bytes=rng.choice([16, 64, 512, 4096, 1 << 20]),
        max_arguments_bytes=rng.choice([1, 8, 64, 1024, 8 << 20]),
        max_text_bytes=rng.choice([1, 8, 64, 1024, 16 << 20]),
        max_tool_calls=rng.choice([1, 2, 3, 128]),
        max_error_body_bytes=rng.choice([16, 65536]),
        max_ignored_lines=rng.choice([1, 4, 100_000]),
    )
    splits: list[list[bytes]] = []
    if len(data) >= 2:
        cuts = sorted(rng.sample(range(1, len(data)), min(len(data) - 1, rng.randint(1, 16))))
        edges = [0, *cuts, len(data)]
        splits.append([data[a:b] for a, b in itertools.pairwise(edges)])
        if len(data) <= ONE_BYTE_SPLIT_UP_TO:
            splits.append([data[i : i + 1] for i in range(len(data))])
    return limits, splits


# -- the oracle -------------------------------------------------------------------------------------------------------


def run_translate(pieces: bytes | list[bytes], limits: Limits, format: Any = None) -> list[Chunk]:
    out: list[Chunk] = []
    errors: list[Exception] = []
    chunks = pipeline.translate(pieces, anomalies=True, limits=limits, format=format)
    chunks.subscribe(on_next=out.append, on_error=errors.append)
    if errors:
        raise errors[0]
    return out


def check_chunks(out: list[Chunk]) -> None:
    """The protocol's promises over one response's chunks (the same as tests/test_properties.py states)."""
    finishes = [position for position, chunk in enumerate(out) if isinstance(chunk, Finish)]
    ensure(finishes == [len(out) - 1], f"exactly one finish, and it is last (finishes at {finishes} of {len(out)})")
    usages = [position for position, chunk in enumerate(out) if isinstance(chunk, UsageChunk)]
    ensure(usages in ([], [len(out) - 2]), "at most one usage, right before the finish")
    started: dict[int, str] = {}
    ended: set[int] = set()
    tool_ids: set[str] = set()
    last_delta = -1
    first_end: int | None = None
    for position, chunk in enumerate(out):
        if isinstance(chunk, BlockStart):
            ensure(chunk.index not in started, f"block {chunk.index} starts once")
            started[chunk.index] = chunk.block_type
        elif isinstance(chunk, TextDelta | ReasoningDelta | ToolCallDelta):
            ensure(chunk.index in started, f"a block-start precedes the deltas of block {chunk.index}")
            ensure(chunk.index not in ended, f"no delta after the block-end of block {chunk.index}")
            last_delta = position
        elif isinstance(chunk, BlockEnd):
            ensure(started.get(chunk.index) == chunk.block.type, "a block-end closes a started block of its type")
            ensure(chunk.index not in ended, f"block {chunk.index} ends once")
            ended.add(chunk.index)
            first_end = position if first_end is None else first_end
            if isinstance(chunk.block, ToolCallBlock):
                ensure(bool(chunk.block.id) and bool(chunk.block.name), "no block-end for an unidentified tool call")
                ensure(chunk.block.id not in tool_ids, f"two tool-call block-ends share the id {chunk.block.id!r}")
                tool_ids.add(chunk.block.id)
    ensure(first_end is None or first_end > last_delta, "block-ends only after all deltas")
    for chunk in out:
        try:
            json.dumps(chunk.to_dict(), allow_nan=False)
        except ValueError as error:
            raise OracleFailure(f"{type(chunk).__name__}.to_dict() is not strict JSON: {error}") from error


def check_translate(data: bytes, format: Any = None) -> None:
    """The pipeline's promises, the same chunks under every split, and the output against the input's own reading
    (``check_reference``: ids never merged, usage never lost to an invalid count) when the format is known."""
    limits, splits = plan(data)
    whole = run_translate(data, limits, format)
    check_chunks(whole)
    for pieces in splits:
        ensure(
            comparable(run_translate(pieces, limits, format)) == comparable(whole),
            f"a split into {len(pieces)} reads gives other chunks",
        )
    if format is None and len(data) <= limits.max_event_bytes:  # detection then reads exactly these lines
        format = detect_format(data) or detect_format(data + b"\n") or "chat"
    if format is not None:
        (check_gemini_reference if format == "gemini" else check_reference)(data, whole, format)


def check_messages(data: bytes) -> None:
    check_translate(data, "messages")


def check_responses(data: bytes) -> None:
    check_translate(data, "responses")


def check_gemini(data: bytes) -> None:
    check_translate(data, "gemini")


def run_parse_sse(pieces: list[bytes], limits: Limits) -> list[Any]:
    out: list[Any] = []
    errors: list[Exception] = []
    reactivex.from_iterable(pieces).pipe(parse_sse(limits)).subscribe(on_next=out.extend, on_error=errors.append)
    if errors:
        raise errors[0]
    return out


def check_parse_sse(data: bytes) -> None:
    limits, splits = plan(data)
    whole = run_parse_sse([data], limits)
    ends = [position for position, signal in enumerate(whole) if type(signal).__name__ in ("Done", "Halt")]
    ensure(ends == [len(whole) - 1], f"exactly one Done or Halt, and it is last (at {ends} of {len(whole)})")
    for pieces in splits:
        ensure(
            comparable(run_parse_sse(pieces, limits)) == comparable(whole),
            f"a split into {len(pieces)} reads gives other signals",
        )


TARGETS: dict[str, Callable[[bytes], None]] = {
    "translate": check_translate,
    "parse_sse": check_parse_sse,
    "messages": check_messages,
    "responses": check_responses,
    "gemini": check_gemini,
    "fast_path": lambda data: check_fast_path(data, plan),
    "proxy": check_proxy,
    "repair": check_repair,
}
TARGET_SEEDS = {
    "parse_sse": CHAT_SEEDS, "translate": CHAT_SEEDS, "messages": MESSAGES_SEEDS, "responses": RESPONSES_SEEDS,
    "gemini": GEMINI_SEEDS, "fast_path": SEED_DIRS + GEMINI_SEEDS, "repair": SEED_DIRS + GEMINI_SEEDS,
}
"""The seed folders of each target (under atheris the seed pass dominates a short run: each target reads its own)."""
TARGET_TOKENS = {"proxy": PROXY_TOKENS, "gemini": GEMINI_TOKENS}
"""What the built-in loop inserts, by target (the SSE tokens for the others)."""


# -- seeds and the fallback loop --------------------------------------------------------------------------------------


def seed_files(target: str = "translate") -> list[Path]:
    return sorted(path for folder in TARGET_SEEDS.get(target, []) if folder.is_dir() for path in folder.rglob("*.sse"))


def seed_inputs(target: str) -> list[bytes]:
    """The seeds of a target: its fixture files' bytes, or (``proxy``) the requests ``fuzz_proxy`` writes."""
    if target == "proxy":
        return proxy_seeds()
    return [path.read_bytes()[:MAX_LEN] for path in seed_files(target)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--target", choices=sorted(TARGETS), required=True)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz (libFuzzer -max_total_time)")
    parser.add_argument("--rss-limit-mb", type=int, default=2048)
    parser.add_argument("--corpus", help="where new inputs go (default: a fresh temporary directory)")
    parser.add_argument("--artifacts", help="where crash files go (default: a fresh temporary directory)")
    parser.add_argument("--no-atheris", action="store_true", help="use the built-in mutation loop even with atheris")
    parser.add_argument(
        "--ignore-anomaly",
        action="append",
        default=[],
        metavar="KIND",
        help="leave this anomaly kind out when splits are compared (a finding already reported)",
    )
    parser.add_argument("--reproduce", metavar="FILE", help="run the oracle once on FILE's bytes")
    parser.add_argument("--atheris-child", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ignore_anomaly:  # the environment carries it to the atheris child
        os.environ["FUZZ_IGNORE_ANOMALIES"] = ",".join(args.ignore_anomaly)
        IGNORED_ANOMALIES.update(args.ignore_anomaly)
    if args.atheris_child is not None:
        atheris_child(TARGETS[args.target], args.atheris_child, atheris_mutator if args.target == "repair" else None)
        return 0
    if args.reproduce:
        data = Path(args.reproduce).read_bytes()
        TARGETS[args.target](data)
        print(f"fuzz: target={args.target} {args.reproduce}: the oracle holds ({len(data)} bytes)")
        return 0
    artifacts = Path(args.artifacts) if args.artifacts else Path(tempfile.mkdtemp(prefix="fuzz-artifacts-"))
    try:
        import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]  # noqa: F401
    except ImportError:
        args.no_atheris = True
    if args.no_atheris:
        tokens = TARGET_TOKENS.get(args.target, TOKENS)
        return fallback(args.target, TARGETS[args.target], seed_inputs(args.target), tokens, args.seconds, artifacts,
                        mutator if args.target == "repair" else mutate)
    corpus = Path(args.corpus) if args.corpus else Path(tempfile.mkdtemp(prefix=f"fuzz-{args.target}-corpus-"))
    written = proxy_seeds() if args.target == "proxy" else []  # generated seeds: into the corpus, for libFuzzer
    return run_atheris(Path(__file__).resolve(), args.target, seconds=args.seconds, rss_limit_mb=args.rss_limit_mb,
                       corpus=corpus, artifacts=artifacts, seed_dirs=TARGET_SEEDS.get(args.target, []), seeds=written)


if __name__ == "__main__":
    sys.exit(main())
