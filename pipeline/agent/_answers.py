"""The two edges of a built-in kind's call (docs/decisions/0072-client-run-tool-calls.md): its arguments in (the JSON
object of the item's operation or action), and the handler's answer out, as the JSON object of the output item's own
fields that the Responses request builder sends (``pipeline/formats/responses/_items.py``)::

    kind          the handler returns                              the answer
    apply_patch   None, a str (the log), or {"status", "output"}   {"status": "completed" | "failed", "output"}
    shell         a str (stdout), a list of {stdout, stderr,       {"output": [...], "max_output_length"}
                    outcome}, or {"output": [...], ...}
    local_shell   a str, or any JSON value                         the text as it is (JSON for another value)
    computer      a str (the screenshot's image_url), a            {"output": {"type": "computer_screenshot", ...},
                    screenshot {"type": "computer_screenshot",       "acknowledged_safety_checks"}
                    ...}, or {"output": {...}, ...}
    mcp_approval  a bool, or {"approve": bool, "reason"}           {"approve", "reason"}

Anything else is an error result naming what was expected. Only the text a model reads is cut at ``max_result_chars``
(a patch's log, a shell's stdout and stderr, a local shell's output, a refusal's reason): a screenshot goes whole, and
the JSON around the text stays whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from operators import ToolCallKind

from .._json import loads
from ._call import bounded_result, result_from_value
from ._quote import describe, excerpt, safe_repr, show
from ._tool import ToolResult

__all__ = ["answer", "builtin_arguments"]


def builtin_arguments(kind: str, arguments: object) -> dict[str, Any] | ToolResult:
    """The call's arguments as a dict, or the error result to send back instead of calling."""
    if not isinstance(arguments, str):
        return ToolResult(f"arguments of a {kind} call must be a string of JSON, got {type(arguments).__name__}: "
                          f"{excerpt(safe_repr(arguments))}", is_error=True)
    try:
        value = loads(arguments)
    except (ValueError, RecursionError) as exc:
        return ToolResult(f"arguments of a {kind} call are not valid JSON ({describe(exc)}): {show(arguments)}",
                          is_error=True)
    if not isinstance(value, dict):
        return ToolResult(f"arguments of a {kind} call must be a JSON object: {show(arguments)}", is_error=True)
    return value


_EXPECTED = {
    ToolCallKind.APPLY_PATCH: 'None, a string (the log of a completed patch) or {"status": "completed" | "failed", '
                              '"output": ...}',
    ToolCallKind.SHELL: 'a string (stdout), a list of {"stdout", "stderr", "outcome"} or {"output": [...]}',
    ToolCallKind.COMPUTER: 'a string (the screenshot\'s image_url), {"type": "computer_screenshot", ...} or '
                           '{"output": {...}, "acknowledged_safety_checks": [...]}',
    ToolCallKind.MCP_APPROVAL: 'a bool or {"approve": true | false, "reason": ...}',
}


def answer(kind: str, value: object, limit: int | None) -> ToolResult:
    """The handler's return ``value`` as the answer's text (the module's table), its text cut at ``limit``."""
    if kind == ToolCallKind.LOCAL_SHELL:
        return bounded_result(result_from_value(value), limit)
    fields = _fields(kind, value)
    if fields is None:
        return ToolResult(f"the {kind} handler returned {excerpt(safe_repr(value))}; expected {_EXPECTED[kind]}",
                          is_error=True)
    _bound(kind, fields, limit)
    try:
        return ToolResult(json.dumps(fields, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        return ToolResult(f"the {kind} handler's answer is not JSON ({describe(exc)})", is_error=True)


def _fields(kind: str, value: object) -> dict[str, Any] | None:
    """The output item's fields, or None when ``value`` is not an answer of ``kind``."""
    if kind == ToolCallKind.APPLY_PATCH:
        if value is None or isinstance(value, str):
            return {"status": "completed", "output": value} if value else {"status": "completed"}
        return dict(value) if isinstance(value, Mapping) and value.get("status") in ("completed", "failed") else None
    if kind == ToolCallKind.SHELL:
        if isinstance(value, str):
            return {"output": [{"stdout": value, "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}]}
        if isinstance(value, list):
            return {"output": value}
        return dict(value) if isinstance(value, Mapping) and isinstance(value.get("output"), list) else None
    if kind == ToolCallKind.COMPUTER:
        if isinstance(value, str):
            return {"output": {"type": "computer_screenshot", "image_url": value}}
        if isinstance(value, Mapping) and value.get("type") == "computer_screenshot":
            return {"output": dict(value)}
        return dict(value) if isinstance(value, Mapping) and isinstance(value.get("output"), Mapping) else None
    if kind == ToolCallKind.MCP_APPROVAL:
        if isinstance(value, bool):
            return {"approve": value}
        return dict(value) if isinstance(value, Mapping) and isinstance(value.get("approve"), bool) else None
    return None


def _bound(kind: str, fields: dict[str, Any], limit: int | None) -> None:
    """Cut the text a model reads to ``limit`` characters, in place."""
    if kind == ToolCallKind.SHELL:
        fields["output"] = [_bound_keys(dict(chunk), ("stdout", "stderr"), limit) if isinstance(chunk, Mapping)
                            else chunk for chunk in fields["output"]]
    else:
        _bound_keys(fields, ("output", "reason"), limit)


def _bound_keys(value: dict[str, Any], keys: tuple[str, ...], limit: int | None) -> dict[str, Any]:
    for key in keys:
        if isinstance(value.get(key), str):
            value[key] = bounded_result(ToolResult(value[key]), limit).text
    return value
