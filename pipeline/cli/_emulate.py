"""``llm-stream emulate [--port P] [--host H]``: the fault-injecting gateway emulator in the foreground (chat
completions, Messages and Responses; its first line counts the profiles per format)."""

from __future__ import annotations

import argparse

from ._errors import EXIT_OK, extra_missing, listen_errors, port_number

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("emulate", help="serve the fault-injecting gateway emulator on 127.0.0.1")
    p.add_argument("--port", type=port_number, default=8808, help="port (0 picks a free one; default 8808)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from pipeline.emulator import run_emulator  # starlette / uvicorn come with the "emulator" extra
    except ImportError as exc:
        raise extra_missing("the emulator", exc) from exc
    with listen_errors(args.host, args.port):  # a busy port: one line, exit status 2
        run_emulator(args.host, args.port)
    return EXIT_OK
