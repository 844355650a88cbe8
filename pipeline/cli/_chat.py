"""``llm-stream chat "prompt" [...]``: stream from a live endpoint; with ``--session`` or a tools module, the tool loop.

Exit status 0 when the response (or the turn) ends well, 1 when it ends in an error finish (``error`` or ``aborted``:
a script can tell), 2 for bad usage (a base URL that is not http(s), checked before any request), 130 on Ctrl-C after
the partial summary.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from operators import DEFAULT_LIMITS, Limits, RetryPolicy, RetryPolicyError
from pipeline.agent import ToolRegistry, run_turn
from pipeline.client import GEMINI_BASE_URL, ChatClient, ConfigError
from pipeline.formats import APIS, ToolKindError
from pipeline.session import Session, SessionError

from ._errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, CliError, check_http_url
from ._render import Printer, add_output_flags, output_mode, plural, use_color

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "chat", help="stream a response from a live endpoint (chat completions, Messages, Responses or Gemini)"
    )
    p.add_argument("prompt", help="the user message")
    p.add_argument("--model", help="model (default: LLM_STREAM_MODEL, or the provider's default)")
    p.add_argument(
        "--base-url",
        help="the endpoint's http(s) base URL (default: LLM_STREAM_BASE_URL, OPENAI_BASE_URL, else DeepSeek; with "
        f"--api gemini: LLM_STREAM_BASE_URL, else {GEMINI_BASE_URL}); a ?key= in it is moved to the key header",
    )
    p.add_argument(
        "--api",
        choices=APIS,
        default="chat",
        help="the endpoint's API: chat (/chat/completions, default), messages (Anthropic-style /messages), "
        "responses (OpenAI /responses), gemini (Google's /models/MODEL:streamGenerateContent?alt=sse, the key from "
        "GOOGLE_API_KEY, else GEMINI_API_KEY, sent only to Google's host); the request and the stream in that "
        "API's shape",
    )
    p.add_argument(
        "--tools",
        metavar="FILE.json|MODULE",
        help="a JSON list of tool schemas to offer, or a Python module whose tools are run: a .py file's path, or a "
        "module name, importable or in the current folder (as with python -m)",
    )
    p.add_argument("--session", metavar="FILE", help="continue (or start) a session log; runs the tool loop")
    p.add_argument("--max-steps", type=_positive_int, default=8, help="tool-calling steps per turn (default 8)")
    p.add_argument("--max-retries", type=int, default=2, help="retries after a retryable failure (default 2)")
    p.add_argument(
        "--idle-timeout", type=_seconds, default=None, help="seconds without data before TIMEOUT (default 300)"
    )
    p.add_argument(
        "--total-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="seconds one attempt may take in all before TIMEOUT (default 600)",
    )
    for flag, field in _LIMIT_FLAGS:
        default = getattr(DEFAULT_LIMITS, field)
        p.add_argument(flag, type=_positive_int, default=default, metavar="N", help=f"Limits.{field} ({default})")
    add_output_flags(p)
    p.set_defaults(run=_run)


_LIMIT_FLAGS = (
    ("--max-event-bytes", "max_event_bytes"),
    ("--max-arguments-bytes", "max_arguments_bytes"),
    ("--max-text-bytes", "max_text_bytes"),
    ("--max-tool-calls", "max_tool_calls"),
)


def _seconds(text: str) -> float:
    """A finite number of seconds above zero (else a one-line usage error, exit status 2)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds above 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _check_base_url(
    flag: str | None, api: str = "chat", env: dict[str, str] | os._Environ[str] = os.environ
) -> None:
    """The base URL the client would use (``--base-url``, else ``LLM_STREAM_BASE_URL``, else ``OPENAI_BASE_URL`` but
    for ``--api gemini``, as ``ClientConfig.resolve`` orders them) must be http(s) with a host: one line, exit 2,
    before any request."""
    openai_url = None if api == "gemini" else (env.get("OPENAI_BASE_URL") or "").strip()
    for what, value in (
        ("--base-url", flag),
        ("LLM_STREAM_BASE_URL", env.get("LLM_STREAM_BASE_URL")),
        ("OPENAI_BASE_URL", openai_url),
    ):
        if value:
            check_http_url(value, what=what)
            return


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(**{field: getattr(args, field) for _, field in _LIMIT_FLAGS})


def _load_tools(spec: str | None) -> tuple[list[dict[str, Any]] | None, ToolRegistry | None]:
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
    hint = _find_in_current_folder(spec)
    try:
        registry = ToolRegistry.from_module(spec)
    except (ValueError, ImportError, OSError) as exc:
        raise CliError(f"cannot load tools from {spec}: {exc}{hint}") from exc
    return None, registry


def _find_in_current_folder(spec: str) -> str:
    """A dotted ``--tools`` name found nowhere on the import path is looked for in the current folder, as
    ``python -m`` does: when ``./NAME.py`` or ``./NAME/`` is there, the folder is put first on the import path for
    the run (so the module's own imports of its neighbours work too). An installed module of the name still wins.
    Returns what to add to a not-found error: how to name the module."""
    top = spec.partition(".")[0]
    if spec.endswith(".py") or "/" in spec or "\\" in spec or not top.isidentifier():
        return ""
    try:
        if importlib.util.find_spec(top) is not None:
            return ""
    except (ImportError, ValueError):
        return ""
    folder = Path.cwd()
    if (folder / f"{top}.py").is_file() or (folder / top).is_dir():
        sys.path.insert(0, str(folder))
        importlib.invalidate_caches()
        return ""
    return (f" (not in the current folder either: give a file's path, --tools path/to/{top}.py, or a module "
            "importable from PYTHONPATH)")


def _run(args: argparse.Namespace) -> int:
    _check_base_url(args.base_url, args.api)
    schemas, registry = _load_tools(args.tools)
    try:
        client = ChatClient(
            args.base_url,
            model=args.model,
            api=args.api,
            retry_policy=RetryPolicy.normal(max_retries=args.max_retries),
            idle_timeout=args.idle_timeout,
            total_timeout=args.total_timeout,
            limits=_limits(args),
        )
    except RetryPolicyError as exc:
        raise CliError(f"--max-retries: {exc}") from exc
    except ConfigError as exc:
        raise CliError(str(exc)) from exc
    mode = output_mode(args)
    printer = Printer(sys.stdout, mode=mode, color=use_color(args.color, sys.stdout))

    async def run_once() -> None:
        async with client:
            messages = [{"role": "user", "content": args.prompt}]
            async for chunk in client.stream(messages, tools=schemas, anomalies=args.anomalies or mode == "text"):
                printer.chunk(chunk)

    try:
        if args.session is None and registry is None:
            asyncio.run(run_once())
            printer.summary()
            return EXIT_OK if printer.message().ok else EXIT_FAILURE
        return asyncio.run(_chat_turn(args, client, registry, printer))
    except KeyboardInterrupt:  # asyncio.run cancelled the stream (the connection is closed); show what came
        printer.summary(interrupted=True)
        return EXIT_INTERRUPTED


async def _chat_turn(
    args: argparse.Namespace, client: ChatClient, registry: ToolRegistry | None, printer: Printer
) -> int:
    """One turn of the tool loop; 1 when it ends in an error finish."""
    mode = printer.mode
    if registry is None:
        registry = ToolRegistry()
    path = Path(args.session) if args.session else None
    # without --session the tool loop still needs a log: one in a temporary directory, removed after the turn
    scratch = tempfile.TemporaryDirectory(prefix="llm-stream-") if path is None else None
    try:
        if scratch is not None:
            session = Session.open(Path(scratch.name) / "session.jsonl", fsync=False)
        else:
            session = Session.open(args.session)
    except SessionError as exc:
        if scratch is not None:
            scratch.cleanup()
        raise CliError(str(exc)) from exc
    ended = "error"
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
                elif event.kind == "turn-end":
                    ended = event.data["kind"]
                    if mode == "text":
                        sys.stdout.write(f"-- turn {event.turn} ended: {ended}\n")
    except (SessionError, ToolKindError) as exc:  # ToolKindError: tools or calls only api="responses" takes
        raise CliError(str(exc)) from exc
    finally:
        session.close()
        if scratch is not None:
            scratch.cleanup()  # a turn without --session leaves no session file behind
    if mode == "assembled":
        printer.summary()
    elif mode == "text" and path is not None:
        sys.stdout.write(f"session: {path} ({plural(len(session.events), 'event')})\n")
    return EXIT_FAILURE if ended in ("error", "aborted") else EXIT_OK

