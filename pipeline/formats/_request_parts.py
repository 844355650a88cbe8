"""The pieces of a request body that ``_requests.py`` converts: content parts, tool calls, tools and tool choice.

Pure helpers, each raising a ``ValueError`` naming the message it cannot express (docs/decisions/
0027-request-shapes.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._chat_message import REASONING_BLOCKS

Message = Mapping[str, Any]

def _text(content: object, number: int) -> str:
    """A message's text: a string, None (no text) or a list of ``text`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = []
        for part in content:
            if not (isinstance(part, Mapping) and part.get("type") == "text" and isinstance(part.get("text"), str)):
                raise ValueError(f"message {number}: a content part here must be {{'type': 'text', 'text': ...}}, "
                                 f"got {part!r:.80}")
            texts.append(part["text"])
        return "".join(texts)
    raise ValueError(f"message {number}: content is a {type(content).__name__}, not a string or a list of parts")


def _parts(content: object, number: int) -> list[Mapping[str, Any]]:
    if isinstance(content, str) or content is None:
        return [{"type": "text", "text": content or ""}]
    if isinstance(content, Sequence) and all(isinstance(part, Mapping) for part in content):
        return list(content)
    raise ValueError(f"message {number}: content is a {type(content).__name__}, not a string or a list of parts")


def _image_url(part: Mapping[str, Any], number: int) -> str:
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, Mapping) else image
    if not isinstance(url, str):
        raise ValueError(f"message {number}: an image_url part needs a url string")
    return url


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


def _call_id_of(message: Message, number: int) -> str:
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"message {number}: a tool message needs a non-empty tool_call_id")
    return call_id


def _tool_calls(message: Message, number: int) -> list[tuple[str, str, object]]:
    """``(id, name, arguments)`` of each of an assistant message's tool calls."""
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        call_id = call.get("id") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            raise ValueError(f"message {number}: a tool call needs a non-empty id and function.name, got {call!r:.120}")
        assert isinstance(function, Mapping)
        calls.append((call_id, name, function.get("arguments")))
    return calls


def _input_of(arguments: object) -> dict[str, Any]:
    """A ``tool_use`` block's ``input``: the arguments' JSON object, else ``{}`` (blank, bad JSON, not an object)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _arguments_text(arguments: object) -> str:
    if isinstance(arguments, Mapping):
        return json.dumps(dict(arguments), ensure_ascii=False)
    if isinstance(arguments, str) and arguments.strip():
        return arguments
    return "{}"


def _function_of(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    function = tool.get("function")
    return function if tool.get("type") == "function" and isinstance(function, Mapping) else None


def _tool_name(function: Mapping[str, Any]) -> str:
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool needs a non-empty function.name, got {dict(function)!r:.120}")
    return name


_EMPTY_SCHEMA: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


def _messages_tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    function = _function_of(tool)
    if function is None:
        return dict(tool)
    out: dict[str, Any] = {"name": _tool_name(function)}
    if function.get("description") is not None:
        out["description"] = function["description"]
    out["input_schema"] = dict(function.get("parameters") or _EMPTY_SCHEMA)
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


def _chosen_name(choice: Mapping[str, Any]) -> str | None:
    function = _function_of(choice)
    name = function.get("name") if function is not None else None
    return name if isinstance(name, str) else None


def _messages_tool_choice(choice: Any) -> Any:
    """Chat ``tool_choice`` to Messages: auto, none, required -> any, a named function -> tool."""
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise ValueError(f"tool_choice is 'auto', 'none', 'required' or a function, got {choice!r}")
        return {"type": "any" if choice == "required" else choice}
    name = _chosen_name(choice) if isinstance(choice, Mapping) else None
    return {"type": "tool", "name": name} if name is not None else choice


def _responses_tool_choice(choice: Any) -> Any:
    """Chat ``tool_choice`` to Responses: the strings as they are, a named function flattened."""
    name = _chosen_name(choice) if isinstance(choice, Mapping) else None
    return {"type": "function", "name": name} if name is not None else choice


_OPAQUE_FIELDS: Final = ("signature", "encrypted", "item_id")


def _reasoning_of(message: Message, number: int) -> list[dict[str, Any]]:
    """An assistant message's ``reasoning_blocks`` (``ReasoningBlock.to_dict()`` each: docs/decisions/
    0028-reasoning-round-trip.md), checked: a string ``text`` and each opaque part absent or a non-empty string."""
    blocks = message.get(REASONING_BLOCKS)
    if blocks is None:
        return []
    if isinstance(blocks, str | bytes) or not isinstance(blocks, Sequence):
        raise ValueError(f"message {number}: {REASONING_BLOCKS} is a {type(blocks).__name__}, not a list of blocks")
    out = []
    for block in blocks:
        ok = isinstance(block, Mapping) and block.get("type") == "reasoning" and isinstance(block.get("text"), str)
        if ok:
            ok = all(block.get(key) is None or (isinstance(block[key], str) and block[key]) for key in _OPAQUE_FIELDS)
        if not ok:
            raise ValueError(f"message {number}: a reasoning block needs a string text and, for signature, encrypted "
                             f"and item_id, a non-empty string or nothing; got {block!r:.120}")
        out.append(dict(block))
    return out


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

