"""The Anthropic Messages API's request body, built from the chat-shaped conversation the library keeps (docs/
decisions/0027-request-shapes.md)::

    POST /messages   {model, system, messages, tools: [{name, description, input_schema}], max_tokens, stream}

Every ``system``/``developer`` message goes to ``system`` (joined by a blank line, in order); an assistant's tool
calls become ``tool_use`` blocks whose ``input`` is the parsed arguments (arguments that are not a JSON object,
including bad JSON, are sent as ``{}``: the tool's result, already in the history, says what was wrong); ``tool``
messages become ``tool_result`` blocks, and consecutive user-side messages are merged into one user message (the API
wants the results of one assistant message together, first); an assistant message with neither text nor tool calls
is left out (the API refuses empty content); ``max_tokens`` is required (4096 unless given); signed thinking goes
back as ``thinking`` blocks, redacted thinking as ``redacted_thinking``. The rules every format's builder shares (the
system prompt, a tool that is not chat-shaped, the ``ValueError`` naming the message) are ``pipeline/formats/
_requests.py``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._options import RequestOptions
from .._request_parts import (
    _EMPTY_SCHEMA,
    Message,
    _arguments_object,
    _call_id_of,
    _chosen_name,
    _function_of,
    _image_url,
    _parts,
    _reasoning_of,
    _text,
    _tool_calls,
    _tool_name,
)
from .._requests import _optional, _split_system, _system_and_tools, _unknown_role

__all__ = ["DEFAULT_MAX_TOKENS", "messages_request"]

DEFAULT_MAX_TOKENS: Final = 4096
"""The Messages API's ``max_tokens`` when none is given (the API requires one)."""


def messages_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The Messages API body (see the module docstring for each rule)."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    instructions, rest = _split_system(messages, system)
    out: list[dict[str, Any]] = []
    for number, message in enumerate(rest):
        role = message.get("role")
        if role == "user":
            _add_user(out, _messages_parts(message.get("content"), number))
        elif role == "tool":
            block = {"type": "tool_result", "tool_use_id": _call_id_of(message, number),
                     "content": _text(message.get("content"), number)}
            _add_user(out, [block])
        elif role == "assistant":
            blocks = _messages_thinking(_reasoning_of(message, number))
            text = _text(message.get("content"), number)
            if text:
                blocks.append({"type": "text", "text": text})
            for call_id, name, arguments in _tool_calls(message, number, "the Messages API"):
                blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": _arguments_object(arguments)})
            if blocks:
                only_text = len(blocks) == 1 and blocks[0]["type"] == "text"
                out.append({"role": "assistant", "content": text if only_text else blocks})
        else:
            raise _unknown_role(role, number)
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        "messages": out,
        "stream": True,
    }
    _system_and_tools(body, "system", instructions, tools, _messages_tool, tool_choice, _messages_tool_choice)
    if stop is not None:
        body["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    _optional(body, temperature=temperature)
    return body


# -- the Messages API's parts -------------------------------------------------------------------------------------


def _messages_parts(content: object, number: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in _parts(content, number):
        kind = part.get("type")
        if kind == "text":
            blocks.append({"type": "text", "text": _text([part], number)})
        elif kind == "image_url":
            url = _image_url(part, number)
            head, comma, data = url.partition(",")
            if url.startswith("data:") and comma and head.endswith(";base64"):
                source = {"type": "base64", "media_type": head[5:-7], "data": data}
            else:
                source = {"type": "url", "url": url}
            blocks.append({"type": "image", "source": source})
        else:
            raise ValueError(f"message {number}: a content part of type {kind!r} has no Messages API form here")
    return blocks


def _add_user(out: list[dict[str, Any]], blocks: list[dict[str, Any]]) -> None:
    """Appends a user message, merged into the previous one when that is a user message too."""
    if out and out[-1]["role"] == "user":
        previous = out[-1]["content"]
        if isinstance(previous, str):
            previous = [{"type": "text", "text": previous}]
        out[-1]["content"] = previous + blocks
    elif len(blocks) == 1 and blocks[0]["type"] == "text":
        out.append({"role": "user", "content": blocks[0]["text"]})
    else:
        out.append({"role": "user", "content": blocks})


def _messages_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function_of(tool)
    if function is None:
        return dict(tool)
    out: dict[str, Any] = {"name": _tool_name(function)}
    if function.get("description") is not None:
        out["description"] = function["description"]
    out["input_schema"] = dict(function.get("parameters") or _EMPTY_SCHEMA)
    return out


def _messages_tool_choice(choice: Any) -> Any:
    """Chat ``tool_choice`` to Messages: auto, none, required -> any, a named function -> tool."""
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise ValueError(f"tool_choice is 'auto', 'none', 'required' or a function, got {choice!r}")
        return {"type": "any" if choice == "required" else choice}
    name = _chosen_name(choice) if isinstance(choice, Mapping) else None
    return {"type": "tool", "name": name} if name is not None else choice


def _messages_thinking(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages API thinking blocks: a signed one as ``thinking``, redacted data as ``redacted_thinking``; a block of
    another API (a Responses reasoning item) or without a signature is not sent (the API refuses it unsigned)."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        if block.get("item_id") is not None:
            continue
        if block.get("signature") is not None:
            out.append({"type": "thinking", "thinking": block["text"], "signature": block["signature"]})
        elif block.get("encrypted") is not None:
            out.append({"type": "redacted_thinking", "data": block["encrypted"]})
    return out
