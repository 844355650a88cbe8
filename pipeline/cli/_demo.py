"""``llm-stream demo``: the README's main job.

Part 1 replays the bundled seed-bug stream (continuation deltas repeating a tool call's id and name as ``""`` and
``null``, and one repeating them in full) through two naive assemblers and through this pipeline, side by side.
Part 2 runs live requests through the whole client over loopback HTTP (``_demo_live``). It needs the emulator extra
(starlette, uvicorn): without it the demo says it skipped part 2 and how to get it, and exits 0; ``--live`` asks for
part 2, so without the extra it is an error (one line, exit status 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from pipeline.compose import collect, example_path

from ._errors import EXIT_OK, extra_missing
from ._render import Printer, add_color_flag, use_color

__all__ = ["add_parser", "naive_assemble", "run_demo"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("demo", help="the main job: show the pipeline handling a misbehaving gateway")
    p.add_argument(
        "--live",
        action="store_true",
        help="require part 2 (live requests over loopback HTTP): without the emulator extra, fail instead of skipping",
    )
    add_color_flag(p)
    p.set_defaults(run=_run)


def _payloads(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.decode().splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            out.append(json.loads(line[6:]))
    return out


def naive_assemble(data: bytes, strategy: str) -> list[dict[str, str]]:
    """What peers do: ``concatenate`` every string field (openai-python, LangChain) or let the ``last`` defined value
    win. Either way a gateway's quirks end up in the tool call (docs/decisions/0002-coalesce-identity.md)."""
    calls: dict[int, dict[str, str]] = {}
    for payload in _payloads(data):
        for choice in payload.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": "", "name": "", "arguments": ""})
                function = call.get("function") or {}
                for key, value in (("id", call.get("id")), ("name", function.get("name"))):
                    if key not in call and key not in function:
                        continue
                    if strategy == "concatenate":
                        slot[key] += "null" if value is None else str(value)
                    elif value is not None:
                        slot[key] = str(value)
                slot["arguments"] += function.get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


def run_demo(out: TextIO, *, color: bool | None = None, live: bool = False) -> int:
    """Part 1, then part 2 when the emulator extra is installed (else a note saying how to get it; with ``live``,
    a ``CliError`` instead)."""
    data = example_path("seed-bug").read_bytes()
    out.write("== 1. A gateway stream that repeats a tool call's identity (the bundled example seed-bug.sse)\n")
    out.write("   continuation deltas repeat a tool call's id and name as \"\", as null, and in full.\n\n")
    for strategy, who in (("concatenate", "openai-python / LangChain style"), ("last", "last-defined-wins")):
        out.write(f"   naive assembler, {strategy} ({who}):\n")
        for call in naive_assemble(data, strategy):
            out.write(f"     id={call['id']!r:16} name={call['name']!r:12} arguments={call['arguments']}\n")
    out.write("\n   this pipeline (anomalies shown):\n")
    printer = Printer(out, mode="text", color=color)
    for chunk in collect(data, anomalies=True):
        printer.chunk(chunk)
    printer.summary()
    try:
        from ._demo_live import run_live_demo  # needs the emulator extra (starlette, uvicorn)
    except ImportError as exc:
        if live:
            raise extra_missing("the demo's live requests (part 2)", exc) from exc
        out.write(
            "\n== 2. Live requests to the gateway emulator: skipped, starlette and uvicorn are not installed.\n"
            "   To see them: pip install 'llm-stream-pipeline[emulator]', then llm-stream demo again\n"
            "   (llm-stream demo --live fails instead of skipping).\n"
        )
        return EXIT_OK
    return run_live_demo(out, color=color)


def _run(args: argparse.Namespace) -> int:
    return run_demo(sys.stdout, color=use_color(args.color, sys.stdout), live=args.live)
