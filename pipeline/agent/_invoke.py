"""Running one tool, handler or custom tool: ``invoke`` calls it (a sync one in a daemon thread of its own) within its
time limit, and gives its return value or the error result that says why there is none."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from .._logging import get_logger
from ._quote import describe
from ._run import ToolTimedOut, run_sync, run_with_timeout
from ._tool import ToolResult

__all__ = ["Returned", "Runner", "invoke", "is_async"]

_log = get_logger("agent")


def is_async(func: Callable[..., Any]) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(type(func).__call__)


@attrs.frozen
class Runner:
    """What runs a tool: its label in messages (``tool <label> failed: ...``: a name, or a built-in kind), the
    callable, whether it is async, its own time limit, and the request's ``tools`` entries it declares."""

    label: str
    func: Callable[..., Any]
    is_async: bool
    timeout: float | None
    declarations: tuple[Mapping[str, Any], ...] = ()


@attrs.frozen
class Returned:
    """What a tool returned (a ``ToolResult`` it returns is a value too, turned into text as any other)."""

    value: Any


async def invoke(
    runner: Runner, positional: list[Any], keywords: dict[str, Any], default_timeout: float | None
) -> ToolResult | Returned:
    """``runner.func(*positional, **keywords)``'s value, or the error result: it raised, or ran out of time (its own
    ``timeout``, else ``default_timeout``). Only ``asyncio.CancelledError`` and other ``BaseException``s propagate."""

    async def call() -> Any:
        if runner.is_async:
            value = runner.func(*positional, **keywords)
        else:
            value = await run_sync(runner.func, positional, keywords)
        return (await value) if inspect.isawaitable(value) else value

    timeout = runner.timeout if runner.timeout is not None else default_timeout
    try:
        return Returned(await run_with_timeout(call, timeout))
    except ToolTimedOut as exc:
        _log.debug("tool %s %s", runner.label, exc)
        return ToolResult(f"tool {runner.label} {exc} (abandoned; the model may try again)", is_error=True)
    except Exception as exc:
        _log.debug("tool %s failed", runner.label, exc_info=True)
        return ToolResult(f"tool {runner.label} failed: {describe(exc)}", is_error=True)
