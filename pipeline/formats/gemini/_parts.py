"""The parts of a Gemini request a message's own pieces become: a user message's content parts (text, images as
``inlineData`` or ``fileData``) and the thought signature a chat-shaped tool call carries (decision 0071:
``extra_content.google.thought_signature``, the shape Google's OpenAI-compatible endpoint uses)."""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_to_bytes

from .._request_parts import _image_url, _parts, _text


def _user_parts(content: object, number: int) -> list[dict[str, Any]]:
    """A user message's parts: text as ``{text}``, an ``image_url`` part as ``inlineData`` (a ``data:`` URL) or
    ``fileData`` (any other URL, with the MIME type its name says when it says one)."""
    out: list[dict[str, Any]] = []
    for part in _parts(content, number):
        kind = part.get("type")
        if kind == "text":
            out.append({"text": _text([part], number)})
        elif kind == "image_url":
            out.append(_image_part(_image_url(part, number)))
        else:
            raise ValueError(f"message {number}: a content part of type {kind!r} has no Gemini form here")
    return out


def _image_part(url: str) -> dict[str, Any]:
    if url.startswith("data:"):
        head, comma, data = url[5:].partition(",")
        if comma:
            media_type, *params = head.split(";")
            if "base64" not in params:  # percent-encoded data: Gemini's inlineData is base64
                data = base64.b64encode(unquote_to_bytes(data)).decode("ascii")
            return {"inlineData": {"mimeType": media_type or "text/plain", "data": data}}
    file: dict[str, Any] = {"fileUri": url}
    guessed, _ = mimetypes.guess_type(url, strict=False)
    if guessed is not None:
        file["mimeType"] = guessed
    return {"fileData": file}


def _call_signature(call: object, number: int) -> str | None:
    """The thought signature a chat-shaped tool call carries (``extra_content.google.thought_signature``), if any;
    ``ValueError`` for one that is not a non-empty string."""
    extra = call.get("extra_content") if isinstance(call, Mapping) else None
    google = extra.get("google") if isinstance(extra, Mapping) else None
    signature = google.get("thought_signature") if isinstance(google, Mapping) else None
    if signature is None:
        return None
    if not isinstance(signature, str) or not signature:
        raise ValueError(f"message {number}: a tool call's extra_content.google.thought_signature is a non-empty "
                         f"string or nothing, got {signature!r:.80}")
    return signature
