"""Each kind of tool call as the Responses API's input items: the call the model made, sent back as its own item, and
the output item that answers it (docs/decisions/0072-client-run-tool-calls.md, "Round trip")::

    kind          the call                                     its answer (from the tool message's content)
    function      function_call {call_id, name, arguments}     function_call_output {call_id, output}
    custom        custom_tool_call {call_id, name, input}      custom_tool_call_output {call_id, output}
    apply_patch   apply_patch_call {call_id, status,           apply_patch_call_output {call_id, status, output}
                    operation}
    shell         shell_call {call_id, status, action}         shell_call_output {call_id, output: [{stdout, stderr,
                                                                 outcome}], max_output_length}
    local_shell   local_shell_call {call_id, status, action}   local_shell_call_output {id, call_id, output}
    computer      computer_call {call_id, status, action |     computer_call_output {call_id, output: {type:
                    actions, pending_safety_checks}              computer_screenshot, ...}, acknowledged_safety_checks}
    mcp_approval  mcp_approval_request {id, server_label,      mcp_approval_response {approval_request_id, approve,
                    name, arguments}                             reason}

A custom call's input goes as it is (free-form, not JSON); a built-in call's arguments (the JSON text of its
operation or action, decision 0072's table) go back parsed; a call the client runs is sent ``status: "completed"``.

The answer of a built-in kind is the tool message's content read as the JSON object of the output item's own fields
(what ``ToolRegistry`` writes for a handler's result): ``{"status", "output"}``, ``{"output": [...],
"max_output_length"}``, ``{"output": {...}, "acknowledged_safety_checks"}``, ``{"approve", "reason"}``. Content that is
not such an object (an error the registry reported: no handler, the handler raised, a history written by hand) is
sent in the kind's failing form: a failed patch with the text as its output, a shell run with the text on stderr and
exit code 1, an approval refused with the text as the reason, a computer call answered with an empty screenshot (its
output item has no text). A local shell's output is the content as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from operators import ToolCallKind

from .._errors import ToolKindError
from .._request_parts import _Call

__all__ = ["call_item", "output_item"]

_CALL_ITEMS: Final = {
    ToolCallKind.APPLY_PATCH: ("apply_patch_call", "operation"),
    ToolCallKind.SHELL: ("shell_call", "action"),
    ToolCallKind.LOCAL_SHELL: ("local_shell_call", "action"),
}
"""The built-in kinds whose arguments are one field of the call item."""


def call_item(call: _Call, number: int) -> dict[str, Any]:
    """The Responses API input item that repeats ``call``."""
    kind = call.kind
    if kind == ToolCallKind.FUNCTION:
        return {"type": "function_call", "call_id": call.id, "name": call.name,
                "arguments": _arguments_text(call.arguments)}
    if kind == ToolCallKind.CUSTOM:
        return {"type": "custom_tool_call", "call_id": call.id, "name": call.name, "input": _input(call, number)}
    if kind in _CALL_ITEMS:
        item_type, field = _CALL_ITEMS[kind]
        return {"type": item_type, "call_id": call.id, "status": "completed", field: _object(call, number)}
    if kind == ToolCallKind.COMPUTER:
        arguments = _object(call, number)
        item: dict[str, Any] = {"type": "computer_call", "call_id": call.id, "status": "completed"}
        item.update((key, arguments[key]) for key in ("action", "actions") if arguments.get(key) is not None)
        item["pending_safety_checks"] = arguments.get("pending_safety_checks") or []
        return item
    if kind == ToolCallKind.MCP_APPROVAL:
        arguments = _object(call, number)
        return {"type": "mcp_approval_request", "id": call.id, "server_label": arguments.get("server_label"),
                "name": arguments.get("name"), "arguments": arguments.get("arguments")}
    raise ToolKindError(
        f"message {number}: tool call {call.id!r:.60} is a {kind!r} call, which the Responses API request builder has "
        f"no item for (the kinds it sends: {', '.join(sorted(ToolCallKind.KNOWN))})"
    )


def output_item(kind: str, call_id: str, content: str) -> dict[str, Any]:
    """The Responses API input item that answers the call ``call_id`` of ``kind`` with the tool message's
    ``content``."""
    if kind == ToolCallKind.CUSTOM:
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}
    if kind == ToolCallKind.LOCAL_SHELL:
        # openai-python's types name the call by ``id``, OpenAI's local shell guide and the Vercel AI SDK by
        # ``call_id``: both are sent, each the call's id (decision 0072, "Round trip").
        return {"type": "local_shell_call_output", "id": call_id, "call_id": call_id, "output": content}
    fields = _result_object(content)
    if kind == ToolCallKind.APPLY_PATCH:
        return _apply_patch_output(call_id, fields, content)
    if kind == ToolCallKind.SHELL:
        return _shell_output(call_id, fields, content)
    if kind == ToolCallKind.COMPUTER:
        return _computer_output(call_id, fields)
    if kind == ToolCallKind.MCP_APPROVAL:
        return _approval_response(call_id, fields, content)
    return {"type": "function_call_output", "call_id": call_id, "output": content}


# -- the answers --------------------------------------------------------------------------------------------------


def _apply_patch_output(call_id: str, fields: Mapping[str, Any] | None, content: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "apply_patch_call_output", "call_id": call_id}
    if fields is not None and fields.get("status") in ("completed", "failed"):
        item["status"] = fields["status"]
        if isinstance(fields.get("output"), str):
            item["output"] = fields["output"]
        return item
    item.update(status="failed", output=content)
    return item


def _shell_output(call_id: str, fields: Mapping[str, Any] | None, content: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "shell_call_output", "call_id": call_id}
    if fields is not None and isinstance(fields.get("output"), list):
        item["output"] = fields["output"]
        if _is_int(fields.get("max_output_length")):
            item["max_output_length"] = fields["max_output_length"]
        return item
    item["output"] = [{"stdout": "", "stderr": content, "outcome": {"type": "exit", "exit_code": 1}}]
    return item


def _computer_output(call_id: str, fields: Mapping[str, Any] | None) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "computer_call_output", "call_id": call_id}
    if fields is not None and isinstance(fields.get("output"), Mapping):
        item["output"] = dict(fields["output"])
        if isinstance(fields.get("acknowledged_safety_checks"), list):
            item["acknowledged_safety_checks"] = fields["acknowledged_safety_checks"]
        return item
    item["output"] = {"type": "computer_screenshot"}
    return item


def _approval_response(call_id: str, fields: Mapping[str, Any] | None, content: str) -> dict[str, Any]:
    item: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": call_id}
    if fields is not None and isinstance(fields.get("approve"), bool):
        item["approve"] = fields["approve"]
        if isinstance(fields.get("reason"), str):
            item["reason"] = fields["reason"]
        return item
    item.update(approve=False, reason=content)
    return item


# -- helpers ------------------------------------------------------------------------------------------------------


def _arguments_text(arguments: object) -> str:
    """A function call's arguments: verbatim, a mapping as JSON, blank as ``"{}"``."""
    if isinstance(arguments, Mapping):
        return json.dumps(dict(arguments), ensure_ascii=False)
    if isinstance(arguments, str) and arguments.strip():
        return arguments
    return "{}"


def _input(call: _Call, number: int) -> str:
    """A custom call's free-form input, as it is (None: empty)."""
    if call.arguments is None:
        return ""
    if not isinstance(call.arguments, str):
        raise ValueError(f"message {number}: custom tool call {call.id!r:.60} needs its input as a string, got "
                         f"{type(call.arguments).__name__}")
    return call.arguments


def _object(call: _Call, number: int) -> dict[str, Any]:
    """A built-in call's arguments: the JSON object its item's field holds."""
    value: object = call.arguments
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if not isinstance(value, Mapping):
        raise ValueError(f"message {number}: the {call.kind} call {call.id!r:.60} needs its arguments as a JSON "
                         f"object (decision 0072), got {call.arguments!r:.80}")
    return dict(value)


def _result_object(content: str) -> dict[str, Any] | None:
    """The tool message's content as a JSON object, else None."""
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
