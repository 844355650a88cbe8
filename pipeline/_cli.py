"""``llm-stream``: the command line.

    llm-stream replay FILE.sse [--json | --assembled] [--anomalies]   replay a recorded stream (``-`` reads stdin)
    llm-stream demo                                                   the README's main job
    llm-stream emulate [--port P]                                     the fault-injecting gateway emulator
    llm-stream chat "prompt" [...]                                    stream from a live endpoint
    llm-stream session check|repair FILE                              inspect or recover a session log

Exit status: 0 on success (a stream that ends in an error finish is a result, not a CLI error), 2 for bad usage or an
unreadable file, 1 for other failures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from operators import (
    Anomaly,
    BlockEnd,
    BlockStart,
    Chunk,
    Finish,
    ReasoningDelta,
    Retry,
    TextDelta,
    ToolCallBlock,
    ToolCallDelta,
    UsageChunk,
)

from .compose import READ_SIZE, Assembler, AssistantMessage, example_path, translate

__all__ = ["Printer", "main"]


class CliError(Exception):
    """A one-line error for the user; exit status 2."""


# -- rendering ----------------------------------------------------------------------------------------------------


class Printer:
    """Renders chunks one a line, readably (``--json``: ``to_json()`` exactly; ``--assembled``: only the message)."""

    def __init__(self, out: TextIO, *, mode: str = "text", color: bool | None = None) -> None:
        self.out = out
        self.mode = mode
        if color is None:
            color = out.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        self.color = color
        self.assembler = Assembler()
        self.counts: dict[str, int] = {}

    def _c(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def chunk(self, chunk: Chunk) -> None:
        self.assembler.feed(chunk)
        self.counts[chunk.type] = self.counts.get(chunk.type, 0) + 1
        if self.mode == "json":
            self.out.write(json.dumps(chunk.to_json(), ensure_ascii=False) + "\n")
        elif self.mode == "text":
            self.out.write(self.render(chunk) + "\n")
        self.out.flush()

    def render(self, chunk: Chunk) -> str:
        at = f"{chunk.index:>3}" if hasattr(chunk, "index") and chunk.index is not None else "   "
        if isinstance(chunk, BlockStart):
            return f"{at} {self._c('1', '▶ start')}      {chunk.block_type}"
        if isinstance(chunk, TextDelta):
            return f"{at}   text       {json.dumps(chunk.text, ensure_ascii=False)}"
        if isinstance(chunk, ReasoningDelta):
            return f"{at}   {self._c('2', 'reasoning')}  {self._c('2', json.dumps(chunk.text, ensure_ascii=False))}"
        if isinstance(chunk, ToolCallDelta):
            name = chunk.name if chunk.name is not None else "?"
            ident = chunk.id or "?"
            return f"{at}   tool-call  {ident} {name} +{json.dumps(chunk.arguments_delta, ensure_ascii=False)}"
        if isinstance(chunk, BlockEnd):
            block = chunk.block
            if isinstance(block, ToolCallBlock):
                body = f"tool-call {block.id} {block.name}({block.arguments})"
            else:
                body = f"{block.type} {json.dumps(block.text, ensure_ascii=False)}"
            return f"{at} {self._c('1', '■ end')}        {body}"
        if isinstance(chunk, UsageChunk):
            parts = " · ".join(f"{k.removesuffix('_tokens')} {v}" for k, v in chunk.usage.to_json().items())
            return f"    {self._c('36', 'usage')}        {parts}"
        if isinstance(chunk, Anomaly):
            where = f"[{chunk.index}] " if chunk.index is not None else ""
            return f"    {self._c('33', '! anomaly')}    {chunk.kind} {where}{chunk.detail}"
        if isinstance(chunk, Retry):
            limit = f"/{chunk.max_retries}" if chunk.max_retries is not None else ""
            return (
                f"    {self._c('35', '↻ retry')}      attempt {chunk.attempt}{limit} in {chunk.delay_ms:.0f} ms "
                f"after {chunk.failure.code}: {chunk.failure.message}"
            )
        if isinstance(chunk, Finish):
            reason = chunk.reason
            if reason.failure is None:
                return f"    {self._c('32', 'finish')}       {reason.kind}"
            failure = reason.failure
            return f"    {self._c('31', 'finish')}       {reason.kind} {failure.code}: {failure.message}"
        return f"    {chunk.to_json()}"

    def message(self) -> AssistantMessage:
        return self.assembler.result()

    def summary(self) -> None:
        message = self.message()
        if self.mode == "assembled":
            self.out.write(json.dumps(message.to_json(), ensure_ascii=False) + "\n")
            return
        if self.mode != "text":
            return
        blocks = self.assembler.block_count
        anomalies = self.counts.get("anomaly", 0)
        total = sum(self.counts.values())
        finish = message.finish.kind + (f" {message.finish.code}" if message.finish.code else "")
        lines = [
            "",
            f"{total} chunks, {blocks} blocks, {anomalies} anomalies, {message.retries} retries; finish: {finish}",
        ]
        for call in message.tool_calls:
            lines.append(f"  tool call {call.id} {call.name}({call.arguments})")
        if message.usage is not None:
            lines.append(f"  usage {json.dumps(message.usage.to_json())}")
        self.out.write("\n".join(lines) + "\n")


# -- replay -------------------------------------------------------------------------------------------------------


def _stdin_pieces() -> Iterator[bytes]:
    stream = sys.stdin.buffer
    while piece := stream.read1(READ_SIZE) if hasattr(stream, "read1") else stream.read(READ_SIZE):
        yield piece


def _open_source(name: str) -> Iterable[bytes] | Path:
    if name == "-":
        return _stdin_pieces()
    path = Path(name)
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise CliError(f"cannot read {name}: {reason}") from exc
    return path


def _mode(args: argparse.Namespace) -> str:
    if getattr(args, "json", False):
        return "json"
    if getattr(args, "assembled", False):
        return "assembled"
    return "text"


def replay(source: Iterable[bytes] | Path | bytes, *, mode: str, anomalies: bool, out: TextIO) -> AssistantMessage:
    printer = Printer(out, mode=mode)
    translate(source, anomalies=anomalies).subscribe(on_next=printer.chunk)
    printer.summary()
    return printer.message()


def _cmd_replay(args: argparse.Namespace) -> int:
    source: Iterable[bytes] | Path
    if args.example:
        source = example_path(args.example)
    elif args.file is None:
        raise CliError("replay needs a FILE (or - for standard input, or --example seed-bug)")
    else:
        source = _open_source(args.file)
    mode = _mode(args)
    replay(source, mode=mode, anomalies=args.anomalies or mode == "text", out=sys.stdout)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from ._demo import run_demo

    return run_demo(sys.stdout)


def _add_output_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="one chunk a line, to_json() exactly")
    group.add_argument("--assembled", action="store_true", help="only the assembled message, as one JSON object")
    parser.add_argument(
        "--anomalies", action="store_true", help="include anomaly chunks in --json output (always shown as text)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llm-stream",
        description="Turn streamed LLM chat completions (SSE) into a clean, validated chunk protocol.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    p = commands.add_parser("replay", help="replay a recorded SSE stream through the pipeline")
    p.add_argument("file", nargs="?", help="an .sse file, or - for standard input")
    p.add_argument("--example", choices=["seed-bug"], help="replay a bundled example instead of a file")
    _add_output_flags(p)
    p.set_defaults(run=_cmd_replay)

    p = commands.add_parser("demo", help="the main job: show the pipeline handling a misbehaving gateway")
    p.set_defaults(run=_cmd_demo)

    for register in _EXTRA_COMMANDS:
        register(commands, _add_output_flags)
    return parser


def _cmd_emulate(args: argparse.Namespace) -> int:
    try:
        from ._emulator import run_emulator
    except ImportError as exc:  # starlette / uvicorn come with the "emulator" extra
        raise CliError(f"the emulator needs: pip install 'llm-stream-pipeline[emulator]' ({exc})") from exc
    run_emulator(args.host, args.port)
    return 0


def _load_tools(spec: str | None) -> tuple[list[dict[str, Any]] | None, Any]:
    """``--tools``: a JSON file of tool schemas (offered only), or a Python module whose tools run."""
    if not spec:
        return None, None
    if spec.endswith(".json"):
        try:
            loaded = json.loads(Path(spec).read_text())
        except (OSError, ValueError) as exc:
            raise CliError(f"cannot read tools from {spec}: {exc}") from exc
        if not isinstance(loaded, list):
            raise CliError(f"{spec} must hold a JSON list of tool schemas")
        return loaded, None
    from ._tools import ToolRegistry

    try:
        registry = ToolRegistry.from_module(spec)
    except (ValueError, ImportError, OSError) as exc:
        raise CliError(f"cannot load tools from {spec}: {exc}") from exc
    return None, registry


def _cmd_chat(args: argparse.Namespace) -> int:
    import asyncio

    from operators import RetryPolicy, RetryPolicyError

    from ._transport import ChatClient, ConfigError

    schemas, registry = _load_tools(args.tools)
    try:
        client = ChatClient(
            args.base_url,
            model=args.model,
            retry_policy=RetryPolicy.normal(max_retries=args.max_retries),
            idle_timeout=args.idle_timeout,
        )
    except RetryPolicyError as exc:
        raise CliError(f"--max-retries: {exc}") from exc
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    mode = _mode(args)

    async def run_once() -> None:
        printer = Printer(sys.stdout, mode=mode)
        async with client:
            messages = [{"role": "user", "content": args.prompt}]
            async for chunk in client.stream(messages, tools=schemas, anomalies=args.anomalies or mode == "text"):
                printer.chunk(chunk)
        printer.summary()

    if args.session is None and registry is None:
        asyncio.run(run_once())
        return 0
    return asyncio.run(_chat_turn(args, client, registry, mode))


async def _chat_turn(args: argparse.Namespace, client: Any, registry: Any, mode: str) -> int:
    from ._session import Session, SessionError
    from ._tools import ToolRegistry
    from ._turn import run_turn

    if registry is None:
        registry = ToolRegistry()
    path = Path(args.session) if args.session else None
    try:
        session = Session.open(path) if path is not None else _memory_session()
    except SessionError as exc:
        raise CliError(str(exc)) from exc
    printer = Printer(sys.stdout, mode=mode)
    try:
        async with client:
            async for event in run_turn(client, session, registry, args.prompt, max_steps=args.max_steps):
                if event.kind == "chunk" or event.kind == "retry":
                    printer.chunk(event.data)
                elif mode == "text" and event.kind == "step-start":
                    sys.stdout.write(f"-- step {event.step}\n")
                elif mode == "text" and event.kind == "tool-result":
                    call, result = event.data
                    flag = " (error)" if result.is_error else ""
                    sys.stdout.write(f"    tool result  {call.name} {call.id}{flag}: {result.text[:200]}\n")
                elif mode == "text" and event.kind == "turn-end":
                    sys.stdout.write(f"-- turn {event.turn} ended: {event.data['kind']}\n")
    except SessionError as exc:
        raise CliError(str(exc)) from exc
    finally:
        session.close()
    if mode == "assembled":
        printer.summary()
    elif mode == "text" and path is not None:
        sys.stdout.write(f"session: {path} ({len(session.events)} events)\n")
    return 0


def _memory_session() -> Any:
    import tempfile

    from ._session import Session

    return Session.open(Path(tempfile.mkdtemp(prefix="llm-stream-")) / "session.jsonl", fsync=False)


def _cmd_session(args: argparse.Namespace) -> int:
    from ._session import check, repair

    path = Path(args.file)
    if not path.exists():
        raise CliError(f"cannot read {args.file}: No such file or directory")
    if args.action == "check":
        problems = check(path)
        for problem in problems:
            print(problem)
        print(f"{path}: {len(problems)} violation(s)" if problems else f"{path}: ok, loadable")
        return 1 if problems else 0
    report = repair(path)
    for problem in report.problems:
        print(f"fixed: {problem}")
    where = f" into {report.quarantine_path}" if report.quarantine_path else ""
    turns = f" (turns {', '.join(map(str, report.turns_quarantined))})" if report.turns_quarantined else ""
    print(f"{path}: kept {report.kept} events, quarantined {report.quarantined}{turns}{where}; the log loads")
    return 0


def _register_live(commands: Any, output_flags: Callable[[argparse.ArgumentParser], None]) -> None:
    p = commands.add_parser("emulate", help="serve the fault-injecting gateway emulator on 127.0.0.1")
    p.add_argument("--port", type=int, default=8808, help="port (0 picks a free one; default 8808)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.set_defaults(run=_cmd_emulate)

    p = commands.add_parser("chat", help="stream a chat completion from a live endpoint through the pipeline")
    p.add_argument("prompt", help="the user message")
    p.add_argument("--model", help="model (default: LLM_STREAM_MODEL, or the provider's default)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: LLM_STREAM_BASE_URL, else DeepSeek)")
    p.add_argument(
        "--tools",
        metavar="FILE.json|MODULE",
        help="a JSON list of tool schemas to offer, or a Python module (or .py file) whose tools are run",
    )
    p.add_argument("--session", metavar="FILE", help="continue (or start) a session log; runs the tool loop")
    p.add_argument("--max-steps", type=int, default=8, help="tool-calling steps per turn (default 8)")
    p.add_argument("--max-retries", type=int, default=2, help="retries after a retryable failure (default 2)")
    p.add_argument("--idle-timeout", type=float, default=None, help="seconds without data before TIMEOUT (300)")
    output_flags(p)
    p.set_defaults(run=_cmd_chat)

    p = commands.add_parser("session", help="check or repair a session log")
    p.add_argument("action", choices=["check", "repair"], help="check: list every violation; repair: recover")
    p.add_argument("file", help="the session log (.jsonl)")
    p.set_defaults(run=_cmd_session)


_EXTRA_COMMANDS: list[Callable[[Any, Callable[[argparse.ArgumentParser], None]], None]] = [_register_live]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except CliError as exc:
        print(f"llm-stream: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    raise SystemExit(main())
