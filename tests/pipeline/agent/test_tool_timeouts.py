"""Per-tool time limits, and sync tools that never hold up the loop's shutdown (issue 10, "Tools")."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from pipeline import Tool, ToolDefinitionError, ToolRegistry


async def test_a_hung_async_tool_gives_a_timed_out_error_result() -> None:
    registry = ToolRegistry()

    @registry.register(timeout=0.3)
    async def hang() -> str:
        await asyncio.sleep(60)
        return "never"

    started = time.monotonic()
    result = await asyncio.wait_for(registry.call("hang", "{}"), 10)
    assert result.is_error
    assert result.text.startswith("tool hang timed out after 0.3 s")
    assert time.monotonic() - started < 5


async def test_a_hung_sync_tool_gives_a_timed_out_error_result_and_is_abandoned() -> None:
    release = threading.Event()
    registry = ToolRegistry(default_timeout=0.3)

    @registry.register
    def block() -> str:
        release.wait(30)
        return "late"

    try:
        result = await asyncio.wait_for(registry.call("block", "{}"), 10)
    finally:
        release.set()
    assert result.is_error
    assert "timed out after 0.3 s" in result.text
    await asyncio.sleep(0.05)  # the thread's late outcome arrives and is ignored


async def test_the_tool_timeout_wins_over_the_registry_default() -> None:
    registry = ToolRegistry(default_timeout=0.2)

    @registry.register(timeout=5)
    async def slow() -> str:
        await asyncio.sleep(0.5)
        return "done"

    @registry.register
    async def slow_default() -> str:
        await asyncio.sleep(0.5)
        return "done"

    results = await registry.call_many([("slow", "{}"), ("slow_default", "{}")])
    assert results[0].text == "done"
    assert not results[0].is_error
    assert results[1].is_error
    assert "timed out after 0.2 s" in results[1].text


async def test_a_timeout_error_the_tool_raises_itself_is_the_tool_failing() -> None:
    registry = ToolRegistry()

    @registry.register
    async def raises() -> str:
        raise TimeoutError("upstream")

    result = await registry.call("raises", "{}")
    assert result.is_error
    assert result.text == "tool raises failed: TimeoutError: upstream"


async def test_no_limit_with_inf_or_none() -> None:
    registry = ToolRegistry(default_timeout=None)

    @registry.register
    def quick() -> int:
        return 1

    tool = Tool.from_function(quick, name="quick2", timeout=math.inf)
    registry.add(tool)
    assert registry.default_timeout is None
    assert tool.timeout == math.inf
    assert (await registry.call("quick", "")).text == "1"
    assert (await registry.call("quick2", "")).text == "1"


@pytest.mark.parametrize("bad", [0, -1, math.nan, "5", True])
def test_a_bad_timeout_is_a_definition_error(bad: object) -> None:
    with pytest.raises(ToolDefinitionError, match="timeout"):
        ToolRegistry(default_timeout=bad)  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="timeout"):
        Tool.from_function(len, name="n", parameters={"type": "object"}, timeout=bad)  # type: ignore[arg-type]


async def test_a_sync_tool_sees_the_callers_context_variables() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    registry = ToolRegistry()

    @registry.register
    def read() -> str:
        return var.get()

    var.set("set")
    assert (await registry.call("read", "{}")).text == "set"


_HUNG_SYNC_TOOL = textwrap.dedent(
    """
    import asyncio, sys, time
    from pipeline import ToolRegistry

    registry = ToolRegistry(default_timeout={timeout})

    @registry.register
    def sleeper() -> str:
        time.sleep(60)
        return "late"

    async def main() -> None:
        task = asyncio.ensure_future(registry.call("sleeper", "{{}}"))
        await asyncio.sleep(0.5)
        if not task.done():
            task.cancel()
        try:
            print(await task)
        except asyncio.CancelledError:
            print("cancelled")

    started = time.monotonic()
    asyncio.run(main())
    print(f"asyncio.run returned after {{time.monotonic() - started:.3f}} s", file=sys.stderr)
    """
)


@pytest.mark.server
@pytest.mark.parametrize(("timeout", "printed"), [(None, "cancelled"), (0.3, "timed out after 0.3 s")])
def test_cancelling_a_turn_does_not_wait_for_a_sync_tool_stuck_in_its_thread(
    timeout: float | None, printed: str
) -> None:
    """A sync tool sleeping 60 s, cancelled (or timed out) after 0.5 s: ``asyncio.run`` returns and the process exits
    at once (before: both waited the full 60 s for the default executor's thread)."""
    code = _HUNG_SYNC_TOOL.format(timeout=timeout)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20, check=False)
    assert done.returncode == 0, done.stderr
    assert printed in done.stdout
