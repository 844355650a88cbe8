"""How ``scripts/fuzz.py`` runs a target: under atheris (libFuzzer, in a child process, coverage-guided over every
loaded Python function) or the built-in mutation loop (no atheris, or ``--no-atheris``), each with the target's seeds
and its own tokens to insert. A crash (an ``OracleFailure`` or any other exception) writes the input to the artifacts
directory and fails the run.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["MAX_LEN", "TOKENS", "atheris_child", "crash", "fallback", "mutate", "run_atheris"]

MAX_LEN = 65536
Check = Callable[[bytes], None]

TOKENS = [
    b"data: ",
    b"data:",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"[DONE]",
    b"event: error\n",
    b": c\n",
    b"\xef\xbb\xbf",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b",",
    b"null",
    b"1e999",
    b"-1",
    b'"index":0',
    b'"id":"c"',
    b'"tool_calls":[',
    b'"finish_reason":"stop"',
    b'"usage":{"prompt_tokens":',
    b'"error":{"message":"x"}',
    b"\xc3",
    b"\xff",
    b"event: content_block_start\n",
    b'"type":"tool_use","id":"t"',
    b'"type":"function_call","call_id":"c"',
    b'"output_index":1',
    b'"index":1',
    b'"usage":{"input_tokens":-3}',
    b'"prompt_tokens":-3',
]
"""SSE-shaped pieces the built-in loop inserts (the SSE targets)."""


def mutate(rng: random.Random, data: bytes, seeds: list[bytes], tokens: Sequence[bytes] = TOKENS) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        at = rng.randint(0, len(buf))
        op = rng.randrange(6)
        if op == 0 and buf:
            buf[min(at, len(buf) - 1)] = rng.randrange(256)
        elif op == 1:
            buf[at:at] = rng.choice(tokens)
        elif op == 2 and buf:
            del buf[at : at + rng.randint(1, 32)]
        elif op == 3:
            other = rng.choice(seeds)
            start = rng.randint(0, len(other))
            buf[at:at] = other[start : start + rng.randint(1, 256)]
        elif op == 4 and buf:
            start = rng.randint(0, len(buf) - 1)
            buf[at:at] = buf[start : start + rng.randint(1, 64)] * rng.randint(1, 40)
        else:
            del buf[at:]
    return bytes(buf[:MAX_LEN])


def crash(target: str, data: bytes, artifacts: Path) -> int:
    artifacts.mkdir(parents=True, exist_ok=True)
    path = artifacts / f"crash-{target}-{zlib.crc32(data):08x}"
    path.write_bytes(data)
    traceback.print_exc()
    print(f"fuzz: CRASH target={target} input={path} ({len(data)} bytes): {data[:300]!r}", flush=True)
    return 1


def fallback(target: str, check: Check, seeds: list[bytes], tokens: Sequence[bytes], seconds: float,
             artifacts: Path, mutation: Callable[..., bytes] = mutate) -> int:
    """Every seed, then mutations of them (``mutation(rng, seed, seeds, tokens)``) until ``seconds`` have passed; the
    first failure is a crash."""
    print("fuzz: running the built-in mutation loop (atheris not importable, or --no-atheris); same oracle", flush=True)
    seeds = [seed[:MAX_LEN] for seed in seeds] or [b"data: [DONE]\n\n"]
    rng = random.Random(0)
    runs, start = 0, time.monotonic()
    while time.monotonic() - start < seconds:
        data = seeds[runs] if runs < len(seeds) else mutation(rng, rng.choice(seeds), seeds, tokens)
        runs += 1
        try:
            check(data)
        except Exception:
            return crash(target, data, artifacts)
    print(f"fuzz: target={target} inputs={runs} seconds={time.monotonic() - start:.0f} crashes=0", flush=True)
    return 0


def atheris_child(check: Check, libfuzzer_args: list[str], mutator: Callable[[bytes, int, int], bytes] | None = None
                  ) -> None:
    """libFuzzer over ``check``; ``mutator`` (``(data, max_size, seed) -> bytes``) replaces its byte mutations."""
    import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]

    atheris.instrument_all()  # coverage feedback from every loaded Python function (operators, pipeline, reactivex)
    extra = {"custom_mutator": mutator} if mutator is not None else {}
    atheris.Setup([sys.argv[0], *libfuzzer_args], check, **extra)
    atheris.Fuzz()


def run_atheris(script: Path, target: str, *, seconds: float, rss_limit_mb: int, corpus: Path, artifacts: Path,
                seed_dirs: list[Path], seeds: list[bytes]) -> int:
    """libFuzzer in a child process (``script --target T --atheris-child ...``): new inputs go to ``corpus`` (where
    ``seeds`` are written first), seeds are also read in place from ``seed_dirs``."""
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        (corpus / f"seed-{zlib.crc32(seed):08x}").write_bytes(seed[:MAX_LEN])
    libfuzzer = [
        f"-max_total_time={int(seconds)}",
        f"-rss_limit_mb={rss_limit_mb}",
        f"-max_len={MAX_LEN}",
        f"-artifact_prefix={artifacts}/crash-{target}-",
        "-print_final_stats=1",
        str(corpus),
        *(str(folder) for folder in seed_dirs if folder.is_dir()),
    ]
    command = [sys.executable, str(script), "--target", target, "--atheris-child", *libfuzzer]
    started = time.monotonic()
    child = subprocess.run(command, stderr=subprocess.PIPE, text=True, errors="replace", check=False)
    sys.stderr.write(child.stderr[-20000:] if child.returncode else "")
    units = re.findall(r"stat::number_executed_units:\s*(\d+)", child.stderr)
    units = units or re.findall(r"^#(\d+)", child.stderr, re.MULTILINE)  # a crash prints no final stats
    runs = units[-1] if units else "?"
    crashed = child.returncode != 0
    print(
        f"fuzz: atheris target={target} inputs={runs} seconds={time.monotonic() - started:.0f} "
        f"crashes={int(crashed)} corpus={corpus} artifacts={artifacts}",
        flush=True,
    )
    return 1 if crashed else 0
