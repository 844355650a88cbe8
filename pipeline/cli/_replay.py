"""``llm-stream replay FILE.sse [--json | --assembled] [--anomalies] [--color WHEN]``: a recorded stream, replayed.

Exit status 0 whatever the stream's finish (an error finish in a recording is a result), unless the bytes hold no SSE
event at all (no ``data`` line: an empty file, a binary, an HTML page), which is said on stderr with exit status 2;
130 on Ctrl-C, after the partial summary."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from operators import FORMATS, Format, parse_stream
from pipeline.compose import READ_SIZE, AssistantMessage, example_path, translate

from ._errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, CliError
from ._render import Printer, add_output_flags, output_mode, use_color

__all__ = ["add_parser", "replay"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("replay", help="replay a recorded SSE stream through the pipeline")
    p.add_argument("file", nargs="?", help="an .sse file, or - for standard input")
    p.add_argument("--example", choices=["seed-bug"], help="replay a bundled example instead of a file")
    p.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="the wire format: chat (completions), messages (Anthropic-style), responses (OpenAI), gemini "
        "(Google's streamGenerateContent); default: detected from the first event",
    )
    add_output_flags(p)
    p.set_defaults(run=_run)


def replay(
    source: Iterable[bytes] | Path | bytes,
    *,
    mode: str,
    anomalies: bool,
    out: TextIO,
    color: bool | None = None,
    format: Format | None = None,
) -> AssistantMessage:
    """Prints every chunk of ``source`` (and the summary) in ``mode``; returns the assembled message. On Ctrl-C the
    partial summary is printed before ``KeyboardInterrupt`` goes on."""
    printer = Printer(out, mode=mode, color=color)
    try:
        translate(source, anomalies=anomalies, format=format).subscribe(on_next=printer.chunk)
    except KeyboardInterrupt:
        printer.summary(interrupted=True)
        raise
    printer.summary()
    return printer.message()


_DATA_LINE = re.compile(rb"(?:^|[\r\n])data(?:[:\r\n])")
"""An SSE ``data`` field at the start of a line: the only field that makes an event."""


class EventSeen:
    """The pieces of a source, passed on unchanged, noting whether any line is an SSE ``data`` field (scanning stops
    at the first; a field split across two pieces is found through the previous piece's last bytes)."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self._pieces = pieces
        self.seen = False

    def __iter__(self) -> Iterator[bytes]:
        tail = b"\n"
        for piece in self._pieces:
            if not self.seen:
                self.seen = _DATA_LINE.search(tail + piece) is not None
                tail = piece[-5:]
            yield piece


def _file_pieces(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        while piece := handle.read(READ_SIZE):
            yield piece


def _stdin_pieces() -> Iterator[bytes]:
    stream = sys.stdin.buffer
    while piece := stream.read1(READ_SIZE) if hasattr(stream, "read1") else stream.read(READ_SIZE):
        yield piece


def _open_source(name: str) -> Iterable[bytes]:
    if name == "-":
        return _stdin_pieces()
    path = Path(name)
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CliError(f"cannot read {name}: {reason}") from exc
    return _file_pieces(path)


def _run(args: argparse.Namespace) -> int:
    source: Iterable[bytes]
    if args.example:
        source = _file_pieces(example_path(args.example))
    elif args.file is None:
        raise CliError("replay needs a FILE (or - for standard input, or --example seed-bug)")
    else:
        source = _open_source(args.file)
    mode = output_mode(args)
    try:
        parse_stream(args.format)  # a format this build has no parser for: one line, before reading
    except ValueError as exc:
        raise CliError(str(exc)) from None
    scanned = EventSeen(source)
    try:
        replay(
            scanned,
            mode=mode,
            anomalies=args.anomalies or mode == "text",
            out=sys.stdout,
            color=use_color(args.color, sys.stdout),
            format=args.format,
        )
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    if not scanned.seen:
        name = args.file if args.file != "-" else "standard input"
        print(
            f"llm-stream: {name} holds no SSE event (no line starts with 'data:'); replay reads a recorded "
            "Server-Sent Events stream, such as the body of a streamed chat completion",
            file=sys.stderr,
        )
        return EXIT_USAGE
    return EXIT_OK
