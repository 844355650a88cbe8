"""The pieces of a request body every format's builder reads alike (``_requests.py``, ``messages/_request.py``,
``responses/_request.py``): text and content parts, tool calls, chat tools, the chosen tool, reasoning blocks.

Pure helpers, each raising a ``ValueError`` naming the message it cannot express (docs/decisions/
0027-request-shapes.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._assistant_turn import REASONING_BLOCKS

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


def _function_of(tool: Mapping[str, Any]) -> Mapping[str, Any] | None:
    function = tool.get("function")
    return function if tool.get("type") == "function" and isinstance(function, Mapping) else None


def _tool_name(function: Mapping[str, Any]) -> str:
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"a tool needs a non-empty function.name, got {dict(function)!r:.120}")
    return name


_EMPTY_SCHEMA: Final[Mapping[str, Any]] = {"type": "object", "properties": {}}


def _chosen_name(choice: Mapping[str, Any]) -> str | None:
    function = _function_of(choice)
    name = function.get("name") if function is not None else None
    return name if isinstance(name, str) else None


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
