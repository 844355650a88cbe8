"""What the transport reads off one request: its key (for redaction), whether it needs TLS, its own timeout (the
bound on every internal retry's wait), and its retry state (``Attempt``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from operators import Failure, RetryPolicy

from .._secrets import register_secret, split_url_key
from ._formats import api_key
from ._sanitizer import Attempts

__all__ = ["Attempt", "budget_s", "needs_tls", "request_key"]


def request_key(request: Any) -> str | None:
    """The request's key, from whichever key header a wire-format record names (``Authorization: Bearer`` first),
    else a ``?key=`` in its URL (Google's style), which the log filter then redacts as any key."""
    found = api_key(request.headers)
    if found is None:
        try:
            found = split_url_key(str(request.url))[1]
        except ValueError:  # two different keys: neither is the request's
            return None
        register_secret(found)
    return found


def needs_tls(request: Any) -> bool:
    """Whether the request needs TLS (anything but ``http://``: an unknown scheme fails in the inner transport)."""
    return bool(request.url.scheme != "http")


def budget_s(request: Any) -> float | None:
    """The request's own timeout (its largest phase), the bound on every internal retry's wait."""
    timeout = request.extensions.get("timeout") or {}
    values = [float(v) for v in timeout.values() if isinstance(v, int | float) and v > 0]
    return max(values) if values else None


class Attempt:
    """The retry state of one request: ``None`` delays when retries are off (the default)."""

    def __init__(self, policy: RetryPolicy | None, request: Any, rand: Callable[[], float]) -> None:
        self._attempts = Attempts(policy, rand) if policy is not None else None
        self._budget = budget_s(request)
        self._started = time.monotonic()

    def delay_s(self, failure: Failure) -> float | None:
        if self._attempts is None:
            return None
        delay = self._attempts.delay_s(failure)
        if delay is not None and self._budget is not None and time.monotonic() - self._started + delay > self._budget:
            return None  # the wait would outlast the request's own timeout
        return delay
