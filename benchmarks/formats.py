"""One row per wire format and read size: bytes -> chunks over the json.loads floor, on a generated stream of each.

    python -m benchmarks.formats [--events 9000] [--rounds 15] [--instructions] [--peers]

Each stream carries the same response (``_format_streams.py``): ``--events`` text deltas, one tool call in 40
fragments (Gemini's whole, in one part), the usage and the finish, in each format's own vocabulary. Rows: every format
in 4 KB reads, and every format one event per read (how a live stream arrives). The floor is ``json.loads`` of every
``data:`` payload of that stream (the least any reader must do: no framing counted); the row is
``pipeline.collect(pieces, format=...)``.

Timing: ``--rounds`` interleaved rounds; in each, every row runs its floor and then ours back to back (gc off while
timed), so load from other processes hits both alike. Reported: the medians of the floor and of ours, and the median
and the range of the per-round ratios. ``--instructions`` adds valgrind's instruction counts per event (one run each,
``_instructions.py``); ``--peers`` the accumulators of the SDKs (``_format_peers.py``) over ours bytes -> assembled.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import pipeline
from benchmarks._format_streams import GENERATORS, fragments, payloads, texts
from benchmarks._format_streams import chat as chat  # re-exported: the streams (benchmarks.format_repair uses them)
from benchmarks._format_streams import messages as messages
from benchmarks._format_streams import responses as responses
from benchmarks._timing import split, timed
from operators import Finish

ROWS: list[tuple[str, str]] = [(name, read) for read in ("4k", "event") for name in GENERATORS]
GOALS: dict[tuple[str, str], float] = {
    ("chat", "4k"): 0.4, ("messages", "4k"): 0.5, ("responses", "4k"): 0.5, ("gemini", "4k"): 0.5,
    ("chat", "event"): 0.8, ("messages", "event"): 0.8, ("responses", "event"): 0.8, ("gemini", "event"): 0.8,
}
"""Issue 34: the most each row may cost, as a multiple of its floor (median of interleaved rounds)."""


def check(name: str, events: int, pieces: list[bytes]) -> None:
    """The row assembles the response its generator wrote (text, tool call, finish)."""
    chunks = pipeline.collect(pieces, format=name)  # type: ignore[arg-type]
    message = pipeline.assemble(chunks)
    finish = chunks[-1]
    assert isinstance(finish, Finish), (name, finish)
    assert finish.reason.kind == "tool-calls", (name, finish)
    assert message.text == "".join(texts(events)), name
    arguments = message.tool_calls[0].arguments
    if name == "gemini":  # Gemini sends the arguments as one JSON object: compared as JSON, not as the fragments' text
        assert json.loads(arguments) == json.loads("".join(fragments())), name
    else:
        assert arguments == "".join(fragments()), name


def measure(events: int, rounds: int, rows: list[tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """One dict per row: format, read, events, bytes, the floor's and ours' median seconds, the ratio's median and
    range over the rounds."""
    chosen = ROWS if rows is None else rows
    work = []
    for name, read in chosen:
        data = GENERATORS[name](events)
        pieces = split(data, read)
        assert b"".join(pieces) == data
        check(name, events, pieces)
        loads = payloads(data)
        work.append((name, read, data, lambda loads=loads: [json.loads(p) for p in loads],
                     lambda pieces=pieces, name=name: pipeline.collect(pieces, format=name)))
    times: list[tuple[list[float], list[float]]] = [([], []) for _ in work]
    for round_ in range(rounds):
        for position in range(len(work)):
            at = (position + round_) % len(work)  # rotated, so no row always runs first
            floor_times, our_times = times[at]
            floor_times.append(timed(work[at][3]))
            our_times.append(timed(work[at][4]))
    rows_out = []
    for (name, read, data, _, _), (floor_times, our_times) in zip(work, times, strict=True):
        ratios = [ours / floor for ours, floor in zip(our_times, floor_times, strict=True)]
        rows_out.append({
            "format": name, "read": read, "events": len(payloads(data)), "bytes": len(data),
            "floor_s": statistics.median(floor_times), "ours_s": statistics.median(our_times),
            "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
        })
    return rows_out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=9000, help="text deltas per stream (default 9000)")
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    parser.add_argument("--instructions", action="store_true", help="valgrind instruction counts (~1-2 min)")
    parser.add_argument("--peers", action="store_true", help="the SDKs' accumulators over ours bytes -> assembled")
    args = parser.parse_args(argv)
    print(f"bytes -> chunks per wire format: medians of {args.rounds} interleaved rounds "
          "(floor = json.loads of every data: payload)")
    print(f"  {'format':<10} {'read':<6} {'events':>7} {'MB':>6} {'floor ms':>9} {'ours ms':>9} {'x floor':>8}"
          f" {'range':>11}  goal")
    for row in measure(args.events, args.rounds):
        goal = GOALS.get((row["format"], row["read"]))
        verdict = "" if goal is None else f"<= {goal}: {'PASS' if row['ratio'] <= goal else 'MISS'}"
        print(f"  {row['format']:<10} {row['read']:<6} {row['events']:>7,} {row['bytes'] / 1e6:>6.2f} "
              f"{row['floor_s'] * 1e3:>9.2f} {row['ours_s'] * 1e3:>9.2f} {row['ratio']:>8.2f} "
              f"{row['ratio_min']:>5.2f}-{row['ratio_max']:<5.2f}  {verdict}")
    if args.instructions:
        from benchmarks import _instructions

        if not _instructions.available():
            print("instructions: valgrind not found; skipped")
        else:
            events = min(args.events, 2000)
            counts = _instructions.measure(events, ROWS)
            print(f"instructions per event (callgrind, {events:,} text deltas, one counted run each):")
            for name, read in ROWS:
                floor, ours = counts.get(f"{name} {read} floor"), counts.get(f"{name} {read} ours")
                if floor and ours:
                    n = len(payloads(GENERATORS[name](events)))
                    print(f"  {name:<10} {read:<6} floor {floor / n:>8,.0f}  ours {ours / n:>8,.0f}  "
                          f"x floor {ours / floor:.2f}")
    if args.peers:
        from benchmarks import _format_peers

        _format_peers.report(args.events, max(3, args.rounds // 3))


if __name__ == "__main__":
    main()
