"""The ``repair`` fuzz target: the repairers checked against the library's own reading, on any bytes (issue 30).

    python scripts/fuzz.py --target repair --seconds 60          # the fuzz target (built-in loop or atheris)
    python scripts/fuzz_repair.py --inputs 3000 --seed 1         # the held-out check: counts per format

One input is one upstream body (chat, Messages, Responses or Gemini). Its format is the one ``detect_format`` names
(chat when none: a Gemini stream that opens with its in-band error is read as chat); the read sizes are
drawn from a PRNG seeded with the input's CRC-32, so an input file replays exactly. The body goes through that
format's repairer (the ``StreamRepair`` the transport builds, ``pipeline/sanitize/_formats.py``) as the transport
drives it (``transported``): read by read until the repairer has a finish, then ``close()``; a failure before any byte
was released is the transport's HTTP error. The oracle (``check_repair``): the library's reading of what the client
gets (``pipeline.collect(bytes, format=...)``, assembled: text, reasoning, each call's id, name, kind and arguments, the
finish kind) equals its reading of the upstream's own bytes, or both are errors; for the whole body in one read, for
the drawn read sizes and (up to 2 KiB) one byte per read. The mutator is ``fuzz_repair_mutate.py``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a file: make the repo's packages importable
    sys.path.insert(0, str(ROOT))

import pipeline  # noqa: E402
from operators import detect_format  # noqa: E402
from pipeline.sanitize._formats import STREAM_FORMATS  # noqa: E402  (the transport's choice of repairer)
from scripts.fuzz_reference import OracleFailure  # noqa: E402
from scripts.fuzz_repair_mutate import mutate_stream  # noqa: E402

__all__ = ["FORMAT_SEEDS", "atheris_mutator", "check_repair", "disagreement", "mutator", "read_sizes", "reading",
           "repair_seeds", "survey", "transported"]

FIXTURES = ROOT / "tests" / "corpus" / "fixtures"  # the in-repo copy of ../shared/fixtures (tests/corpus/README.md)
FORMAT_SEEDS: dict[str, list[Path]] = {
    "chat": [FIXTURES / "sse" / "real", FIXTURES / "sse" / "peers"],
    "messages": [FIXTURES / "messages", FIXTURES / "peers-formats" / "messages"],
    "responses": [FIXTURES / "responses", FIXTURES / "peers-formats" / "responses",
                  ROOT / "tests" / "corpus" / "client-calls"],  # the calls a client runs (decision 0072)
    "gemini": [ROOT / "tests" / "corpus" / "gemini-peers"],  # in the repository only
}
MAX_SEED = 65536
Reading = tuple[Any, ...]
HTTP_ERROR = b"<the transport's HTTP error>"
"""What ``transported`` gives for a failure found before the repairer released a byte (an HTTP error response)."""


def reading(body: bytes, format: str) -> Reading:
    """The library's reading of ``body``: ``("error", code)``, or ``(text, reasoning, calls, finish kind)``, each call
    its id, name, kind and arguments."""
    try:
        message = pipeline.assemble(pipeline.collect(body, format=format))  # type: ignore[arg-type]
    except Exception as exc:  # the library never raises here; if it does, that is a reading too
        return ("raised", type(exc).__name__)
    finish = message.finish
    if finish.kind == "error":
        return ("error", finish.failure.code if finish.failure is not None else None)
    calls = tuple((c.id, c.name, c.kind, c.arguments) for c in message.tool_calls)
    return (message.text, message.reasoning, calls, finish.kind)


def transported(body: bytes, format: str, sizes: list[int]) -> bytes:
    """What the client gets for ``body`` read in pieces of ``sizes`` (cycled), driven as ``_bodies.py`` drives the
    repairer: ``HTTP_ERROR`` for a failure before the first released byte, else every byte released."""
    repair = next(f for f in STREAM_FORMATS if f.name == format).repair(limits=None, api_key=None, strict=False)
    out: list[bytes] = []
    start, turn = 0, 0
    while True:
        if start < len(body):
            size = sizes[turn % len(sizes)]
            piece = repair.feed(body[start : start + size])
            start, turn = start + size, turn + 1
            ended = False
        else:
            piece, ended = repair.close(), True
        if not repair.forwarded and (ended or repair.finish is not None or repair.failure is not None):
            if repair.failure is not None:
                return HTTP_ERROR
            return piece if not out else b"".join([*out, piece])
        out.append(piece)
        if piece:
            repair.forwarded = True
        if ended or repair.finish is not None:
            return b"".join(out)


def read_sizes(data: bytes) -> list[list[int]]:
    """The read plans one input is checked under: the whole body, sizes drawn from its CRC-32 and (inputs up to 2 KiB)
    one byte per read."""
    rng = random.Random(zlib.crc32(data))
    plans = [[max(1, len(data))]]
    kind = rng.randrange(3)
    if kind == 0:
        plans.append([rng.choice([1, 2, 3, 7, 17, 64, 256, 1024])])
    elif kind == 1:
        plans.append([rng.randint(1, 300) for _ in range(rng.randint(1, 12))])
    else:
        cut = rng.randint(1, max(1, len(data)))
        plans.append([cut, max(1, len(data))])  # one cut anywhere
    if len(data) <= 2048:
        plans.append([1])  # one byte per read
    return plans


def disagreement(data: bytes, format: str) -> str | None:
    """Why the repaired bytes read differently from ``data`` (``None`` when they agree, at every read plan)."""
    original = reading(data, format)
    for sizes in read_sizes(data):
        out = transported(data, format, sizes)
        repaired = ("error", "HTTP") if out == HTTP_ERROR else reading(out, format)
        if repaired[0] == "raised" or original[0] == "raised":
            return f"reads {sizes[:4]}: the library raised: original {original}, repaired {repaired}"
        if (original[0] == "error") != (repaired[0] == "error") or (original[0] != "error" and original != repaired):
            return f"reads {sizes[:4]}: original {_shown(original)} != repaired {_shown(repaired)}"
    return None


def _shown(value: Reading) -> str:
    text = repr(value)
    return text if len(text) < 400 else text[:400] + "..."


def _format_of(data: bytes) -> str:
    return detect_format(data[:65536]) or "chat"


def check_repair(data: bytes, format: str | None = None) -> None:
    """The oracle: raises ``OracleFailure`` naming the disagreement."""
    found = disagreement(data, format or _format_of(data))
    if found is not None:
        raise OracleFailure(f"the repaired bytes read differently ({format or _format_of(data)}): {found}")


def repair_seeds(format: str | None = None) -> list[bytes]:
    folders = FORMAT_SEEDS[format] if format else [f for fs in FORMAT_SEEDS.values() for f in fs]
    paths = [path for folder in folders if folder.is_dir() for path in sorted(folder.glob("*.sse"))]
    return [path.read_bytes()[:MAX_SEED] for path in paths]


def mutator(rng: random.Random, data: bytes, seeds: list[bytes], tokens: Any = None) -> bytes:
    """The built-in loop's mutation (``fuzz_runner.fallback``): the structured mutator."""
    return mutate_stream(rng, data)


def atheris_mutator(data: bytes, max_size: int, seed: int) -> bytes:
    """libFuzzer's mutation for this target: the structured mutator, and now and then its own byte mutation."""
    rng = random.Random(seed)
    if rng.random() < 0.25:
        import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

        return bytes(atheris.Mutate(data, max_size))
    return mutate_stream(rng, data)[:max_size]


def survey(format: str, inputs: int, seed: int, out: Path | None) -> tuple[int, float, Counter[str]]:
    """The held-out check: ``inputs`` mutated copies of the format's seeds; (inputs, seconds, disagreements by
    their first words)."""
    rng = random.Random(seed)
    seeds = repair_seeds(format)
    found: Counter[str] = Counter()
    started = time.monotonic()
    for _ in range(inputs):
        data = mutate_stream(rng, rng.choice(seeds))
        why = disagreement(data, format)
        if why is not None:
            found[why.split(": ", 1)[1][:70]] += 1
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"{format}-{zlib.crc32(data):08x}.sse").write_bytes(data)
    return inputs, time.monotonic() - started, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="the held-out differential check of the repairers")
    parser.add_argument("--inputs", type=int, default=3000, help="mutated inputs per format")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--format", action="append", choices=sorted(FORMAT_SEEDS))
    parser.add_argument("--out", help="write each disagreeing input here")
    args = parser.parse_args(argv)
    failed = 0
    for format in args.format or sorted(FORMAT_SEEDS):
        runs, seconds, found = survey(format, args.inputs, args.seed, Path(args.out) if args.out else None)
        total = sum(found.values())
        failed += total
        print(f"repair: format={format} inputs={runs} seconds={seconds:.1f} rate={runs / seconds:.0f}/s "
              f"disagreements={total}", flush=True)
        for why, count in found.most_common(12):
            print(f"  {count:5d}  {why}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
