"""``llm-stream proxy --upstream URL [--port P] [--max-streams N] ...``: the sanitizing proxy in the foreground.

One flag per ``ProxyConfig`` field, each also read from ``LLM_STREAM_PROXY_<FIELD>`` (a flag wins); the flags and
their help come from the config itself, so a new field is a new flag (docs/proxy.md).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import attrs

from pipeline.proxy import ProxyConfig

from ._errors import EXIT_OK, CliError, check_http_url, extra_missing, listen_errors, port_number

__all__ = ["add_parser"]

_CHOICES = {"mode": ("stream", "buffered"), "log_format": ("text", "json", "off"),
            "loop": ("auto", "asyncio", "uvloop")}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "proxy",
        help="serve a proxy that sanitizes the streams of --upstream (chat completions, Messages, Responses, Gemini)",
        description="Forwards /v1/<path> (and Gemini's /v1beta/<path>) to --upstream and repairs the streams of "
        "chat completions, the Messages API, the Responses API and Gemini; everything else passes as sent. Every "
        "flag can also be set as LLM_STREAM_PROXY_<FLAG> (e.g. LLM_STREAM_PROXY_MAX_STREAMS); a flag wins over the "
        "variable. docs/proxy.md has the headers forwarded, the metrics and a deployment.",
    )
    for field in attrs.fields(ProxyConfig):
        if "parse" not in field.metadata:
            continue
        text = f"{field.metadata['help']} [{ProxyConfig.env_var(field.name)}]"
        if field.metadata.get("switch"):  # a flag without a value; its variable takes 1/0, true/false, ...
            p.add_argument("--" + field.name.replace("_", "-"), dest=field.name, action="store_const", const=True,
                           default=None, help=text)
            continue
        kind: Any = port_number if field.name == "port" else field.metadata["parse"]
        p.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            type=kind,
            choices=_CHOICES.get(field.name),
            default=None,
            metavar=None if field.name in _CHOICES else field.name.upper(),
            help=text,
        )
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    flags = {name: value for name, value in vars(args).items() if name not in ("run", "command")}
    upstream = flags.get("upstream") or os.environ.get(ProxyConfig.env_var("upstream"), "")
    if "@" in upstream.partition("://")[2].partition("/")[0].partition("?")[0]:  # before any message shows the URL
        raise CliError("--upstream must not carry credentials (user:password@host): the proxy would never send them, "
                       "and would show them; give the upstream's key with --upstream-key-env")
    if flags.get("upstream") is not None:
        check_http_url(flags["upstream"], what="--upstream")
    try:
        config = ProxyConfig.from_env(os.environ, **flags)
    except (ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None
    try:
        from pipeline.proxy import run_proxy  # uvicorn and prometheus-client come with the "proxy" extra
    except ImportError as exc:
        raise extra_missing("the proxy", exc, "proxy") from exc
    with listen_errors(config.host, config.port):
        try:
            run_proxy(config)
        except ValueError as exc:  # a key variable that holds no key
            raise CliError(str(exc)) from None
    return EXIT_OK
