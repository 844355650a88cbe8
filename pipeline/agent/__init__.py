"""Tools and the turn loop: a tool registry with schemas from signatures, and ``run_turn``."""

from ._registry import ToolRegistry
from ._schema import JsonSchema, schema_from_signature
from ._tool import Tool, ToolResult
from ._turn import TurnEvent, TurnEventKind, run_turn, run_turn_to_end
from ._validate import validate

__all__ = [
    "JsonSchema",
    "Tool",
    "ToolRegistry",
    "ToolResult",
    "TurnEvent",
    "TurnEventKind",
    "run_turn",
    "run_turn_to_end",
    "schema_from_signature",
    "validate",
]
