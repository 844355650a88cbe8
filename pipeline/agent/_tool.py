"""Tool values: ``Tool`` (a function the model may call, with its JSON Schema) and ``ToolResult``."""

from __future__ import annotations

import copy
import functools
import inspect
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

import attrs

from ._errors import ToolDefinitionError
from ._run import check_timeout
from ._schema import schema_from_signature
from ._validate import check_schema

__all__ = ["Tool", "ToolFunc", "ToolResult", "check_name", "first_paragraph"]

ToolFunc: TypeAlias = Callable[..., Awaitable[Any]] | Callable[..., Any]

_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@attrs.frozen
class ToolResult:
    """What a tool call produced, ready to be sent back to the model as a ``tool`` message."""

    text: str
    is_error: bool = False


def check_name(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not _NAME_RE.fullmatch(value):
        raise ToolDefinitionError(
            f"tool name {value!r} is not valid: OpenAI-compatible APIs accept 1 to 64 letters, digits, '_' or '-'"
        )


def _check_parameters(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, Mapping) or value.get("type") != "object":
        raise ToolDefinitionError(
            f"tool parameters must be a JSON Schema of type 'object' (the arguments are a JSON object), got {value!r}"
        )


def _check_description(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str):
        raise ToolDefinitionError(f"a tool's description must be a string, got {type(value).__name__}: {value!r}")


def _check_callable(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not callable(value):
        raise ToolDefinitionError(f"a tool's func must be callable, got {value!r}")


def _check_timeout(value: object) -> float | None:
    try:
        return check_timeout(value, "a tool's timeout")
    except ValueError as exc:
        raise ToolDefinitionError(str(exc)) from None


def _check_schema(value: object) -> object:
    # Checked and compiled once, here, so a bad schema is a ToolDefinitionError when the tool is defined, and a call
    # validates with the compiled validator. A private deep copy: the schema cannot change behind the registry's back.
    if isinstance(value, Mapping) and value.get("type") == "object":
        return check_schema(value)
    return value  # _check_parameters refuses it


@attrs.frozen
class Tool:
    """A function the model may call: its name, description, JSON Schema of its arguments, and the callable.

    ``func`` may be async or sync (a sync one runs in a daemon thread of its own). ``timeout`` is the seconds a
    call may run before it is abandoned with an error result (None: the registry's ``default_timeout``;
    ``math.inf``: no limit). ``parameters`` is excluded from the hash (it is a dict); it is checked against JSON
    Schema Draft 2020-12 here, so a schema that is not valid, or whose ``$ref`` does not resolve, is refused when the
    tool is defined. A field the API would refuse raises ``ToolDefinitionError``.
    """

    name: str = attrs.field(validator=check_name)
    description: str = attrs.field(validator=_check_description)
    parameters: Mapping[str, Any] = attrs.field(converter=_check_schema, validator=_check_parameters, hash=False)
    func: ToolFunc = attrs.field(validator=_check_callable)
    timeout: float | None = attrs.field(default=None, converter=_check_timeout, kw_only=True)

    @classmethod
    def from_function(
        cls,
        func: ToolFunc,
        *,
        name: str | None = None,
        description: str | None = None,
        parameters: Mapping[str, Any] | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """Build a tool from a callable.

        ``name`` defaults to ``func.__name__``, ``description`` to the first paragraph of the docstring, and
        ``parameters`` to ``schema_from_signature(func)``, ``timeout`` to the registry's default.
        """
        if not callable(func):
            raise ToolDefinitionError(f"a tool must be callable, got {func!r}")
        if name is None:
            name = getattr(func, "__name__", None)
            if not isinstance(name, str):
                raise ToolDefinitionError(f"{func!r} has no __name__: pass name= explicitly")
        if description is None:
            description = first_paragraph(func)
        if parameters is None:
            parameters = schema_from_signature(func)
        return cls(name=name, description=description, parameters=parameters, func=func, timeout=timeout)

    def to_openai(self) -> dict[str, Any]:
        """The entry of a chat-completions request's ``tools`` list."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": copy.deepcopy(dict(self.parameters)),
            },
        }


def first_paragraph(func: Callable[..., Any]) -> str:
    target = func.func if isinstance(func, functools.partial) else func
    doc = inspect.getdoc(target)
    if not doc:
        return ""
    paragraph = re.split(r"\n\s*\n", doc.strip(), maxsplit=1)[0]
    return " ".join(paragraph.split())
