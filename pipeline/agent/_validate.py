"""``validate``: a value checked against a JSON Schema (Draft 2020-12, by ``jsonschema``) with messages a model can
act on (``_explain``); ``check_schema``: a tool's schema checked and compiled once, when the tool is defined; and the
JSON notions the argument conversion shares (a value's JSON type, JSON equality, the path of a property).

``jsonschema`` is imported on first use, so ``import pipeline`` costs nothing for a program that defines no tool
(docs/decisions/0019-tool-schemas.md)."""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Mapping
from typing import Any

from ._errors import ToolDefinitionError
from ._explain import Validator, explain
from ._jsonvalue import child_path, is_type, json_equal, json_path, json_type
from ._quote import excerpt

__all__ = ["CheckedSchema", "check_schema", "child_path", "is_type", "json_equal", "json_type", "validate"]


class CheckedSchema(dict[str, Any]):
    """A JSON Schema that ``check_schema`` accepted, with its compiled validator: what ``Tool.parameters`` holds, so
    each call validates without checking or compiling the schema again. It is equal to the plain ``dict``."""

    __slots__ = ("validator",)
    validator: Validator

    def __reduce__(self) -> tuple[Any, ...]:  # a copy or a pickle is checked and compiled anew
        return check_schema, (dict(self),)


def validate(instance: object, schema: Mapping[str, Any]) -> list[str]:
    """The problems of ``instance`` against ``schema`` (JSON Schema Draft 2020-12), each prefixed by the JSON path of
    the value at fault; ``[]`` when valid.

    Every keyword is checked (``$ref`` / ``$defs``, ``pattern``, ``const``, ``uniqueItems``, ``anyOf`` / ``oneOf``,
    bounds, ...), except ``format``, an annotation only (as Draft 2020-12 has it by default). ``integer`` accepts 3
    and 3.0, never ``True`` or 1.5; a tuple is an array. A ``CheckedSchema`` is validated with its compiled
    validator; any other mapping is checked first, and a schema that is not valid raises ``ToolDefinitionError``.

        validate({"city": 3, "x": 1}, schema) == ['$.city: expected string, got integer', '$: unexpected property "x"']
    """
    checked = schema if isinstance(schema, CheckedSchema) else check_schema(schema)
    return explain(checked.validator, checked.validator.iter_errors(instance))


def check_schema(schema: Mapping[str, Any]) -> CheckedSchema:
    """A private deep copy of ``schema`` with its compiled validator.

    A schema that is not valid Draft 2020-12, or a ``$ref`` that does not resolve inside the schema (remote
    references are never fetched), raises ``ToolDefinitionError`` saying where.
    """
    api = _jsonschema()
    checked = CheckedSchema(copy.deepcopy(dict(schema)))
    problem = api.exceptions.best_match(_meta_validator().iter_errors(checked))
    if problem is not None:
        raise ToolDefinitionError(
            f"tool parameters are not a valid JSON Schema (Draft 2020-12): at {json_path(problem.absolute_path)}: "
            f"{excerpt(problem.message)}"
        )
    checked.validator = _validator_class()(_subschema(checked), registry=api.referencing.Registry())
    _check_references(checked, _root_resolver(checked), "$")
    return checked


class _Api:
    """``jsonschema`` and ``referencing``, imported on first use."""

    def __init__(self) -> None:
        self.jsonschema: Any = importlib.import_module("jsonschema")
        self.exceptions: Any = importlib.import_module("jsonschema.exceptions")
        self.referencing: Any = importlib.import_module("referencing")
        self.drafts: Any = importlib.import_module("referencing.jsonschema")
        self.specifications: Any = importlib.import_module("jsonschema_specifications")


@functools.cache
def _jsonschema() -> _Api:
    return _Api()


@functools.cache
def _validator_class() -> Any:
    """Draft 2020-12 whose ``array`` also admits a tuple and whose ``object`` admits any mapping (the values a caller
    of ``validate`` may hold; parsed JSON only ever has lists and dicts)."""
    api = _jsonschema()
    base = api.jsonschema.Draft202012Validator
    checker = base.TYPE_CHECKER.redefine_many(
        {
            "array": lambda _, value: isinstance(value, list | tuple),
            "object": lambda _, value: isinstance(value, Mapping),
        }
    )
    return api.jsonschema.validators.extend(base, type_checker=checker)


@functools.cache
def _meta_validator() -> Any:
    """Checks a schema against the Draft 2020-12 meta-schema (what ``check_schema`` does, but every problem)."""
    base = _jsonschema().jsonschema.Draft202012Validator
    return base(base.META_SCHEMA)


def _root_resolver(schema: Mapping[str, Any]) -> Any:
    api = _jsonschema()
    resource = api.drafts.DRAFT202012.create_resource(schema)
    return api.specifications.REGISTRY.resolver_with_root(resource)


_SCHEMA_KEYWORDS = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_KEEP_FALSE = ("additionalProperties", "items", "unevaluatedItems", "unevaluatedProperties")


def _with_paths(schema: object) -> Any:
    """``schema`` with each ``false`` subschema written ``{"not": {}}``: the same schema, but ``jsonschema`` reports a
    value refused by a bare ``false`` without its path and without the alternative it came from (``$`` instead of
    ``$.secret``). The keywords that treat ``false`` themselves (``additionalProperties``, ``items``, ...) keep it."""
    if not isinstance(schema, Mapping):
        return schema
    rewritten = dict(schema)
    for keyword in _SCHEMA_KEYWORDS:
        if keyword in schema:
            rewritten[keyword] = _with_paths(schema[keyword]) if keyword in _KEEP_FALSE else _subschema(schema[keyword])
    for keyword in _SCHEMA_MAPS:
        if isinstance(schema.get(keyword), Mapping):
            rewritten[keyword] = {name: _subschema(child) for name, child in schema[keyword].items()}
    for keyword in _SCHEMA_LISTS:
        if isinstance(schema.get(keyword), list):
            rewritten[keyword] = [_subschema(child) for child in schema[keyword]]
    return rewritten


def _subschema(schema: object) -> Any:
    return {"not": {}} if schema is False else _with_paths(schema)


def _check_references(schema: object, resolver: Any, path: str) -> None:
    """Resolve every ``$ref`` of ``schema`` now, so an unresolvable one is a definition error, not a call error."""
    if not isinstance(schema, Mapping):
        return
    api = _jsonschema()
    if isinstance(schema.get("$id"), str) and path != "$":
        resolver = resolver.in_subresource(api.drafts.DRAFT202012.create_resource(schema))
    ref = schema.get("$ref")
    if isinstance(ref, str):
        try:
            resolver.lookup(ref)
        except api.referencing.exceptions.Unresolvable as exc:
            raise ToolDefinitionError(
                f"tool parameters: the $ref {ref!r} at {path} does not resolve ({type(exc).__name__}); "
                "point it into the schema's own $defs (remote references are not fetched)"
            ) from None
    for keyword in _SCHEMA_KEYWORDS:
        if keyword in schema:
            _check_references(schema[keyword], resolver, child_path(path, keyword))
    for keyword in _SCHEMA_MAPS:
        children = schema.get(keyword)
        if isinstance(children, Mapping):
            for name, child in children.items():
                _check_references(child, resolver, child_path(child_path(path, keyword), name))
    for keyword in _SCHEMA_LISTS:
        children = schema.get(keyword)
        if isinstance(children, list):
            for index, child in enumerate(children):
                _check_references(child, resolver, f"{child_path(path, keyword)}[{index}]")
