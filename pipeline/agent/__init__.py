"""Tools and the turn loop: a tool registry with schemas from signatures, and ``run_turn``."""

from .._tools import Tool, ToolRegistry, ToolResult, schema_from_signature, validate
from .._turn import TurnEvent, run_turn, run_turn_to_end

__all__ = ["Tool", "ToolRegistry", "ToolResult", "TurnEvent", "run_turn", "run_turn_to_end", "schema_from_signature",
           "validate"]
