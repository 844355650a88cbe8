"""schema_from_signature on nested and recursive types, round-tripped: what the tool's own type produces, serialized
as the model would send it, validates against the derived schema, and the tool receives it back as that type."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Any, NotRequired, TypedDict

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st
from tool_builders import error, params, prop

from pipeline.agent import ToolRegistry, validate


@dataclasses.dataclass
class Tree:
    value: int
    children: list[Tree] = dataclasses.field(default_factory=list)


@attrs.frozen
class Folder:
    name: str
    entries: list[Entry] = attrs.Factory(list)


class Entry(TypedDict):
    name: str
    folder: NotRequired[Folder]


def tree_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        "required": ["value"],
        "additionalProperties": False,
    }


def test_nested_containers_nest_their_schemas() -> None:
    def tool(grid: list[dict[str, int]], lookup: dict[str, list[float] | None]) -> None: ...

    assert prop(tool, "grid") == {
        "type": "array",
        "items": {"type": "object", "additionalProperties": {"type": "integer"}},
    }
    assert prop(tool, "lookup") == {
        "type": "object",
        "additionalProperties": {"anyOf": [{"type": "array", "items": {"type": "number"}}, {"type": "null"}]},
    }


def test_tuples_are_arrays_of_fixed_or_any_length() -> None:
    def tool(pair: tuple[int, str], rest: tuple[float, ...], nothing: tuple[()], anything: tuple) -> None: ...  # type: ignore[type-arg]

    assert prop(tool, "pair") == {
        "type": "array",
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
        "minItems": 2,
    }
    assert prop(tool, "rest") == {"type": "array", "items": {"type": "number"}}
    assert prop(tool, "nothing") == {"type": "array", "maxItems": 0}
    assert prop(tool, "anything") == {"type": "array"}
    assert validate({"pair": [1, "a"], "rest": [], "nothing": [], "anything": [1]}, params(tool)) == []
    assert validate({"pair": [1, "a", 2], "rest": [1], "nothing": [0], "anything": []}, params(tool)) == [
        "$.pair: expected at most 2 items, got 3",
        "$.nothing: expected at most 0 items, got 1",
    ]


def test_sets_are_arrays_of_unique_items() -> None:
    def tool(tags: set[str], codes: frozenset[int]) -> None: ...

    assert prop(tool, "tags") == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
    assert validate({"tags": ["a", "a"], "codes": [1]}, params(tool)) == [
        '$.tags: expected unique items, got "a" at [0] and [1]'
    ]


def test_a_recursive_dataclass_is_defined_once_for_every_parameter_that_uses_it() -> None:
    def tool(tree: Tree, other: Tree | None = None) -> None: ...

    schema = params(tool)

    assert schema["properties"] == {
        "tree": {"$ref": "#/$defs/Tree"},
        "other": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}]},
    }
    assert schema["$defs"] == {"Tree": tree_schema()}


def test_mutually_recursive_types_define_the_one_met_inside_itself() -> None:
    def tool(root: Folder) -> None: ...

    schema = params(tool)

    entry = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "folder": {"$ref": "#/$defs/Folder"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert schema["properties"] == {"root": {"$ref": "#/$defs/Folder"}}
    assert schema["$defs"] == {
        "Folder": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "entries": {"type": "array", "items": entry}},
            "required": ["name"],
            "additionalProperties": False,
        }
    }
    deep = {"root": {"name": "/", "entries": [{"name": "etc", "folder": {"name": "etc", "entries": [{"name": 1}]}}]}}
    assert validate(deep, schema) == ["$.root.entries[0].folder.entries[0].name: expected string, got integer"]


trees = st.recursive(
    st.builds(Tree, st.integers(), st.just([])),
    lambda children: st.builds(Tree, st.integers(), st.lists(children, max_size=3)),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None)
@given(tree=trees)
def test_any_tree_validates_against_its_schema_and_reaches_the_tool_as_a_tree(tree: Tree) -> None:
    received: list[Tree] = []
    registry = ToolRegistry()

    @registry.register
    def plant(tree: Tree) -> str:
        received.append(tree)
        return "ok"

    sent = {"tree": dataclasses.asdict(tree)}
    assert validate(sent, params(plant)) == []
    assert asyncio.run(registry.call("plant", json.dumps(sent))).text == "ok"
    assert received == [tree]


async def test_a_bad_value_deep_in_a_recursive_type_is_named_by_its_path() -> None:
    registry = ToolRegistry()

    @registry.register
    def plant(tree: Tree) -> str:
        return "ok"

    sent = {"tree": {"value": 1, "children": [{"value": 2, "children": [{"value": "3", "leaves": 0}]}]}}

    assert await registry.call("plant", json.dumps(sent)) == error(
        'invalid arguments for tool "plant":\n'
        "- $.tree.children[0].children[0].value: expected integer, got string\n"
        '- $.tree.children[0].children[0]: unexpected property "leaves" (allowed: value, children)'
    )


async def test_mutually_recursive_values_reach_the_tool_as_their_types() -> None:
    received: list[Folder] = []
    registry = ToolRegistry()

    @registry.register
    def mount(root: Folder) -> str:
        received.append(root)
        return "ok"

    sent = {"root": {"name": "/", "entries": [{"name": "etc", "folder": {"name": "etc"}}]}}

    assert (await registry.call("mount", json.dumps(sent))).text == "ok"
    assert received == [Folder("/", [{"name": "etc", "folder": Folder("etc")}])]


async def test_tuple_and_set_parameters_reach_the_tool_as_tuples_and_sets() -> None:
    seen: dict[str, object] = {}

    def tool(pair: tuple[int, str], rest: tuple[float, ...], tags: set[str], codes: frozenset[int]) -> str:
        seen.update(pair=pair, rest=rest, tags=tags, codes=codes)
        return "ok"

    registry = ToolRegistry()
    registry.register(tool)
    result = await registry.call("tool", '{"pair": [1, "a"], "rest": [1, 2.5], "tags": ["x", "y"], "codes": [3, 4]}')
    assert not result.is_error, result.text
    assert seen == {"pair": (1, "a"), "rest": (1.0, 2.5), "tags": {"x", "y"}, "codes": frozenset({3, 4})}
    assert isinstance(seen["rest"], tuple)
    assert all(isinstance(x, float) for x in seen["rest"])
