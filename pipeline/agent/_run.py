"""Running one tool's function: a sync function in a daemon thread of its own, and a time limit for either kind.

A sync tool does not run in the loop's default executor: ``asyncio.run`` waits for that executor's threads when it
shuts down, so one tool stuck in ``time.sleep`` or a blocking read would keep a cancelled turn (and the program)
from ending. Here each sync call gets a daemon thread that delivers its outcome into a loop future with
``call_soon_threadsafe``; when the call is abandoned (timed out or cancelled) the future is dropped, and an outcome
that arrives later, or after the loop closed, is ignored. Python cannot kill a thread: an abandoned sync tool goes
on running until its function returns (or the process exits), so its side effects may still happen. An async tool
is cancelled (``CancelledError`` is raised inside it) and is gone when the call returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from operators import LlmStreamError

__all__ = ["DEFAULT_TOOL_TIMEOUT", "ToolTimedOut", "check_timeout", "run_sync", "run_with_timeout"]

DEFAULT_TOOL_TIMEOUT = 120.0
"""Seconds a tool call may run before it is abandoned with an error result (the registry's default)."""


class ToolTimedOut(LlmStreamError):
    """The call ran out of time (internal: the registry turns it into an error ``ToolResult``)."""

    def __init__(self, timeout: float) -> None:
        super().__init__(f"timed out after {timeout:g} s")
        self.timeout = timeout


def check_timeout(value: object, what: str) -> float | None:
    """``value`` as a timeout in seconds: None, or a positive number (``math.inf``: no limit); else a ValueError."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value) or value <= 0:
        raise ValueError(f"{what} must be a positive number of seconds or None, got {value!r}")
    return float(value)


async def run_sync(func: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """``func(*args, **kwargs)`` in a new daemon thread (with the caller's context variables), awaited."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(ok: bool, value: Any) -> None:
        if future.done():  # abandoned: cancelled or timed out
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        outcome: tuple[bool, Any]
        try:
            outcome = (True, context.run(func, *args, **kwargs))
        except Exception as exc:
            outcome = (False, exc)
        except BaseException as exc:  # SystemExit in a thread: still an outcome, never a call that waits forever
            outcome = (False, RuntimeError(f"the tool's thread ended with {type(exc).__name__}"))
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits for this outcome any more
            loop.call_soon_threadsafe(deliver, *outcome)

    name = getattr(func, "__name__", "tool")
    threading.Thread(target=work, name=f"tool-{name}", daemon=True).start()
    return await future


async def run_with_timeout(call: Callable[[], Any], timeout: float | None) -> Any:
    """Await ``call()`` within ``timeout`` seconds; running out raises ``ToolTimedOut`` (a ``TimeoutError`` the
    tool raises itself stays the tool's own error)."""
    if timeout is None or math.isinf(timeout):
        return await call()
    try:
        async with asyncio.timeout(timeout) as scope:
            return await call()
    except TimeoutError:
        if scope.expired():
            raise ToolTimedOut(timeout) from None
        raise
