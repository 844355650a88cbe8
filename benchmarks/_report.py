"""The report of a run: the table, the passes, memory and concurrency, the checks, and the targets with PASS / MISS
(``evaluate_targets``; a missed target does not change the exit code, a wrong result does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks._passes import CONSTRUCTION_CHAINS
from benchmarks._rows import Results

__all__ = ["evaluate_targets", "report", "table"]

LINEARITY_SPREAD = 1.25
"""us/event counts as constant when max/min across stream lengths is at most this."""


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(results: Results) -> str:
    header = (f"{'size':7} {'row':42} {'events':>8} {'MB':>6} {'median ms':>9} {'events/s':>11} {'MB/s':>7} "
              f"{'us/event':>9} {'x floor':>8} {'x ours':>7} {'runs':>4}  ok  note")
    lines = [header, "-" * len(header)]
    previous = ""
    for row in results.rows:
        if previous and row.size != previous:
            lines.append("")
        previous = row.size
        seconds = row.seconds
        rate = None if seconds is None else row.events / seconds
        mbps = None if seconds is None else row.nbytes / seconds / 1e6
        ok = row.ok if row.ok.startswith("✗") else (row.ok or "")
        lines.append(
            f"{row.size:7} {row.name:42} {row.events:>8,} {row.nbytes / 1e6:>6.2f} "
            f"{_fmt(None if seconds is None else seconds * 1e3, '>9.2f')} "
            f"{_fmt(rate, '>11,.0f')} {_fmt(mbps, '>7.1f')} {_fmt(row.us_per_event, '>9.2f')} "
            f"{_fmt(row.ratio_floor, '>8.2f')} {_fmt(row.ratio_ours, '>7.1f')} {row.runs:>4}  "
            f"{ok:2}  {row.note}"
        )
    return "\n".join(lines)


def report(results: Results) -> str:
    out: list[str] = []
    m = results.machine
    out.append(f"machine: {m['uname']}")
    out.append(f"cpu: {m['cpu']} ({m['cores']} cores); python {m['python']}; {m['date']}")
    out.append(
        f"load average (1, 5, 15 min): {m['load_at_start']} at the start, {m.get('load_at_end', '?')} at the end"
    )
    out.append(f"settings: {results.settings}")
    out.append("")
    out.append("corpora (seeded; one response each: text deltas, tool calls with seed-style continuations, usage):")
    for c in results.corpora:
        out.append(
            f"  {c['name']:7} {c['events']:>8,} events {c['bytes']:>12,} bytes ({c['bytes_per_event']:.0f} B/event), "
            f"text {c['text_bytes']:,} B, {c['tool_calls']} tool calls with {c['arguments_bytes']:,} B of arguments"
        )
    out.append("")
    out.append("throughput (median of N interleaved runs, gc off while timed; every row reads the same 4 KB pieces "
               "from memory;")
    out.append("  'x floor' = time / floor json.loads time; 'x ours' = time / ours bytes->assembled time)")
    out.append(table(results))
    out.append("")
    o = results.overhead
    if o:
        out.append(
            f"Rx per-event overhead, whole chain (5 operators + to_chunks), on {o['size']} ({o['events']:,} events in "
            f"{o['batches']:,} reads of 4 KB), median of {o['runs']} interleaved runs:"
        )
        if "translate_minus_direct_us_per_event" in o:
            out.append(
                f"  method 1: translate {o['translate_ms']:.2f} ms - the same stages without Rx {o['direct_ms']:.2f} ms"
                f" = {o['translate_minus_direct_us_per_event']:.3f} us/event"
            )
        out.append(
            f"  method 2: identity chain of the same shape ({o['chunks_per_batch']} chunks a read) with Rx - without ="
            f" {o['identity_chain_us_per_batch']:.2f} us/read = {o['identity_chain_us_per_event']:.3f} us/event"
        )
    c = results.construction
    if c:
        out.append(
            f"chain construction (translate(b''), average of {CONSTRUCTION_CHAINS:,}): build "
            f"{c['build_ms'] * 1e3:.1f} us, build + subscribe + run to its finish {c['whole_ms'] * 1e3:.1f} us"
        )
    lin = results.linearity
    if lin.get("points"):
        points = ", ".join(f"{p['events']:,} events {p['us_per_event']:.2f}" for p in lin["points"])
        out.append(f"linearity (ours bytes->chunks, us/event, interleaved pass, median of "
                   f"{'/'.join(str(p['runs']) for p in lin['points'])} runs): {points}; max/min {lin['spread']:.2f}")
    if results.long_event:
        from benchmarks.long_event import lines

        kib = results.long_event[0]["kib"]
        out.append(f"one long event in 64-byte reads (CPU s per MiB at {kib[0]} and {kib[1]} KiB, least of the runs):")
        out.extend("  " + line for line in lines(results.long_event))
    mem = results.memory
    if mem:
        out.append("")
        if "error" in mem or "skipped" in mem:
            out.append(f"memory: {mem.get('skipped') or mem.get('error')}")
        else:
            out.append(
                f"memory (replay of {Path(mem['file']).name}, {mem['file_bytes'] / 1e6:.1f} MB, from the file, chunks "
                f"counted not stored; separate process): baseline {mem['baseline_bytes'] / 2**20:.1f} MiB, peak "
                f"{mem['peak_bytes'] / 2**20:.1f} MiB"
            )
            out.append(
                f"  peak - baseline = {mem['growth_bytes'] / 2**20:.2f} MiB; assembled text + arguments = "
                f"{(mem['text_bytes'] + mem['arguments_bytes']) / 2**20:.2f} MiB; peak - baseline - (text + arguments)"
                f" = {mem['growth_minus_kept_bytes'] / 2**20:.2f} MiB; chunks {mem['chunks']:,} "
                f"(expected {mem['expected_chunks']:,})"
            )
            if mem.get("vm_hwm_growth_bytes", -1) >= 0:
                out.append(f"  cross-check: VmHWM growth {mem['vm_hwm_growth_bytes'] / 2**20:.2f} MiB")
    conc = results.concurrency
    if conc:
        out.append("")
        if "runs" in conc:
            out.append(conc.get("method", ""))
            out.append(conc.get("table", ""))
        else:
            out.append(f"concurrency: {conc.get('skipped') or conc.get('error')}")
    if results.notes:
        out.append("")
        out.append("notes:")
        out.extend(f"  - {note}" for note in results.notes)
    out.append("")
    out.append("checks: " + ("all passed" if not results.failures else "FAILED"))
    out.extend(f"  ✗ {failure}" for failure in results.failures)
    out.append("")
    smoke_note = " (smoke: one run of short streams, indicative only; the checks above are what CI gates on)"
    out.append("targets:" + (smoke_note if results.settings.get("smoke") else ""))
    for t in results.targets:
        out.append(f"  {t['status']:4}  {t['target']:62} measured: {t['measured']}")
    out.append("")
    out.append(f"total run time: {results.seconds_total:.1f} s")
    return "\n".join(out)


def evaluate_targets(results: Results) -> None:
    targets = results.targets

    def add(target: str, status: str, measured: str) -> None:
        targets.append({"target": target, "status": status, "measured": measured})

    long_sizes = [s for s in ("4k", "smoke", "medium", "large") if results.row(s, "ours: bytes->chunks")]

    # 1. bytes->chunks <= floor
    ratios = {s: r.ratio_floor for s in long_sizes if (r := results.row(s, "ours: bytes->chunks")) and r.ratio_floor}
    if ratios:
        worst = max(ratios.values())
        measured = ", ".join(f"{s} {v:.2f}" for s, v in ratios.items())
        small = results.row("small", "ours: bytes->chunks")
        if small is not None and small.ratio_floor:
            measured += f" (small, 10 events, not judged: {small.ratio_floor:.2f})"
        add("ours bytes->chunks / floor json.loads <= 1.0", "PASS" if worst <= 1.0 else "MISS", measured)
    else:
        add("ours bytes->chunks / floor json.loads <= 1.0", "n/a", "no stream of 900+ events measured")

    # 2, 3. peers
    def peer_target(label: str, prefix: str, factor: float) -> None:
        rows = [r for r in results.rows if r.name.startswith(prefix) and r.ratio_ours and r.size in long_sizes]
        if not rows:
            add(label, "n/a", "peers not run")
            return
        worst = min(r.ratio_ours or 0.0 for r in rows)
        measured = ", ".join(f"{r.size} {r.ratio_ours:.1f}x" for r in rows)
        add(label, "PASS" if worst >= factor else "MISS", measured)

    peer_target(">= 20x faster than openai ChatCompletionStreamState", "openai:", 20.0)
    peer_target(">= 6x faster than langchain-core best merge", "langchain: add_ai_message_chunks", 6.0)
    if not any(r.name.startswith("langchain: add_ai") for r in results.rows):
        targets.pop()
        peer_target(">= 6x faster than langchain-core best merge", "langchain: merge_message_runs", 6.0)

    # 4. linearity
    lin = results.linearity
    if lin.get("points") and len(lin["points"]) >= 2:
        status = "PASS" if lin["spread"] <= LINEARITY_SPREAD else "MISS"
        measured = ", ".join(f"{p['events']:,}: {p['us_per_event']:.2f} us" for p in lin["points"])
        if not any(p["size"] == "large" for p in lin["points"]):
            measured += " (without the large stream)"
        add(f"linear in stream length (us/event max/min <= {LINEARITY_SPREAD})", status,
            f"{measured}; max/min {lin['spread']:.2f}")
    else:
        add(f"linear in stream length (us/event max/min <= {LINEARITY_SPREAD})", "n/a", "needs 4k/medium/large")

    # 4b. one long event in small reads (issue 31)
    if results.long_event:
        from benchmarks.long_event import LINEAR_BAR

        slowest: dict[str, Any] = max(results.long_event, key=lambda row: float(row["ratio_4x"]))
        add(f"one long event in 64-byte reads linear (time at 4x the bytes < {LINEAR_BAR:g}x)",
            "PASS" if slowest["ratio_4x"] < LINEAR_BAR else "MISS",
            f"worst {slowest['format']} {slowest['path']}: {slowest['ratio_4x']:.1f}x")

    # 5. Rx overhead
    o = results.overhead
    if o:
        method1 = o.get("translate_minus_direct_us_per_event")
        method2 = o["identity_chain_us_per_event"]
        judged = method1 if method1 is not None else method2
        measured = (f"method 1 {method1:.3f} us, " if method1 is not None else "") + f"method 2 {method2:.3f} us"
        add("Rx per-event overhead < 1.5 us (whole chain)", "PASS" if judged < 1.5 else "MISS",
            f"{measured} ({o['size']}; judged on method {1 if method1 is not None else 2})")

    # 6. construction
    c = results.construction
    if c:
        add("chain construction < 0.5 ms", "PASS" if c["whole_ms"] < 0.5 else "MISS",
            f"{c['whole_ms'] * 1e3:.1f} us (build + subscribe + run), {c['build_ms'] * 1e3:.1f} us build only")

    # 7. memory
    mem = results.memory
    if mem and "growth_minus_kept_bytes" in mem:
        over = mem["growth_minus_kept_bytes"] / 2**20
        add("large replay peak RSS <= baseline + text + arguments + 10 MB", "PASS" if over <= 10 else "MISS",
            f"peak - baseline - (text + arguments) = {over:.2f} MiB")
    else:
        add("large replay peak RSS <= baseline + text + arguments + 10 MB", "n/a",
            str(mem.get("skipped") or mem.get("error") or "not run"))

    # 8. concurrency
    conc = results.concurrency
    runs = {r["streams"]: r for r in conc.get("runs", [])}
    if 1000 in runs:
        p99 = runs[1000]["latency_p99_ms"]
        add("1000 streams: p99 added latency < 5 ms", "PASS" if p99 < 5 else "MISS",
            f"p99 {p99:.3f} ms, p50 {runs[1000]['latency_p50_ms']:.3f} ms (read -> chunk, in the client)")
    else:
        add("1000 streams: p99 added latency < 5 ms", "n/a",
            str(conc.get("skipped") or conc.get("error") or "not run"))
