"""The report of ``benchmarks.proxy``: its tables, and the proxy's goals (issue 34) with PASS / MISS."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["FIRST_EVENTS", "GOALS", "goals", "print_report"]

GOALS = {"first_event_added_p50_ms": 1.0, "cpu_added_us": 1.0, "lateness_p99_ratio": 2.0}
"""The proxy's goals (issue 34): added first-event delay at p50, added CPU per event forwarded (the throughput
stream), p99 lateness at the concurrent streams over direct's."""
FIRST_EVENTS = 3
"""Text events of the first-event stream."""


def _added_cpu_us(rows: dict[str, tuple[float, ...]], name: str) -> float:
    """The CPU per event a path adds to direct's: the client's difference, plus the proxy's own on the proxy path."""
    _, events, cpu, proxy_cpu = rows[name]
    added = (cpu - rows["direct"][2]) / events * 1e6
    return added + (proxy_cpu / events * 1e6 if name == "proxy" else 0.0)


def goals(report: dict[str, Any], concurrent: int) -> list[tuple[str, str, bool]]:
    """The proxy's goals: (what, measured, met)."""
    first = report["first_event"]
    added_p50 = first["proxy"][0] - first["direct"][0]
    cpu = _added_cpu_us(report["throughput"], "proxy")
    late = report[f"latency_{concurrent}"]
    ratio = late["proxy"][1] / late["direct"][1]
    return [
        (f"proxy first-event delay, added p50 <= {GOALS['first_event_added_p50_ms']:g} ms", f"{added_p50:+.2f} ms",
         added_p50 <= GOALS["first_event_added_p50_ms"]),
        (f"proxy CPU per event forwarded, added <= {GOALS['cpu_added_us']:g} us", f"{cpu:+.2f} us",
         cpu <= GOALS["cpu_added_us"]),
        (f"proxy p99 lateness at {concurrent} streams <= {GOALS['lateness_p99_ratio']:g}x direct", f"{ratio:.2f}x",
         ratio <= GOALS["lateness_p99_ratio"]),
    ]


def print_report(report: dict[str, Any], args: argparse.Namespace) -> None:
    d50, d99 = report["first_event"]["direct"]
    print(f"first event (ms from the request sent; {args.first_runs} runs of {FIRST_EVENTS} events every "
          f"{args.drip_ms:g} ms, paths in turn)")
    for name, (p50, p99) in report["first_event"].items():
        added = "" if name == "direct" else f"   added p50 {p50 - d50:+7.3f}  p99 {p99 - d99:+8.3f}"
        print(f"  {name:<10} p50 {p50:7.3f}  p99 {p99:8.3f}{added}")
    print(f"event lateness (ms after its place in the schedule; {args.events} events every {args.drip_ms:g} ms)")
    for key in (k for k in report if k.startswith("latency_")):
        streams = key.split("_")[1]
        d50, d99 = report[key]["direct"]
        for name, (p50, p99) in report[key].items():
            added = "" if name == "direct" else f"   added p50 {p50 - d50:+7.3f}  p99 {p99 - d99:+8.3f}"
            print(f"  {streams:>3} stream(s)  {name:<10} p50 {p50:7.3f}  p99 {p99:8.3f}{added}"
                  f"{'' if name == 'direct' else f'   p99 x direct {p99 / d99:5.2f}'}")
    for key, events, how in (("throughput", args.big, "no pause"),
                             ("per_read", args.big_event, "one event per write, no pause")):
        rows = report[key]
        direct_s = rows["direct"][0]
        print(f"throughput and CPU ({events:,} text events, {how}; medians of {args.rounds} interleaved rounds)")
        for name, (seconds, count, cpu, proxy_cpu) in rows.items():
            print(f"  {name:<10} {seconds:6.3f} s  {count / seconds:10,.0f} events/s   time ratio to direct "
                  f"{seconds / direct_s:5.2f}   client CPU {cpu / count * 1e6:5.2f} us/event   proxy CPU "
                  f"{proxy_cpu / count * 1e6:5.2f} us/event   added CPU {_added_cpu_us(rows, name):+5.2f} us/event")
    print(f"ChatRepair alone, one event per read: {report['repair_us']:.2f} us/event (median of {args.rounds})")
    print("goals (issue 34)")
    for what, measured, met in goals(report, args.concurrent):
        print(f"  {what:<55} {measured:>10}  {'PASS' if met else 'MISS'}")
