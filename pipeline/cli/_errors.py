"""The CLI's exit statuses and its one exception.

Exit status: ``EXIT_OK`` (0) on success, and a stream that ends in an error finish is a result, not a CLI error;
``EXIT_USAGE`` (2) for bad usage or an unreadable file (argparse uses 2 as well); ``EXIT_FAILURE`` (1) for other
failures (``session check`` finding violations); ``EXIT_INTERRUPTED`` (130) on Ctrl-C.
"""

from __future__ import annotations

from operators import LlmStreamError

__all__ = ["EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "CliError"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(LlmStreamError):
    """A one-line error for the user, printed as ``llm-stream: <message>``; exit status 2."""
