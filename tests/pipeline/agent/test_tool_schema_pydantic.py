"""schema_from_signature on pydantic models (when the program uses pydantic): the model's own JSON Schema, its
``$defs`` moved to the root, and the model validating what reaches it."""

from __future__ import annotations

import json

import pytest
from tool_builders import error, params

from pipeline.agent import ToolRegistry, validate

pytest.importorskip("pydantic")
import pydantic


class Category(pydantic.BaseModel):
    name: str
    size: int = pydantic.Field(default=0, ge=0)
    children: list[Category] = pydantic.Field(default_factory=list)


class Order(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    item: str
    category: Category | None = None


def test_a_model_brings_its_own_schema_and_its_defs_move_to_the_root() -> None:
    def tool(order: Order) -> None: ...

    schema = params(tool)

    own = Order.model_json_schema(ref_template="#/$defs/{model}")
    defs = own.pop("$defs")
    assert schema["properties"]["order"] == own
    assert schema["$defs"] == defs
    assert defs["Category"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}


def test_the_models_constraints_and_extra_policy_are_validated() -> None:
    def tool(order: Order) -> None: ...

    sent = {"order": {"item": "tea", "category": {"name": "drinks", "children": [{"name": "hot", "size": -1}]}, "x": 1}}

    assert validate(sent, params(tool)) == [  # in the schema's order: pydantic writes additionalProperties first
        '$.order: unexpected property "x" (allowed: item, category)',
        "$.order.category.children[0].size: expected a number >= 0, got -1",
    ]


async def test_a_model_reaches_the_tool_built_by_pydantic() -> None:
    received: list[Order] = []
    registry = ToolRegistry()

    @registry.register
    def place(order: Order) -> str:
        received.append(order)
        return "ok"

    sent = {"order": {"item": "tea", "category": {"name": "drinks", "children": [{"name": "hot"}]}}}

    assert (await registry.call("place", json.dumps(sent))).text == "ok"
    assert received == [Order(item="tea", category=Category(name="drinks", children=[Category(name="hot")]))]
    assert await registry.call("place", json.dumps({"order": {"item": 1}})) == error(
        'invalid arguments for tool "place":\n- $.order.item: expected string, got integer'
    )
