"""The benchmark: every row on the same bytes, in one run, with a table and the targets.

    python -m benchmarks.run                      # full: small, 4k, medium, large (+ memory, loopback, concurrency)
    python -m benchmarks.run --smoke              # CI: small + ~300 KB, one repeat, exits 1 on a wrong result
    python -m benchmarks.run --sizes small,medium --repeat 3 --skip-peers --json results.json

Rows (each is the whole job, from the same 4 KB pieces already in memory, to its result):

    floor: json.loads            pieces -> lines -> ``data:`` payloads -> json.loads (the ratio's denominator)
    floor: msgspec / orjson      the same with ``msgspec.json.decode`` (untyped) and ``orjson.loads``
    httpx-sse                    httpx-sse's own decoders (UTF-8 decode, SSELineDecoder, SSEDecoder) + json.loads
    ours: bytes->chunks          ``pipeline.translate(pieces)``, collecting the chunks
    ours: bytes->assembled       ``pipeline.assemble(pipeline.collect(pieces))``
    ours: stages without Rx      the same stages driven by plain calls (for the Rx overhead; see _workloads.py)
    openai / langchain-core      peers doing bytes -> assembled message (see _peers.py); "x ours" is their time
                                 over ours: bytes->assembled
    loopback                     the same bytes served by the emulator (a child process) over loopback HTTP in
                                 4 KB writes: httpx.AsyncClient reading only; + ``pipeline.stream(aiter_bytes())``
                                 -> assembled; the library's whole client ``ChatClient.complete`` (when present)

Also: the Rx per-event overhead (two methods, see _workloads.py), the chain construction time (``translate(b"")``
built, subscribed and run to its finish, averaged over 10,000), the linearity check (bytes->chunks us/event on 4k,
9k and 153k events, interleaved), the memory subprocess (memory.py) and the concurrency subprocess
(concurrency.py), then the targets with PASS / MISS.

Timing: ``time.perf_counter``, the median of N interleaved runs (5, 3 for large; slow peer rows stop repeating once
their runs add up to ~10 s). The rows of a size run round-robin (one run of each row per round), so load from other
processes on the machine hits every row alike; the garbage collector is disabled during each timed run and
re-enabled after it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # python benchmarks/run.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import operators
import pipeline
from benchmarks import _workloads as work
from benchmarks._emulator_proc import ROOT, EmulatorProcess, emulator_class
from benchmarks.corpus import CORPUS_DIR, SIZES, Corpus, build, response, write

PIECE = 4096
SLOW_ROW_BUDGET_S = 10.0
"""A row stops repeating once its runs add up to this (after at least one run)."""
OPENAI_MAX_EVENTS = 10_000
"""The openai accumulator costs ~0.6 ms an event and grows with the snapshot: not run on the large corpus."""
INCREMENTAL_MAX_EVENTS = 10_000
"""``acc = acc + chunk`` is quadratic: only run on short streams (small, 4k, medium)."""
CONSTRUCTION_CHAINS = 10_000
OVERHEAD_ROUNDS = 15
LINEARITY_ROUNDS = 7
LINEARITY_BUDGET_S = 4.0
"""The large stream stops after ~3 runs; the shorter ones get all the rounds."""
LONG_SIZES = ("smoke", "4k", "medium", "large")
MERGE_CHOICE_EVENTS = 120
"""``merge_message_runs`` adds pairwise (quadratic): the bulk merges are compared on a short response."""
WARM_MAX_EVENTS = 100
"""Rows on streams up to this long get an untimed run first (see ``Bench.round_robin``)."""
LINEARITY_SPREAD = 1.25
"""us/event counts as constant when max/min across stream lengths is at most this."""


# --------------------------------------------------------------------------------------------------- results


@dataclass
class Row:
    size: str
    name: str
    events: int
    nbytes: int
    seconds: float | None
    runs: int = 0
    ratio_floor: float | None = None
    ratio_ours: float | None = None
    ok: str = ""
    note: str = ""

    @property
    def us_per_event(self) -> float | None:
        return None if self.seconds is None else self.seconds / self.events * 1e6


@dataclass
class Spec:
    """One row to time: ``run`` does the whole job (None: not run, shown with its note), ``check`` says what is
    wrong with its result ("" when nothing)."""

    label: str
    run: Callable[[], Any] | None
    check: Callable[[Any], str]
    budget: float = float("inf")
    fatal: bool = False
    """A wrong result fails the run (ours and the floor), not only the row (peers)."""
    show: bool = True
    note: str = ""
    times: list[float] = field(default_factory=list)
    ok: str | None = None


@dataclass
class Results:
    machine: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    corpora: list[dict[str, Any]] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    overhead: dict[str, Any] = field(default_factory=dict)
    """The Rx overhead pass (one stream)."""
    construction: dict[str, float] = field(default_factory=dict)
    linearity: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    concurrency: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    targets: list[dict[str, Any]] = field(default_factory=list)
    seconds_total: float = 0.0

    def row(self, size: str, name: str) -> Row | None:
        for row in self.rows:
            if row.size == size and row.name == name:
                return row
        return None


# --------------------------------------------------------------------------------------------------- timing


def machine() -> dict[str, str]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        uname = subprocess.run(["uname", "-a"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        uname = " ".join(platform.uname())
    return {
        "uname": uname,
        "cpu": cpu,
        "cores": str(os.cpu_count()),
        "python": sys.version.split()[0] + " " + platform.python_implementation(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


# --------------------------------------------------------------------------------------------------- checks


def expected_message(corpus: Corpus) -> work.Message:
    return work.Message(
        corpus.text,
        [(call.id, call.name, call.arguments) for call in corpus.tool_calls],
        "tool-calls" if corpus.tool_calls else "stop",
    )


def compare(got: work.Message, want: work.Message, *, finish: bool = True) -> str:
    """"" when they agree (text, tool-call ids, names and arguments, and the finish), else what differs."""
    problems: list[str] = []
    if got.text != want.text:
        at = next((i for i, (a, b) in enumerate(zip(got.text, want.text, strict=False)) if a != b),
                  min(len(got.text), len(want.text)))
        problems.append(f"text differs at {at} ({len(got.text)} vs {len(want.text)} chars)")
    if len(got.calls) != len(want.calls):
        problems.append(f"{len(got.calls)} tool calls, want {len(want.calls)}")
    for n, (have, expect) in enumerate(zip(got.calls, want.calls, strict=False)):
        arguments = have[2]
        same_arguments = (
            arguments == json.loads(expect[2]) if isinstance(arguments, dict) else arguments == expect[2]
        )
        if have[0] != expect[0] or have[1] != expect[1] or not same_arguments:
            problems.append(f"tool call {n}: {have[0]!r}/{have[1]!r} differs from {expect[0]!r}/{expect[1]!r}"
                            + ("" if same_arguments else " (arguments differ)"))
    if finish and got.finish != want.finish:
        problems.append(f"finish {got.finish!r}, want {want.finish!r}")
    return "; ".join(problems)


# --------------------------------------------------------------------------------------------------- one size


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.results = Results()
        self.peers: Any = None
        self.merge = "add_ai_message_chunks"
        self.factories = work.stage_factories([operators.parse_sse(), *pipeline.protocol_rules()])
        self.kept: dict[str, tuple[int, int, list[bytes]]] = {}
        """events, expected chunks and pieces of the streams the overhead and linearity passes reuse."""

    def repeats(self, size: str) -> int:
        if self.args.repeat:
            return int(self.args.repeat)
        return 3 if size == "large" else 5

    def fail(self, message: str) -> None:
        self.results.failures.append(message)

    def add(self, corpus: Corpus, name: str, seconds: float | None, runs: int, *, ok: str = "", note: str = "",
            events: int | None = None) -> Row:
        row = Row(corpus.name, name, events or corpus.payloads, len(corpus.data), seconds, runs, ok=ok, note=note)
        floor = self.results.row(corpus.name, "floor: json.loads")
        if seconds is not None and floor is not None and floor.seconds:
            row.ratio_floor = seconds / floor.seconds
        self.results.rows.append(row)
        return row

    def warm_up(self) -> None:
        """Runs every workload once on the small corpus, so first-call costs (imports, caches) are not timed."""
        pieces = build("small").pieces(PIECE)
        for loads in work.FLOORS.values():
            work.floor(loads)(pieces)
        work.httpx_sse(pieces)
        work.ours_chunks(pieces)
        work.ours_assembled(pieces)
        work.identity_chain(pieces, 2)
        work.identity_plain(pieces, 2)
        if self.factories is not None:
            work.direct_stages(self.factories)(pieces)
        if self.peers is not None:
            self.peers.openai_sdk(pieces)
            self.peers.langchain_merge("add_ai_message_chunks")(pieces)

    def size(self, corpus: Corpus) -> None:
        name = corpus.name
        pieces = corpus.pieces(PIECE)
        want = expected_message(corpus)
        print(f"  {name}: {corpus.payloads:,} events, {len(corpus.data) / 1e6:.2f} MB ...", file=sys.stderr, flush=True)
        wire = work.wire_chunks(pieces)
        if wire != corpus.payloads:
            self.fail(f"{name}: parse_sse decoded {wire} wire chunks, the floor counts {corpus.payloads} payloads")

        def counted(what: str, expected: int) -> Callable[[Any], str]:
            return lambda count: "" if count == expected else f"{count} {what}, want {expected}"

        def message_check(result: Any) -> str:
            return compare(result, want)

        fingerprint: list[tuple[int, int]] = []

        def chunks_check(chunks: Any) -> str:
            print_ = (len(chunks), hash(tuple(chunks)))
            if fingerprint and fingerprint[0] != print_:
                return "chunks differ between the rows with and without Rx"
            fingerprint[:1] = [print_]
            if len(chunks) != corpus.expected_chunks:
                return f"{len(chunks)} chunks, want {corpus.expected_chunks}"
            return ""

        specs: list[Spec] = []
        # 1. the floor
        for label, loads in work.FLOORS.items():
            specs.append(Spec(f"floor: {label}", partial(work.floor(loads), pieces),
                              counted("payloads", corpus.payloads), fatal=True))
        # 2. httpx-sse
        specs.append(Spec("httpx-sse decoders + json.loads", partial(work.httpx_sse, pieces),
                          counted("events", corpus.payloads)))
        # 3. this library
        specs.append(Spec("ours: bytes->chunks", partial(work.ours_chunks, pieces), chunks_check, fatal=True,
                          note=f"{corpus.expected_chunks:,} chunks; parse_sse: {wire:,} wire chunks"))
        specs.append(Spec("ours: bytes->assembled", partial(work.ours_assembled, pieces), message_check, fatal=True))
        if self.factories is not None:
            specs.append(Spec("ours: stages without Rx", partial(work.direct_stages(self.factories), pieces),
                              chunks_check, fatal=True, note="the same stages, plain calls (Rx overhead)"))
        # 4. peers
        if self.peers is not None:
            specs.extend(self.peer_specs(corpus, pieces, want))

        self.round_robin(specs, self.repeats(name), warm=corpus.payloads <= WARM_MAX_EVENTS)

        for spec in specs:
            if not spec.show:
                continue
            seconds = statistics.median(spec.times) if spec.times else None
            ok = "" if spec.ok is None else ("✓" if not spec.ok else "✗ " + spec.ok)
            if spec.ok and spec.fatal:
                self.fail(f"{name}: {spec.label}: {spec.ok}")
            self.add(corpus, spec.label, seconds, len(spec.times), ok=ok, note=spec.note)
        floor = self.results.row(name, "floor: json.loads")
        ours = self.results.row(name, "ours: bytes->assembled")
        for row in self.results.rows:
            if row.size != name or row.seconds is None:
                continue
            if floor is not None and floor.seconds:
                row.ratio_floor = row.seconds / floor.seconds
            if ours is not None and ours.seconds and (row.name.startswith(("openai", "langchain"))
                                                     or row is ours):
                row.ratio_ours = row.seconds / ours.seconds

        if name in LONG_SIZES:
            self.kept[name] = (corpus.payloads, corpus.expected_chunks, pieces)

    def overhead_pass(self) -> None:
        """Rx per-event overhead, both methods (see _workloads.py), in a dedicated pass of interleaved runs on the
        medium stream (or the longest measured up to medium)."""
        name = next((n for n in ("medium", "4k", "smoke", "large") if n in self.kept), None)
        if name is None:
            return
        events, chunks, pieces = self.kept[name]
        items = max(1, round(chunks / len(pieces)))
        specs = [
            Spec("translate", partial(work.ours_chunks, pieces), lambda _: ""),
            Spec("identity chain, Rx", partial(work.identity_chain, pieces, items), lambda _: ""),
            Spec("identity chain, plain", partial(work.identity_plain, pieces, items), lambda _: ""),
        ]
        if self.factories is not None:
            specs.append(Spec("direct", partial(work.direct_stages(self.factories), pieces), lambda _: ""))
        rounds = 3 if name == "large" else OVERHEAD_ROUNDS
        self.round_robin(specs, rounds, warm=True)
        best = {spec.label: statistics.median(spec.times) for spec in specs}
        overhead: dict[str, Any] = {
            "size": name,
            "events": events,
            "batches": len(pieces),
            "chunks_per_batch": items,
            "runs": rounds,
            "translate_ms": best["translate"] * 1e3,
            "identity_chain_us_per_batch": (best["identity chain, Rx"] - best["identity chain, plain"])
            / len(pieces) * 1e6,
            "identity_chain_us_per_event": (best["identity chain, Rx"] - best["identity chain, plain"]) / events * 1e6,
        }
        if "direct" in best:
            overhead["direct_ms"] = best["direct"] * 1e3
            overhead["translate_minus_direct_us_per_event"] = (best["translate"] - best["direct"]) / events * 1e6
        self.results.overhead = overhead

    def linearity_pass(self) -> None:
        """us/event of bytes->chunks for 4k, medium and large, timed interleaved (the median of the rounds)."""
        names = [n for n in ("4k", "medium", "large") if n in self.kept]
        if len(names) < 2:
            return
        specs = [Spec(n, partial(work.ours_chunks, self.kept[n][2]), lambda _: "", budget=LINEARITY_BUDGET_S)
                 for n in names]
        self.round_robin(specs, LINEARITY_ROUNDS, warm=False)
        points: list[dict[str, Any]] = []
        for spec in specs:
            events = self.kept[spec.label][0]
            points.append({"size": spec.label, "events": events, "runs": len(spec.times),
                           "us_per_event": statistics.median(spec.times) / events * 1e6})
        values = [float(p["us_per_event"]) for p in points]
        self.results.linearity = {"points": points, "spread": max(values) / min(values)}

    def round_robin(self, specs: Sequence[Spec], repeats: int, *, warm: bool) -> None:
        """Runs every spec once per round, ``repeats`` rounds, so that all rows see the same machine (other load
        on it shifts every row alike); a spec stops once its runs add up to its budget. The median run counts (best-of-N
        turned PASS rows into MISS under a shared machine: issue 24).

        gc is off while a run is timed and back on after it. The collector is run once before the rounds, not
        before each run: right after a full collection the first run of a short workload is ~3x slower (freed
        arenas are mapped again), so short streams also get an untimed run of every row first."""
        gc.collect()
        if warm:
            for spec in specs:
                if spec.run is not None:
                    spec.run()
        for _ in range(max(repeats, 1)):
            for spec in specs:
                if spec.run is None or (spec.times and sum(spec.times) >= spec.budget):
                    continue
                result: Any = None
                gc.disable()
                try:
                    start = time.perf_counter()
                    result = spec.run()
                    elapsed = time.perf_counter() - start
                finally:
                    gc.enable()
                spec.times.append(elapsed)
                if spec.ok is None or not spec.ok:
                    spec.ok = spec.check(result)
                del result

    def peer_specs(self, corpus: Corpus, pieces: Sequence[bytes], want: work.Message) -> list[Spec]:
        peers = self.peers

        def message_check(result: Any) -> str:
            return compare(result, want, finish=False)

        specs: list[Spec] = []
        if corpus.payloads <= OPENAI_MAX_EVENTS:
            specs.append(Spec("openai: ChatCompletionStreamState", partial(peers.openai_sdk, pieces), message_check,
                              budget=SLOW_ROW_BUDGET_S))
        else:
            specs.append(Spec("openai: ChatCompletionStreamState", None, lambda _: "",
                              note=f"not run above {OPENAI_MAX_EVENTS:,} events (~0.6 ms/event; minutes a run)"))
        specs.append(Spec(f"langchain: {self.merge}", partial(peers.langchain_merge(self.merge), pieces),
                          message_check, budget=SLOW_ROW_BUDGET_S, note="best bulk merge"))
        if corpus.payloads <= INCREMENTAL_MAX_EVENTS:
            specs.append(Spec("langchain: bytes->AIMessageChunks only", partial(peers.langchain_chunks, pieces),
                              lambda _: "", budget=SLOW_ROW_BUDGET_S, note="the conversion part of the row above"))
        if corpus.payloads <= INCREMENTAL_MAX_EVENTS:
            specs.append(Spec("langchain: acc = acc + chunk", partial(peers.langchain_merge("acc + chunk"), pieces),
                              message_check, budget=SLOW_ROW_BUDGET_S, note="quadratic"))
        else:
            specs.append(Spec("langchain: acc = acc + chunk", None, lambda _: "",
                              note=f"capped: quadratic, not run above {INCREMENTAL_MAX_EVENTS:,} events"))
        return specs

    # -- loopback HTTP (row 5) --------------------------------------------------------------------------------

    def loopback(self, corpus: Corpus, base_url: str, path: Path) -> None:
        """Row 5: the same bytes served by the emulator (a child process) over loopback HTTP in 4 KB writes.

        - HTTP read only: ``httpx.AsyncClient.stream`` + ``aiter_bytes()``, counting bytes (the transport's cost);
        - HTTP + ours: the same, through ``pipeline.stream(response.aiter_bytes())`` to ``assemble_async``;
        - ChatClient: the library's whole client (``pipeline.ChatClient.complete``), when it exists.
        Each request is timed from sending it to the last byte or the assembled message; rows interleaved."""
        import httpx

        repeats = self.repeats(corpus.name)
        headers = {
            "x-emulator-profile": "replay",
            "x-emulator-file": str(path),
            "x-emulator-chunk-bytes": str(PIECE),
        }
        messages = [{"role": "user", "content": "hi"}]
        body = {"model": "emulator/replay", "stream": True, "messages": messages}
        chat_client_class = getattr(pipeline, "ChatClient", None)

        def to_message(message: Any) -> work.Message:
            return work.Message(message.text, [(c.id, c.name, c.arguments) for c in message.tool_calls],
                                message.finish.kind)

        async def measure() -> list[tuple[str, list[float], Any]]:
            async with httpx.AsyncClient(base_url=base_url, timeout=120) as client:

                async def read_only() -> int:
                    total = 0
                    async with client.stream("POST", "/chat/completions", json=body, headers=headers) as response:
                        async for piece in response.aiter_bytes():
                            total += len(piece)
                    return total

                async def ours() -> work.Message:
                    async with client.stream("POST", "/chat/completions", json=body, headers=headers) as response:
                        message = await pipeline.assemble_async(pipeline.stream(response.aiter_bytes()))
                    return to_message(message)

                rows: list[tuple[str, Any]] = [("loopback: HTTP read only", read_only),
                                               ("loopback: HTTP + ours -> assembled", ours)]
                chat_client: Any = None
                if chat_client_class is not None:
                    try:
                        chat_client = chat_client_class(base_url=f"{base_url}", model="emulator/replay",
                                                        headers=headers, http_client=client)

                        async def whole_client() -> work.Message:
                            return to_message(await chat_client.complete(messages))

                        rows.append(("loopback: ChatClient.complete", whole_client))
                    except Exception as exc:
                        self.results.notes.append(f"ChatClient row skipped: {type(exc).__name__}: {exc}")
                times: dict[str, list[float]] = {label: [] for label, _ in rows}
                results: dict[str, Any] = {}
                for _, make in rows:
                    await make()  # warm-up: the connection, the server's first replay
                gc.collect()
                for _ in range(repeats):
                    for label, make in rows:
                        gc.disable()
                        try:
                            start = time.perf_counter()
                            results[label] = await make()
                            times[label].append(time.perf_counter() - start)
                        finally:
                            gc.enable()
                return [(label, times[label], results[label]) for label, _ in rows]

        want = expected_message(corpus)
        ours_row = self.results.row(corpus.name, "ours: bytes->assembled")
        note = "emulator (child process) replay in 4 KB writes"
        for label, times, result in asyncio.run(measure()):
            if isinstance(result, work.Message):
                problem = compare(result, want)
                if problem:
                    self.fail(f"{corpus.name}: {label}: the assembled message differs: {problem}")
                verdict = "✗ " + problem if problem else "✓"
                row = self.add(corpus, label, statistics.median(times), len(times), ok=verdict,
                               note=note + ("; base_url .../v1" if "ChatClient" in label else ""))
                if ours_row is not None and ours_row.seconds:
                    row.ratio_ours = statistics.median(times) / ours_row.seconds
            else:
                ok = "✓" if result == len(corpus.data) else f"✗ {result} bytes"
                self.add(corpus, label, statistics.median(times), len(times), ok=ok, note=note)


# --------------------------------------------------------------------------------------------------- subprocesses


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    return env


def run_memory(path: Path) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--path", str(path)],
        capture_output=True, text=True, cwd=ROOT, env=_child_env(), timeout=240,
    )
    if completed.returncode != 0:
        return {"error": completed.stderr.strip()[-2000:]}
    return json.loads(completed.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def run_concurrency() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "concurrency.json"
        command = [sys.executable, "-m", "benchmarks.concurrency", "--json", str(out)]
        completed = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=_child_env(), timeout=240)
        if completed.returncode != 0:
            return {"error": (completed.stderr.strip() or completed.stdout.strip())[-2000:]}
        if not out.exists():
            return {"skipped": completed.stdout.strip()}
        return json.loads(out.read_text())  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------------- report


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


# --------------------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true",
                        help="CI: small + ~300 KB, one repeat; exit 1 when a result is wrong")
    parser.add_argument("--sizes", default=None,
                        help=f"comma-separated, from {', '.join(SIZES)} (default: small,4k,medium,large)")
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per row, the median counts (default 5, 3 for large)")
    parser.add_argument("--skip-peers", action="store_true", help="no openai / langchain-core rows")
    parser.add_argument("--skip-loopback", action="store_true", help="no HTTP rows from the emulator")
    parser.add_argument("--skip-memory", action="store_true", help="no memory subprocess")
    parser.add_argument("--skip-concurrency", action="store_true", help="no concurrency subprocess")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the results as JSON")
    args = parser.parse_args(argv)
    if args.smoke:
        args.sizes = args.sizes or "small,smoke"
        args.repeat = args.repeat or 1
        args.skip_loopback = args.skip_memory = args.skip_concurrency = True
    args.sizes = [s.strip() for s in (args.sizes or "small,4k,medium,large").split(",") if s.strip()]
    unknown = [s for s in args.sizes if s not in SIZES]
    if unknown:
        parser.error(f"unknown size(s) {', '.join(unknown)}; choose from {', '.join(SIZES)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    args = parse_args(argv)
    bench = Bench(args)
    results = bench.results
    results.machine = machine()
    results.settings = {
        "sizes": args.sizes, "repeat": args.repeat or "5 (3 for large)", "smoke": args.smoke, "piece": PIECE,
    }
    if bench.factories is None:
        results.notes.append("the rules are not all stage_operators: the 'without Rx' row is skipped")

    if not args.skip_peers:
        from benchmarks import _peers

        bench.peers = _peers
        print("choosing langchain's bulk merge ...", file=sys.stderr, flush=True)
        bench.merge, timings = _peers.pick_langchain_merge(response(MERGE_CHOICE_EVENTS, 2, 0.25).pieces(PIECE))
        results.notes.append(
            f"langchain bulk merge chosen on a {MERGE_CHOICE_EVENTS}-event response: "
            + ", ".join(f"{name} {seconds * 1e3:.1f} ms" for name, seconds in timings.items())
            + f" -> {bench.merge}"
        )
        seed = _seed_bug_body()
        if seed is not None:
            outcome = _peers.openai_survives_type_null(seed)
            results.notes.append(
                "openai's ChatCompletionStreamState on the emulator's seed-bug stream (continuations with "
                f'"type": null): {outcome}; the corpus keeps "type": "function" on its null-style continuations so '
                "that the SDK can be measured at all"
            )
    bench.warm_up()

    emulator_ok = emulator_class() is not None
    loopback = not args.skip_loopback and emulator_ok
    if not args.skip_loopback and not emulator_ok:
        results.notes.append("loopback rows skipped: pipeline.emulator.Emulator is not available")
    server = EmulatorProcess(CORPUS_DIR) if loopback else None
    if server is not None:
        CORPUS_DIR.mkdir(parents=True, exist_ok=True)
        server.__enter__()
    try:
        for name in args.sizes:
            corpus = build(name)
            results.corpora.append({
                "name": name, "events": corpus.payloads, "bytes": len(corpus.data),
                "bytes_per_event": len(corpus.data) / corpus.payloads, "text_bytes": corpus.text_bytes,
                "tool_calls": len(corpus.tool_calls), "arguments_bytes": corpus.arguments_bytes,
            })
            bench.size(corpus)
            if server is not None or (name == "large" and not args.skip_memory):
                path = write(corpus)
                if server is not None:
                    bench.loopback(corpus, server.base_url, path)
            del corpus
            gc.collect()
    finally:
        if server is not None:
            server.__exit__(None, None, None)

    # chain construction
    builds: list[float] = []
    wholes: list[float] = []
    for _ in range(1 if args.smoke else 3):
        gc.collect()
        gc.disable()
        try:
            build_s, whole_s = work.chain_construction(CONSTRUCTION_CHAINS)
        finally:
            gc.enable()
        builds.append(build_s)
        wholes.append(whole_s)
    results.construction = {"build_ms": statistics.median(builds) * 1e3, "whole_ms": statistics.median(wholes) * 1e3}

    print("  Rx overhead and linearity passes ...", file=sys.stderr, flush=True)
    bench.overhead_pass()
    bench.linearity_pass()

    # memory
    if "large" in args.sizes and not args.skip_memory:
        print("  memory (subprocess) ...", file=sys.stderr, flush=True)
        results.memory = run_memory(CORPUS_DIR / "large.sse")
        if "chunks" in results.memory and results.memory["chunks"] != results.memory["expected_chunks"]:
            results.failures.append(f"memory replay gave {results.memory['chunks']} chunks, "
                                    f"expected {results.memory['expected_chunks']}")
    elif not args.skip_memory:
        results.memory = {"skipped": "skipped: the large corpus was not selected"}

    # concurrency
    if not args.skip_concurrency:
        print("  concurrency (subprocess) ...", file=sys.stderr, flush=True)
        results.concurrency = run_concurrency()

    evaluate_targets(results)
    results.machine["load_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    results.seconds_total = time.perf_counter() - started
    print(report(results))
    if args.json is not None:
        data = asdict(results)
        for row, raw in zip(results.rows, data["rows"], strict=True):
            raw["us_per_event"] = row.us_per_event
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return 1 if results.failures else 0


def _seed_bug_body() -> bytes | None:
    try:
        from pipeline.emulator import ScriptOptions, build_script
    except ImportError:
        return None
    return build_script("seed-bug", ScriptOptions(include_usage=True)).body


if __name__ == "__main__":
    sys.exit(main())
