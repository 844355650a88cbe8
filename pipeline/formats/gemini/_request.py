"""Google's Gemini request body (``generateContent`` / ``streamGenerateContent``), built from the chat-shaped
conversation the library keeps (docs/decisions/0027-request-shapes.md, 0071-gemini-format.md)::

    POST /models/{model}:streamGenerateContent?alt=sse
        {contents: [{role, parts}], systemInstruction: {parts: [{text}]},
         tools: [{functionDeclarations: [{name, description, parametersJsonSchema}]}],
         toolConfig: {functionCallingConfig: {mode, allowedFunctionNames}},
         generationConfig: {maxOutputTokens, temperature, stopSequences}}

The model and the stream are in the URL (the format's record), so the body has neither ``model`` nor ``stream``.

- ``system``/``developer`` messages go to ``systemInstruction`` (one text part); ``user`` messages and tool results
  are ``user`` contents, assistant messages ``model`` contents; consecutive contents of one role are merged into one
  (the results of one model turn's calls go back together, as Google's examples send them, and a user message after
  them joins that content; an assistant message with nothing to send is left out).
- User content parts (``_parts.py``): text -> ``{text}``; an ``image_url`` part whose URL is a ``data:`` URL ->
  ``inlineData {mimeType, data}`` (base64), any other URL -> ``fileData {fileUri[, mimeType]}``.
- An assistant message, in order: its signed reasoning (``ReasoningBlock.to_dict()`` blocks with a ``signature``):
  a block with text as a thought part ``{text, thought: true, thoughtSignature}``, a block with empty text (the
  signature Gemini put on a text part) as that text part's ``thoughtSignature`` (``{text: "", thoughtSignature}``
  when the answer had no text); then its text; then one ``functionCall`` part per tool call, ``{name, args}`` (the
  arguments as an object: ``{}`` for blank or bad JSON or a value that is not an object, as the Messages builder
  sends them) with ``id`` only when it is Google's, and the call's own signature
  (``extra_content.google.thought_signature`` of the chat-shaped tool call, decision 0071) as the part's
  ``thoughtSignature``. Reasoning of another API (an item id, encrypted content) and unsigned reasoning are not sent.
- A call id the library made (``gemini-made-...``, decision 0071) is never sent: its ``functionCall`` and its
  ``functionResponse`` go without ``id``, matched by name and order as Google matches calls it gave no id.
- A ``tool`` message -> a ``functionResponse`` part ``{name, response[, id]}``. ``name`` is the call's, found by its
  ``tool_call_id`` among the earlier assistant messages' calls (the latest with that id: a made id repeats from one
  response to the next), else the message's own ``name``. ``response`` follows the API reference (``FunctionResponse
  .response``: "Use 'output' key to specify function output ... If 'output' and 'error' keys are not specified, then
  whole 'response' is treated as function output"): a result whose text is a JSON object is sent as that object,
  any other result as ``{"output": text}``.
- Tools: the chat tools' functions in one ``functionDeclarations`` tool, each schema as ``parametersJsonSchema``
  (Gemini's ``parameters`` takes only an OpenAPI subset of JSON Schema, so a chat tool's schema would have to be
  rewritten and could lose constraints; ``parametersJsonSchema`` takes the JSON Schema as it is); a function without
  parameters has no schema (the API reference: "can be left unset"). A tool that is not chat-shaped (Gemini's own,
  ``{"googleSearch": {}}``) goes through as given, after it.
- ``tool_choice``: ``"auto"`` -> ``AUTO``, ``"none"`` -> ``NONE``, ``"required"`` -> ``ANY``, a named function ->
  ``ANY`` with ``allowedFunctionNames: [name]``; another mapping is Gemini's own ``toolConfig``, as given.
- ``max_tokens`` -> ``maxOutputTokens``, ``temperature`` -> ``temperature``, ``stop`` -> ``stopSequences`` (a list),
  in ``generationConfig`` only when given. There is no reasoning option, so no ``thinkingConfig``: the model's
  default thinking applies (its signatures still come, and go back as above).

The rules every format's builder shares (the system prompt, a tool that is not chat-shaped, the ``ValueError``
naming the message) are ``pipeline/formats/_requests.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .._options import RequestOptions
from .._request_parts import (
    Message,
    _arguments_object,
    _call_id_of,
    _chosen_name,
    _function_of,
    _reasoning_of,
    _text,
    _tool_calls,
    _tool_name,
)
from .._requests import _optional, _split_system, _unknown_role
from ._parts import _call_signature, _user_parts

__all__ = ["gemini_request"]

MADE_ID_PREFIX: Final = "gemini-made-"
"""The prefix of a call id the library makes for a call Google gave none (decision 0071): never sent to Google."""

_MODES: Final = {"auto": "AUTO", "none": "NONE", "required": "ANY"}


def gemini_request(
    messages: Sequence[Message], *, model: str, options: RequestOptions | None = None, **fields: Any
) -> dict[str, Any]:
    """The Gemini ``generateContent`` body (see the module docstring for each rule). ``model`` is not in the body:
    the URL carries it."""
    tools, system, temperature, max_tokens, stop, tool_choice = RequestOptions.of(options, fields).values()
    instructions, rest = _split_system(messages, system)
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> the call's name, the latest assistant message's call winning
    for number, message in enumerate(rest):
        role = message.get("role")
        if role == "user":
            _add(contents, "user", _user_parts(message.get("content"), number))
        elif role == "tool":
            _add(contents, "user", [_function_response(message, number, names)])
        elif role == "assistant":
            _add(contents, "model", _model_parts(message, number, names))
        else:
            raise _unknown_role(role, number)
    body: dict[str, Any] = {"contents": contents}
    if instructions is not None:
        body["systemInstruction"] = {"parts": [{"text": instructions}]}
    if tools:
        body["tools"] = _gemini_tools(tools)
    if tool_choice is not None:
        body["toolConfig"] = _tool_config(tool_choice)
    generation: dict[str, Any] = {}
    stop_sequences = None if stop is None else [stop] if isinstance(stop, str) else list(stop)
    _optional(generation, maxOutputTokens=max_tokens, temperature=temperature, stopSequences=stop_sequences)
    if generation:
        body["generationConfig"] = generation
    return body


def _is_made_id(call_id: str) -> bool:
    """Whether ``call_id`` is one the library made (``gemini-made-<n>``), never Google's to have back."""
    return call_id.startswith(MADE_ID_PREFIX)


# -- contents -----------------------------------------------------------------------------------------------------


def _add(contents: list[dict[str, Any]], role: str, parts: list[dict[str, Any]]) -> None:
    """Appends a content of ``role``, merged into the previous one when it has the same role; none for no parts."""
    if not parts:
        return
    if contents and contents[-1]["role"] == role:
        contents[-1]["parts"].extend(parts)
    else:
        contents.append({"role": role, "parts": parts})


def _model_parts(message: Message, number: int, names: dict[str, str]) -> list[dict[str, Any]]:
    """A model content's parts: signed thoughts, the text (with a text part's signature), the function calls."""
    parts: list[dict[str, Any]] = []
    text_signatures: list[str] = []
    for block in _reasoning_of(message, number):
        signature = block.get("signature")
        if signature is None or block.get("item_id") is not None or block.get("encrypted") is not None:
            continue  # unsigned, or another API's reasoning
        if block["text"]:
            parts.append({"text": block["text"], "thought": True, "thoughtSignature": signature})
        else:
            text_signatures.append(signature)
    text = _text(message.get("content"), number)
    if text:
        part: dict[str, Any] = {"text": text}
        if text_signatures:
            part["thoughtSignature"] = text_signatures.pop(0)
        parts.append(part)
    parts.extend({"text": "", "thoughtSignature": signature} for signature in text_signatures)
    raw_calls = list(message.get("tool_calls") or ())
    for raw, (call_id, name, arguments) in zip(raw_calls, _tool_calls(message, number, "Gemini"), strict=True):
        names[call_id] = name
        call: dict[str, Any] = {"name": name, "args": _arguments_object(arguments)}
        if not _is_made_id(call_id):
            call["id"] = call_id
        part = {"functionCall": call}
        signature = _call_signature(raw, number)
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _function_response(message: Message, number: int, names: Mapping[str, str]) -> dict[str, Any]:
    call_id = _call_id_of(message, number)
    name = names.get(call_id, message.get("name"))
    if not isinstance(name, str) or not name:
        raise ValueError(f"message {number}: the tool result for {call_id!r} answers no earlier assistant tool call "
                         "with that id, and Gemini needs the call's name (give the tool message a 'name')")
    response: dict[str, Any] = {"name": name, "response": _response_of(_text(message.get("content"), number))}
    if not _is_made_id(call_id):
        response["id"] = call_id
    return {"functionResponse": response}


def _response_of(text: str) -> dict[str, Any]:
    """``FunctionResponse.response``: a JSON object result as it is, any other result as ``{"output": text}``."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"output": text}


# -- tools --------------------------------------------------------------------------------------------------------


def _gemini_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    others: list[dict[str, Any]] = []
    for tool in tools:
        function = _function_of(tool)
        if function is None:
            others.append(dict(tool))
            continue
        declaration: dict[str, Any] = {"name": _tool_name(function)}
        if function.get("description") is not None:
            declaration["description"] = function["description"]
        if function.get("parameters"):
            declaration["parametersJsonSchema"] = dict(function["parameters"])
        declarations.append(declaration)
    return ([{"functionDeclarations": declarations}] if declarations else []) + others


def _tool_config(choice: Any) -> Any:
    """Chat ``tool_choice`` to Gemini's ``toolConfig`` (see the module docstring)."""
    if isinstance(choice, str):
        mode = _MODES.get(choice)
        if mode is None:
            raise ValueError(f"tool_choice is 'auto', 'none', 'required' or a function, got {choice!r}")
        return {"functionCallingConfig": {"mode": mode}}
    name = _chosen_name(choice) if isinstance(choice, Mapping) else None
    if name is not None:
        return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [name]}}
    return dict(choice) if isinstance(choice, Mapping) else choice
