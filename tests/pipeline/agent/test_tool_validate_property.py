"""validate against jsonschema's reference validator: for schemas generated from a small grammar (every keyword a
tool schema uses, ``$ref`` into ``$defs`` included, recursion too) and generated values, ``validate`` accepts exactly
what ``Draft202012Validator`` accepts, and explains every refusal with at least one path-naming message."""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.agent import validate

# The reference, untouched: the plain Draft 2020-12 validator (jsonschema ships no type hints, hence no typed import).
Draft202012Validator: Any = importlib.import_module("jsonschema").Draft202012Validator

NAMES = ["a", "b", "c"]
DEFS = 2
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.5, 1.0, -2.5])
    | st.text(alphabet="ab1", max_size=3),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from([*NAMES, "x-y"]), children, max_size=3)
    ),
    max_leaves=8,
)
small = st.integers(0, 3)


def schemas(depth: int, first_ref: int) -> st.SearchStrategy[Any]:
    """Schemas ``depth`` applicators deep. A ``$ref`` reached without descending into the value (under anyOf, allOf,
    not, or at the top) points only to definitions from ``first_ref`` on, so references cannot loop without the
    value getting smaller; under properties and items any definition may be referred to (a recursive schema)."""
    keywords: dict[str, st.SearchStrategy[Any]] = {
        "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(json_values, min_size=1, max_size=3),
        "const": json_values,
        "minimum": st.integers(-2, 2),
        "exclusiveMaximum": st.integers(-2, 2),
        "multipleOf": st.sampled_from([1, 2, 0.5]),
        "minLength": small,
        "maxLength": small,
        "pattern": st.sampled_from(["^a", "b$", "^[ab]*$", "1"]),
        "minItems": small,
        "maxItems": small,
        "uniqueItems": st.booleans(),
        "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        "maxProperties": small,
    }
    if first_ref < DEFS:
        keywords["$ref"] = st.integers(first_ref, DEFS - 1).map(lambda index: f"#/$defs/d{index}")
    if depth > 0:
        descending = schemas(depth - 1, 0)
        same_value = schemas(depth - 1, first_ref)
        keywords |= {
            "properties": st.dictionaries(st.sampled_from(NAMES), descending, max_size=2),
            "additionalProperties": st.booleans() | descending,
            "items": st.booleans() | descending,
            "prefixItems": st.lists(descending, min_size=1, max_size=2),
            "anyOf": st.lists(same_value, min_size=1, max_size=3),
            "oneOf": st.lists(same_value, min_size=1, max_size=3),
            "allOf": st.lists(same_value, min_size=1, max_size=2),
            "not": same_value,
        }
    return st.booleans() | st.fixed_dictionaries({}, optional=keywords)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    """A root schema with ``$defs`` d0, d1; a definition's unguarded references point only to later ones."""
    root: Any = draw(schemas(2, 0))
    defs = {f"d{index}": draw(schemas(2, index + 1)) for index in range(DEFS)}
    if isinstance(root, bool):
        root = {"allOf": [root]}
    return {**root, "$defs": defs}


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=documents(), value=json_values)
def test_validate_accepts_exactly_what_the_reference_validator_accepts(schema: dict[str, Any], value: Any) -> None:
    expected = Draft202012Validator(schema).is_valid(value)

    problems = validate(value, schema)

    assert (problems == []) is expected
    assert all(problem.startswith("$") for problem in problems)
    assert len(problems) == len(set(problems))
