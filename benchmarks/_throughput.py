"""The in-process rows of one corpus size: the floors, httpx-sse, ours (with and without Rx) and the peers.

``Bench`` holds the run (``Results``) and times every row of a size from the same 4 KB pieces in memory, round-robin
(``_rows.round_robin``); ``benchmarks.run`` drives it size by size, then the passes (``_passes.py``) and the
loopback rows (``_loopback.py``) reuse what it kept.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import operators
import pipeline
from benchmarks import _rx_overhead as rx
from benchmarks import _workloads as work
from benchmarks._rows import Results, Row, Spec, compare, expected_message, round_robin
from benchmarks.corpus import Corpus, build

__all__ = ["PIECE", "Bench"]

PIECE = 4096
SLOW_ROW_BUDGET_S = 10.0
"""A row stops repeating once its runs add up to this (after at least one run)."""
OPENAI_MAX_EVENTS = 10_000
"""The openai accumulator costs ~0.6 ms an event and grows with the snapshot: not run on the large corpus."""
INCREMENTAL_MAX_EVENTS = 10_000
"""``acc = acc + chunk`` is quadratic: only run on short streams (small, 4k, medium)."""
LONG_SIZES = ("smoke", "4k", "medium", "large")
WARM_MAX_EVENTS = 100
"""Rows on streams up to this long get an untimed run first (see ``_rows.round_robin``)."""


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.results = Results()
        self.peers: Any = None
        self.merge = "add_ai_message_chunks"
        self.factories = rx.stage_factories([operators.parse_sse(), *pipeline.protocol_rules()])
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
        rx.identity_chain(pieces, 2)
        rx.identity_plain(pieces, 2)
        if self.factories is not None:
            rx.direct_stages(self.factories)(pieces)
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
            specs.append(Spec("ours: stages without Rx", partial(rx.direct_stages(self.factories), pieces),
                              chunks_check, fatal=True, note="the same stages, plain calls (Rx overhead)"))
        # 4. peers
        if self.peers is not None:
            specs.extend(self.peer_specs(corpus, pieces, want))

        round_robin(specs, self.repeats(name), warm=corpus.payloads <= WARM_MAX_EVENTS)

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
