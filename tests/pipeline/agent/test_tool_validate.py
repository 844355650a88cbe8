"""validate: JSON Schema Draft 2020-12 (by jsonschema) and the messages a model reads."""

from __future__ import annotations

import pytest

from pipeline.agent import validate


@pytest.mark.parametrize(("value", "valid"), [(3, True), (3.0, True), (1.5, False), (True, False), ("3", False)])
def test_integer_accepts_whole_numbers_only(value: object, valid: bool) -> None:
    assert (validate(value, {"type": "integer"}) == []) is valid


@pytest.mark.parametrize(("value", "valid"), [(3, True), (1.5, True), (False, False), (None, False)])
def test_number_accepts_ints_and_floats_but_not_booleans(value: object, valid: bool) -> None:
    assert (validate(value, {"type": "number"}) == []) is valid


def test_enum_does_not_confuse_booleans_with_numbers() -> None:
    assert validate(True, {"enum": [1, 2]}) == ["$: expected one of 1, 2, got true"]
    assert validate(1, {"enum": [True]}) == ["$: expected one of true, got 1"]


def test_bounds_on_numbers_strings_and_arrays() -> None:
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "s": {"type": "string", "minLength": 2, "maxLength": 3},
            "a": {"type": "array", "minItems": 1},
        },
    }

    assert validate({"n": 0, "s": "abcd", "a": []}, schema) == [
        "$.n: expected a number >= 1, got 0",
        "$.s: expected at most 3 characters, got 4",
        "$.a: expected at least 1 item, got 0",
    ]
    assert validate({"n": 5, "s": "ab", "a": [1]}, schema) == []


def test_optional_value_of_the_wrong_type_names_both_alternatives() -> None:
    assert validate(3, {"anyOf": [{"type": "string"}, {"type": "null"}]}) == ["$: expected string or null, got integer"]


def test_optional_object_reports_the_problems_inside_it() -> None:
    schema = {"anyOf": [{"type": "object", "required": ["x"]}, {"type": "null"}]}

    assert validate({}, schema) == ['$: missing required property "x"']


def test_one_of_rejects_a_value_matching_several_alternatives() -> None:
    assert validate(1, {"oneOf": [{"type": "integer"}, {"type": "number"}]}) == [
        "$: matches 2 of the oneOf alternatives, expected exactly one"
    ]


def test_property_names_that_are_not_identifiers_are_bracketed() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "string"}}

    assert validate({"a b": 1}, schema) == ['$["a b"]: expected string, got integer']


def test_unknown_keywords_and_format_are_ignored() -> None:
    assert validate("x", {"type": "string", "format": "email", "x-custom": 1}) == []


def test_pattern_is_enforced() -> None:
    # The hand-written validator ignored "pattern"; Draft 2020-12 requires it.
    assert validate("x", {"type": "string", "pattern": "^y$"}) == [
        '$: expected a string matching the pattern "^y$", got "x"'
    ]
