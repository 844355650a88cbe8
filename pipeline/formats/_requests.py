"""The request body of each API, built from the chat-shaped conversation the library keeps.

The session (``Session.messages()``), ``ChatClient.stream`` and ``run_turn`` speak OpenAI chat completions: ``messages``
with ``system``/``developer``, ``user``, ``assistant`` (with ``tool_calls``) and ``tool`` roles, and chat ``tools``
(``{"type": "function", "function": {name, description, parameters}}``). One pure function per API turns that into
the streaming request body the API expects (docs/decisions/0027-request-shapes.md)::

    chat       POST /chat/completions  {model, messages, tools, stream, stream_options: {include_usage}}
    messages   POST /messages          {model, system, messages, tools: [{name, description, input_schema}],
                                        max_tokens, stream}
    responses  POST /responses         {model, instructions, input, tools: [{type, name, description,
                                        parameters, strict}], stream}

- Messages: every ``system``/``developer`` message goes to ``system`` (joined by a blank line, in order); an
  assistant's tool calls become ``tool_use`` blocks whose ``input`` is the parsed arguments (arguments that are not a
  JSON object, including bad JSON, are sent as ``{}``: the tool's result, already in the history, says what was
  wrong); ``tool`` messages become ``tool_result`` blocks, and consecutive user-side messages are merged into one user
  message (the API wants the results of one assistant message together, first); an assistant message with neither
  text nor tool calls is left out (the API refuses empty content); ``max_tokens`` is required (4096 unless given).
- Responses: ``system``/``developer`` messages go to ``instructions``; tool calls become ``function_call`` items and
  tool results ``function_call_output`` items; the arguments go verbatim (blank as ``"{}"``); ``strict`` is sent as
  the chat tool says (false unless it says true: the Responses API would otherwise default it to true); usage is
  always streamed, so there is no ``stream_options``; there are no stop sequences (``ValueError``).
- A tool that is not chat-shaped (no ``function`` object) goes through as given, in the target API's own shape (a
  server tool such as ``{"type": "web_search"}``).

A conversation these functions cannot express (an unknown role, a tool call without an id or a name, a content part
of an unknown type) is a ``ValueError`` that says which message.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from .._chat_message import REASONING_BLOCKS
from ._options import RequestOptions
from ._request_parts import (
    Message,
    _add_user,
    _arguments_text,
    _call_id_of,
    _input_of,
    _messages_parts,
    _messages_thinking,
    _messages_tool,
    _messages_tool_choice,
    _reasoning_of,
    _responses_content,
    _responses_reasoning,
    _responses_tool,
    _responses_tool_choice,
    _text,
    _tool_calls,
)

__all__ = ["DEFAULT_MAX_TOKENS", "Builder", "chat_request", "messages_request", "responses_request"]

DEFAULT_MAX_TOKENS: Final = 4096
"""The Messages API's ``max_tokens`` when none is given (the API requires one)."""

_SYSTEM_ROLES = frozenset({"system", "developer"})


def chat_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The chat-completions body: the messages as they are (``system`` first when given). ``options`` or its fields
    as keywords (``tools=...``)."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    out = [{"role": "system", "content": system}] if system is not None else []
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
            for call_id, name, arguments in _tool_calls(message, number):
                blocks.append({"type": "tool_use", "id": call_id, "name": name, "input": _input_of(arguments)})
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


def responses_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The Responses API body (see the module docstring for each rule)."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    if stop is not None:
        raise ValueError("the Responses API has no stop sequences: leave stop= out for api='responses'")
    instructions, rest = _split_system(messages, system)
    items: list[dict[str, Any]] = []
    for number, message in enumerate(rest):
        role = message.get("role")
        if role == "user":
            items.append({"type": "message", "role": "user", "content": _responses_content(message, number)})
        elif role == "tool":
            items.append({"type": "function_call_output", "call_id": _call_id_of(message, number),
                          "output": _text(message.get("content"), number)})
        elif role == "assistant":
            items.extend(_responses_reasoning(_reasoning_of(message, number)))
            text = _text(message.get("content"), number)
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            for call_id, name, arguments in _tool_calls(message, number):
                items.append({"type": "function_call", "call_id": call_id, "name": name,
                              "arguments": _arguments_text(arguments)})
        else:
            raise _unknown_role(role, number)
    body: dict[str, Any] = {"model": model, "input": items, "stream": True}
    _system_and_tools(body, "instructions", instructions, tools, _responses_tool, tool_choice, _responses_tool_choice)
    _optional(body, temperature=temperature, max_output_tokens=max_tokens)
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
    """What the Messages and Responses bodies add alike: the system prompt under the API's key, then the tools and
    the tool choice in the API's shape (each only when given)."""
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
