"""The chat delta's content in the shapes other than a string, read by ``coalesce_identity``: a list of typed parts
(Mistral's text and thinking parts) and ``reasoning_details`` entries (OpenRouter)."""

from __future__ import annotations

from typing import Any

__all__ = ["content_parts", "details_text"]


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
