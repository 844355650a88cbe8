"""The CPU the Messages and Responses repairers add per event (issue 20: at most 2 us), on ``benchmarks.formats``'
generated streams (``--events`` text deltas, a tool call in 40 fragments, the finish), fed in 4 KB reads and one
event per read (as a slow upstream delivers them).

    python -m benchmarks.format_repair [--events 9000] [--rounds 9]

Rounds interleave the formats and the library's own parse chain (``pipeline.collect(format=...)``, for scale); each
row is the median of the rounds (and the repair's best round: on a shared machine the median moves with the load),
gc off while timed, per event of the stream.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable

import pipeline
from pipeline.sanitize import MessagesRepair, ResponsesRepair
from pipeline.sanitize._event_repair import EventRepair

from . import formats
from ._timing import timed

PIECE = 4096


def _repair(make: Callable[[], EventRepair], pieces: list[bytes]) -> Callable[[], object]:
    def run() -> object:
        repair = make()
        out = [repair.feed(piece) for piece in pieces]
        out.append(repair.close())
        assert repair.failure is None
        return out

    return run


def measure(events: int, rounds: int) -> list[dict[str, object]]:
    rows = []
    cases = []
    for name, make, build in (("messages", MessagesRepair, formats.messages),
                              ("responses", ResponsesRepair, formats.responses)):
        body = build(events)
        count = body.count(b"\n\n")
        for reads, pieces in (("4 KB", [body[i : i + PIECE] for i in range(0, len(body), PIECE)]),
                              ("1 event", [part + b"\n\n" for part in body.split(b"\n\n")[:-1]])):
            parse = lambda pieces=pieces, name=name: pipeline.collect(pieces, format=name)  # noqa: E731
            cases.append((f"{name}, {reads} reads", count, _repair(make, pieces), parse))
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name, *_ in cases}
    for _ in range(rounds):
        for name, _count, repair, parse in cases:
            times[name][0].append(timed(repair))
            times[name][1].append(timed(parse))
    for name, count, *_ in cases:
        repair_s, parse_s = (statistics.median(t) for t in times[name])
        rows.append({"format": name, "events": count, "repair_us_per_event": repair_s / count * 1e6,
                     "repair_best_us_per_event": min(times[name][0]) / count * 1e6,
                     "parse_chain_us_per_event": parse_s / count * 1e6})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.format_repair")
    parser.add_argument("--events", type=int, default=9000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args(argv)
    for row in measure(args.events, args.rounds):
        print(f"{row['format']:26} {row['events']:6} events  repair {row['repair_us_per_event']:.2f} us/event "
              f"(best round {row['repair_best_us_per_event']:.2f})  "
              f"library parse chain {row['parse_chain_us_per_event']:.2f} us/event")


if __name__ == "__main__":
    main()
