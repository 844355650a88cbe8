"""The registry's side for the calls that are not functions (docs/decisions/0072-client-run-tool-calls.md):
``register_custom`` (a custom, free-form tool) and ``handle`` (a built-in kind's handler), and how each is called.
``ToolRegistry`` (``_registry.py``) inherits them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, overload

from ._answers import answer, builtin_arguments
from ._call import result_from_value
from ._custom import DEFAULT_DECLARATIONS, CustomTool, Grammar, KindHandler
from ._errors import ToolDefinitionError
from ._invoke import Runner, invoke, is_async
from ._quote import excerpt, safe_repr
from ._tool import Tool, ToolResult

__all__ = ["OtherKinds"]

_F = TypeVar("_F", bound=Callable[..., Any])


class OtherKinds:
    """``register_custom``, ``handle`` and their calls, over the registry's ``add``, ``_custom`` and ``_handlers``."""

    default_timeout: float | None
    max_result_chars: int | None
    _custom: dict[str, Runner]
    _handlers: dict[str, Runner]

    def add(self, tool: Tool | CustomTool) -> Tool | CustomTool:
        raise NotImplementedError

    def _unknown_tool(self, name: object, known: Mapping[str, object]) -> str:
        raise NotImplementedError

    @overload
    def register_custom(
        self, func: _F, *, name: str | None = None, description: str | None = None, grammar: Grammar | None = None,
        timeout: float | None = None,
    ) -> _F: ...

    @overload
    def register_custom(
        self, func: None = None, *, name: str | None = None, description: str | None = None,
        grammar: Grammar | None = None, timeout: float | None = None,
    ) -> Callable[[_F], _F]: ...

    def register_custom(
        self,
        func: _F | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        grammar: Grammar | None = None,
        timeout: float | None = None,
    ) -> _F | Callable[[_F], _F]:
        """Register a custom (free-form) tool (Responses API only): ``func(text)`` gets the model's input as it is,
        not JSON; ``grammar`` (``Grammar.lark(...)``, ``Grammar.regex(...)``) constrains it. ``name`` defaults to
        the function's name, ``description`` to its docstring's first paragraph. Returns ``func`` unchanged (a
        decorator, with or without options)."""

        def decorate(target: _F) -> _F:
            self.add(CustomTool.from_function(target, name=name, description=description, grammar=grammar,
                                              timeout=timeout))
            return target

        return decorate if func is None else decorate(func)

    @overload
    def handle(
        self, kind: str, func: _F, *, declare: Sequence[Mapping[str, Any]] | None = None, timeout: float | None = None
    ) -> _F: ...

    @overload
    def handle(
        self, kind: str, func: None = None, *, declare: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = None,
    ) -> Callable[[_F], _F]: ...

    def handle(
        self,
        kind: str,
        func: _F | None = None,
        *,
        declare: Sequence[Mapping[str, Any]] | None = None,
        timeout: float | None = None,
    ) -> _F | Callable[[_F], _F]:
        """Register the handler of a built-in kind of call (Responses API only): ``"apply_patch"``, ``"shell"``,
        ``"local_shell"``, ``"computer"`` or ``"mcp_approval"`` (``operators.ToolCallKind``). ``func(arguments)``
        gets the call's arguments as a dict (its operation or action); what it returns is ``_answers.py``'s table.
        ``declare`` is the request's ``tools`` entries for it (default: the built-in tool of that kind, and none for
        MCP approvals, whose MCP server tool is yours to give). One handler per kind. Returns ``func`` unchanged."""

        def decorate(target: _F) -> _F:
            declarations = DEFAULT_DECLARATIONS.get(kind, ()) if declare is None else declare
            handler = KindHandler(kind, target, declarations, timeout=timeout)
            if kind in self._handlers:
                raise ToolDefinitionError(f"a handler for {kind} calls is already registered")
            self._handlers[kind] = Runner(kind, target, is_async(target), handler.timeout, handler.declarations)
            return target

        return decorate if func is None else decorate(func)

    async def _call_custom(self, name: object, text: object) -> ToolResult:
        runner = self._custom.get(name) if isinstance(name, str) else None
        if runner is None:
            return ToolResult(self._unknown_tool(name, self._custom), is_error=True)
        if not isinstance(text, str):
            return ToolResult(f'the input of custom tool "{runner.label}" must be a string, got '
                              f"{type(text).__name__}: {excerpt(safe_repr(text))}", is_error=True)
        ran = await invoke(runner, [text], {}, self.default_timeout)
        return ran if isinstance(ran, ToolResult) else result_from_value(ran.value)

    async def _call_kind(self, name: object, arguments: object, kind: str) -> ToolResult:
        runner = self._handlers.get(kind)
        if runner is None:
            handled = ", ".join(self._handlers) or "(none)"
            return ToolResult(f'unknown tool "{excerpt(safe_repr(name) if not isinstance(name, str) else name)}" '
                              f"(kind {excerpt(kind)}): no handler is registered for {excerpt(kind)} calls; "
                              f"handled kinds: {handled}", is_error=True)
        parsed = builtin_arguments(kind, arguments)
        if isinstance(parsed, ToolResult):
            return parsed
        ran = await invoke(runner, [parsed], {}, self.default_timeout)
        return ran if isinstance(ran, ToolResult) else answer(kind, ran.value, self.max_result_chars)
