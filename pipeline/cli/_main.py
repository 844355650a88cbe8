"""``llm-stream``: the command line.

    llm-stream replay FILE.sse [--json | --assembled] [--anomalies]   replay a recorded stream (``-`` reads stdin)
    llm-stream demo [--live]                                          the README's main job
    llm-stream emulate [--port P]                                     the fault-injecting gateway emulator
    llm-stream proxy --upstream URL [--port P]                        the sanitizing proxy (the four formats)
    llm-stream chat "prompt" [...]                                    stream from a live endpoint
    llm-stream session check|repair FILE                              inspect or recover a session log

Exit status (``_errors``, docs/cli.md): 0 on success; 1 when ``chat``'s response ends in an error finish or ``session
check`` finds violations, a torn last line included (``replay`` keeps 0: an error finish in a recording is a result);
2 for bad usage, an unreadable file, bytes with no SSE event given to ``replay``, a missing extra, a bad URL or a busy
port, one line on stderr and never a traceback; 130 on Ctrl-C.

A new command is a module here with ``add_parser(commands)`` (its arguments, and ``set_defaults(run=...)`` with a
function from the parsed arguments to an exit status), and one line in ``build_parser``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import _chat, _demo, _emulate, _proxy, _replay, _session_cmds
from ._errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llm-stream",
        description="Turn streamed LLM responses (chat completions, the Messages and Responses APIs, Gemini) into a "
        "clean, validated chunk protocol.",
    )
    parser.add_argument("--version", action="version", version=f"llm-stream {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    _replay.add_parser(commands)
    _demo.add_parser(commands)
    _emulate.add_parser(commands)
    _proxy.add_parser(commands)
    _chat.add_parser(commands)
    _session_cmds.add_parser(commands)
    return parser


def _version() -> str:
    from pipeline import __version__  # the one source; the distribution's metadata is read from it

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns its exit status (argparse exits with 2 itself on bad usage)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except CliError as exc:
        print(f"llm-stream: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    return code
