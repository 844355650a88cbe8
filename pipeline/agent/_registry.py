"""The tool registry: the tools a model may call, their JSON Schemas, and a ``call`` that never raises.

    registry = ToolRegistry()

    @registry.register
    async def get_weather(city: Annotated[str, "City name, e.g. Paris"], unit: Literal["c", "f"] = "c") -> str:
        \"\"\"Current weather for a city.\"\"\"

    request["tools"] = registry.schemas()
    result = await registry.call(name, arguments)      # a ToolResult, whatever the model sent

Everything the model (or the tool) can get wrong comes back as ``ToolResult(is_error=True)`` whose text says what
happened and what was expected, so the turn loop hands it back to the model and the model can correct itself:

    unknown tool          unknown tool "get_wether"; available tools: get_time, get_weather
                          (did you mean "get_weather"?)
    not a string          arguments for tool "get_weather" must be a string of JSON, got dict: {'city': 'Paris'}
    not JSON              arguments for tool "get_weather" are not valid JSON (Expecting ...): "{city: Paris}"
    not an object         arguments for tool "get_weather" must be a JSON object, got array: "[\\"Paris\\"]"
    schema violation      invalid arguments for tool "get_weather":
                          - $.city: expected string, got integer
                          - $: unexpected property "town" (allowed: city, unit)
    the tool raised       tool get_weather failed: KeyError: 'Paris'
    the tool hung         tool get_weather timed out after 120 s (abandoned; the model may try again)

A result longer than ``max_result_chars`` (100,000 unless given; None: no limit) is cut there and ends with
``[truncated: the tool returned 104,857,600 characters; only the first 100,000 are shown]``, so a tool returning
100 MB is never written whole into the session nor sent in the next request (docs/decisions/0041-tool-result-size.md).

Each call has a time limit: the tool's own ``timeout``, else the registry's ``default_timeout`` (120 s unless
given; None or ``math.inf``: no limit). A sync tool runs in a daemon thread of its own, so an abandoned one (timed
out or cancelled) never holds up the event loop's shutdown; Python cannot kill a thread, so it runs on until it
returns (``_run``'s docstring).

Only ``asyncio.CancelledError`` (and ``BaseException``s that are not ``Exception``s) propagate out of ``call``.

Through the Responses API a model also calls tools that are not functions (docs/decisions/
0072-client-run-tool-calls.md); ``call(name, arguments, kind=...)`` dispatches on the call's kind:

    @registry.register_custom(grammar=Grammar.lark(GRAMMAR))    # a custom tool: the model's raw text in
    def run_sql(query: str) -> str: ...

    @registry.handle("apply_patch")                             # a built-in kind, by kind: its arguments as a dict
    def apply_patch(operation: dict) -> str: ...

A call of a kind nothing handles (or a custom tool not registered) is answered as an unknown tool is:
``unknown tool "shell" (kind shell): no handler is registered for shell calls; handled kinds: apply_patch``.
What a handler of each built-in kind returns, and how it reaches the model, is ``_answers.py``'s table.

Schemas are derived from type hints (``schema_from_signature``) unless given explicitly. When a tool's schema is the
derived one, validated arguments are also *converted* to the annotated types before the call: an ``Enum`` parameter
receives the member, a dataclass / attrs parameter an instance, a ``float`` parameter a float even when the model
wrote ``3``, and an ``X | None`` parameter without a default receives ``None`` when omitted. A tool with an explicit
schema receives the JSON values as they are, as keyword arguments.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any, TypeVar, overload

import attrs

from operators import ToolCallKind

from .._logging import get_logger
from ._call import DEFAULT_MAX_RESULT_CHARS, bounded_result, prepare, result_from_value
from ._convert import Binder, binder_for
from ._custom import CustomTool
from ._errors import ToolDefinitionError
from ._invoke import Runner, invoke, is_async
from ._module import registry_from_module
from ._other_kinds import OtherKinds
from ._quote import EXCERPT, describe, excerpt, safe_repr, utf8_safe
from ._run import DEFAULT_TOOL_TIMEOUT, check_timeout
from ._tool import Tool, ToolResult

__all__ = ["ToolRegistry"]

_log = get_logger("agent")  # llm_stream.agent (docs/decisions/0020-environment-and-logging.md)

_F = TypeVar("_F", bound=Callable[..., Any])


@attrs.frozen
class _Entry:
    tool: Tool
    binder: Binder | None
    is_async: bool


class ToolRegistry(OtherKinds):
    """The tools of a conversation, by name, in registration order.

    ``register`` adds a function (as a decorator, with or without options, or called directly); ``add`` adds a
    ``Tool`` or a ``CustomTool``; ``register_custom`` a custom (free-form) tool; ``handle`` the handler of a built-in
    kind of call. ``schemas()`` is the request's ``tools``; ``call`` / ``call_many`` run what the model asked for and
    never raise (see the module docstring for every error message). ``len``, ``in``, iteration and ``get`` are about
    the function tools.
    """

    def __init__(
        self,
        tools: Iterable[Tool | CustomTool] = (),
        *,
        default_timeout: float | None = DEFAULT_TOOL_TIMEOUT,
        max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS,
    ) -> None:
        try:
            self.default_timeout = check_timeout(default_timeout, "a registry's default_timeout")
        except ValueError as exc:
            raise ToolDefinitionError(str(exc)) from None
        if max_result_chars is not None and (type(max_result_chars) is not int or max_result_chars < 1):
            raise ToolDefinitionError(f"max_result_chars must be a positive int or None, got {max_result_chars!r}")
        self.max_result_chars = max_result_chars
        self._entries: dict[str, _Entry] = {}
        self._custom: dict[str, Runner] = {}
        self._handlers: dict[str, Runner] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool | CustomTool) -> Tool | CustomTool:
        """Register ``tool``; a second tool with the same name is a ``ToolDefinitionError`` (a ``ValueError``)."""
        if not isinstance(tool, Tool | CustomTool):
            raise ToolDefinitionError(f"expected a Tool or a CustomTool, got {tool!r}; use register() for a function")
        if tool.name in self._entries or tool.name in self._custom:
            raise ToolDefinitionError(f'a tool named "{tool.name}" is already registered')
        if isinstance(tool, CustomTool):
            self._custom[tool.name] = Runner(tool.name, tool.func, is_async(tool.func), tool.timeout,
                                              (tool.to_responses(),))
        else:
            self._entries[tool.name] = _Entry(tool, binder_for(tool), is_async(tool.func))
        return tool

    @overload
    def register(
        self,
        func: _F,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> _F: ...

    @overload
    def register(
        self,
        func: None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Callable[[_F], _F]: ...

    def register(
        self,
        func: _F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> _F | Callable[[_F], _F]:
        """Register a function as a tool and return it unchanged.

        @registry.register
        async def get_weather(city: str) -> str: ...

        @registry.register(name="weather", parameters={"type": "object", ...}, timeout=10)
        def get_weather_sync(**arguments: str) -> str: ...

        registry.register(len_of_text)
        """

        def decorate(target: _F) -> _F:
            self.add(
                Tool.from_function(target, name=name, description=description, parameters=parameters, timeout=timeout)
            )
            return target

        return decorate if func is None else decorate(func)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[Tool]:
        return (entry.tool for entry in list(self._entries.values()))

    def __repr__(self) -> str:
        return f"ToolRegistry({[*self._entries, *self._custom, *self._handlers]!r})"

    def get(self, name: str) -> Tool | None:
        entry = self._entries.get(name) if isinstance(name, str) else None
        return None if entry is None else entry.tool

    def schemas(self) -> list[dict[str, Any]]:
        """The request's ``tools``: one ``{"type": "function", "function": {...}}`` per function tool, then each
        custom tool and each handler's declarations in the Responses API's shape (which only ``api="responses"``
        takes: ``run_turn`` refuses them for another API)."""
        out = [entry.tool.to_openai() for entry in self._entries.values()]
        for runner in (*self._custom.values(), *self._handlers.values()):
            out.extend(dict(entry) for entry in runner.declarations)
        return out

    async def call(self, name: object, arguments: object, *, kind: str = ToolCallKind.FUNCTION) -> ToolResult:
        """Run the tool ``name`` with ``arguments`` (the JSON string the model wrote; a custom tool's free-form text;
        a built-in kind's JSON operation or action) and return what happened; ``kind`` is the call's
        (``ToolCallBlock.kind``).

        Never raises, except ``asyncio.CancelledError``: every failure is a ``ToolResult(is_error=True)`` whose
        text tells the model what went wrong. Empty (or blank) arguments of a function mean ``{}``. The text is at
        most ``max_result_chars`` characters and a truncation marker (a built-in kind's answer: its text fields).
        The text is always encodable as UTF-8 (a lone surrogate, which a model can write as ``"\\ud800"``, becomes
        the escape ``\\ud800``).
        """
        if kind == ToolCallKind.FUNCTION:
            result = bounded_result(await self._call(name, arguments), self.max_result_chars)
        elif kind == ToolCallKind.CUSTOM:
            result = bounded_result(await self._call_custom(name, arguments), self.max_result_chars)
        else:
            result = await self._call_kind(name, arguments, kind)
        text = utf8_safe(result.text)
        return result if text is result.text else attrs.evolve(result, text=text)

    async def _call(self, name: object, arguments: object) -> ToolResult:
        entry = self._entries.get(name) if isinstance(name, str) else None
        if entry is None:
            return ToolResult(self._unknown_tool(name, self._entries), is_error=True)
        tool = entry.tool
        try:
            prepared = prepare(tool, entry.binder, arguments)
        except Exception as exc:  # a RecursionError on absurdly deep arguments, say: still a result, never raised
            _log.debug("checking the arguments of tool %s failed", tool.name, exc_info=True)
            return ToolResult(f'cannot check the arguments for tool "{tool.name}": {describe(exc)}', is_error=True)
        if isinstance(prepared, ToolResult):
            return prepared
        positional, keywords = prepared
        runner = Runner(tool.name, tool.func, entry.is_async, tool.timeout, ())
        ran = await invoke(runner, positional, keywords, self.default_timeout)
        return ran if isinstance(ran, ToolResult) else result_from_value(ran.value)

    async def call_many(self, calls: Sequence[tuple[str, str] | tuple[str, str, str]]) -> list[ToolResult]:
        """Run ``(name, arguments)`` or ``(name, arguments, kind)`` calls concurrently; the results are in the order
        of ``calls``."""
        return list(await asyncio.gather(*(self.call(*call[:2], kind=_kind_of(call)) for call in calls)))

    def _unknown_tool(self, name: object, known: Mapping[str, object]) -> str:
        available = ", ".join(known) or "(none)"
        if not isinstance(name, str):
            return (
                f'unknown tool "{excerpt(safe_repr(name))}" (a tool name is a string, got {type(name).__name__}); '
                f"available tools: {available}"
            )
        message = f'unknown tool "{excerpt(name)}"; available tools: {available}'
        close = difflib.get_close_matches(name[: EXCERPT * 2], list(known), n=1, cutoff=0.8)
        return f'{message} (did you mean "{close[0]}"?)' if close else message

    @classmethod
    def from_module(cls, module: str | ModuleType) -> ToolRegistry:
        """The tools of a module: a dotted name, a path to a ``.py`` file, or the module itself.

        The module exposes either ``TOOLS``, an iterable of functions, ``Tool`` and ``CustomTool`` objects (a new
        registry is built), or ``registry``, a ``ToolRegistry`` (returned as it is). Anything else, and a file or
        module that cannot be found, is a ``ToolDefinitionError`` (a ``ValueError``); an error the module itself
        raises while it is imported propagates as it is.
        """
        return registry_from_module(cls, module)


def _kind_of(call: tuple[str, str] | tuple[str, str, str]) -> str:
    return call[2] if len(call) == 3 else ToolCallKind.FUNCTION
