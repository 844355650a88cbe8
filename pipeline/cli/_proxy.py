"""``llm-stream proxy --upstream URL [--host H] [--port P] [--mode stream|buffered] [--retries N]``: the sanitizing
proxy in the foreground (docs/proxy.md)."""

from __future__ import annotations

import argparse

from operators import RetryPolicy

from ._errors import EXIT_OK, CliError, check_http_url, listen_errors, port_number

__all__ = ["add_parser"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "proxy", help="serve an OpenAI-compatible proxy that sanitizes streamed chat completions from --upstream"
    )
    p.add_argument("--upstream", required=True, help="the upstream base URL, e.g. https://api.deepseek.com/v1")
    p.add_argument("--port", type=port_number, default=8809, help="port (0 picks a free one; default 8809)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    p.add_argument(
        "--mode",
        choices=("stream", "buffered"),
        default="stream",
        help="stream: forward repaired bytes at once (default); buffered: hold each response until its finish, so "
        "any failure is an HTTP error the client can retry (or, with --retries, is retried here)",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=0,
        help="retries inside the proxy for clients with no retry loop of their own (default 0: the client's own "
        "retries govern; an SDK's max_retries would multiply with these)",
    )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        from pipeline.sanitize import run_proxy  # starlette / uvicorn come with the "emulator" extra
    except ImportError as exc:
        raise CliError(f"the proxy needs: pip install 'llm-stream-pipeline[emulator]' ({exc})") from exc
    check_http_url(args.upstream, what="--upstream")
    with listen_errors(args.host, args.port):
        retry = RetryPolicy(max_retries=args.retries) if args.retries > 0 else None
        run_proxy(args.upstream, host=args.host, port=args.port, mode=args.mode, retry_policy=retry)
    return EXIT_OK
