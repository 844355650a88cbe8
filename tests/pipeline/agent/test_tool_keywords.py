"""validate, keyword by keyword: a valid value passes, an invalid one gets the message a model reads (the JSON path of
the value at fault, what was expected, the value quoted back)."""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.agent import validate

DEFS: dict[str, Any] = {
    "$defs": {
        "City": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        "Tree": {
            "type": "object",
            "properties": {"value": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        },
    }
}

CASES: list[Any] = [
    pytest.param({"type": "string"}, "Paris", 3, "$: expected string, got integer", id="type"),
    pytest.param({"type": ["string", "null"]}, None, 1.5, "$: expected string or null, got number", id="type-list"),
    pytest.param({"enum": ["c", "f"]}, "c", "k", '$: expected one of "c", "f", got "k"', id="enum"),
    pytest.param({"const": "v1"}, "v1", "v2", '$: expected "v1", got "v2"', id="const"),
    pytest.param({"const": 1}, 1.0, True, "$: expected 1, got true", id="const-is-not-a-boolean"),
    pytest.param(
        {"type": "string", "pattern": "^[A-Z]{3}$"},
        "CDG",
        "cdg",
        '$: expected a string matching the pattern "^[A-Z]{3}$", got "cdg"',
        id="pattern",
    ),
    pytest.param(
        {"type": "array", "uniqueItems": True},
        [1, "1", True],
        ["a", "b", "a"],
        '$: expected unique items, got "a" at [0] and [2]',
        id="uniqueItems",
    ),
    pytest.param(
        {"uniqueItems": True},
        [{"a": 1}, {"a": 2}],
        [{"a": 1}, {"a": 1.0}],
        '$: expected unique items, got {"a": 1.0} at [0] and [1]',
        id="uniqueItems-objects",
    ),
    pytest.param({"minimum": 1}, 1, 0, "$: expected a number >= 1, got 0", id="minimum"),
    pytest.param({"exclusiveMinimum": 0}, 0.5, 0, "$: expected a number > 0, got 0", id="exclusiveMinimum"),
    pytest.param({"maximum": 14}, 14, 15, "$: expected a number <= 14, got 15", id="maximum"),
    pytest.param({"exclusiveMaximum": 1}, 0.99, 1, "$: expected a number < 1, got 1", id="exclusiveMaximum"),
    pytest.param({"multipleOf": 5}, 15, 12, "$: expected a multiple of 5, got 12", id="multipleOf"),
    pytest.param({"minLength": 2}, "ab", "a", "$: expected at least 2 characters, got 1", id="minLength"),
    pytest.param({"maxLength": 1}, "a", "ab", "$: expected at most 1 character, got 2", id="maxLength"),
    pytest.param({"minItems": 1}, [0], [], "$: expected at least 1 item, got 0", id="minItems"),
    pytest.param({"maxItems": 2}, [0, 1], [0, 1, 2], "$: expected at most 2 items, got 3", id="maxItems"),
    pytest.param({"minProperties": 1}, {"a": 1}, {}, "$: expected at least 1 property, got 0", id="minProperties"),
    pytest.param(
        {"maxProperties": 1}, {"a": 1}, {"a": 1, "b": 2}, "$: expected at most 1 property, got 2", id="maxProperties"
    ),
    pytest.param(
        {"required": ["city"]}, {"city": "Oslo"}, {"town": "Oslo"}, '$: missing required property "city"', id="required"
    ),
    pytest.param(
        {"properties": {"city": {"type": "string"}}, "additionalProperties": False},
        {"city": "Oslo"},
        {"city": "Oslo", "town": "Oslo"},
        '$: unexpected property "town" (allowed: city)',
        id="additionalProperties-false",
    ),
    pytest.param(
        {"patternProperties": {"^x-": {}}, "additionalProperties": False},
        {"x-trace": 1},
        {"trace": 1},
        '$: unexpected property "trace" (allowed: names matching "^x-")',
        id="additionalProperties-with-patternProperties",
    ),
    pytest.param(
        {"additionalProperties": {"type": "integer"}},
        {"a": 1},
        {"a b": "1"},
        '$["a b"]: expected integer, got string',
        id="additionalProperties-schema",
    ),
    pytest.param(
        {"properties": {"n": {"type": "integer"}}},
        {"n": 1},
        {"n": "1"},
        "$.n: expected integer, got string",
        id="properties",
    ),
    pytest.param({"items": {"type": "string"}}, ["a"], ["a", 2], "$[1]: expected string, got integer", id="items"),
    pytest.param(
        {"prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        [1, 2],
        [1, 2, 3],
        "$: expected at most 2 items, got 3",
        id="prefixItems-closed",
    ),
    pytest.param(
        {"prefixItems": [{"type": "number"}, {"type": "string"}]},
        [1, "a"],
        [1, 2],
        "$[1]: expected string, got integer",
        id="prefixItems",
    ),
    pytest.param(
        {"contains": {"type": "string"}},
        [1, "a"],
        [1, 2],
        '$: expected at least 1 item matching {"type": "string"}, got 0',
        id="contains",
    ),
    pytest.param(
        {"contains": {"const": 0}, "maxContains": 1},
        [0, 1],
        [0, 0],
        '$: expected at most 1 item matching {"const": 0}, got 2',
        id="maxContains",
    ),
    pytest.param(
        {"dependentRequired": {"card": ["cvv"]}},
        {"card": "4111", "cvv": "123"},
        {"card": "4111"},
        '$: property "card" requires property "cvv"',
        id="dependentRequired",
    ),
    pytest.param(
        {"propertyNames": {"pattern": "^[a-z]+$"}},
        {"city": 1},
        {"City": 1},
        '$ (the property name "City"): expected a string matching the pattern "^[a-z]+$", got "City"',
        id="propertyNames",
    ),
    pytest.param(
        {"not": {"type": "null"}},
        0,
        None,
        '$: expected a value that does not match {"type": "null"}, got null',
        id="not",
    ),
    pytest.param(
        {"properties": {"secret": False}}, {}, {"secret": 1}, "$.secret: no value is allowed here", id="false-schema"
    ),
    pytest.param(
        {"anyOf": [{"type": "string"}, {"type": "null"}]},
        None,
        3,
        "$: expected string or null, got integer",
        id="anyOf-by-type",
    ),
    pytest.param(
        {"anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}, {"type": "null"}]},
        {"x": 1},
        {"x": "1"},
        "$.x: expected number, got string",
        id="anyOf-inside-the-admitting-alternative",
    ),
    pytest.param(
        {"anyOf": [{"const": "a"}, {"enum": ["b", "c"]}]},
        "b",
        "d",
        '$: expected one of "a", "b", "c", got "d"',
        id="anyOf-of-literals",
    ),
    pytest.param(
        {"oneOf": [{"type": "integer"}, {"type": "string"}]},
        "1",
        None,
        "$: expected integer or string, got null",
        id="oneOf-none-matches",
    ),
    pytest.param(
        {"oneOf": [{"type": "integer"}, {"type": "number"}, {"minimum": 0}]},
        -1.5,
        1,
        "$: matches 3 of the oneOf alternatives, expected exactly one",
        id="oneOf-several-match",
    ),
    pytest.param(
        {"allOf": [{"type": "integer"}, {"minimum": 0}]}, 0, -1, "$: expected a number >= 0, got -1", id="allOf"
    ),
    pytest.param(
        {"if": {"properties": {"unit": {"const": "f"}}}, "then": {"properties": {"t": {"minimum": -459}}}},
        {"unit": "f", "t": 0},
        {"unit": "f", "t": -500},
        "$.t: expected a number >= -459, got -500",
        id="if-then",
    ),
    pytest.param(
        {**DEFS, "properties": {"to": {"$ref": "#/$defs/City"}}},
        {"to": {"name": "Oslo"}},
        {"to": {"name": 7}},
        "$.to.name: expected string, got integer",
        id="ref-into-defs",
    ),
    pytest.param(
        {**DEFS, "$ref": "#/$defs/Tree"},
        {"value": 1, "kids": [{"value": 2, "kids": []}]},
        {"value": 1, "kids": [{"value": 2, "kids": [{"value": "3"}]}]},
        "$.kids[0].kids[0].value: expected integer, got string",
        id="recursive-ref",
    ),
]


@pytest.mark.parametrize(("schema", "valid", "invalid", "message"), CASES)
def test_each_keyword_accepts_a_valid_value_and_explains_an_invalid_one(
    schema: dict[str, Any], valid: object, invalid: object, message: str
) -> None:
    assert validate(valid, schema) == []
    assert validate(invalid, schema) == [message]


def test_a_wrong_type_is_said_alone_not_with_the_enum_and_bounds_of_the_same_schema() -> None:
    assert validate(3, {"type": "string", "enum": ["a"], "minLength": 2}) == ["$: expected string, got integer"]


def test_every_missing_property_is_named_once() -> None:
    assert validate({}, {"required": ["a", "b"]}) == [
        '$: missing required property "a"',
        '$: missing required property "b"',
    ]


def test_every_unexpected_property_is_named_in_the_order_sent() -> None:
    schema = {"properties": {"a": {}}, "additionalProperties": False}

    assert validate({"z": 1, "a": 1, "y": 2}, schema) == [
        '$: unexpected property "z" (allowed: a)',
        '$: unexpected property "y" (allowed: a)',
    ]


def test_a_long_bad_value_is_quoted_to_its_first_200_characters() -> None:
    (message,) = validate("x" * 1000, {"const": "y"})

    assert "x" * 200 in message
    assert "x" * 201 not in message
    assert message.endswith("(1000 characters)")


def test_a_keyword_without_a_message_of_its_own_says_what_jsonschema_says() -> None:
    assert validate({"a": 1}, {"unevaluatedProperties": False}) == [
        "$: Unevaluated properties are not allowed ('a' was unexpected)"
    ]
