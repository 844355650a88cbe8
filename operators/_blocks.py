"""The finished blocks a ``block-end`` carries: text, reasoning (with what the provider needs back) and tool calls.

A ``ToolCallBlock`` cannot be built without its identity; a ``ReasoningBlock``'s opaque parts are None or non-empty
(docs/decisions/0028-reasoning-round-trip.md). A tool call's ``kind`` says what the client runs (``ToolCallKind``: a
function, a custom free-form tool, a built-in tool of the Responses API: docs/decisions/0072-client-run-tool-calls.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final, Literal, TypeAlias

import attrs

__all__ = [
    "Block",
    "ReasoningBlock",
    "TextBlock",
    "ToolCallBlock",
    "ToolCallKind",
    "block_from_dict",
    "non_empty_kind",
    "non_empty_str",
]

Json: TypeAlias = dict[str, Any]


def non_empty_str(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be a non-empty string, got {value!r}: "
            "a tool call is never assembled without its identity"
        )


class ToolCallKind:
    """The kinds of tool call the protocol knows (docs/decisions/0072-client-run-tool-calls.md). A kind is a plain,
    non-empty string: these are the known values, and a reader may carry another.

    ``FUNCTION`` (the default, left out of every JSON form) takes JSON arguments; ``CUSTOM`` a custom tool's free-form
    input exactly as the model wrote it (not JSON); the built-in kinds (``APPLY_PATCH``, ``SHELL``, ``LOCAL_SHELL``,
    ``COMPUTER``) their item's operation or action as JSON, named by the kind itself (``name == kind``);
    ``MCP_APPROVAL`` a request to approve an MCP call, named ``"mcp_approval"``, whose id is the request's."""

    FUNCTION: Final = "function"
    CUSTOM: Final = "custom"
    APPLY_PATCH: Final = "apply_patch"
    SHELL: Final = "shell"
    LOCAL_SHELL: Final = "local_shell"
    COMPUTER: Final = "computer"
    MCP_APPROVAL: Final = "mcp_approval"
    KNOWN: Final = frozenset({FUNCTION, CUSTOM, APPLY_PATCH, SHELL, LOCAL_SHELL, COMPUTER, MCP_APPROVAL})


def non_empty_kind(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{type(instance).__name__}.{attribute.name} must be a non-empty string, got {value!r:.40}")


@attrs.frozen
class TextBlock:
    text: str
    type: ClassVar[Literal["text"]] = "text"

    def to_dict(self) -> Json:
        return {"type": "text", "text": self.text}


def _optional_non_empty(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be None or a non-empty string, got {value!r:.40}"
        )


@attrs.frozen
class ReasoningBlock:
    """Chain of thought, with what the provider needs to have it back (docs/decisions/0028-reasoning-round-trip.md):

    - ``signature``: the Messages API's signature over a ``thinking`` block's text;
    - ``encrypted``: reasoning the provider keeps opaque: a Messages ``redacted_thinking`` block's ``data`` (then
      ``text`` is ``""``), a Responses reasoning item's ``encrypted_content``;
    - ``item_id``: the Responses reasoning item's ``id``.

    Each is None when the wire did not give it, else a non-empty string, carried byte for byte and never shown.
    """

    text: str
    signature: str | None = attrs.field(default=None, kw_only=True, validator=_optional_non_empty)
    encrypted: str | None = attrs.field(default=None, kw_only=True, validator=_optional_non_empty)
    item_id: str | None = attrs.field(default=None, kw_only=True, validator=_optional_non_empty)
    type: ClassVar[Literal["reasoning"]] = "reasoning"

    @property
    def opaque(self) -> bool:
        """Whether the block carries something the provider must get back unchanged."""
        return self.signature is not None or self.encrypted is not None or self.item_id is not None

    def to_dict(self) -> Json:
        out: Json = {"type": "reasoning", "text": self.text}
        for key in ("signature", "encrypted", "item_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


@attrs.frozen
class ToolCallBlock:
    """A finished tool call. It cannot be constructed with an empty id or name.

    ``signature``: what the provider needs back with the call (Gemini's ``thoughtSignature`` on a ``functionCall``
    part, docs/decisions/0071-gemini-format.md); None when the wire gave none, else a non-empty string carried byte
    for byte, in the JSON only when set.

    ``kind``: what the client runs (``ToolCallKind``; docs/decisions/0072-client-run-tool-calls.md), a non-empty
    string, ``"function"`` by default and then left out of the JSON; ``arguments`` are JSON for every kind but
    ``"custom"``, whose free-form input they hold exactly as sent."""

    id: str = attrs.field(validator=non_empty_str)
    name: str = attrs.field(validator=non_empty_str)
    arguments: str
    signature: str | None = attrs.field(default=None, kw_only=True, validator=_optional_non_empty)
    kind: str = attrs.field(default=ToolCallKind.FUNCTION, kw_only=True, validator=non_empty_kind)
    type: ClassVar[Literal["tool-call"]] = "tool-call"

    def to_dict(self) -> Json:
        out: Json = {"type": "tool-call", "id": self.id, "name": self.name}
        if self.kind != ToolCallKind.FUNCTION:
            out["kind"] = self.kind
        out["arguments"] = self.arguments
        if self.signature is not None:
            out["signature"] = self.signature
        return out


Block: TypeAlias = TextBlock | ReasoningBlock | ToolCallBlock


def block_from_dict(data: Mapping[str, Any]) -> Block:
    kind = data.get("type")
    if kind == "text":
        return TextBlock(data["text"])
    if kind == "reasoning":
        return ReasoningBlock(data["text"], signature=data.get("signature"), encrypted=data.get("encrypted"),
                              item_id=data.get("item_id"))
    if kind == "tool-call":
        return ToolCallBlock(data["id"], data["name"], data["arguments"], signature=data.get("signature"),
                             kind=data.get("kind", ToolCallKind.FUNCTION))
    raise ValueError(f"unknown block type {kind!r}")
