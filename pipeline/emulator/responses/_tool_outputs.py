"""The follow-up of a client-run call's profile (``_client_calls.py``): the request must send each call's output item
back, as the Responses API requires, before the emulator answers ``clean``.

    custom-tools, custom-grammar    a ``custom_tool_call_output`` (``call_id``, ``output``) per ``custom_tool_call``
    apply-patch                     an ``apply_patch_call_output`` (``call_id``, ``status`` completed or failed)
    shell-call                      a ``shell_call_output`` (``call_id``, ``output`` a list)

The emulator keeps no state: the calls are the ones the request's ``input`` sends back, and the output must name one
of them (any ``call_id`` when the request sends none of the calls, relying on ``previous_response_id``). Else HTTP 400
in OpenAI's words: ``No tool output found for <item type> call <call_id>.``, or what the output item lacks.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .._api_format import SentBack
from .._sent_back import refused

__all__ = ["CLIENT_CALL_CHECKS", "CLIENT_CALL_TURNS"]

_OUTPUT_OF = {
    "custom_tool_call": "custom_tool_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "shell_call": "shell_call_output",
}
CLIENT_CALL_TURNS = frozenset({
    *_OUTPUT_OF, *_OUTPUT_OF.values(), "local_shell_call", "local_shell_call_output", "computer_call",
    "computer_call_output", "mcp_approval_request", "mcp_approval_response",
})
"""The input items of a client-run call and its answer: each counts as an assistant turn (``ApiFormat.turn_types``)."""


def _outputs_check(call_type: str) -> SentBack:
    output_type = _OUTPUT_OF[call_type]

    def check(body: Mapping[str, Any]) -> None:
        given = body.get("input")
        items = [item for item in given if isinstance(item, dict)] if isinstance(given, list) else []
        calls = [item.get("call_id") for item in items if item.get("type") == call_type]
        outputs = [(n, item) for n, item in enumerate(items) if item.get("type") == output_type]
        answered = {item.get("call_id") for _, item in outputs}
        for call_id in calls:
            if call_id not in answered:
                raise refused(f"No tool output found for {call_type} call {call_id}.", "input")
        if not outputs:
            raise refused(f"input: the {call_type}'s answer was not sent (a {output_type} item with its call_id)",
                          "input")
        for n, item in outputs:
            if not isinstance(item.get("call_id"), str) or not item["call_id"]:
                raise refused(f"input.{n}.call_id: a {output_type} names its call", f"input[{n}].call_id")
            if calls and item["call_id"] not in calls:
                raise refused(f"input.{n}: no {call_type} found for {output_type} {item['call_id']}.", "input")
            _fields(output_type, n, item)

    return check


def _fields(output_type: str, n: int, item: Mapping[str, Any]) -> None:
    if output_type == "apply_patch_call_output" and item.get("status") not in ("completed", "failed"):
        raise refused(f"input.{n}.status: an apply_patch_call_output's status is 'completed' or 'failed'",
                      f"input[{n}].status")
    if output_type == "shell_call_output" and not isinstance(item.get("output"), list):
        raise refused(f"input.{n}.output: a shell_call_output's output is a list", f"input[{n}].output")
    if output_type == "custom_tool_call_output" and not isinstance(item.get("output"), (str, list)):
        raise refused(f"input.{n}.output: a custom_tool_call_output's output is a string or a list",
                      f"input[{n}].output")


CLIENT_CALL_CHECKS: Mapping[str, SentBack] = MappingProxyType({
    "custom-tools": _outputs_check("custom_tool_call"),
    "custom-grammar": _outputs_check("custom_tool_call"),
    "apply-patch": _outputs_check("apply_patch_call"),
    "shell-call": _outputs_check("shell_call"),
})
"""Profile name -> the check of its follow-up."""
