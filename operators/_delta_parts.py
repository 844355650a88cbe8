"""The chat delta's content in the shapes other than a string, read by ``coalesce_identity``: a list of typed parts
(Mistral's text and thinking parts), the reasoning aliases (vLLM's ``reasoning``, OpenRouter's ``reasoning_details``
entries)."""

from __future__ import annotations

from typing import Any

from ._wire import UNSET, WireDelta

__all__ = ["content_parts", "details_text", "other_reasoning"]


def other_reasoning(delta: WireDelta) -> str | None:
    """The reasoning of a delta whose ``reasoning_content`` is absent or null: the vLLM alias ``reasoning``, else (only
    when neither field is present) the text of OpenRouter's ``reasoning_details``; None when there is none."""
    alias = delta.reasoning
    if isinstance(alias, str):
        return alias
    if delta.reasoning_content is UNSET and alias is UNSET and delta.reasoning_details:
        return details_text(delta.reasoning_details)
    return None


def details_text(details: list[Any]) -> str:
    """The text of ``reasoning_details`` entries (OpenRouter's reasoning shape)."""
    parts = []
    for item in details:
        if isinstance(item, dict):
            text = item.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def content_parts(parts: list[Any]) -> tuple[str, str]:
    """Mistral's list-valued content: (text, reasoning)."""
    text: list[str] = []
    thinking: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif kind == "thinking":
            inner = part.get("thinking")
            if isinstance(inner, str):
                thinking.append(inner)
            elif isinstance(inner, list):
                thinking.append(details_text(inner))
    return "".join(text), "".join(thinking)
