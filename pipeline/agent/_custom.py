"""The tools a model calls that are not functions (docs/decisions/0072-client-run-tool-calls.md), Responses API only:

- ``CustomTool``: a custom (free-form) tool. The model writes its input as text, not JSON, optionally constrained by a
  ``Grammar`` (Lark or a regular expression); the handler gets that text as it is. Declared as
  ``{"type": "custom", "name", "description", "format": {"type": "grammar", "syntax", "definition"}}``.
- ``KindHandler``: the handler of a built-in kind of call (``apply_patch``, ``shell``, ``local_shell``, ``computer``,
  ``mcp_approval``), with the request's ``tools`` entries that declare it (``{"type": "apply_patch"}``...).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from operators import ToolCallKind

from ._errors import ToolDefinitionError
from ._run import check_timeout
from ._tool import ToolFunc, check_name, first_paragraph

__all__ = ["BUILTIN_KINDS", "DEFAULT_DECLARATIONS", "CustomTool", "Grammar", "KindHandler"]

BUILTIN_KINDS: Final = (
    ToolCallKind.APPLY_PATCH,
    ToolCallKind.SHELL,
    ToolCallKind.LOCAL_SHELL,
    ToolCallKind.COMPUTER,
    ToolCallKind.MCP_APPROVAL,
)
"""The kinds of call a handler is registered for by kind (``ToolRegistry.handle``), each named by its kind."""

DEFAULT_DECLARATIONS: Final[Mapping[str, tuple[Mapping[str, Any], ...]]] = {
    ToolCallKind.APPLY_PATCH: ({"type": "apply_patch"},),
    ToolCallKind.SHELL: ({"type": "shell", "environment": {"type": "local"}},),
    ToolCallKind.LOCAL_SHELL: ({"type": "local_shell"},),
    ToolCallKind.COMPUTER: ({"type": "computer"},),
    ToolCallKind.MCP_APPROVAL: (),
}
"""The request's ``tools`` entries a handler declares unless told otherwise: the Responses API's built-in tool of its
kind (the shell runs here, so its environment is ``local``). An MCP approval handler declares nothing: the MCP server
tool (``{"type": "mcp", "server_label", "server_url", "require_approval"}``) is yours to give, with ``declare=`` or
the request's ``tools=``."""


def _check_syntax(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ("lark", "regex"):
        raise ToolDefinitionError(f"a grammar's syntax is 'lark' or 'regex', got {value!r}")


def _check_definition(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ToolDefinitionError(f"a grammar's definition is a non-empty string, got {value!r:.60}")


@attrs.frozen
class Grammar:
    """The grammar a custom tool's input follows, as the Responses API takes it: ``syntax`` ``"lark"`` (a Lark
    grammar) or ``"regex"`` (a regular expression), and its ``definition``. The API checks the definition."""

    syntax: Literal["lark", "regex"] = attrs.field(validator=_check_syntax)
    definition: str = attrs.field(validator=_check_definition)

    @classmethod
    def lark(cls, definition: str) -> Grammar:
        return cls("lark", definition)

    @classmethod
    def regex(cls, definition: str) -> Grammar:
        return cls("regex", definition)

    def to_dict(self) -> dict[str, str]:
        """The tool's ``format``: ``{"type": "grammar", "syntax", "definition"}``."""
        return {"type": "grammar", "syntax": self.syntax, "definition": self.definition}


def _check_callable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise ToolDefinitionError(f"a handler must be callable, got {value!r}")


def _check_description(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str):
        raise ToolDefinitionError(f"a tool's description must be a string, got {type(value).__name__}: {value!r}")


def _check_grammar(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, Grammar):
        raise ToolDefinitionError(f"a custom tool's grammar is a Grammar or None, got {value!r:.60}")


def _timeout(value: object) -> float | None:
    try:
        return check_timeout(value, "a tool's timeout")
    except ValueError as exc:
        raise ToolDefinitionError(str(exc)) from None


@attrs.frozen
class CustomTool:
    """A custom (free-form) tool: ``func(text)`` gets the model's input exactly as written (not JSON); ``grammar``
    constrains it (None: free text). What ``func`` returns is the result, as a function tool's is."""

    name: str = attrs.field(validator=check_name)
    description: str = attrs.field(validator=_check_description)
    func: ToolFunc = attrs.field(validator=_check_callable)
    grammar: Grammar | None = attrs.field(default=None, validator=_check_grammar)
    timeout: float | None = attrs.field(default=None, converter=_timeout, kw_only=True)

    @classmethod
    def from_function(
        cls,
        func: ToolFunc,
        *,
        name: str | None = None,
        description: str | None = None,
        grammar: Grammar | None = None,
        timeout: float | None = None,
    ) -> CustomTool:
        """A custom tool of ``func``: ``name`` defaults to ``func.__name__``, ``description`` to the first paragraph of
        its docstring."""
        if name is None:
            name = getattr(func, "__name__", None)
            if not isinstance(name, str):
                raise ToolDefinitionError(f"{func!r} has no __name__: pass name= explicitly")
        if description is None:
            description = first_paragraph(func) if callable(func) else ""
        return cls(name=name, description=description, func=func, grammar=grammar, timeout=timeout)

    def to_responses(self) -> dict[str, Any]:
        """The entry of a Responses API request's ``tools`` list."""
        out: dict[str, Any] = {"type": "custom", "name": self.name}
        if self.description:
            out["description"] = self.description
        if self.grammar is not None:
            out["format"] = self.grammar.to_dict()
        return out


def _check_kind(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in BUILTIN_KINDS:
        known = ", ".join(BUILTIN_KINDS)
        raise ToolDefinitionError(
            f"a handler is registered for a built-in kind ({known}), got {value!r:.40}: a function tool is "
            "register()'s, a custom tool register_custom()'s"
        )


def _declarations(value: object) -> tuple[Mapping[str, Any], ...]:
    if isinstance(value, Mapping) or not isinstance(value, Sequence) or isinstance(value, str):
        raise ToolDefinitionError(f"declare= is a list of the request's tools entries, got {value!r:.60}")
    out = []
    for entry in value:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("type"), str):
            raise ToolDefinitionError(f"a declared tool is a mapping with a string type, got {entry!r:.60}")
        out.append(copy.deepcopy(dict(entry)))
    return tuple(out)


@attrs.frozen
class KindHandler:
    """The handler of a built-in kind of call: ``func(arguments)`` gets the call's arguments as a dict (the item's
    operation or action, decision 0072's table) and returns the answer (``ToolRegistry.handle`` says what each kind
    takes); ``declarations`` are the request's ``tools`` entries it adds."""

    kind: str = attrs.field(validator=_check_kind)
    func: ToolFunc = attrs.field(validator=_check_callable)
    declarations: tuple[Mapping[str, Any], ...] = attrs.field(converter=_declarations)
    timeout: float | None = attrs.field(default=None, converter=_timeout, kw_only=True)
