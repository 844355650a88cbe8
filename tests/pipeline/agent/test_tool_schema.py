"""schema_from_signature: a JSON Schema from type hints, and the hints it refuses."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

import pytest
from tool_builders import Address, Node, Point, Unit, Window, params, prop

from pipeline.agent import schema_from_signature


def test_primitive_hints_map_to_json_types() -> None:
    def tool(s: str, i: int, f: float, b: bool, n: None) -> None: ...

    assert params(tool)["properties"] == {
        "s": {"type": "string"},
        "i": {"type": "integer"},
        "f": {"type": "number"},
        "b": {"type": "boolean"},
        "n": {"type": "null"},
    }


def test_schema_is_an_object_that_forbids_unknown_properties() -> None:
    def tool(city: str) -> None: ...

    assert params(tool) == {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_parameterless_function_has_no_required_list() -> None:
    def tool() -> None: ...

    assert params(tool) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_list_of_x_is_an_array_of_x() -> None:
    def tool(tags: list[str], anything: list) -> None: ...  # type: ignore[type-arg]

    assert prop(tool, "tags") == {"type": "array", "items": {"type": "string"}}
    assert prop(tool, "anything") == {"type": "array"}


def test_dict_of_str_to_x_is_an_object_whose_values_are_x() -> None:
    def tool(scores: dict[str, int]) -> None: ...

    assert prop(tool, "scores") == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_dict_with_non_string_keys_is_rejected() -> None:
    def tool(scores: dict[int, int]) -> None: ...

    with pytest.raises(TypeError, match="non-string keys"):
        params(tool)


def test_optional_parameter_accepts_null_and_is_not_required() -> None:
    def tool(city: str, country: str | None) -> None: ...

    assert prop(tool, "country") == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert params(tool)["required"] == ["city"]


def test_parameter_with_a_default_is_not_required() -> None:
    def tool(city: str, days: int = 1) -> None: ...

    assert params(tool)["required"] == ["city"]
    assert prop(tool, "days") == {"type": "integer"}


def test_literal_becomes_an_enum_of_its_values() -> None:
    def tool(unit: Literal["c", "f"], level: Literal[1, 2, 3]) -> None: ...

    assert prop(tool, "unit") == {"type": "string", "enum": ["c", "f"]}
    assert prop(tool, "level") == {"type": "integer", "enum": [1, 2, 3]}


def test_enum_subclass_becomes_an_enum_of_its_values() -> None:
    def tool(unit: Unit) -> None: ...

    assert prop(tool, "unit") == {"type": "string", "enum": ["celsius", "fahrenheit"]}


def test_typeddict_becomes_a_nested_object_with_its_required_keys() -> None:
    def tool(address: Address) -> None: ...

    assert prop(tool, "address") == {
        "type": "object",
        "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    }


def test_dataclass_becomes_a_nested_object_whose_defaulted_fields_are_optional() -> None:
    def tool(at: Point) -> None: ...

    assert prop(tool, "at") == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x"],
        "additionalProperties": False,
    }


def test_attrs_class_becomes_a_nested_object_keyed_by_init_argument() -> None:
    def tool(window: Window) -> None: ...

    assert prop(tool, "window") == {
        "type": "object",
        "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
        "required": ["start"],
        "additionalProperties": False,
    }


def test_annotated_text_becomes_the_description() -> None:
    def tool(city: Annotated[str, "City name, e.g. Paris"]) -> None: ...

    assert prop(tool, "city") == {"type": "string", "description": "City name, e.g. Paris"}


def test_annotated_mapping_is_merged_into_the_schema() -> None:
    def tool(days: Annotated[int, "Forecast length", {"minimum": 1, "maximum": 14}]) -> None: ...

    assert prop(tool, "days") == {"type": "integer", "description": "Forecast length", "minimum": 1, "maximum": 14}


def test_unannotated_parameter_accepts_anything() -> None:
    def tool(value, other: Any) -> None:  # type: ignore[no-untyped-def]
        ...

    assert prop(tool, "value") == {}
    assert prop(tool, "other") == {}
    assert params(tool)["required"] == ["value", "other"]


@pytest.mark.parametrize("star", ["*args", "**kwargs"])
def test_star_args_and_star_star_kwargs_are_rejected(star: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def tool(city, {star}): pass", namespace)

    with pytest.raises(TypeError, match=r"takes \*{1,2}(args|kwargs).*parameters= explicitly"):
        schema_from_signature(namespace["tool"])


def test_unsupported_hint_names_the_parameter() -> None:
    def tool(when: datetime.datetime) -> None: ...

    with pytest.raises(TypeError, match=r"parameter 'when' of .*tool: unsupported type hint"):
        params(tool)


def test_recursive_type_is_defined_once_and_referenced() -> None:
    def tool(tree: Node) -> None: ...

    assert params(tool) == {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "required": ["tree"],
        "additionalProperties": False,
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "additionalProperties": False,
            }
        },
    }
