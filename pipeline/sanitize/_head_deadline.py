"""The response head's total deadline for a sync client: every socket read and write of the request's own thread,
while the transport waits for the head, is given no more than what is left of the request's timeout.

httpx (and httpcore) apply a timeout to each read, so an upstream dripping its status line and headers a byte at a
time resets it forever. An async client bounds the whole head with ``asyncio.wait_for`` (``_transport.py``); a sync
client cannot interrupt a blocking read from outside it, so the bound goes inside: the connection pool's network
backend is wrapped, and while ``HEAD_DEADLINE`` (a context variable, so per thread) holds a deadline, each read and
write of a connection made by that pool gets ``min(its own timeout, the time left)`` and fails with the connection
library's own ``ReadTimeout`` / ``WriteTimeout`` once the deadline passed (httpx turns it into ``httpx.ReadTimeout``,
the SDK into its timeout error). Unset, the wrapper passes every call through unchanged.

httpx's ``HTTPTransport`` takes no network backend, so ``bound_head`` reaches its pool's ``_network_backend``: a
private attribute of httpcore and httpcore2 (both ``ConnectionPool``\\ s have it). Where it is missing (a custom
transport, a future httpcore) nothing is wrapped and the head is bounded per read only, as before; the tests hold
both httpx and httpx2 to the total bound, so a change there shows (docs/decisions/0033-one-retry-layer.md).
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

__all__ = ["HEAD_DEADLINE", "bound_head", "head_deadline"]

HEAD_DEADLINE: ContextVar[float | None] = ContextVar("llm_stream_head_deadline", default=None)
"""The ``time.monotonic()`` by which the current thread's request must have its response head, or ``None``."""


@contextlib.contextmanager
def head_deadline(budget_s: float | None) -> Iterator[None]:
    """While inside, this thread's reads and writes on bounded pools end by ``budget_s`` from now."""
    if budget_s is None:
        yield
        return
    token = HEAD_DEADLINE.set(time.monotonic() + budget_s)
    try:
        yield
    finally:
        HEAD_DEADLINE.reset(token)


def _library_error(owner: Any, name: str) -> type[Exception]:
    """``ReadTimeout`` / ``WriteTimeout`` / ``ConnectTimeout`` of the library ``owner`` (a network stream or backend)
    comes from: httpcore or httpcore2, whose client maps it to its own timeout error."""
    module = sys.modules.get(type(owner).__module__.split(".", 1)[0])
    error = getattr(module, name, None)
    return error if isinstance(error, type) and issubclass(error, Exception) else TimeoutError


def _left(timeout: float | None, owner: Any, error: str) -> float | None:
    """``timeout``, or less: what is left of this thread's deadline (``owner``'s library's ``error`` when none)."""
    deadline = HEAD_DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise _library_error(owner, error)("no response head within the request's timeout")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A network stream whose reads and writes keep to ``HEAD_DEADLINE``."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, self._stream, "ReadTimeout"))  # type: ignore[no-any-return]

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, self._stream, "WriteTimeout"))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout, self._stream,
                                                                                   "ConnectTimeout")))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend:
    """A sync network backend whose connections are ``_Stream``\\ s."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> _Stream:
        timeout = _left(timeout, self._backend, "ConnectTimeout")
        return _Stream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> _Stream:
        timeout = _left(timeout, self._backend, "ConnectTimeout")
        return _Stream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def bound_head(transport: Any) -> bool:
    """Wrap the network backend of a sync httpx / httpx2 ``HTTPTransport``'s pool (idempotent); ``False`` when the
    transport has no such pool (its heads are then bounded per read only)."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None or not callable(getattr(backend, "connect_tcp", None)):
        return False
    if not isinstance(backend, _Backend):
        pool._network_backend = _Backend(backend)  # type: ignore[union-attr]
    return True
