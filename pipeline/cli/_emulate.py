"""``llm-stream emulate [--port P] [--host H]``: the fault-injecting gateway emulator in the foreground (chat
completions, Messages, Responses and Gemini; its first line counts the profiles per format)."""

from __future__ import annotations

import argparse

from ._errors import EXIT_OK, extra_missing, listen_errors, port_number

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "emulate",
        help="serve the fault-injecting gateway emulator (chat, Messages, Responses, Gemini) on 127.0.0.1",
        description="Serves chat completions (/v1/chat/completions), the Messages API (/v1/messages), the Responses "
        "API (/v1/responses) and Gemini (/v1beta/models/MODEL:streamGenerateContent?alt=sse). The request's model "
        "name picks the fault profile, not a real model: emulator/<profile> (or the bare profile, e.g. seed-bug), "
        "emulator/messages/<profile>, emulator/responses/<profile>, emulator-gemini-<profile>; GET /v1/models lists "
        "them all, and an x-emulator-profile header overrides the model (docs/emulator-formats.md; chat's profiles: "
        "pipeline/emulator/_profiles.py).",
    )
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
