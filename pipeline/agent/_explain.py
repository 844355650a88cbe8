"""The messages a model reads for the errors ``jsonschema`` finds: the JSON path of the value at fault, what was
expected, and the value quoted back (``_quote.show``).

    $.city: expected string, got integer                 $: missing required property "zone"
    $: unexpected property "tz" (allowed: zone)           $.unit: expected one of "c", "f", got "k"
    $.code: expected a string matching the pattern "^[A-Z]{3}$", got "abc"
    $.tags: expected unique items, got "a" at [0] and [2]
    $.at: expected object or null, got string             (an Optional: the alternatives' types)
    $.at.x: expected number, got string                   (an Optional object: the problems inside it)

Rules: where a value has the wrong type, that alone is said (not the enum or bounds of the same schema); for
``anyOf`` / ``oneOf``, the alternatives whose type admits the value explain it, the one with the fewest problems
first (the idea of ``jsonschema.exceptions.best_match``, but every problem of that alternative is listed, so the
model can fix them all at once); a ``$ref`` is explained by what it points to. A keyword without a message of its own
says what ``jsonschema`` says, clipped.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from ._jsonvalue import json_path, json_type
from ._quote import excerpt, show

__all__ = ["SchemaError", "Validator", "explain"]


class SchemaError(Protocol):
    """The part of a ``jsonschema.ValidationError`` the messages use (``jsonschema`` ships no type hints)."""

    message: str
    validator: str | None  # the failing keyword; None for the ``false`` schema
    validator_value: Any
    instance: Any
    schema: Any
    context: list[SchemaError]

    @property
    def absolute_path(self) -> Sequence[str | int]: ...

    @property
    def relative_path(self) -> Sequence[str | int]: ...

    @property
    def relative_schema_path(self) -> Sequence[str | int]: ...

    @property
    def absolute_schema_path(self) -> Sequence[str | int]: ...


class Validator(Protocol):
    """The part of a ``jsonschema`` validator this package uses."""

    schema: Any

    def iter_errors(self, instance: object) -> Iterator[SchemaError]: ...

    def is_valid(self, instance: object) -> bool: ...

    def evolve(self, **changes: Any) -> Validator: ...


def explain(validator: Validator, errors: Iterable[SchemaError]) -> list[str]:
    """One message per problem (or more: a ``required`` error names each missing property), in the schema's order,
    each once."""
    messages: list[str] = []
    for error in _pruned(list(errors)):
        messages.extend(_explain(validator, error))
    return list(dict.fromkeys(messages))


def _site(error: SchemaError) -> tuple[tuple[str | int, ...], tuple[str | int, ...]]:
    return tuple(error.absolute_path), tuple(error.absolute_schema_path)[:-1]


def _pruned(errors: list[SchemaError]) -> list[SchemaError]:
    """Without the errors of a schema whose ``type`` the value already fails (its enum, bounds, ...)."""
    mistyped = {_site(error) for error in errors if error.validator == "type"}
    return [error for error in errors if error.validator == "type" or _site(error) not in mistyped]


def _explain(validator: Validator, error: SchemaError) -> list[str]:
    path = json_path(error.absolute_path)
    if "propertyNames" in error.absolute_schema_path:
        path = f"{path} (the property name {show(error.instance)})"
    keyword, expected, value = error.validator, error.validator_value, error.instance
    if keyword is None or (keyword == "not" and (expected is True or expected == {})):  # false, or {"not": {}}
        return [f"{path}: no value is allowed here"]
    if keyword in ("anyOf", "oneOf"):
        return _alternatives(validator, error, path)
    if keyword == "required":
        return [f"{path}: missing required property {show(name)}" for name in expected if name not in value]
    if keyword == "additionalProperties" and expected is False:
        return _unexpected(error, path)
    if keyword == "dependentRequired":
        return [
            f"{path}: property {show(name)} requires property {show(needed)}"
            for name, needs in expected.items()
            if name in value
            for needed in needs
            if needed not in value
        ]
    if keyword in ("contains", "minContains", "maxContains"):
        return [f"{path}: {_contains(validator, error)}"]
    if keyword == "items" and expected is False:
        allowed = len(error.schema.get("prefixItems", []))
        return [f"{path}: expected at most {_count(allowed, 'item')}, got {len(value)}"]
    return [f"{path}: {_expected(keyword, expected, value, error)}"]


_RELATIONS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}
_SIZES = {
    "minLength": ("at least", "character"),
    "maxLength": ("at most", "character"),
    "minItems": ("at least", "item"),
    "maxItems": ("at most", "item"),
    "minProperties": ("at least", "property"),
    "maxProperties": ("at most", "property"),
}


def _expected(keyword: str, expected: Any, value: Any, error: SchemaError) -> str:
    if keyword == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        return f"expected {' or '.join(names)}, got {json_type(value)}"
    if keyword == "enum":
        return f"expected one of {', '.join(show(choice) for choice in expected)}, got {show(value)}"
    if keyword == "const":
        return f"expected {show(expected)}, got {show(value)}"
    if keyword == "pattern":
        return f"expected a string matching the pattern {show(expected)}, got {show(value)}"
    if keyword == "format":
        return f"expected a string in the {show(expected)} format, got {show(value)}"
    if keyword in _RELATIONS:
        return f"expected a number {_RELATIONS[keyword]} {show(expected)}, got {show(value)}"
    if keyword == "multipleOf":
        return f"expected a multiple of {show(expected)}, got {show(value)}"
    if keyword in _SIZES:
        relation, unit = _SIZES[keyword]
        return f"expected {relation} {_count(expected, unit)}, got {len(value)}"
    if keyword == "uniqueItems":
        return _repeated(value)
    if keyword == "not":
        return f"expected a value that does not match {show(expected)}, got {show(value)}"
    return excerpt(error.message)


def _count(number: int, unit: str) -> str:
    if number == 1:
        return f"{number} {unit}"
    return f"{number} {'properties' if unit == 'property' else unit + 's'}"


def _unexpected(error: SchemaError, path: str) -> list[str]:
    properties: Mapping[str, Any] = error.schema.get("properties", {})
    patterns: Mapping[str, Any] = error.schema.get("patternProperties", {})
    allowed = [str(name) for name in properties] + [f"names matching {show(pattern)}" for pattern in patterns]
    listing = f" (allowed: {', '.join(allowed)})" if allowed else ""
    extras = [
        key
        for key in error.instance
        if key not in properties and not any(re.search(pattern, key) for pattern in patterns)
    ]
    return [f"{path}: unexpected property {show(key)}{listing}" for key in extras] or [
        f"{path}: {excerpt(error.message)}"
    ]


def _contains(validator: Validator, error: SchemaError) -> str:
    matching = validator.evolve(schema=error.schema["contains"])
    matches = sum(1 for item in error.instance if matching.is_valid(item))
    most = error.schema.get("maxContains")
    wanted = f"matching {show(error.schema['contains'])}"
    if most is not None and matches > most:
        return f"expected at most {_count(most, 'item')} {wanted}, got {matches}"
    least = error.schema.get("minContains", 1)
    return f"expected at least {_count(least, 'item')} {wanted}, got {matches}"


def _repeated(items: Sequence[Any]) -> str:
    first: dict[Hashable, int] = {}
    for index, item in enumerate(items):
        key = _canonical(item)
        if key in first:
            return f"expected unique items, got {show(item)} at [{first[key]}] and [{index}]"
        first[key] = index
    return "expected unique items"


def _canonical(value: Any) -> Hashable:
    """A key equal for JSON-equal values (1 and 1.0 alike; true and 1 apart)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", int(value) if isinstance(value, float) and value.is_integer() else value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, Mapping):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_canonical(item) for item in value))
    return ("other", repr(value))


def _alternatives(validator: Validator, error: SchemaError, path: str) -> list[str]:
    if not error.context:  # oneOf: more than one alternative matches
        count = sum(1 for branch in error.validator_value if validator.evolve(schema=branch).is_valid(error.instance))
        return [f"{path}: matches {count} of the oneOf alternatives, expected exactly one"]
    branches: dict[object, list[SchemaError]] = {}
    for problem in error.context:
        where = problem.relative_schema_path
        branches.setdefault(where[0] if where else -1, []).append(problem)
    admitting = [problems for problems in branches.values() if not any(_refuses_type(p) for p in problems)]
    if admitting:
        choices = _choices(admitting)
        if choices is not None:
            listing = ", ".join(show(choice) for choice in choices)
            return [f"{path}: expected one of {listing}, got {show(error.instance)}"]
        return min((explain(validator, problems) for problems in admitting), key=len)
    names: list[str] = []
    for problem in error.context:
        if problem.validator == "type" and not problem.relative_path:
            expected = problem.validator_value
            names.extend(name for name in ([expected] if isinstance(expected, str) else expected) if name not in names)
    if not names:
        return [f"{path}: no value is allowed here"]
    return [f"{path}: expected {' or '.join(names)}, got {json_type(error.instance)}"]


def _refuses_type(problem: SchemaError) -> bool:
    """The alternative refuses the value for its type (or refuses every value)."""
    return problem.validator in ("type", None) and not problem.relative_path


def _choices(branches: list[list[SchemaError]]) -> list[Any] | None:
    """The values the alternatives allow, when each is only a ``const`` or an ``enum`` (a union of literals)."""
    choices: list[Any] = []
    for problems in branches:
        for problem in problems:
            if problem.relative_path or problem.validator not in ("const", "enum"):
                return None
            value = problem.validator_value
            choices.extend([value] if problem.validator == "const" else value)
    return choices
