"""The output items a client runs, read as tool calls (docs/decisions/0072-client-run-tool-calls.md).

Each kind of item is one ``ToolCallKind``; ``CLIENT_CALLS`` is the table. Per kind: where its identity is (the item's
``call_id``, an ``mcp_approval_request``'s own ``id``), its name (a function's or custom tool's own ``name``, else the
kind itself: ``apply_patch``, ``shell``, ``local_shell``, ``computer``, ``mcp_approval``) and its arguments:

    function_call          the ``arguments`` string (JSON), streamed by ``function_call_arguments.delta``
    custom_tool_call       the ``input`` string, free-form, as sent, streamed by ``custom_tool_call_input.delta``
    apply_patch_call       the exact JSON text of ``operation``
    shell_call             the exact JSON text of ``action``
    local_shell_call       the exact JSON text of ``action``
    computer_call          {"action": ..., "actions": ..., "pending_safety_checks": ...}: the exact JSON text of each
                           of those fields the item has (the round trip acknowledges the safety checks)
    mcp_approval_request   {"server_label": ..., "name": ..., "arguments": ...}: the MCP server, the MCP tool's name
                           and its arguments string as given

A built-in call's arguments are read from its ``output_item.done`` only: its ``added`` holds the item in progress
(recorded ``local_shell_call`` 08 adds ``command: []`` and finishes with the command).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import msgspec

from .._blocks import ToolCallKind
from .._wire import UNSET, WireChunk, WireDelta, WireFunction, WireKindedToolCall, WireToolCall, wire_chunk
from ._events import OutputItem

__all__ = [
    "CLIENT_CALLS",
    "DELTA_EVENTS",
    "DONE_EVENTS",
    "ITEM_OF_KIND",
    "STREAMED",
    "Call",
    "ResponsesCallShape",
    "another_item",
    "builtin_arguments",
    "identity_of",
    "non_empty",
    "responses_call_shape",
    "run_by_provider",
    "tool_chunk",
]

CLIENT_CALLS: dict[str, str] = {
    "function_call": ToolCallKind.FUNCTION,
    "custom_tool_call": ToolCallKind.CUSTOM,
    "apply_patch_call": ToolCallKind.APPLY_PATCH,
    "shell_call": ToolCallKind.SHELL,
    "local_shell_call": ToolCallKind.LOCAL_SHELL,
    "computer_call": ToolCallKind.COMPUTER,
    "mcp_approval_request": ToolCallKind.MCP_APPROVAL,
}
"""Output item type -> the kind of tool call it is."""
ITEM_OF_KIND = {kind: item for item, kind in CLIENT_CALLS.items()}
STREAMED = frozenset({ToolCallKind.FUNCTION, ToolCallKind.CUSTOM})
"""The kinds whose arguments are streamed as deltas (else given whole on the item's ``output_item.done``)."""
DELTA_EVENTS = {
    "response.function_call_arguments.delta": ToolCallKind.FUNCTION,
    "response.custom_tool_call_input.delta": ToolCallKind.CUSTOM,
}
DONE_EVENTS = {
    "response.function_call_arguments.done": ToolCallKind.FUNCTION,
    "response.custom_tool_call_input.done": ToolCallKind.CUSTOM,
}


def tool_chunk(index: int, kind: str, id: object = UNSET, name: object = UNSET, arguments: object = UNSET) -> WireChunk:
    """One fragment of the call at wire index ``index``, of ``kind``."""
    function = WireFunction(name=name, arguments=arguments)  # type: ignore[arg-type]
    call = (WireToolCall(index=index, id=id, function=function) if kind == ToolCallKind.FUNCTION
            else WireKindedToolCall(index=index, id=id, function=function, kind=kind))
    return wire_chunk(WireDelta(tool_calls=[call]))


def identity_of(kind: str, item: OutputItem) -> tuple[object, object]:
    """The item's identity as the wire gives it: (id, name)."""
    if kind == ToolCallKind.FUNCTION or kind == ToolCallKind.CUSTOM:
        return item.call_id, item.name
    return (item.id if kind == ToolCallKind.MCP_APPROVAL else item.call_id), kind


def _text(raw: msgspec.Raw) -> str | None:
    """A field's exact JSON text; None when the field is absent or null."""
    text = bytes(raw).decode("utf-8", "surrogatepass")
    return text if text and text != "null" else None


def _object(fields: list[tuple[str, str | None]]) -> str | None:
    """A JSON object of the given members' JSON texts (those that are there); None when none is."""
    members = [f"{msgspec.json.encode(key).decode()}:{text}" for key, text in fields if text is not None]
    return "{" + ",".join(members) + "}" if members else None


def _json(value: object) -> str | None:
    return msgspec.json.encode(value).decode() if value is not UNSET and value is not None else None


def builtin_arguments(kind: str, item: OutputItem) -> str | None:
    """A finished built-in call's arguments (the module's table); None when the item has none."""
    if kind == ToolCallKind.APPLY_PATCH:
        return _text(item.operation)
    if kind == ToolCallKind.COMPUTER:
        return _object([("action", _text(item.action)), ("actions", _text(item.actions)),
                        ("pending_safety_checks", _text(item.pending_safety_checks))])
    if kind == ToolCallKind.MCP_APPROVAL:  # name and arguments as decoded (strings), written again as JSON
        return _object([("server_label", _text(item.server_label)), ("name", _json(item.name)),
                        ("arguments", _json(item.arguments))])
    return _text(item.action)  # shell, local_shell and any other built-in


def run_by_provider(item_type: str, item: OutputItem) -> bool:
    """Whether a client-call item type is run by the provider this time: a ``shell_call`` in a container (OpenAI's
    hosted shell: an ``environment`` whose type is not ``local``)."""
    return _in_container(item_type, item.environment)


def _in_container(item_type: object, environment: object) -> bool:
    if item_type != "shell_call" or not isinstance(environment, dict):
        return False
    return bool(environment.get("type", "local") != "local")


@attrs.frozen
class ResponsesCallShape:
    """How an output item the client runs is read as a tool call (the module's table), for a reader of the raw items
    (the transport's repairer): ``kind`` (a ``ToolCallKind``); ``id_field``, the item field its identity is
    (``call_id``; an approval request's own ``id``); ``own_name``, whether it is named by the item's ``name`` (a
    function, a custom tool) rather than by its kind; ``argument_fields``, the fields of its ``output_item.done`` its
    arguments are made of (a built-in call; none of them there, or all null: its arguments are unknown), empty for a
    kind whose arguments are streamed."""

    kind: str
    id_field: str
    own_name: bool
    argument_fields: tuple[str, ...]


_ARGUMENT_FIELDS = {  # what builtin_arguments reads, per kind (else ``action``)
    ToolCallKind.APPLY_PATCH: ("operation",),
    ToolCallKind.COMPUTER: ("action", "actions", "pending_safety_checks"),
    ToolCallKind.MCP_APPROVAL: ("server_label", "name", "arguments"),
}
_SHAPES = {
    item: ResponsesCallShape(kind, "id" if kind == ToolCallKind.MCP_APPROVAL else "call_id", kind in STREAMED,
                             () if kind in STREAMED else _ARGUMENT_FIELDS.get(kind, ("action",)))
    for item, kind in CLIENT_CALLS.items()
}


def responses_call_shape(item: Mapping[str, object]) -> ResponsesCallShape | None:
    """The shape of a Responses output item (as decoded JSON) read as a call the client runs; None for any other item
    and for one the provider runs this time (``execution: "server"``, a ``shell_call`` in a container), which the
    reader reports as a ``server-tool``."""
    item_type = item.get("type")
    shape = _SHAPES.get(item_type) if type(item_type) is str else None
    if shape is None or item.get("execution") == "server" or _in_container(item_type, item.get("environment")):
        return None
    return shape


def another_item(items: dict[int, tuple[str | None, str | None]], index: int, item: OutputItem) -> bool:
    """Whether an ``output_item.added`` at ``index`` adds another item than the one added there first (another type,
    or another non-empty id): one ``output_index`` holds one item (decision 0070). Records the first."""
    known = items.setdefault(index, (item.type, non_empty(item.id)))
    given = non_empty(item.id)
    return known[0] != item.type or (known[1] is not None and given is not None and known[1] != given)


def non_empty(value: object) -> str | None:
    """A non-empty string, else None."""
    return value if type(value) is str and value else None


class Call:
    """What was passed on for one client-run call item (its ``output_index``)."""

    __slots__ = ("arguments", "deltas", "id", "kind", "name", "whole_sent")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.id: str | None = None
        self.name: str | None = None
        self.deltas = 0
        self.arguments: list[str] = []
        self.whole_sent = False

    @property
    def item(self) -> str:
        """The item type, for messages."""
        return ITEM_OF_KIND.get(self.kind, self.kind)

    def add_delta(self, delta: str) -> None:
        """An arguments delta after the first (the first replaces arguments given whole: ``_arguments_delta``); the
        rule path and the fast path add through it."""
        self.deltas += 1
        self.arguments.append(delta)
