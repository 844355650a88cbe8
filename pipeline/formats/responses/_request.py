"""The OpenAI Responses API's request body, built from the chat-shaped conversation the library keeps (docs/
decisions/0027-request-shapes.md)::

    POST /responses  {model, instructions, input, tools: [{type, name, description, parameters, strict}], stream}

``system``/``developer`` messages go to ``instructions``; tool calls become ``function_call`` items and tool results
``function_call_output`` items; the arguments go verbatim (blank as ``"{}"``); a call of another kind (a custom tool,
``apply_patch``, ``shell``, ``local_shell``, ``computer``, ``mcp_approval``: its ``type``, decision 0072) goes as its
own item and its result as the matching output item (``_items.py`` has the table); ``strict`` is sent as the chat tool
says (false unless it says true: the Responses API would otherwise default it to true); usage is always streamed, so
there is no ``stream_options``; there are no stop sequences (``ValueError``); a reasoning block with an item id goes
back as a ``reasoning`` item (its text as the summary, its encrypted content). The rules every format's builder
shares (the system prompt, a tool that is not chat-shaped, the ``ValueError`` naming the message) are
``pipeline/formats/_requests.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._options import RequestOptions
from .._request_parts import (
    _EMPTY_SCHEMA,
    Message,
    _call_id_of,
    _chosen_name,
    _function_of,
    _image_url,
    _kinded_calls,
    _parts,
    _reasoning_of,
    _text,
    _tool_name,
)
from .._requests import _optional, _split_system, _system_and_tools, _unknown_role
from ._items import call_item, output_item

__all__ = ["responses_request"]

def responses_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The Responses API body (see the module docstring for each rule)."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    if stop is not None:
        raise ValueError("the Responses API has no stop sequences: leave stop= out for api='responses'")
    instructions, rest = _split_system(messages, system)
    items: list[dict[str, Any]] = []
    kinds: dict[str, str] = {}  # call id -> kind, so each result goes as its call's output item
    for number, message in enumerate(rest):
        role = message.get("role")
        if role == "user":
            items.append({"type": "message", "role": "user", "content": _responses_content(message, number)})
        elif role == "tool":
            call_id = _call_id_of(message, number)
            items.append(output_item(kinds.get(call_id, "function"), call_id, _text(message.get("content"), number)))
        elif role == "assistant":
            items.extend(_responses_reasoning(_reasoning_of(message, number)))
            text = _text(message.get("content"), number)
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            for call in _kinded_calls(message, number):
                items.append(call_item(call, number))
                kinds[call.id] = call.kind
        else:
            raise _unknown_role(role, number)
    body: dict[str, Any] = {"model": model, "input": items, "stream": True}
    _system_and_tools(body, "instructions", instructions, tools, _responses_tool, tool_choice, _responses_tool_choice)
    _optional(body, temperature=temperature, max_output_tokens=max_tokens)
    return body


# -- the Responses API's parts ------------------------------------------------------------------------------------


def _responses_content(message: Message, number: int) -> str | list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return content
    out: list[dict[str, Any]] = []
    for part in _parts(content, number):
        kind = part.get("type")
        if kind == "text":
            out.append({"type": "input_text", "text": _text([part], number)})
        elif kind == "image_url":
            out.append({"type": "input_image", "image_url": _image_url(part, number)})
        else:
            raise ValueError(f"message {number}: a content part of type {kind!r} has no Responses API form here")
    return out


def _responses_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function_of(tool)
    if function is None:
        return dict(tool)
    out: dict[str, Any] = {"type": "function", "name": _tool_name(function)}
    if function.get("description") is not None:
        out["description"] = function["description"]
    out["parameters"] = dict(function.get("parameters") or _EMPTY_SCHEMA)
    out["strict"] = function.get("strict") is True
    return out


def _responses_tool_choice(choice: Any) -> Any:
    """Chat ``tool_choice`` to Responses: the strings as they are, a named function flattened."""
    name = _chosen_name(choice) if isinstance(choice, Mapping) else None
    return {"type": "function", "name": name} if name is not None else choice


def _responses_reasoning(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Responses API reasoning items: a block with its item id, its text as the summary, its encrypted content."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        item_id = block.get("item_id")
        if item_id is None:
            continue
        text = block["text"]
        item: dict[str, Any] = {"type": "reasoning", "id": item_id,
                                "summary": [{"type": "summary_text", "text": text}] if text else []}
        if block.get("encrypted") is not None:
            item["encrypted_content"] = block["encrypted"]
        out.append(item)
    return out
