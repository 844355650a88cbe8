"""The CLI's exit statuses, its one exception, and the checks every command shares (docs/cli.md).

Exit status: ``EXIT_OK`` (0) on success; ``EXIT_FAILURE`` (1) when ``chat``'s response (or turn) ended in an error
finish, or ``session check`` found violations (``replay`` keeps 0: an error finish in a recording is a result);
``EXIT_USAGE`` (2) for bad usage, an unreadable file, a bad URL or a port that cannot be listened on (argparse uses 2
as well); ``EXIT_INTERRUPTED`` (130) on Ctrl-C, after the partial summary.
"""

from __future__ import annotations

import argparse
import errno
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from operators import LlmStreamError

__all__ = [
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliError",
    "check_http_url",
    "extra_missing",
    "listen_errors",
    "port_number",
]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(LlmStreamError):
    """A one-line error for the user, printed as ``llm-stream: <message>``; exit status 2."""


def extra_missing(what: str, exc: ImportError, extra: str = "emulator") -> CliError:
    """The one line for a command that needs an extra (``emulator``: starlette and uvicorn; ``proxy``): what needs
    it, and the install hint once (the library's own ImportError already names it; a bare one from Python does not)."""
    hint = f"pip install 'llm-stream-pipeline[{extra}]'"
    reason = str(exc)
    if hint in reason:
        return CliError(f"{what}: {reason}")
    return CliError(f"{what} needs the {extra} extra ({reason}); install it with: {hint}")


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port, 0 (any free port) to 65535 (else a one-line usage error, exit status 2)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 (any free port) to 65535, got {text!r}")
    return value


@contextmanager
def listen_errors(host: str, port: int) -> Iterator[None]:
    """Around serving on ``host:port`` (``run_emulator``, ``run_proxy``): a busy port, an address this machine does
    not have or a host name that does not resolve becomes one ``CliError`` line instead of a traceback::

        with listen_errors(args.host, args.port):
            run_emulator(args.host, args.port)
    """
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        hint = "; pick another --port (0 picks a free one)" if exc.errno == errno.EADDRINUSE else ""
        raise CliError(f"cannot listen on {host}:{port}: {reason}{hint}") from None
    except OverflowError as exc:  # socket.bind's own range check, if a caller skipped port_number
        raise CliError(f"cannot listen on {host}:{port}: {exc}") from None


def check_http_url(url: str, *, what: str) -> str:
    """``url`` if it is an ``http``/``https`` URL with a host; else a one-line ``CliError`` naming ``what`` (the flag
    or variable it came from), with the likely fix (``localhost:8808`` -> ``http://localhost:8808``)."""
    example = "such as https://api.example.com/v1"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError as exc:
        raise CliError(f"{what} is not a valid URL ({exc}): {url!r}") from None
    scheme = parts.scheme.lower()
    if scheme in ("http", "https") and host:
        return url
    if scheme not in ("http", "https") and "://" not in url and url.strip():
        raise CliError(f"{what} must be an http(s) URL {example}, got {url!r}; did you mean 'http://{url}'?")
    raise CliError(f"{what} must be an http(s) URL with a host, {example}, got {url!r}")
