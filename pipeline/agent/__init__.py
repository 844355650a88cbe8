"""Tools and the turn loop: a tool registry with schemas from signatures, and ``run_turn``.

_tool        Tool, ToolResult: the values
_schema      schema_from_signature: a JSON Schema from type hints (nested and recursive types)
_validate    validate, check_schema: JSON Schema Draft 2020-12 by jsonschema, each tool's schema compiled once
_explain     the messages a model reads for what jsonschema finds
_jsonvalue   a value's JSON type, JSON equality, JSON paths
_convert     validated JSON -> the annotated Python types (the binder)
_call        one call's edges: the model's arguments in, the tool's return value out
_custom      CustomTool, Grammar, KindHandler: a custom (free-form) tool, its grammar, a built-in kind's handler
_answers     a built-in kind's arguments in, its handler's answer out (decision 0072)
_invoke      running one tool within its time limit
_other_kinds ToolRegistry's register_custom and handle, and their calls
_registry    ToolRegistry
_module      a tools module found and read (ToolRegistry.from_module)
_turn        TurnEvent, TurnEventKind, run_turn, run_turn_to_end
"""

from operators.extend import publish as _publish

from ._custom import CustomTool, Grammar
from ._errors import ToolDefinitionError
from ._registry import ToolRegistry
from ._schema import JsonSchema, schema_from_signature
from ._tool import Tool, ToolResult
from ._turn import TurnEvent, TurnEventKind, run_turn, run_turn_to_end
from ._validate import validate

__all__ = [
    "CustomTool",
    "Grammar",
    "JsonSchema",
    "Tool",
    "ToolDefinitionError",
    "ToolRegistry",
    "ToolResult",
    "TurnEvent",
    "TurnEventKind",
    "run_turn",
    "run_turn_to_end",
    "schema_from_signature",
    "validate",
]

_publish(globals())  # each name's __module__ is this face (docs/architecture.md, "One path per name")
