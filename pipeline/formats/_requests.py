"""The request body of each API, built from the chat-shaped conversation the library keeps: chat's builder and what
every format's builder shares.

The session (``Session.messages()``), ``ChatClient.stream`` and ``run_turn`` speak OpenAI chat completions: ``messages``
with ``system``/``developer``, ``user``, ``assistant`` (with ``tool_calls``) and ``tool`` roles, and chat ``tools``
(``{"type": "function", "function": {name, description, parameters}}``). One pure function per API turns that into
the streaming request body the API expects (docs/decisions/0027-request-shapes.md); each other format's builder is
in its own package, with its rules in its docstring (``messages/_request.py``, ``responses/_request.py``)::

    chat       POST /chat/completions  {model, messages, tools, stream, stream_options: {include_usage}}

Shared by every builder:

- The system prompt: ``system=`` first, then every ``system``/``developer`` message in order, joined by a blank line,
  under the API's key (``_split_system``, ``_system_and_tools``); chat keeps its messages as they are.
- A tool that is not chat-shaped (no ``function`` object) goes through as given, in the target API's own shape (a
  server tool such as ``{"type": "web_search"}``).

A conversation these functions cannot express (an unknown role, a tool call without an id or a name, a content part
of an unknown type) is a ``ValueError`` that says which message; a tool call that is not a function (its ``type`` is
another kind: decision 0072) is a ``ToolKindError`` (a ``ValueError``) from every builder but the Responses API's,
which sends each kind as its own item.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._assistant_turn import REASONING_BLOCKS
from ._options import RequestOptions
from ._request_parts import Message, _refuse_kinds, _text

__all__ = ["Builder", "chat_request"]

_SYSTEM_ROLES = frozenset({"system", "developer"})


def chat_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The chat-completions body: the messages as they are (``system`` first when given). ``options`` or its fields
    as keywords (``tools=...``)."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    out = [{"role": "system", "content": system}] if system is not None else []
    for number, message in enumerate(messages):
        if isinstance(message, Mapping):
            _refuse_kinds(message, number, "chat completions")
    body: dict[str, Any] = {
        "model": model,
        "messages": out + [_without_reasoning_blocks(m) for m in messages],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if tools:
        body["tools"] = [dict(t) for t in tools]
    stop = list(stop) if isinstance(stop, tuple) else stop
    _optional(body, temperature=temperature, max_tokens=max_tokens, stop=stop, tool_choice=tool_choice)
    return body


Builder = Callable[..., dict[str, Any]]
"""``build(messages, *, model, options=None, **fields)``: a request body from the chat-shaped conversation."""


# -- helpers ------------------------------------------------------------------------------------------------------


def _without_reasoning_blocks(message: Message) -> dict[str, Any]:
    """A chat message as it is, less our ``reasoning_blocks`` key (not an OpenAI field)."""
    return {key: value for key, value in message.items() if key != REASONING_BLOCKS}


def _optional(body: dict[str, Any], **values: Any) -> None:
    body.update((key, value) for key, value in values.items() if value is not None)


def _system_and_tools(
    body: dict[str, Any],
    system_key: str,
    instructions: str | None,
    tools: Sequence[Mapping[str, Any]] | None,
    tool_shape: Callable[[Mapping[str, Any]], dict[str, Any]],
    tool_choice: Any,
    choice_shape: Callable[[Any], Any],
) -> None:
    """What each other format's body adds alike (Messages, Responses): the system prompt under the API's key, then the
    tools and the tool choice in the API's shape (each only when given)."""
    if instructions is not None:
        body[system_key] = instructions
    if tools:
        body["tools"] = [tool_shape(tool) for tool in tools]
    if tool_choice is not None:
        body["tool_choice"] = choice_shape(tool_choice)


def _split_system(messages: Sequence[Message], system: str | None) -> tuple[str | None, list[Message]]:
    """The system prompt (``system`` first, then every system/developer message, in order) and the other messages."""
    prompts = [system] if system is not None else []
    rest: list[Message] = []
    for number, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise ValueError(f"message {number} is a {type(message).__name__}, not a mapping with a 'role'")
        if message.get("role") in _SYSTEM_ROLES:
            prompts.append(_text(message.get("content"), number))
        else:
            rest.append(message)
    return ("\n\n".join(prompts) if prompts else None), rest


def _unknown_role(role: object, number: int) -> ValueError:
    return ValueError(f"message {number} (after the system messages) has role {role!r}; the roles are system, "
                      "developer, user, assistant and tool")
