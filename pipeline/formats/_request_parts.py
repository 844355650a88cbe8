"""The pieces of a request body every format's builder reads alike (``_requests.py``, ``messages/_request.py``,
``responses/_request.py``, ``gemini/_request.py``): text and content parts, tool calls and their arguments as an
object, chat tools, the chosen tool, reasoning blocks.

Pure helpers, each raising a ``ValueError`` naming the message it cannot express (docs/decisions/
0027-request-shapes.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple

from operators import ToolCallKind

from .._assistant_turn import REASONING_BLOCKS
from ._errors import ToolKindError

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


class _Call(NamedTuple):
    """One tool call of an assistant message: its id, name, arguments (as given) and kind (its ``type``)."""

    id: str
    name: str
    arguments: object
    kind: str


def _kinded_calls(message: Message, number: int) -> list[_Call]:
    """Each of an assistant message's tool calls, of any kind: ``type`` is the kind, absent or None a function
    (decision 0072)."""
    calls = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, Mapping) else None
        call_id = call.get("id") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            raise ValueError(f"message {number}: a tool call needs a non-empty id and function.name, got {call!r:.120}")
        assert isinstance(function, Mapping)
        assert isinstance(call, Mapping)
        calls.append(_Call(call_id, name, function.get("arguments"), _kind_of(call, number)))
    return calls


def _kind_of(call: Mapping[str, Any], number: int) -> str:
    kind = call.get("type")
    if kind is None:
        return ToolCallKind.FUNCTION
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"message {number}: a tool call's type is its kind, a non-empty string, got {kind!r:.40}")
    return kind


def _tool_calls(message: Message, number: int, api: str) -> list[tuple[str, str, object]]:
    """``(id, name, arguments)`` of each of an assistant message's tool calls, every one a function call: another
    kind is a ``ToolKindError`` naming ``api``."""
    calls = _kinded_calls(message, number)
    for call in calls:
        _refuse_kind(call.kind, call.id, number, api)
    return [(call.id, call.name, call.arguments) for call in calls]


def _refuse_kinds(message: Message, number: int, api: str) -> None:
    """``ToolKindError`` for the first tool call of ``message`` that is not a function; a message sent as it is (chat
    completions) is otherwise not checked here."""
    for call in message.get("tool_calls") or ():
        if isinstance(call, Mapping) and call.get("type") is not None:
            _refuse_kind(_kind_of(call, number), call.get("id"), number, api)


def _refuse_kind(kind: str, call_id: object, number: int, api: str) -> None:
    if kind != ToolCallKind.FUNCTION:
        raise ToolKindError(
            f"message {number}: tool call {call_id!r:.60} is a {kind!r} call, which {api} has no form for: only the "
            "Responses API (api='responses') takes calls that are not functions (docs/decisions/"
            "0072-client-run-tool-calls.md)"
        )


def _arguments_object(arguments: object) -> dict[str, Any]:
    """A tool call's arguments as the object an API that takes them parsed wants (a Messages ``tool_use`` block's
    ``input``, a Gemini ``functionCall``'s ``args``): the arguments' JSON object, else ``{}`` (blank, bad JSON, not
    an object: the tool's result, already in the history, says what was wrong)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    if not isinstance(arguments, str):
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


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
